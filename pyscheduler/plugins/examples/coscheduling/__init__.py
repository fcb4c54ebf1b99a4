"""Coscheduling: gang scheduling — the pods of a group bind only once ``min-available`` of them fit.

A pod joins a group with the **label** ``scheduling.x-k8s.io/pod-group: <name>`` (groups are per
namespace) and states the group's size with ``scheduling.x-k8s.io/min-available: <n>``, read from the
pod's **annotation** first and, if there is none, from a label of that name (a positive integer; a pod
of a group without it counts as min-available 1, i.e. no gang constraint). Members may disagree; each
pod is judged by its own value. There is no PodGroup object: everything is derived from the pods.

Behaviour (modelled on kubernetes-sigs/scheduler-plugins' Coscheduling)
----------------------------------------------------------------------
- QueueSort ``less``: higher priority first; then the earlier *group creation time* (for a group, the
  creationTimestamp of the first member this scheduler saw; for a pod without a group, its own
  creationTimestamp); then the group's ``namespace/name`` (a lone pod's ``namespace/pod``), so members
  of one group leave the queue together; then the queue timestamp. Pods without a group are ordered
  as PrioritySort orders them, except that creation time, not queue time, breaks priority ties.
- PreFilter (fail fast, UnschedulableAndUnresolvable, so no preemption is tried):
  * the min-available value is not a positive integer;
  * the group's known pods — placed on nodes (bound or assumed), waiting in Permit, and pending in
    the scheduling queue, plus this one — are fewer than min-available (``pod group "ns/g" has 3
    pod(s), fewer than its min-available 4``). The queue is seen through the handle's scheduling
    queue (``pending_pod_list``) when the runtime exposes it; without it this check is skipped. Pods
    rejected this way are remembered, and moved back to the active queue as soon as a member of their
    group passes the check (a new pod is no cluster event, so nothing else would wake them);
  * the members still to place (min-available minus those already on nodes) times this pod's cpu
    request exceed the free cpu of the nodes this pod may use (its nodeSelector and required node
    affinity, schedulable nodes only).
- Reserve records the member; Unreserve forgets it and **rejects every waiting sibling**, so when one
  member times out or fails, the whole gang releases its reservations and goes back to the queue.
- Permit counts the group's members that are placed on nodes, reserved or waiting, plus this pod. At
  min-available or more it allows every waiting sibling and lets this pod through; below, the pod waits
  (up to ``permitWaitingTimeSeconds``) and its pending siblings are moved to the active queue at once
  (``activate``), so the gang is tried together instead of after backoff.
- PostBind forgets the member (it is now on a node, which Permit counts).
- Queueing hints: a pod it rejected is retried when a pod of its group is added, any pod is deleted
  (capacity), or a node is added or its allocatable grows.

Args (``pluginConfig[].args``)::

    permitWaitingTimeSeconds: 60    # how long a member waits for its gang in Permit (0 < t <= 900)

Enable it in ``multiPoint`` and disable PrioritySort there (a profile has one queueSort plugin, and
every profile must use the same one)::

    plugins:
      multiPoint:
        enabled: [{name: Coscheduling}]
        disabled: [{name: PrioritySort}]
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from pyscheduler.framework.interfaces import Handle, PreFilterResult, QueuedPodInfoView
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.runtime import MAX_PERMIT_TIMEOUT
from pyscheduler.framework.selectors import NodeSelector, SelectorError
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Node, NodeInfo, Pod

NAME = "Coscheduling"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
MIN_AVAILABLE_KEY = "scheduling.x-k8s.io/min-available"
MAX_GROUPS_REMEMBERED = 10_000

ERR_REASON_INVALID_MIN = 'invalid {key} "{value}": must be a positive integer'
ERR_REASON_TOO_FEW_PODS = 'pod group "{group}" has {count} pod(s), fewer than its min-available {min}'
ERR_REASON_NOT_ENOUGH_CPU = (
    'pod group "{group}" needs {need}m cpu for {missing} more pod(s) of {cpu}m, '
    "but the nodes it may use have {free}m free"
)
REASON_WAITING = 'waiting for pod group "{group}": {count} of min-available {min} pod(s) ready'
REASON_REJECTED = 'pod group "{group}" rejected: member {pod} was unreserved'


@dataclass(frozen=True)
class CoschedulingArgs:
    permit_waiting_time_seconds: float = 60.0

    def validate(self, path: str) -> None:
        t = self.permit_waiting_time_seconds
        if not 0 < t <= MAX_PERMIT_TIMEOUT:
            raise ArgsError(
                f"{path}.permitWaitingTimeSeconds", f"must be in (0, {MAX_PERMIT_TIMEOUT:g}], got {t:g}"
            )


@dataclass(frozen=True, slots=True)
class PodGroup:
    namespace: str
    name: str
    min_available: int

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def has(self, pod: Pod) -> bool:
        return pod.namespace == self.namespace and pod.labels.get(POD_GROUP_LABEL) == self.name


def group_of(pod: Pod) -> tuple[PodGroup | None, str]:
    """The pod's group (None if it has none) and an error message if its min-available is bad."""
    name = pod.labels.get(POD_GROUP_LABEL)
    if name is None:
        return None, ""
    raw = pod.annotations.get(MIN_AVAILABLE_KEY)
    if raw is None:
        raw = pod.labels.get(MIN_AVAILABLE_KEY)
    if raw is None:
        return PodGroup(pod.namespace, name, 1), ""
    value = raw.strip()
    if not value.isdigit() or int(value) < 1:
        return None, ERR_REASON_INVALID_MIN.format(key=MIN_AVAILABLE_KEY, value=raw)
    return PodGroup(pod.namespace, name, int(value)), ""


