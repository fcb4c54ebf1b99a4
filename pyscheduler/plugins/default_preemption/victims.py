"""Choosing victims on one node and choosing the node: kube's SelectVictimsOnNode,
filterPodsWithPDBViolation and pickOneNodeForPreemption.

Per node (on a clone of its NodeInfo and of the CycleState):

1. remove every pod of lower priority than the preemptor (telling PreFilter extensions through
   ``RemovePod``); none: "No preemption victims found for incoming pod" (UnschedulableAndUnresolvable);
2. run the Filter plugins (with nominated pods); if the preemptor still does not fit, the node is no
   candidate and the Filter status says why;
3. sort the removed pods by importance (higher priority first, then earlier start), split them into
   those whose eviction would violate a PodDisruptionBudget and the others (order kept), and add them
   back one by one, violating ones first: a pod the preemptor still fits beside stays (is reprieved),
   the others are the victims.

Among candidate nodes the winner has, in order of precedence: the fewest PDB violations, the lowest
highest-victim priority, the smallest sum of victim priorities (each offset by MaxInt32+1 to stay
positive), the fewest victims, the latest start among its highest-priority victims; then the first.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.selectors import LabelSelector, SelectorError
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo

from .dry_run import ReprieveFilter

NO_VICTIMS_REASON = "No preemption victims found for incoming pod"
NO_VICTIMS = Status.unresolvable(NO_VICTIMS_REASON)
MAX_INT32 = 2**31 - 1


class FilterRunner(Protocol):
    """The part of the framework handle victim selection needs."""

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...


# ------------------------------------------------------------------------------------------ ordering


def start_time(pod: Pod) -> float:
    """When the pod started, for ordering. kube uses status.startTime and "now" for pods that have none;
    we keep creationTimestamp, and a pod without one counts as started last (like kube's "now")."""
    return pod.creation_timestamp or math.inf


def importance_key(pod: Pod) -> tuple[int, float]:
    """Sort key for kube's MoreImportantPod: higher priority first, then the earlier started."""
    return (-pod.priority, start_time(pod))


def sort_by_importance(pods: list[PodInfo]) -> None:
    pods.sort(key=lambda pi: importance_key(pi.pod))


# ------------------------------------------------------------------------------------------ PDBs


@dataclass(frozen=True, slots=True)
class PDB:
    """What preemption reads of a policy/v1 PodDisruptionBudget."""

    namespace: str
    name: str
    selector: LabelSelector | None  # None: matches nothing (missing, empty or invalid selector)
    disruptions_allowed: int
    disrupted_pods: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> PDB:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        selector: LabelSelector | None
        try:
            selector = LabelSelector.parse(spec.get("selector"))
        except (SelectorError, AttributeError, TypeError):
            selector = None  # an invalid selector matches no pod
        if selector is not None and selector.is_empty():
            selector = None  # kube: a nil or empty PDB selector matches nothing
        try:
            allowed = int(status.get("disruptionsAllowed") or 0)
        except (TypeError, ValueError):
            allowed = 0
        return cls(
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            selector=selector,
            disruptions_allowed=allowed,
            disrupted_pods=frozenset(status.get("disruptedPods") or ()),
        )

    def matches(self, pod: Pod) -> bool:
        sel = self.selector
        return sel is not None and pod.namespace == self.namespace and sel.matches(pod.labels)


def parse_pdbs(objs: Iterable[Mapping[str, Any]]) -> list[PDB]:
    """Only PDBs that can match a pod are kept (the others never count)."""
    out = []
    for o in objs:
        pdb = PDB.from_dict(o)
        if pdb.selector is not None:
            out.append(pdb)
    return out


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[PDB]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split ``pods`` (order kept) into those whose eviction, after the ones before them, would take a
    matching PDB's disruptionsAllowed below zero, and the others. A pod already listed in a PDB's
    status.disruptedPods does not count against that PDB."""
    allowed = [p.disruptions_allowed for p in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pi in pods:
        pod = pi.pod
        violated = False
        if pod.labels:  # a pod without labels matches no PDB
            for i, pdb in enumerate(pdbs):
                if not pdb.matches(pod) or pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pi)
    return violating, non_violating


# ------------------------------------------------------------------------------------------ one node


_LOWEST_MAX = 1 << 16  # node names has_lower_priority_pods' memo holds before it starts over
_NO_PODS = 1 << 62  # the lowest priority of a node without pods: above any pod's (int32)


def has_lower_priority_pods(
    node_info: NodeInfo, pod: Pod, lowest: dict[str, tuple[int, int]] | None = None
) -> bool:
    """Whether ``node_info`` has a pod ``pod`` could evict; without one, select_victims_on_node answers
    NO_VICTIMS, which callers can say without cloning the node and the cycle state.

    ``lowest`` (name -> (generation, lowest priority on the node)), kept by the caller across cycles,
    spares the walk of the node's pods until the node changes: a node with thousands of pods of one
    priority (upstream's EventHandling* workloads) was walked in full for every unschedulable pod."""
    if lowest is None:
        priority = pod.priority
        return any(pi.pod.priority < priority for pi in node_info.pods)
    gen = node_info.generation
    seen = lowest.get(node_info.name)
    if seen is None or seen[0] != gen:
        if len(lowest) >= _LOWEST_MAX:
            lowest.clear()  # names of nodes long gone: start over
        low = min((pi.pod.priority for pi in node_info.pods), default=_NO_PODS)
        seen = lowest[node_info.name] = (gen, low)
    return seen[1] < pod.priority


def too_small_without_lower_priority_pods(
    node_info: NodeInfo, pod: Pod, request: Any, nominated: Iterable[PodInfo] = ()
) -> bool:
    """Whether NodeResourcesFit must reject ``pod`` on ``node_info`` even with every lower-priority pod
    removed: then the dry run cannot make the node a candidate. ``request`` is NodeResourcesFit's
    PreFilter state (``milli_cpu``, ``memory``); ``nominated`` the pods nominated to the node, of which
    those of priority >= the pod's (but the pod itself) are added for the Filter pass that counts them.
    Only the pod count, CPU and memory are checked, with the plugin's arithmetic, so a True here is a
    Filter failure in the dry run."""
    priority = pod.priority
    cpu = mem = removed = 0
    for pi in nominated:
        p = pi.pod
        if p.uid != pod.uid and p.priority >= priority:
            r = p.requests
            cpu -= r.milli_cpu
            mem -= r.memory
            removed -= 1
    for pi in node_info.pods:
        p = pi.pod
        if p.priority < priority:
            r = p.requests
            cpu += r.milli_cpu
            mem += r.memory
            removed += 1
    alloc, used = node_info.allocatable, node_info.requested
    if len(node_info.pods) - removed + 1 > alloc.allowed_pod_number:
        return True
    q = request.milli_cpu
    if q > 0 and q > alloc.milli_cpu - (used.milli_cpu - cpu):
        return True
    q = request.memory
    return bool(q > 0 and q > alloc.memory - (used.memory - mem))


def victims_by_resources(
    node_info: NodeInfo, pod: Pod, request: Any, pdbs: Sequence[PDB]
) -> tuple[list[PodInfo], int, list[bool]] | None:
    """select_victims_on_node's search done on numbers, for a cycle where NodeResourcesFit is the only
    Filter plugin that looks at the node's pods and the pod asks for no scalar resource: the pod count,
    CPU, memory and ephemeral storage of the node without its lower-priority pods, then each of those
    pods put back in kube's reprieve order if the pod still fits beside it (NodeResourcesFit's
    arithmetic). Returns the victims (most important first), how many violate a PDB, and whether each
    reprieve step fitted; None when the pod does not fit even without them or nothing would be evicted
    (the caller then runs the full dry run, whose status says why). The caller checks the result with
    one Filter pass on the node without the victims."""
    priority = pod.priority
    potential = [pi for pi in node_info.pods if pi.pod.priority < priority]
    if not potential:
        return None
    alloc, used = node_info.allocatable, node_info.requested
    cpu, mem, eph = used.milli_cpu, used.memory, used.ephemeral_storage
    for pi in potential:
        r = pi.pod.requests
        cpu -= r.milli_cpu
        mem -= r.memory
        eph -= r.ephemeral_storage
    num = len(node_info.pods) - len(potential)
    max_pods = alloc.allowed_pod_number
    q_cpu, q_mem, q_eph = request.milli_cpu, request.memory, request.ephemeral_storage
    # the room left beside the pod (its own requests taken off): a pod put back fits if it fits there
    room_cpu = alloc.milli_cpu - q_cpu if q_cpu > 0 else math.inf
    room_mem = alloc.memory - q_mem if q_mem > 0 else math.inf
    room_eph = alloc.ephemeral_storage - q_eph if q_eph > 0 else math.inf
    if num + 1 > max_pods or cpu > room_cpu or mem > room_mem or eph > room_eph:
        return None
    sort_by_importance(potential)
    violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
    victims: list[PodInfo] = []
    steps: list[bool] = []
    num_violating = 0
    for i, pi in enumerate(violating + non_violating):
        r = pi.pod.requests
        c, m, e = cpu + r.milli_cpu, mem + r.memory, eph + r.ephemeral_storage
        fits = num + 2 <= max_pods and c <= room_cpu and m <= room_mem and e <= room_eph
        steps.append(fits)
        if fits:
            cpu, mem, eph, num = c, m, e, num + 1
        else:
            victims.append(pi)
            if i < len(violating):
                num_violating += 1
    if not victims:
        return None
    if violating and non_violating:
        sort_by_importance(victims)
    return victims, num_violating, steps


def select_victims_on_node(
    fh: FilterRunner,
    state: CycleState,
    pod: Pod,
    node_info: NodeInfo,
    pdbs: Sequence[PDB],
    *,
    reprieve: ReprieveFilter | None = None,
    run_extensions: bool = True,
) -> tuple[list[Pod], int, Status | None]:
    """The fewest pods to evict from ``node_info`` so that ``pod`` fits, with how many of them violate a
    PDB. ``node_info`` must be a clone, and ``state`` too unless nothing changes it (``dry_run.DryRunPlan``):
    they are changed. ``reprieve``: the Filter pass for the reprieve steps, when the pod-independent plugins
    may be left out there (no pods of equal or higher priority nominated to the node);
    ``run_extensions``: False when no PreFilter extension would run in this cycle."""
    search = _VictimSearch(fh, state, pod, node_info, reprieve, run_extensions)
    potential = [pi for pi in node_info.pods if pi.pod.priority < pod.priority]
    for pi in potential:
        err = search.remove(pi)
        if err is not None:
            return [], 0, err
    if not potential:
        return [], 0, NO_VICTIMS

    # If the pod does not fit even with every lower-priority pod gone, the node cannot help (kube does
    # not look for the case where the pod has affinity to a victim: not worth the cost).
    s = search.filter()
    if s is not None and not s.is_success():
        return [], 0, s

    sort_by_importance(potential)
    violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
    num_violating, err = search.reprieve_all(violating, non_violating)
    if err is not None:
        return [], 0, err
    victims = search.victims
    if violating and non_violating:
        sort_by_importance(victims)  # keep victims ordered from most to least important
    return [pi.pod for pi in victims], num_violating, None


class _VictimSearch:
    """One node's dry run: pods taken off and put back, each change told to the PreFilter extensions;
    the pods that could not be put back are the victims, in the order they were tried."""

    __slots__ = ("fh", "node_info", "pod", "reprieve_filter", "run_extensions", "state", "victims")

    def __init__(
        self,
        fh: FilterRunner,
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        reprieve_filter: ReprieveFilter | None = None,
        run_extensions: bool = True,
    ) -> None:
        self.fh = fh
        self.state = state
        self.pod = pod
        self.node_info = node_info
        self.reprieve_filter = reprieve_filter
        self.run_extensions = run_extensions
        self.victims: list[PodInfo] = []

    def remove(self, pi: PodInfo) -> Status | None:
        self.node_info.remove_pod(pi.pod)
        if not self.run_extensions:
            return None
        s = self.fh.run_pre_filter_extension_remove_pod(self.state, self.pod, pi, self.node_info)
        return None if s is None or s.is_success() else _as_error(s)

    def add(self, pi: PodInfo) -> Status | None:
        self.node_info.add_pod(pi)
        if not self.run_extensions:
            return None
        s = self.fh.run_pre_filter_extension_add_pod(self.state, self.pod, pi, self.node_info)
        return None if s is None or s.is_success() else _as_error(s)

    def filter(self) -> Status | None:
        return self.fh.run_filter_plugins_with_nominated_pods(self.state, self.pod, self.node_info)

    def fits(self) -> bool:
        """A reprieve step's Filter pass (after a first pass that passed)."""
        rf = self.reprieve_filter
        if rf is not None:
            return rf.fits(self.state, self.pod, self.node_info)
        st = self.filter()
        return st is None or st.is_success()

    def reprieve(self, pi: PodInfo) -> tuple[bool, Status | None]:
        """Put ``pi`` back; if the pod no longer fits, take it off again and make it a victim."""
        err = self.add(pi)
        if err is not None:
            return False, err
        fits = self.fits()
        if not fits:
            err = self.remove(pi)
            if err is not None:
                return False, err
            self.victims.append(pi)
        return fits, None

    def reprieve_all(
        self, violating: Sequence[PodInfo], non_violating: Sequence[PodInfo]
    ) -> tuple[int, Status | None]:
        """kube's order: the PDB-violating pods first, then the others; returns how many violating pods
        stay victims."""
        num_violating = 0
        for pi in violating:
            fits, err = self.reprieve(pi)
            if err is not None:
                return 0, err
            if not fits:
                num_violating += 1
        for pi in non_violating:
            _, err = self.reprieve(pi)
            if err is not None:
                return 0, err
        return num_violating, None


def _as_error(s: Status) -> Status:
    """kube turns a failed PreFilter extension into an error (status.AsError)."""
    return s if s.code == Code.ERROR else Status(Code.ERROR, s.reasons, s.plugin, s.error)


# ------------------------------------------------------------------------------------------ candidates


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where the preemptor fits once ``victims`` (most important first) are gone."""

    name: str
    victims: tuple[Pod, ...]
    num_pdb_violations: int = 0


def earliest_start_of_highest_priority(victims: Sequence[Pod]) -> float:
    """kube's GetEarliestPodStartTime: among the victims of the highest priority, the earliest start."""
    top = max(p.priority for p in victims)
    return min(start_time(p) for p in victims if p.priority == top)


def _score_funcs() -> tuple[Any, ...]:
    return (
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(p.priority + MAX_INT32 + 1 for p in c.victims),
        lambda c: -len(c.victims),
        lambda c: earliest_start_of_highest_priority(c.victims),
    )


def pick_one_node_for_preemption(candidates: Sequence[Candidate]) -> Candidate | None:
    """kube's SelectCandidate / pickOneNodeForPreemption: each criterion keeps the best-scoring nodes;
    the first criterion that leaves one node decides; then the first remaining node wins."""
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    remaining = list(candidates)
    for f in _score_funcs():
        scores = [f(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            break
    return remaining[0]
