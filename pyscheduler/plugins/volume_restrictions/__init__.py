"""VolumeRestrictions: volumes that cannot be shared the way the pod wants to share them.

Behaviour (kube-scheduler 1.36, pkg/scheduler/framework/plugins/volumerestrictions):

- Inline disks conflict with the same disk already mounted by a pod on the node (Filter,
  Unschedulable, "node(s) had no available disk"):
  GCE PD: same ``pdName`` unless both mounts are read-only; AWS EBS: same ``volumeID``, always;
  iSCSI: same ``iqn`` unless both are read-only; Ceph RBD: a common monitor, same pool (default
  ``rbd``) and same image, unless both are read-only.
- ReadWriteOncePod claims: PreFilter looks up every ``persistentVolumeClaim`` of the pod (a missing
  one is UnschedulableAndUnresolvable, ``persistentvolumeclaim "<name>" not found``) and counts
  how many of its ReadWriteOncePod claims some scheduled or assumed pod already uses, anywhere in the
  cluster. If any, every node is rejected by Filter as Unschedulable ("node(s) unavailable due to
  PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"), so
  preemption can evict the user; the PreFilter extensions keep the count right while preemption
  adds and removes pods.
- PreFilter returns Skip when the pod has no such inline disk and no claim in use.

Extension points: PreFilter (with AddPod/RemovePod), Filter, EnqueueExtensions. Args: none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    as_pod,
)
from pyscheduler.framework.helpers import signers
from pyscheduler.framework.helpers.storage import PVC, pvc_claim_names
from pyscheduler.framework.interfaces import Handle, PreFilterResult
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo

NAME = "VolumeRestrictions"
STATE_KEY = f"PreFilter{NAME}"

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)

READ_WRITE_ONCE_POD = "ReadWriteOncePod"
_RESTRICTED = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")

JSONMap = Mapping[str, Any]


@dataclass(slots=True)
class _State:
    # names of the pod's claims with the ReadWriteOncePod access mode
    rwop_claims: frozenset[str]
    # how many references scheduled pods hold to those claims
    conflicting_ref_count: int
    # the pod's inline volumes that need the disk-conflict check
    restricted_volumes: tuple[JSONMap, ...]

    def clone(self) -> _State:
        return _State(self.rwop_claims, self.conflicting_ref_count, self.restricted_volumes)

    def update_with_pod(self, pod: Pod, multiplier: int) -> None:
        self.conflicting_ref_count += multiplier * _conflicting_refs(self.rwop_claims, pod)


def _conflicting_refs(rwop_claims: frozenset[str], pod: Pod) -> int:
    if not rwop_claims:
        return 0
    return sum(1 for name in pvc_claim_names(pod) if name in rwop_claims)


def needs_restrictions_check(volume: JSONMap) -> bool:
    return any(volume.get(k) is not None for k in _RESTRICTED)


def _src(volume: JSONMap, key: str) -> JSONMap | None:
    s = volume.get(key)
    return s if isinstance(s, Mapping) else ({} if s is not None else None)


def is_volume_conflict(volume: JSONMap, pod: Pod) -> bool:
    """Whether ``volume`` (of the incoming pod) conflicts with one of ``pod``'s volumes."""
    gce, ebs, iscsi, rbd = (
        _src(volume, k) for k in ("gcePersistentDisk", "awsElasticBlockStore", "iscsi", "rbd")
    )
    for existing in pod.volumes:
        if gce is not None:
            e = _src(existing, "gcePersistentDisk")
            if (
                e is not None
                and gce.get("pdName") == e.get("pdName")
                and not (gce.get("readOnly") and e.get("readOnly"))
            ):
                return True
        if ebs is not None:
            e = _src(existing, "awsElasticBlockStore")
            if e is not None and ebs.get("volumeID") == e.get("volumeID"):
                return True
        if iscsi is not None:
            e = _src(existing, "iscsi")
            if (
                e is not None
                and iscsi.get("iqn") == e.get("iqn")
                and not (iscsi.get("readOnly") and e.get("readOnly"))
            ):
                return True
        if rbd is not None:
            e = _src(existing, "rbd")
            if (
                e is not None
                and _have_overlap(rbd.get("monitors"), e.get("monitors"))
                and (rbd.get("pool") or "rbd") == (e.get("pool") or "rbd")
                and rbd.get("image") == e.get("image")
                and not (rbd.get("readOnly") and e.get("readOnly"))
            ):
                return True
    return False