class Coscheduling:
    name = NAME

    def __init__(self, args: CoschedulingArgs, handle: Handle) -> None:
        self.args = args
        self._handle = handle
        self._group_created: dict[str, float] = {}
        self._reserved: dict[str, set[str]] = {}  # group key -> uids reserved and not yet bound
        self._too_few: dict[str, set[str]] = {}  # group key -> uids PreFilter rejected for too few pods
        self._lock = threading.Lock()  # guards both (Reserve/Permit run on the scheduling thread,
        # Unreserve and PostBind also on binding threads); never held while calling the queue

    # ------------------------------------------------------------------------------ QueueSort
    def less(self, a: QueuedPodInfoView, b: QueuedPodInfoView) -> bool:
        pa, pb = a.pod, b.pod
        if pa.priority != pb.priority:
            return pa.priority > pb.priority
        ta, tb = self._creation_time(pa), self._creation_time(pb)
        if ta != tb:
            return ta < tb
        ka, kb = _sort_key(pa), _sort_key(pb)
        if ka != kb:
            return ka < kb
        return a.timestamp < b.timestamp

    def _creation_time(self, pod: Pod) -> float:
        group = pod.labels.get(POD_GROUP_LABEL)
        if group is None:
            return pod.creation_timestamp
        key = f"{pod.namespace}/{group}"
        t = self._group_created.get(key)
        if t is None:
            if len(self._group_created) >= MAX_GROUPS_REMEMBERED:
                # forget the oldest-seen half; an evicted group is re-dated by its next member
                for k in list(self._group_created)[: MAX_GROUPS_REMEMBERED // 2]:
                    self._group_created.pop(k, None)
            t = self._group_created.setdefault(key, pod.creation_timestamp)
        return t

    # ------------------------------------------------------------------------------ PreFilter
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        group, err = group_of(pod)
        if err:
            return None, Status.unresolvable(err, plugin=NAME)
        if group is None or group.min_available <= 1:
            return None, None
        self._creation_time(pod)  # date the group by the first member seen, if less() has not yet
        placed = {p.uid for p in _pods_on_nodes(nodes, group)}
        pending = self._pending_members(group)
        if pending is not None:
            known = placed | {p.uid for p in pending} | self._waiting_uids(group) | {pod.uid}
            if len(known) < group.min_available:
                with self._lock:
                    if group.key not in self._too_few and len(self._too_few) >= MAX_GROUPS_REMEMBERED:
                        for k in list(self._too_few)[: MAX_GROUPS_REMEMBERED // 2]:
                            del self._too_few[k]
                    self._too_few.setdefault(group.key, set()).add(pod.uid)
                return None, Status.unresolvable(
                    ERR_REASON_TOO_FEW_PODS.format(
                        group=group.key, count=len(known), min=group.min_available
                    ),
                    plugin=NAME,
                )
            # The group is big enough now: retry the members rejected above while it was not (creating a
            # pod is no cluster event that would move them out of the unschedulable pool).
            with self._lock:
                earlier = self._too_few.pop(group.key, set()) - {pod.uid}
            if earlier:
                self._activate(sorted(earlier))
        cpu = pod.requests.milli_cpu
        missing = group.min_available - len(placed - {pod.uid})
        if cpu > 0 and missing > 0:
            need = missing * cpu
            free = _free_cpu(nodes, pod)
            if need > free:
                return None, Status.unresolvable(
                    ERR_REASON_NOT_ENOUGH_CPU.format(
                        group=group.key, need=need, missing=missing, cpu=cpu, free=free
                    ),
                    plugin=NAME,
                )
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    # ------------------------------------------------------------------------------ Reserve
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        group, _ = group_of(pod)
        if group is not None:
            with self._lock:
                self._reserved.setdefault(group.key, set()).add(pod.uid)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        group, _ = group_of(pod)
        if group is None:
            return
        self._forget(group, pod.uid)
        msg = REASON_REJECTED.format(group=group.key, pod=pod.name)
        for wp in self._handle.iterate_waiting_pods():
            if wp.pod.uid != pod.uid and group.has(wp.pod):
                wp.reject(NAME, msg)

    # ------------------------------------------------------------------------------ Permit
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        group, _ = group_of(pod)
        if group is None or group.min_available <= 1:
            return None, 0.0
        waiting = [
            wp for wp in self._handle.iterate_waiting_pods() if wp.pod.uid != pod.uid and group.has(wp.pod)
        ]
        ready = {p.uid for p in _pods_on_nodes(self._handle.snapshot.list(), group)}
        with self._lock:
            ready |= self._reserved.get(group.key, set())
        ready |= {wp.pod.uid for wp in waiting}
        ready.add(pod.uid)
        if len(ready) >= group.min_available:
            for wp in waiting:
                wp.allow(NAME)
            return None, 0.0
        self._activate_siblings(group, exclude=ready)
        reason = REASON_WAITING.format(group=group.key, count=len(ready), min=group.min_available)
        return Status.wait(reason, plugin=NAME), self.args.permit_waiting_time_seconds

    # ------------------------------------------------------------------------------ PostBind
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        group, _ = group_of(pod)
        if group is not None:
            self._forget(group, pod.uid)

    # ------------------------------------------------------------------------------ queueing hints
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, Action.ADD), is_schedulable_after_pod_added),
            ClusterEventWithHint(ClusterEvent(Resource.POD, Action.DELETE)),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_ALLOCATABLE)),
        ]

    # ------------------------------------------------------------------------------ helpers
    def _forget(self, group: PodGroup, uid: str) -> None:
        with self._lock:
            members = self._reserved.get(group.key)
            if members is not None:
                members.discard(uid)
                if not members:
                    self._reserved.pop(group.key, None)

    def _waiting_uids(self, group: PodGroup) -> set[str]:
        return {wp.pod.uid for wp in self._handle.iterate_waiting_pods() if group.has(wp.pod)}

    def _queue(self) -> Any:
        """The scheduling queue, when the runtime's handle exposes it (pyscheduler's FrameworkHandle
        keeps it as ``nominator``); None otherwise."""
        q = getattr(self._handle, "nominator", None)
        return q if callable(getattr(q, "pending_pod_list", None)) else None

    def _pending_members(self, group: PodGroup) -> list[Pod] | None:
        q = self._queue()
        if q is None:
            return None
        pools: dict[str, list[Pod]] = q.pending_pod_list()
        return [p for pods in pools.values() for p in pods if group.has(p)]

    def _activate_siblings(self, group: PodGroup, exclude: set[str]) -> None:
        pending = self._pending_members(group) or []
        uids = [p.uid for p in pending if p.uid not in exclude]
        if uids:
            self._activate(uids)

    def _activate(self, uids: list[str]) -> None:
        """Move these pods to the active queue now (pods not pending there are ignored by the queue)."""
        q = self._queue()
        activate = getattr(q, "activate", None)
        if callable(activate):
            activate(uids)


