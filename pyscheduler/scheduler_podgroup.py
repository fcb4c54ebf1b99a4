"""The pod group scheduling cycle (GenericWorkload): a PodGroup's pending pods are placed together.

Design (kube 1.36's ``schedule_one_podgroup.go``)
------------------------------------------------
When the loop pops a pod with ``spec.schedulingGroup`` (and the ``GenericWorkload`` gate is on), the
group's other unscheduled members are taken out of the queue too (``pop_specific``), ordered by
priority then first attempt, and the whole group gets one cycle::

    members ─► [TopologyAwareWorkloadScheduling: PlacementGenerate ─► for each placement:]
               for each pod, in order: Filter/Score ─► assume ─► Reserve ─► Permit
               (a later pod sees the earlier ones assumed); a pod no node fits runs PostFilter: if
               preemption nominates a node (its victims are evicted, as for any pod), the pod is
               assumed there and goes on to Reserve and Permit like a feasible one; otherwise it is
               skipped
               ─► every assumption is undone (Unreserve, forget; nominations put back)
           ─► [feasible placements ranked by PlacementScore; the best one's result is used]
    group feasible (some pod's Permit succeeded, e.g. GangScheduling's quorum reached):
        no member needed preemption:
            each feasible pod: assume ─► Reserve ─► Permit (waiting pods are allowed by the last) ─► binding
        some member needed preemption ("pod group is waiting for preemption to complete"): nothing is
            bound; every member goes back to the queue, each nominated to the node it was tried on
            (the preempting ones to their preemption's node), to be tried again once the victims are gone
    group not feasible: every member goes back to the queue, nothing is bound; the feasible ones (and
        those that preempted) with their Permit message ("waiting for minCount pods from a gang to be
        scheduled, ..."), the others with their own FitError
    and the PodGroup's PodGroupScheduled condition says which (never regressing True to False).

So a gang either binds at least its minCount pods or none: all-or-nothing. The simulation assumes
into the scheduler cache (kube assumes into its snapshot); the single scheduling thread means no other
cycle sees those assumptions, and every one is undone before the binding pass. A pod assumed on the
node its preemption nominated is added there on top of its victims (they are evicted, not gone yet): a
later member's own preemption sees them still there, as kube's snapshot does.

Workload-aware preemption (the WorkloadAwarePreemption gate, alpha, off) is not implemented; the gate
is refused at start-up (``pyscheduler.config.feature_gates.NOT_IMPLEMENTED``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from pyscheduler.backend.queue import QueuedPodInfo
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.fit_error import FitError
from pyscheduler.framework.interfaces import Diagnosis
from pyscheduler.framework.podgroup import (
    POD_GROUP_CYCLE_KEY,
    Placement,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupStateNotFound,
)
from pyscheduler.framework.runtime import Framework
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import Pod, PodInfo

if TYPE_CHECKING:
    from pyscheduler.scheduler import Scheduler

log = structlog.get_logger("pyscheduler.scheduler")

POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
WAITING_FOR_PREEMPTION = "pod group is waiting for preemption to complete"
POD_GROUP_SCHEDULED = "PodGroupScheduled"


@dataclass
class PodResult:
    qpi: QueuedPodInfo
    state: CycleState
    node: str = ""
    status: Status | None = None  # None: feasible
    fit_error: FitError | None = None
    nominated: str | None = None
    permit: Status | None = None  # the Permit status when feasible or preempting (None = success)
    clear_nomination: bool = False  # kube's clearNominatedNode for this pod's failure
    # no node fit, PostFilter nominated ``node`` (victims evicted) and the pod was assumed there
    requires_preemption: bool = False

    @property
    def feasible(self) -> bool:
        return self.status is None


@dataclass
class GroupResult:
    status: Status | None  # None: the group is feasible
    pods: list[PodResult] = field(default_factory=list)
    # feasible only once the preemptions some members started are done (status is then Unschedulable)
    waiting_on_preemption: bool = False


def _unschedulable_group() -> Status:
    return Status(Code.UNSCHEDULABLE, (POD_GROUP_UNSCHEDULABLE,))


# ------------------------------------------------------------------------------------------ entry


def schedule_pod_group(sched: Scheduler, qpi: QueuedPodInfo) -> None:
    start = sched.clock.now()
    pod = qpi.pod
    info = PodGroupInfo(pod.namespace, pod.scheduling_group)
    fwk = sched.profiles[pod.scheduler_name]
    try:
        state = sched.cache.pod_group_state(info.namespace, info.name)
    except PodGroupStateNotFound as e:
        sched.handle_failure(
            fwk, qpi, Status.as_error(f"error while retrieving pod group state: {e}"), None, start
        )
        return
    members = [qpi]
    # (kube walks a map here; a fixed order keeps in-process runs reproducible)
    for other in sorted(state.unscheduled_pods(), key=lambda p: (p.creation_timestamp, p.name)):
        if other.uid == pod.uid:
            continue
        got = sched.queue.pop_specific(other.uid)
        if got is not None:
            members.append(got)
    # kube's order: priority, then first attempt (ties: creation, then name)
    members.sort(
        key=lambda q: (
            -q.pod.priority,
            q.initial_attempt_timestamp or 0.0,
            q.pod.creation_timestamp,
            q.pod.name,
        )
    )
    names = {q.pod.scheduler_name for q in members}
    if len(names) > 1:
        a, b = sorted(names)[:2]
        msg = (
            "all pods in a single pod group should have the same .spec.schedulerName set, "
            f'got: "{a}" and "{b}"'
        )
        for q in members:
            f = sched.profiles.get(q.pod.scheduler_name)
            if f is None:
                sched.queue.done(q.uid)
                continue
            sched.handle_failure(f, q, Status.as_error(msg), None, start, clear_nomination=True)
        return
    kept = []
    for q in members:  # kube's skipPodGroupPodSchedule
        if q.pod.deleting or sched.cache.is_assumed(q.uid):
            sched.queue.done(q.uid)
        else:
            kept.append(q)
    if not kept:
        return
    log.debug("attempting to schedule pod group", pod_group=info.key, pods=len(kept))
    result = run_group_algorithm(sched, fwk, info, kept)
    observe = getattr(sched.metrics, "pod_group_algorithm", None)
    if callable(observe):
        observe(sched.clock.now() - start)
    submit(sched, fwk, info, kept, result, start)


def run_group_algorithm(
    sched: Scheduler, fwk: Framework, info: PodGroupInfo, members: list[QueuedPodInfo]
) -> GroupResult:
    from pyscheduler.config import feature_gates

    if feature_gates.enabled(feature_gates.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING):
        return _placement_algorithm(sched, fwk, info, members)
    return _default_algorithm(sched, fwk, info, members)


# ------------------------------------------------------------------------------------------ algorithms


def _default_algorithm(
    sched: Scheduler, fwk: Framework, info: PodGroupInfo, members: list[QueuedPodInfo]
) -> GroupResult:
    """Each pod in order against the cluster with the earlier ones assumed; every assumption is undone
    at the end (kube's podGroupSchedulingDefaultAlgorithm)."""
    result = GroupResult(_unschedulable_group())
    reverts: list[Callable[[], None]] = []
    requires_preemption = False
    try:
        for q in members:
            r, revert = _pod_attempt(sched, fwk, q)
            result.pods.append(r)
            if not r.feasible and not r.requires_preemption:
                assert r.status is not None
                if r.status.is_rejected():
                    continue
                result.status = Status.as_error(
                    f"failed to schedule other pod from a pod group: {r.status.message()}"
                )
                result.waiting_on_preemption = False
                break
            assert revert is not None
            reverts.append(revert)
            requires_preemption = requires_preemption or r.requires_preemption
            if r.permit is None or r.permit.is_success():
                if requires_preemption:  # feasible, once the victims are gone
                    result.status = Status(
                        Code.UNSCHEDULABLE, (POD_GROUP_UNSCHEDULABLE, WAITING_FOR_PREEMPTION)
                    )
                    result.waiting_on_preemption = True
                else:
                    result.status = None
    finally:
        for revert in reversed(reverts):
            revert()
    return result


def _pod_attempt(
    sched: Scheduler, fwk: Framework, q: QueuedPodInfo
) -> tuple[PodResult, Callable[[], None] | None]:
    pod = q.pod
    state = CycleState()
    state.write(POD_GROUP_CYCLE_KEY, True)
    r = PodResult(q, state)
    try:
        node = sched.schedule_pod(fwk, state, pod).node
    except FitError as fe:
        r.nominated = sched.run_post_filter(fwk, state, pod, fe)
        r.fit_error = fe
        r.status = Status(Code.UNSCHEDULABLE, (fe.message(),))
        if not r.nominated:
            return r, None
        # kube: the later members must see this one where its preemption makes room
        node, r.requires_preemption = r.nominated, True
    except Exception as e:
        r.status = Status.as_error(e)
        return r, None
    r.node = node
    assumed = pod.with_node_name(node)
    try:
        sched.cache.assume_pod(assumed)
    except Exception as e:
        return _failed(r, Status.as_error(e)), None
    # an assumed pod is no longer nominated (else Filter would count it twice on that node)
    sched.queue.delete_nominated_pod_if_exists(pod)

    def revert() -> None:
        fwk.run_reserve_plugins_unreserve(state, assumed, node)
        sched.cache.forget_pod(assumed)
        if pod.nominated_node_name:  # the nomination the pod came with, as kube puts it back
            sched.queue.add_nominated_pod(PodInfo(pod), pod.nominated_node_name)

    s = fwk.run_reserve_plugins_reserve(state, assumed, node)
    if s is not None and not s.is_success():
        revert()
        return _failed(r, _one_node_status(pod, node, s)), None
    s = fwk.run_permit_plugins(state, assumed, node)
    fwk.handle.waiting_pods.remove(pod.uid)  # a simulation: nobody waits on this permit
    if s is not None and not s.is_success() and not s.is_wait():
        revert()
        return _failed(r, _one_node_status(pod, node, s)), None
    r.permit = s
    return r, revert


def _failed(r: PodResult, status: Status) -> PodResult:
    """The pod's assume, Reserve or Permit failed: that is its outcome (its nomination is cleared)."""
    r.status, r.fit_error, r.nominated, r.requires_preemption = status, None, None, False
    r.node = ""
    r.clear_nomination = True
    return r


def _one_node_status(pod: Pod, node: str, s: Status) -> Status:
    """A Reserve/Permit rejection as kube reports it: a FitError over the one node tried."""
    if not s.is_rejected():
        return s
    fe = FitError(pod, 1, Diagnosis(node_to_status={node: s}))
    if s.plugin:
        fe.diagnosis.unschedulable_plugins.add(s.plugin)
    return Status(s.code, (fe.message(),), s.plugin)


def _placement_algorithm(
    sched: Scheduler, fwk: Framework, info: PodGroupInfo, members: list[QueuedPodInfo]
) -> GroupResult:
    """kube's podGroupSchedulingPlacementAlgorithm: try the group on each placement, keep the feasible
    ones, and take the best by PlacementScore (ties broken at random)."""
    sched.cache.update_snapshot(sched.snapshot)
    group_state = CycleState()
    placements, s = fwk.run_placement_generate_plugins(group_state, info, list(sched.snapshot.list()))
    if s is not None and not s.is_success():
        return GroupResult(s)
    first: GroupResult | None = None
    feasible: list[tuple[Placement, GroupResult]] = []
    for placement in placements:
        names = frozenset(ni.name for ni in placement.nodes)
        sched.placement = None if len(names) == sched.snapshot.num_nodes() else names
        try:
            res = _default_algorithm(sched, fwk, info, members)
        finally:
            sched.placement = None
        if res.status is not None and res.status.is_error():
            return res
        if first is None:
            first = res
        if res.status is None or res.waiting_on_preemption:
            feasible.append((placement, res))
    if not feasible:
        assert first is not None
        first_msg = first.status.message() if first.status is not None else ""
        first.status = Status(
            Code.UNSCHEDULABLE,
            (f"0/{len(placements)} placements are available, first placement status: {first_msg}",),
        )
        return first
    if len(feasible) == 1:
        return feasible[0][1]
    # every try was undone: score the placements against the cluster as it is (kube's snapshot after
    # ForgetPlacement), node infos looked up afresh
    sched.cache.update_snapshot(sched.snapshot)
    assignments = []
    for p, res in feasible:
        fresh = [ni for ni in (sched.snapshot.get(n.name) for n in p.nodes) if ni is not None]
        proposed = [(r.qpi.pod, r.node) for r in res.pods if r.node]
        assignments.append(PodGroupAssignments(Placement(p.name, fresh), proposed))
    totals, s = fwk.run_placement_score_plugins(group_state, info, assignments)
    if s is not None and not s.is_success():
        return GroupResult(s)
    best = max(totals)
    ties = [i for i, t in enumerate(totals) if t == best]
    pick = ties[0] if len(ties) == 1 else ties[sched.rng.randrange(len(ties))]
    return feasible[pick][1]


# ------------------------------------------------------------------------------------------ results


def submit(
    sched: Scheduler,
    fwk: Framework,
    info: PodGroupInfo,
    members: list[QueuedPodInfo],
    result: GroupResult,
    start: float,
) -> None:
    """kube's submitPodGroupAlgorithmResult: bind the feasible pods of a feasible group; send the rest
    (everything, for an infeasible group or one waiting on preemption) back to the queue; set the
    PodGroupScheduled condition."""
    scheduled = unschedulable = 0
    for i, q in enumerate(members):
        r = result.pods[i] if i < len(result.pods) else None
        outcome = _submit_pod(sched, fwk, q, r, result, start)
        scheduled += outcome == "scheduled"
        unschedulable += outcome == "unschedulable"
    _report(sched, fwk, info, result, start, scheduled, unschedulable)


def _submit_pod(
    sched: Scheduler,
    fwk: Framework,
    q: QueuedPodInfo,
    r: PodResult | None,
    result: GroupResult,
    start: float,
) -> str:
    """One member's outcome: "scheduled" (off to its binding cycle), "unschedulable" or "error"."""
    group_status, waiting = result.status, result.waiting_on_preemption
    if group_status is not None and group_status.is_error():
        st = r.status if r is not None and r.status is not None and r.status.is_error() else group_status
        _clear_nomination(sched, q.pod)
        sched.handle_failure(fwk, q, st, None, start)
        return "error"
    if r is None:
        st = group_status if group_status is not None else _unschedulable_group()
        sched.handle_failure(fwk, q, st, None, start)
        return "unschedulable"
    if r.feasible:
        if group_status is None:
            return "scheduled" if _bind(sched, fwk, q, r, start) else "unschedulable"
        if waiting:  # back to the queue nominated where it fits now, until the victims are gone
            sched.handle_failure(fwk, q, group_status, r.node, start)
        else:
            _permit_failure(sched, fwk, q, r, start)
        return "unschedulable"
    assert r.status is not None
    if r.requires_preemption and not waiting:
        # the group does not fit even with the preemption: the pod reports why it waits
        _permit_failure(sched, fwk, q, r, start)
    elif r.fit_error is not None:
        q.unschedulable_plugins = set(r.fit_error.diagnosis.unschedulable_plugins)
        q.pending_plugins = set(r.fit_error.diagnosis.pending_plugins)
        msg = r.fit_error.message()
        sched.handle_failure(fwk, q, Status(Code.UNSCHEDULABLE, (msg,)), r.nominated, start, fit_error=True)
    else:
        if r.clear_nomination:
            _clear_nomination(sched, q.pod)
        sched.handle_failure(fwk, q, r.status, None, start)
    return "unschedulable"


def _report(
    sched: Scheduler,
    fwk: Framework,
    info: PodGroupInfo,
    result: GroupResult,
    start: float,
    scheduled: int,
    unschedulable: int,
) -> None:
    """The attempt's metric (kube's result labels), log line and PodGroupScheduled condition."""
    group_status, waiting = result.status, result.waiting_on_preemption
    result_label = "scheduled"
    if group_status is not None:
        result_label = "error" if group_status.is_error() else "unschedulable"
        if waiting:
            result_label = "waiting_on_preemption"
    observe = getattr(sched.metrics, "pod_group_attempt", None)
    if callable(observe):
        observe(result_label, fwk.profile_name, sched.clock.now() - start)
    if group_status is None:
        cond = ("True", "Scheduled", "")
        log.info(
            "scheduled a pod group", pod_group=info.key, scheduled=scheduled, unschedulable=unschedulable
        )
    elif group_status.is_error():
        cond = ("False", "SchedulerError", group_status.message())
        log.error("error scheduling pod group", pod_group=info.key, error=group_status.message())
    else:
        cond = ("False", "Unschedulable", group_status.message())
        if waiting:
            log.info("pod group is waiting for preemption", pod_group=info.key, unschedulable=unschedulable)
        else:
            log.info("unable to schedule a pod group", pod_group=info.key, unschedulable=unschedulable)
    writer = getattr(sched.status_writer, "pod_group_condition", None)
    if callable(writer):
        writer(info.namespace, info.name, POD_GROUP_SCHEDULED, *cond)


def _permit_failure(sched: Scheduler, fwk: Framework, q: QueuedPodInfo, r: PodResult, start: float) -> None:
    """A pod that fit (or preempted) in a group that does not: Unschedulable with its Permit message
    after errPodGroupUnschedulable's text (kube), nomination cleared."""
    reasons = (POD_GROUP_UNSCHEDULABLE, *(r.permit.reasons if r.permit is not None else ()))
    _clear_nomination(sched, q.pod)
    sched.handle_failure(fwk, q, Status(Code.UNSCHEDULABLE, reasons), None, start)


def _clear_nomination(sched: Scheduler, pod: Pod) -> None:
    """kube's clearNominatedNode on a failure: the pod's nomination goes, in memory and in its status."""
    sched.clear_nomination(pod)


def _bind(sched: Scheduler, fwk: Framework, q: QueuedPodInfo, r: PodResult, start: float) -> bool:
    """kube's prepareForBindingCycle for one feasible pod of a feasible group: assume, Reserve, Permit
    (a Wait holds it in the binding cycle), then the binding cycle off-thread. The pod's state from the
    group's simulation carries on (what its PreFilter plugins computed), no longer a pod group cycle."""
    from pyscheduler.scheduler_search import ScheduleResult

    pod, node, state = q.pod, r.node, r.state
    state.delete(POD_GROUP_CYCLE_KEY)
    assumed = pod.with_node_name(node)
    try:
        sched.cache.assume_pod(assumed)
    except Exception as e:
        _clear_nomination(sched, pod)
        sched.handle_failure(fwk, q, Status.as_error(e), None, start)
        return False
    sched.queue.delete_nominated_pod_if_exists(pod)
    s = fwk.run_reserve_plugins_reserve(state, assumed, node)
    if s is None or s.is_success():
        s = fwk.run_permit_plugins(state, assumed, node)
        if s is not None and s.is_wait():
            s = None
    if s is not None and not s.is_success():
        fwk.run_reserve_plugins_unreserve(state, assumed, node)
        sched.cache.forget_pod(assumed)
        _clear_nomination(sched, pod)
        sched.handle_failure(fwk, q, _one_node_status(pod, node, s), None, start)
        return False
    sched.submit_binding(fwk, state, q, assumed, ScheduleResult(node, 1, 1), start)
    return True
