"""Workload-aware scheduling records: PodGroups, their runtime state, and placements.

A pod with ``spec.schedulingGroup.podGroupName`` belongs to that PodGroup (scheduling.k8s.io/v1alpha2,
in the pod's namespace). With the ``GenericWorkload`` gate on, the scheduler keeps a ``PodGroupState``
per group (kube's ``podGroupState`` in ``backend/cache/podgroupstate.go``): which member pods it knows,
and of those which are unscheduled, assumed (placed by this scheduler, binding not yet seen) and
assigned (bound). Plugins read it through ``PodGroupStates`` (the handle's ``pod_group_states``).

``Placement`` / ``PodGroupAssignments`` are what the PlacementGenerate and PlacementScore extension
points exchange (``TopologyAwareWorkloadScheduling``): a subset of nodes a whole group is tried on, and
where each of its pods went in that try.

Pure: no I/O; a ``PodGroupState`` is guarded by its owner (the cache's lock).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pyscheduler.framework.types import NodeInfo, Pod

POD_GROUP_KIND = "PodGroup"
POD_GROUP_API_VERSION = "scheduling.k8s.io/v1alpha2"
# CycleState key set on every pod's state in a pod group scheduling cycle (kube's
# CycleState.IsPodGroupSchedulingCycle): plugins tell the group's simulation from a pod's own cycle
POD_GROUP_CYCLE_KEY = "pyscheduler/pod-group-cycle"


class MalformedPodGroup(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class PodGroup:
    """What the scheduler reads of a PodGroup: its gang policy and topology constraint."""

    namespace: str
    name: str
    uid: str = ""
    generation: int = 0
    # spec.schedulingPolicy.gang.minCount; None when the policy is not Gang (Basic)
    gang_min_count: int | None = None
    # spec.schedulingConstraints.topology[].key (the API allows one)
    topology_keys: tuple[str, ...] = ()
    has_constraints: bool = False  # spec.schedulingConstraints is set (even if empty)
    conditions: tuple[Mapping[str, Any], ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> PodGroup:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        if not isinstance(spec, Mapping) or not isinstance(meta, Mapping):
            raise MalformedPodGroup("PodGroup metadata and spec must be objects")
        policy = spec.get("schedulingPolicy") or {}
        gang = policy.get("gang") if isinstance(policy, Mapping) else None
        min_count: int | None = None
        if isinstance(gang, Mapping):
            raw = gang.get("minCount", 0)
            if not isinstance(raw, int) or isinstance(raw, bool):
                raise MalformedPodGroup(
                    f"spec.schedulingPolicy.gang.minCount must be an integer, got {raw!r}"
                )
            min_count = raw
        constraints = spec.get("schedulingConstraints")
        keys: tuple[str, ...] = ()
        if isinstance(constraints, Mapping):
            keys = tuple(
                str(t.get("key") or "") for t in constraints.get("topology") or () if isinstance(t, Mapping)
            )
        status = obj.get("status") or {}
        conds = tuple(c for c in (status.get("conditions") or ()) if isinstance(c, Mapping))
        return cls(
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            generation=int(meta.get("generation") or 0),
            gang_min_count=min_count,
            topology_keys=keys,
            has_constraints=constraints is not None,
            conditions=conds,
        )


class PodGroupState:
    """One pod group's members as the scheduler sees them (kube's podGroupStateData)."""

    __slots__ = ("all_pods", "assigned", "assumed", "generation", "unscheduled")

    def __init__(self) -> None:
        self.all_pods: dict[str, Pod] = {}
        self.unscheduled: set[str] = set()
        self.assumed: dict[str, Pod] = {}
        self.assigned: set[str] = set()
        self.generation = 0

    # -- changes (the owner holds its lock) --------------------------------------------------
    def add_pod(self, pod: Pod) -> None:
        self.generation += 1
        self.all_pods[pod.uid] = pod
        if pod.node_name:
            self.assigned.add(pod.uid)
            self.unscheduled.discard(pod.uid)
            self.assumed.pop(pod.uid, None)
        else:
            self.unscheduled.add(pod.uid)

    def update_pod(self, old: Pod | None, new: Pod) -> None:
        self.generation += 1
        self.all_pods[new.uid] = new
        if new.node_name and not (old is not None and old.node_name):
            self.assigned.add(new.uid)
            self.unscheduled.discard(new.uid)
            self.assumed.pop(new.uid, None)

    def delete_pod(self, uid: str) -> None:
        self.generation += 1
        self.all_pods.pop(uid, None)
        self.unscheduled.discard(uid)
        self.assumed.pop(uid, None)
        self.assigned.discard(uid)

    def assume_pod(self, pod: Pod) -> None:
        stored = self.all_pods.get(pod.uid)
        if stored is None:
            return
        self.generation += 1
        if stored.node_name:
            self.assigned.add(pod.uid)
        else:
            self.assumed[pod.uid] = pod
        self.unscheduled.discard(pod.uid)

    def forget_pod(self, uid: str) -> None:
        stored = self.all_pods.get(uid)
        if stored is None:
            return
        self.generation += 1
        self.assumed.pop(uid, None)
        if stored.node_name:
            self.assigned.add(uid)
        else:
            self.unscheduled.add(uid)

    # -- reads ----------------------------------------------------------------------------------
    def empty(self) -> bool:
        return not self.all_pods

    def all_pods_count(self) -> int:
        return len(self.all_pods)

    def scheduled_pods_count(self) -> int:
        return len(self.assumed) + len(self.assigned)

    def scheduled_pods(self) -> list[Pod]:
        return [self.all_pods[u] for u in self.assigned if u in self.all_pods] + list(self.assumed.values())

    def unscheduled_pods(self) -> list[Pod]:
        return [self.all_pods[u] for u in self.unscheduled if u in self.all_pods]

    def assumed_uids(self) -> set[str]:
        return set(self.assumed)

    def copy(self) -> PodGroupState:
        c = PodGroupState()
        c.all_pods = dict(self.all_pods)
        c.unscheduled = set(self.unscheduled)
        c.assumed = dict(self.assumed)
        c.assigned = set(self.assigned)
        c.generation = self.generation
        return c


class PodGroupStateNotFound(LookupError):
    pass


def state_not_found(namespace: str, name: str) -> PodGroupStateNotFound:
    return PodGroupStateNotFound(f"pod group state not found for pod group {namespace}/{name}")


class PodGroupStates(Protocol):
    """The scheduler's pod group states (the cache's); ``get`` returns a copy, or raises
    ``PodGroupStateNotFound`` with kube's message."""

    def get(self, namespace: str, name: str) -> PodGroupState: ...


@dataclass(frozen=True, slots=True)
class PodGroupInfo:
    """The group a pod group scheduling cycle is for."""

    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class Placement:
    """A set of nodes a pod group is tried on; ``name`` is e.g. the topology domain."""

    name: str
    nodes: Sequence[NodeInfo]


@dataclass
class PodGroupAssignments:
    """Where the group's pods went when the group was tried on ``placement``: (pod, node name)."""

    placement: Placement
    proposed: list[tuple[Pod, str]] = field(default_factory=list)


@dataclass
class PlacementScore:
    placement: Placement
    score: int = 0
