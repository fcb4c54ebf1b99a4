"""A scheduling attempt that failed: the pod handed back to the queue (``FailureHandling``).

kube's handleSchedulingFailure (``handle_failure``): requeue (unschedulable or, on an Error, backoff),
nominate the pod where preemption made room or clear its nomination, then the FailedScheduling event
and PodScheduled=False. When no node fits (``_on_fit_error``), PostFilter (preemption) runs first
(``run_post_filter``). A binding cycle's failure (``_binding_failed``, kube's handleBindingCycleError)
also forgets the assumed pod and requeues the pods its node's capacity turned away.
"""

from __future__ import annotations

import dataclasses

import structlog

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.queue import QueuedPodInfo, SchedulingQueue
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.clock import Clock
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import Action, ClusterEvent, Resource
from pyscheduler.framework.fit_error import FitError
from pyscheduler.framework.runtime import Framework
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import Pod, PodInfo
from pyscheduler.scheduler_protocols import Metrics, Recorder, StatusWriter

log = structlog.get_logger("pyscheduler.scheduler")

# what forgetting an assumed pod is to the queue: its node's capacity is free again
ASSIGNED_POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE, "AssignedPodDelete")

#: CycleState key: the pod was nominated in memory when it was assumed (kube's assume drops that)
NOMINATED_AT_ASSUME_KEY = "pyscheduler/nominated-at-assume"


def was_nominated_at_assume(state: CycleState) -> bool:
    """Whether the pod was nominated in memory when it was assumed (``handle_failure``'s
    ``was_nominated``)."""
    return bool(state.get(NOMINATED_AT_ASSUME_KEY, False))