def _sort_key(pod: Pod) -> str:
    group = pod.labels.get(POD_GROUP_LABEL)
    return f"{pod.namespace}/{group if group is not None else pod.name}"


def _pods_on_nodes(nodes: Iterable[NodeInfo], group: PodGroup) -> Iterator[Pod]:
    for ni in nodes:
        for pi in ni.pods:
            if group.has(pi.pod):
                yield pi.pod


def _free_cpu(nodes: Sequence[NodeInfo], pod: Pod) -> int:
    """Free cpu (millicores) on the schedulable nodes the pod's nodeSelector and affinity allow."""
    may_use = _node_filter(pod)
    free = 0
    for ni in nodes:
        node = ni.node
        if node is None or node.unschedulable or not may_use(node):
            continue
        free += max(0, ni.allocatable.milli_cpu - ni.requested.milli_cpu)
    return free


def _node_filter(pod: Pod) -> Callable[[Node], bool]:
    """The pod's nodeSelector AND its required node affinity. A term that does not parse makes every
    node count: this is only a fail-fast estimate, and NodeAffinity reports the bad term itself."""
    selector = dict(pod.node_selector)
    required: NodeSelector | None = None
    affinity = (pod.affinity or {}).get("nodeAffinity")
    raw = (
        affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(affinity, Mapping)
        else None
    )
    if isinstance(raw, Mapping):
        try:
            required = NodeSelector.parse(raw)
        except SelectorError:
            required = None

    def may_use(node: Node) -> bool:
        labels = node.labels
        if any(labels.get(k) != v for k, v in selector.items()):
            return False
        return required is None or required.matches(labels, node.name)

    return may_use


def is_schedulable_after_pod_added(pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
    """A pod of the same group appeared (or was placed): the gang may be complete now."""
    if not isinstance(new_obj, Pod):
        return QueueingHint.QUEUE
    group = pod.labels.get(POD_GROUP_LABEL)
    if group is None:
        return QueueingHint.SKIP
    if new_obj.namespace == pod.namespace and new_obj.labels.get(POD_GROUP_LABEL) == group:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def new(args: CoschedulingArgs | None, handle: Handle) -> Coscheduling:
    return Coscheduling(args or CoschedulingArgs(), handle)


PLUGIN = PluginSpec(NAME, new, CoschedulingArgs, "gang scheduling: a pod group binds when min-available fit")