def _have_overlap(a: Iterable[str] | None, b: Iterable[str] | None) -> bool:
    return bool(set(a or ()) & set(b or ()))


def satisfy_volume_conflicts(volumes: Sequence[JSONMap], node_info: NodeInfo) -> bool:
    for v in volumes:
        for pi in node_info.pods:
            if is_volume_conflict(v, pi.pod):
                return False
    return True


class VolumeRestrictions:
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching: what this plugin's answers read of the pod (kube's SignPod)."""
        return [(signers.VOLUMES, signers.volumes(pod))], None

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def _compute(self, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[_State | None, Status | None]:
        restricted = tuple(v for v in pod.volumes if needs_restrictions_check(v))
        objects = self._handle.objects
        rwop: set[str] = set()
        for claim_name in pvc_claim_names(pod):
            pvc = objects.get(PVC, pod.namespace, claim_name)
            if pvc is None:
                return None, Status.unresolvable(
                    f'persistentvolumeclaim "{claim_name}" not found', plugin=NAME
                )
            spec = pvc.get("spec")
            modes = spec.get("accessModes") if isinstance(spec, Mapping) else None
            if READ_WRITE_ONCE_POD in (modes or ()):
                rwop.add(claim_name)
        conflicting = 0
        for claim_name in sorted(rwop):
            key = f"{pod.namespace}/{claim_name}"
            # at most one pod may use a ReadWriteOncePod claim
            if any(key in ni.pvc_ref_counts for ni in nodes):
                conflicting += 1
        return _State(frozenset(rwop), conflicting, restricted), None

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        st, status = self._compute(pod, nodes)
        if st is None:
            return None, status
        if not st.restricted_volumes and st.conflicting_ref_count == 0:
            return None, Status.skip(NAME)
        state.write(STATE_KEY, st)
        return None, None

    def pre_filter_extensions(self) -> VolumeRestrictions:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        st = state.get(STATE_KEY)
        if isinstance(st, _State):
            st.update_with_pod(pod_to_add.pod, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        st = state.get(STATE_KEY)
        if isinstance(st, _State):
            st.update_with_pod(pod_to_remove.pod, -1)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        st = state.get(STATE_KEY)
        if not isinstance(st, _State):
            # PreFilter did not run for this state: compute it against the current snapshot
            computed, status = self._compute(pod, self._handle.snapshot.list())
            if computed is None:
                return status
            st = computed
        if st.restricted_volumes and not satisfy_volume_conflicts(st.restricted_volumes, node_info):
            return Status.unschedulable(ERR_REASON_DISK_CONFLICT, plugin=NAME)
        if st.conflicting_ref_count > 0:
            return Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT, plugin=NAME)
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            # a deleted pod releases its disks and claims
            ClusterEventWithHint(
                ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE), is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD)),
            # the claim the pod waits for got created
            ClusterEventWithHint(ClusterEvent(Resource.PVC, Action.ADD), is_schedulable_after_pvc_added),
        ]


# ------------------------------------------------------------------------------------ hints


def is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A deleted pod of the same namespace that held a conflicting disk or one of the pod's claims."""
    deleted = as_pod(old)
    if deleted is None:
        return QueueingHint.QUEUE
    if deleted.namespace != pod.namespace:
        return QueueingHint.SKIP
    for v in pod.volumes:
        if needs_restrictions_check(v) and is_volume_conflict(v, deleted):
            return QueueingHint.QUEUE
    claims = set(pvc_claim_names(pod))
    if any(name in claims for name in pvc_claim_names(deleted)):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_pvc_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A claim the pod refers to was created."""
    if not isinstance(new, Mapping):
        return QueueingHint.QUEUE
    md = new.get("metadata")
    md = md if isinstance(md, Mapping) else {}
    if str(md.get("namespace") or "") != pod.namespace:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE if str(md.get("name") or "") in pvc_claim_names(pod) else QueueingHint.SKIP


def new(args: None, handle: Handle) -> VolumeRestrictions:
    return VolumeRestrictions(handle)


PLUGIN = PluginSpec(
    NAME,
    new,
    None,
    "inline disks mounted read-write elsewhere on the node, and ReadWriteOncePod claims in use",
)
