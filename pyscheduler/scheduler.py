"""The scheduling loop: pop a pod, run its profile's framework, assume, and bind off-thread.

Design
------
One scheduling thread runs ``schedule_one`` in a loop; binding cycles run on a small thread pool so the
next pod's scheduling cycle does not wait for API round trips (kube-scheduler's goroutine per binding).

    queue.pop ─► snapshot update ─► PreFilter ─► Filter (a sample of nodes) ─┬─► PreScore ─► Score ─► pick
                                                                            └─► (none fit) PostFilter
    pick ─► cache.assume (counts at once) ─► Reserve ─► Permit ─► [binding thread] WaitOnPermit ─► PreBind
         ─► Bind ─► cache.finish_binding ─► Scheduled event ─► PostBind

Any failure after assume runs Unreserve (reverse order), forgets the assumed pod and requeues it with
backoff; events and status patches go through asynchronous writers and never block the loop. The
scheduling core does no I/O itself: binding is a plugin (DefaultBinder) and everything else is
submitted to ``recorder``/``writer`` callables, so tests can run it with fakes.

``Scheduler`` is this module's loop and one scheduling cycle's course (``schedule_one``: pop, assume,
Reserve, Permit, hand over to binding), combined with the parts it delegates to, each in its module:

- ``scheduler_search.py`` (``NodeSearch``): which node, kube's schedulePod: the node search over
  Filter chunks, extenders, scoring and the pick;
- ``scheduler_binding.py`` (``BindingCycles``): the binding cycle and its thread pool, the backlog the
  scheduling thread waits on;
- ``scheduler_failure.py`` (``FailureHandling``): a failed attempt handed back: PostFilter on a
  FitError, requeue, nomination set or cleared, the FailedScheduling event and condition;
- ``scheduler_podgroup.py``: the pod group cycle (GenericWorkload), a function of the scheduler.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence

import structlog

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.queue import SchedulingQueue
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.clock import Clock
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.fit_error import FitError
from pyscheduler.framework.runtime import Framework
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod
from pyscheduler.parallel import ForkFilter
from pyscheduler.scheduler_binding import BIND_BACKLOG, BIND_WORKERS, BindingCycles
from pyscheduler.scheduler_failure import NOMINATED_AT_ASSUME_KEY, FailureHandling, was_nominated_at_assume
from pyscheduler.scheduler_protocols import Extender, Metrics, Recorder, StatusWriter
from pyscheduler.scheduler_search import NodeSearch

log = structlog.get_logger("pyscheduler.scheduler")


class Scheduler(NodeSearch, BindingCycles, FailureHandling):
    """One scheduling thread's loop over the queue (``run``), a pod at a time (``schedule_one``)."""

    def __init__(
        self,
        *,
        profiles: Mapping[str, Framework],
        queue: SchedulingQueue,
        cache: Cache,
        snapshot: Snapshot,
        clock: Clock,
        recorder: Recorder,
        status_writer: StatusWriter,
        metrics: Metrics | None = None,
        percentage_of_nodes_to_score: int | None = None,
        extenders: Sequence[Extender] = (),
        bind_workers: int = BIND_WORKERS,
        bind_backlog: int = BIND_BACKLOG,
        rng: random.Random | None = None,
        can_bind: Callable[[], bool] = lambda: True,
        parallelism: int = 1,
        opportunistic_batching: bool = True,
    ) -> None:
        self.profiles = dict(profiles)
        self.queue = queue
        self.cache = cache
        self.snapshot = snapshot
        self.clock = clock
        self.recorder = recorder
        self.status_writer = status_writer
        self.metrics = metrics
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.extenders = list(extenders)
        self.rng = rng or random.Random()
        self.can_bind = can_bind
        self.next_start_node_index = 0
        # the share of nodes that passed Filter in the last batched search: sizes the next search's
        # first chunk (scheduler_search.NodeSearch._filter_in_chunks)
        self.last_pass_rate = 1.0
        # parallelism > 1: big Filter chunks are split over forked workers (pyscheduler.parallel)
        self.fork_filter = ForkFilter(parallelism) if parallelism > 1 else None
        # the node names a pod group cycle is trying (kube's AssumePlacement); None: all nodes
        self.placement: frozenset[str] | None = None
        # pods with spec.schedulingGroup are scheduled a group at a time (GenericWorkload)
        self.pod_groups = False
        self._start_binders(bind_workers, bind_backlog)
        self._stop = threading.Event()
        # OpportunisticBatching (kube 1.36, beta, on): a pod signed like the one before it may take the
        # next node of that pod's scores (framework/batch.py); the hint of the cycle under way
        self.batching = opportunistic_batching
        self._hint = ""
        self._batch_cycle: tuple[Hashable | None, int] = (None, 0)  # (signature, scheduling cycle)
        if opportunistic_batching:
            for fwk in self.profiles.values():
                if self.extenders:
                    fwk.signer.disable_for_extenders()
                if fwk.signer.disabled_because:
                    log.info(
                        f"Disabling signatures for profile because {fwk.signer.disabled_because}.",
                        profile=fwk.profile_name,
                        plugins=list(fwk.signer.unsupported),
                    )

    # ------------------------------------------------------------------------------------ loop
    def run(self, stop: threading.Event | None = None, pop_timeout: float = 0.5) -> None:
        stop = stop or self._stop
        while not stop.is_set():
            try:
                self.wait_for_binders()
                self.schedule_one(pop_timeout)
            except Exception:  # the loop never dies
                log.exception("scheduling loop error")

    def stop(self) -> None:
        self._stop.set()

    def schedule_one(self, pop_timeout: float | None = None) -> bool:
        """One scheduling cycle; False if no pod was available."""
        qpi = self.queue.pop(pop_timeout)
        if qpi is None:
            return False
        pod: Pod = qpi.pod
        fwk = self.profiles.get(pod.scheduler_name)
        if fwk is None:  # a profile was removed? never schedule foreign pods
            self.queue.done(pod.uid)
            return True
        if self.pod_groups and pod.scheduling_group:
            from pyscheduler.scheduler_podgroup import schedule_pod_group

            schedule_pod_group(self, qpi)
            return True
        if pod.deleting or self.cache.is_assumed(pod.uid):
            self.queue.done(pod.uid)
            return True
        start = self.clock.now()
        state = CycleState()
        metrics = self.metrics
        if metrics is not None:
            state.record_plugin_metrics = metrics.sample_plugins()
        try:
            result = self.schedule_pod(fwk, state, pod)
        except FitError as fe:
            if metrics is not None:
                metrics.algorithm(self.clock.now() - start)
            self._on_fit_error(fwk, state, qpi, fe, start)
            return True
        except Exception as e:  # plugin or extender error
            st = Status.as_error(e)
            self.handle_failure(fwk, qpi, st, None, start, clear_nomination=True)
            return True
        if metrics is not None:
            metrics.algorithm(self.clock.now() - start)

        # From here on every failure clears the pod's nomination (kube's clearNominatedNode).
        assumed = pod.with_node_name(result.node)
        try:
            self.cache.assume_pod(assumed)
        except Exception as e:
            self.handle_failure(fwk, qpi, Status.as_error(e), None, start, clear_nomination=True)
            return True
        # An assumed pod is no longer nominated (kube's assume): Filter would count it twice on its node.
        if self.queue.nominated_node_name(pod.uid) is not None:
            self.queue.delete_nominated_pod_if_exists(pod)
            state.write(NOMINATED_AT_ASSUME_KEY, True)
        s = fwk.run_reserve_plugins_reserve(state, assumed, result.node)
        if s is not None and not s.is_success():
            fwk.run_reserve_plugins_unreserve(state, assumed, result.node)
            self._forget(assumed)
            self.handle_failure(
                fwk, qpi, s, None, start, clear_nomination=True, was_nominated=was_nominated_at_assume(state)
            )
            return True
        s = fwk.run_permit_plugins(state, assumed, result.node)
        if s is not None and not s.is_success() and not s.is_wait():
            fwk.run_reserve_plugins_unreserve(state, assumed, result.node)
            self._forget(assumed)
            self.handle_failure(
                fwk, qpi, s, None, start, clear_nomination=True, was_nominated=was_nominated_at_assume(state)
            )
            return True
        if s is not None and s.is_wait():
            # Plugins like Coscheduling expect the waiting pod's siblings to be tried next.
            pass
        self.submit_binding(fwk, state, qpi, assumed, result, start)
        return True