class FailureHandling:
    """What ``Scheduler`` does with a pod whose attempt failed."""

    queue: SchedulingQueue
    cache: Cache
    snapshot: Snapshot
    clock: Clock
    recorder: Recorder
    status_writer: StatusWriter
    metrics: Metrics | None
    placement: frozenset[str] | None

    def _forget(self, assumed: Pod) -> None:
        self.cache.forget_pod(assumed)  # False (nothing to forget) is logged by the cache

    def _binding_failed(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        assumed: Pod,
        status: Status,
        start: float,
        was_nominated: bool = False,
    ) -> None:
        """kube's handleBindingCycleError (after Unreserve): forget the assumed pod and hand it back. The
        capacity it held on its node is free again, as if an assigned pod were deleted there: the pods
        turned away because of it are requeued (AssignedPodDelete), else they wait for an unrelated event
        or the 5-minute flush (a gang member timing out in Permit held its node that long for others). A
        rejected pod (Permit) is itself unschedulable: it is handed back first and not moved. Whatever
        failed (Permit rejected or timed out, PreBind, Bind), the pod's nomination is cleared, in memory
        and in its status (kube's clearNominatedNode): a preemptor whose binding failed holds no node."""
        freed = self.cache.forget_pod(assumed)
        if freed and not status.is_rejected():
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, assumed, None)
        self.handle_failure(fwk, qpi, status, None, start, clear_nomination=True, was_nominated=was_nominated)
        if freed and status.is_rejected():
            uid = assumed.uid
            self.queue.move_all_to_active_or_backoff(
                ASSIGNED_POD_DELETE, assumed, None, lambda p: p.uid != uid
            )

    def clear_nomination(self, pod: Pod, *, was_nominated: bool = False) -> None:
        """kube's clearNominatedNode: the pod is nominated nowhere, in memory and in its status. The API
        write happens only where there is something to clear: the pod's status names a node, or it was
        nominated in memory (``was_nominated``: until it was assumed), whose status write may still be on
        its way (the writer keeps a pod's writes in order, so the clearing lands after it); and only for
        a pod the queue still holds (one deleted or bound meanwhile is left alone)."""
        uid = pod.uid
        in_memory = self.queue.nominated_node_name(uid) is not None
        if in_memory:
            self.queue.delete_nominated_pod_if_exists(pod)
        if (pod.nominated_node_name or in_memory or was_nominated) and self.queue.where(uid) is not None:
            self.status_writer.nominated_node(pod, "")

    def _on_fit_error(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, fe: FitError, start: float
    ) -> None:
        nominated = self.run_post_filter(fwk, state, qpi.pod, fe)
        qpi.unschedulable_plugins = set(fe.diagnosis.unschedulable_plugins)
        qpi.pending_plugins = set(fe.diagnosis.pending_plugins)
        st = Status(Code.UNSCHEDULABLE, (fe.message(),))
        # kube clears the nomination when no PostFilter ran (none configured, or no nodes at all)
        ran_post_filter = fwk.has_post_filter_plugins() and fe.num_all_nodes > 0
        self.handle_failure(
            fwk, qpi, st, nominated, start, fit_error=True, clear_nomination=not ran_post_filter
        )

    def run_post_filter(self, fwk: Framework, state: CycleState, pod: Pod, fe: FitError) -> str | None:
        """PostFilter (preemption) for a pod no node fits; its message joins ``fe``. Returns the node
        the pod is nominated to, if any."""
        nominated = None
        if fwk.has_post_filter_plugins() and fe.num_all_nodes > 0:
            statuses = dict(fe.diagnosis.node_to_status)
            if fe.diagnosis.absent_nodes_status is not None:
                for ni in self.snapshot.list():
                    if self.placement is None or ni.name in self.placement:
                        statuses.setdefault(ni.name, fe.diagnosis.absent_nodes_status)
            result, s = fwk.run_post_filter_plugins(state, pod, statuses)
            if s.code == Code.ERROR:
                log.warning("postfilter error", pod=pod.key, error=s.message())
            if not s.is_success() and s.reasons:
                # kube sets PostFilterMsg from any status, an Error's too: a pod an earlier PreFilter
                # plugin rejected reads "... . not found" (DynamicResources' PostFilter finds no state)
                fe.diagnosis.post_filter_msg = s.message()
            if result is not None and result.nominated_node_name:
                nominated = result.nominated_node_name
            elif result is not None and result.mode == "clear":
                self.clear_nomination(pod)
        return nominated

    def handle_failure(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        status: Status,
        nominated: str | None,
        start: float,
        fit_error: bool = False,
        *,
        clear_nomination: bool = False,
        was_nominated: bool = False,
    ) -> None:
        """kube's handleSchedulingFailure: hand the pod back to the queue, nominate it on ``nominated``
        (preemption's node) or, with ``clear_nomination``, clear its nomination (kube's
        clearNominatedNode: ``was_nominated`` says the pod was nominated in memory when it was assumed),
        then the FailedScheduling event and PodScheduled=False."""
        pod: Pod = qpi.pod
        is_error = status.code == Code.ERROR
        if not fit_error and status.plugin and not is_error:
            qpi.unschedulable_plugins = {status.plugin}
        msg = status.message() or str(status.code)
        reason = "SchedulerError" if is_error else "Unschedulable"
        if self.metrics is not None:
            self.metrics.attempt(
                "error" if is_error else "unschedulable", fwk.profile_name, self.clock.now() - start
            )
        try:
            self.queue.add_unschedulable_if_not_present(qpi, error=is_error)
        except Exception:
            log.exception("requeue failed", pod=pod.key)
        if nominated:  # not for a pod deleted (or bound elsewhere) during this attempt: the queue dropped it
            self.queue.add_nominated_pod(
                PodInfo(dataclasses.replace(pod, nominated_node_name=nominated)), nominated, if_queued=True
            )
        elif clear_nomination:
            self.clear_nomination(qpi.pod, was_nominated=was_nominated)
        self.recorder.event(pod, "Warning", "FailedScheduling", "Scheduling", msg)
        # the nomination goes with the condition, in one write (kube's updatePod)
        self.status_writer.pod_scheduled_condition(pod, "False", reason, msg, nominated or None)
        # an Error (a plugin raised, an API call failed) is kube's "Error scheduling pod; retrying", at
        # error level; the plugin's traceback is logged once a minute by the framework's observer
        (log.error if is_error else log.info)(
            "unschedulable" if not is_error else "scheduling error",
            pod=pod.key,
            profile=fwk.profile_name,
            attempt=qpi.attempts,
            reason=msg,
            duration_ms=round((self.clock.now() - start) * 1000, 2),
        )
