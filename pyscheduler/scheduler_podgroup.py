"""The pod group scheduling cycle (GenericWorkload): a PodGroup's pending pods are placed together.

Design (kube 1.36's ``schedule_one_podgroup.go``)
------------------------------------------------
When the loop pops a pod with ``spec.schedulingGroup`` (and the ``GenericWorkload`` gate is on), the
group's other unscheduled members are taken out of the queue too (``pop_specific``), ordered by
priority then first attempt, and the whole group gets one cycle::

    members ─► [TopologyAwareWorkloadScheduling: PlacementGenerate ─► for each placement:]
               for each pod, in order: Filter/Score (PostFilter if none fits) ─► assume ─► Reserve ─► Permit
               (a later pod sees the earlier ones assumed); a pod no node fits is skipped
               ─► every assumption is undone (Unreserve, forget)
           ─► [feasible placements ranked by PlacementScore; the best one's result is used]
    group feasible (some pod's Permit succeeded, e.g. GangScheduling's quorum reached):
        each feasible pod: assume ─► Reserve ─► Permit (waiting pods are allowed by the last) ─► binding
    group not feasible: every member goes back to the queue, nothing is bound; the feasible ones with
        their Permit message ("waiting for minCount pods from a gang to be scheduled, ..."), the others
        with their own FitError
    and the PodGroup's PodGroupScheduled condition says which (never regressing True to False).

So a gang either binds at least its minCount pods or none: all-or-nothing. The simulation assumes
into the scheduler cache (kube assumes into its snapshot); the single scheduling thread means no other
cycle sees those assumptions, and every one is undone before the binding pass.

Not done: a member that needs preemption is handled as kube's plain pod path does (PostFilter
nominates and the pod waits), not kube's "assume on the nominated node, victims removed in memory";
workload-aware preemption (WorkloadAwarePreemption) is not implemented.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from pyscheduler.backend.queue import QueuedPodInfo
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.interfaces import Diagnosis
from pyscheduler.framework.podgroup import (
    POD_GROUP_CYCLE_KEY,
    Placement,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupStateNotFound,
)
from pyscheduler.framework.runtime import FitError, Framework
from pyscheduler.framework.status import Code, Status

if TYPE_CHECKING:
    from pyscheduler.scheduler import Scheduler

log = structlog.get_logger("pyscheduler.scheduler")

POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
POD_GROUP_SCHEDULED = "PodGroupScheduled"


@dataclass
class PodResult:
    qpi: QueuedPodInfo
    state: CycleState
    node: str = ""
    status: Status | None = None  # None: feasible
    fit_error: FitError | None = None
    nominated: str | None = None
    permit: Status | None = None  # the Permit status when feasible (None = success)

    @property
    def feasible(self) -> bool:
        return self.status is None


@dataclass
class GroupResult:
    status: Status | None  # None: the group is feasible
    pods: list[PodResult] = field(default_factory=list)


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
            sched.handle_failure(f, q, Status.as_error(msg), None, start)
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
    try:
        for q in members:
            r, revert = _pod_attempt(sched, fwk, q)
            result.pods.append(r)
            if not r.feasible:
                assert r.status is not None
                if r.status.is_rejected():
                    continue
                result.status = Status.as_error(
                    f"failed to schedule other pod from a pod group: {r.status.message()}"
                )
                break
            assert revert is not None
            reverts.append(revert)
            if r.permit is None or r.permit.is_success():
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
        sr = sched.schedule_pod(fwk, state, pod)
    except FitError as fe:
        r.nominated = sched.run_post_filter(fwk, state, pod, fe)
        r.fit_error = fe
        r.status = Status(Code.UNSCHEDULABLE, (fe.message(),))
        return r, None
    except Exception as e:
        r.status = Status.as_error(e)
        return r, None
    r.node = sr.node
    assumed = pod.with_node_name(sr.node)
    try:
        sched.cache.assume_pod(assumed)
    except Exception as e:
        r.status = Status.as_error(e)
        return r, None

    def revert() -> None:
        fwk.run_reserve_plugins_unreserve(state, assumed, sr.node)
        sched.cache.forget_pod(assumed)

    s = fwk.run_reserve_plugins_reserve(state, assumed, sr.node)
    if s is not None and not s.is_success():
        revert()
        r.status = _one_node_status(pod, sr.node, s)
        return r, None
    s = fwk.run_permit_plugins(state, assumed, sr.node)
    fwk.handle.waiting_pods.remove(pod.uid)  # a simulation: nobody waits on this permit
    if s is not None and not s.is_success() and not s.is_wait():
        revert()
        r.status = _one_node_status(pod, sr.node, s)
        return r, None
    r.permit = s
    return r, revert


def _one_node_status(pod: Any, node: str, s: Status) -> Status:
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
        if res.status is None:
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
    (everything, for an infeasible group) back to the queue; set the PodGroupScheduled condition."""
    group_status = result.status
    scheduled = unschedulable = 0
    for i, q in enumerate(members):
        r = result.pods[i] if i < len(result.pods) else None
        if group_status is not None and group_status.is_error():
            st = r.status if r is not None and r.status is not None and r.status.is_error() else group_status
            sched.handle_failure(fwk, q, st, None, start)
            continue
        if r is None:
            st = group_status if group_status is not None else _unschedulable_group()
            sched.handle_failure(fwk, q, st, None, start)
            unschedulable += 1
            continue
        if r.feasible:
            if group_status is None:
                if _bind(sched, fwk, q, r.node, start):
                    scheduled += 1
                else:
                    unschedulable += 1
                continue
            # kube: Unschedulable(permit message) with errPodGroupUnschedulable, whose text leads
            reasons = (POD_GROUP_UNSCHEDULABLE, *(r.permit.reasons if r.permit is not None else ()))
            sched.handle_failure(fwk, q, Status(Code.UNSCHEDULABLE, reasons), None, start)
            unschedulable += 1
            continue
        assert r.status is not None
        if r.fit_error is not None:
            q.unschedulable_plugins = set(r.fit_error.diagnosis.unschedulable_plugins)
            q.pending_plugins = set(r.fit_error.diagnosis.pending_plugins)
            msg = r.fit_error.message()
            sched.handle_failure(
                fwk, q, Status(Code.UNSCHEDULABLE, (msg,)), r.nominated, start, fit_error=True
            )
        else:
            sched.handle_failure(fwk, q, r.status, None, start)
        unschedulable += 1
    result_label = "scheduled"
    if group_status is not None:
        result_label = "error" if group_status.is_error() else "unschedulable"
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
        log.info("unable to schedule a pod group", pod_group=info.key, unschedulable=unschedulable)
    writer = getattr(sched.status_writer, "pod_group_condition", None)
    if callable(writer):
        writer(info.namespace, info.name, POD_GROUP_SCHEDULED, *cond)


def _bind(sched: Scheduler, fwk: Framework, q: QueuedPodInfo, node: str, start: float) -> bool:
    """kube's prepareForBindingCycle for one feasible pod of a feasible group: assume, Reserve, Permit
    (a Wait holds it in the binding cycle), then the binding cycle off-thread."""
    from pyscheduler.scheduler import ScheduleResult

    pod = q.pod
    state = CycleState()
    assumed = pod.with_node_name(node)
    try:
        sched.cache.assume_pod(assumed)
    except Exception as e:
        sched.handle_failure(fwk, q, Status.as_error(e), None, start)
        return False
    s = fwk.run_reserve_plugins_reserve(state, assumed, node)
    if s is None or s.is_success():
        s = fwk.run_permit_plugins(state, assumed, node)
        if s is not None and s.is_wait():
            s = None
    if s is not None and not s.is_success():
        fwk.run_reserve_plugins_unreserve(state, assumed, node)
        sched.cache.forget_pod(assumed)
        sched.handle_failure(fwk, q, _one_node_status(pod, node, s), None, start)
        return False
    sched.submit_binding(fwk, state, q, assumed, ScheduleResult(node, 1, 1), start)
    return True
