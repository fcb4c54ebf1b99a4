"""VolumeZone: a pod whose claims are bound to zonal PersistentVolumes fits only nodes in those
zones (and regions).

Behaviour (kube-scheduler 1.36, pkg/scheduler/framework/plugins/volumezone):

- PreFilter reads, for each ``persistentVolumeClaim`` volume of the pod, the claim and its bound PV,
  and collects the PV's topology labels: ``topology.kubernetes.io/zone`` and ``/region`` and the
  legacy ``failure-domain.beta.kubernetes.io/zone`` and ``/region``. A label value may list several
  zones separated by ``__``; a malformed value (an empty element) is ignored. The pod is skipped when
  no bound PV has such a label. Errors, all UnschedulableAndUnresolvable: a volume with an empty
  claim name ("PersistentVolumeClaim had no name"), a missing claim
  (``persistentvolumeclaim "<name>" not found``), an unbound claim without a class ("PersistentVolumeClaim
  had no pv name and storageClass name"), its class missing (``storageclass.storage.k8s.io "<name>" not
  found``), an unbound claim of an Immediate class ("PersistentVolume had no name"), or a missing PV
  (``persistentvolume "<name>" not found``). Unbound claims of a WaitForFirstConsumer class are left
  to VolumeBinding. A class without ``volumeBindingMode`` is the API's default, Immediate.
- Filter: a node with none of the four topology labels fits (single-zone clusters). Otherwise, for
  each PV label, the node's value for the same key (or, for a beta key, the GA key) must be one of the
  PV's values; a missing label or another value gives "node(s) had no available volume zone"
  (UnschedulableAndUnresolvable).

Extension points: PreFilter, Filter, EnqueueExtensions. Args: none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
from pyscheduler.framework.helpers import signers
from pyscheduler.framework.helpers.storage import (
    PV,
    PVC,
    STORAGE_CLASS,
    claim_class,
    meta,
    pvc_claim_names,
    spec,
)
from pyscheduler.framework.interfaces import ClusterObjects, Handle, PreFilterResult
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod

NAME = "VolumeZone"
STATE_KEY = f"PreFilter{NAME}"

ERR_REASON_CONFLICT = "node(s) had no available volume zone"

LABEL_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (LABEL_BETA_ZONE, LABEL_BETA_REGION, LABEL_ZONE, LABEL_REGION)
_TO_GA = {LABEL_BETA_ZONE: LABEL_ZONE, LABEL_BETA_REGION: LABEL_REGION}
MULTI_ZONE_DELIMITER = "__"


JSONMap = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


@dataclass(frozen=True, slots=True)
class _State:
    topologies: tuple[PVTopology, ...]

    def clone(self) -> _State:
        return self


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """LabelZonesToSet: ``a__b`` -> {a, b}; None when an element is empty."""
    out: set[str] = set()
    for part in str(value).split(MULTI_ZONE_DELIMITER):
        z = part.strip()
        if not z:
            return None
        out.add(z)
    return frozenset(out)


def pv_topologies(pv: JSONMap) -> tuple[PVTopology, ...]:
    labels = meta(pv).get("labels")
    if not isinstance(labels, Mapping):
        return ()
    name = str(meta(pv).get("name") or "")
    out: list[PVTopology] = []
    for key in TOPOLOGY_LABELS:
        if key in labels:
            zones = label_zones_to_set(labels[key])
            if zones is not None:
                out.append(PVTopology(name, key, zones))
    return tuple(out)


class VolumeZone:
    # Filter never reads the node's pods (framework/pods_adjusted.py)
    filter_ignores_node_pods = True
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching: what this plugin's answers read of the pod (kube's SignPod)."""
        return [(signers.VOLUMES, signers.volumes(pod))], None

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def _pv_topologies_for(self, pod: Pod) -> tuple[tuple[PVTopology, ...], Status | None]:
        objects: ClusterObjects = self._handle.objects
        out: list[PVTopology] = []
        for claim_name in pvc_claim_names(pod):
            if not claim_name:
                return (), Status.unresolvable("PersistentVolumeClaim had no name", plugin=NAME)
            pvc = objects.get(PVC, pod.namespace, claim_name)
            if pvc is None:
                return (), Status.unresolvable(f'persistentvolumeclaim "{claim_name}" not found', plugin=NAME)
            pv_name = str(spec(pvc).get("volumeName") or "")
            if not pv_name:
                cls = claim_class(pvc)
                if not cls:
                    msg = "PersistentVolumeClaim had no pv name and storageClass name"
                    return (), Status.unresolvable(msg, plugin=NAME)
                sc = objects.get(STORAGE_CLASS, "", cls)
                if sc is None:
                    return (), Status.unresolvable(
                        f'storageclass.storage.k8s.io "{cls}" not found', plugin=NAME
                    )
                if (sc.get("volumeBindingMode") or "Immediate") == "WaitForFirstConsumer":
                    continue
                return (), Status.unresolvable("PersistentVolume had no name", plugin=NAME)
            pv = objects.get(PV, "", pv_name)
            if pv is None:
                return (), Status.unresolvable(f'persistentvolume "{pv_name}" not found', plugin=NAME)
            out.extend(pv_topologies(pv))
        return tuple(out), None

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        topologies, status = self._pv_topologies_for(pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, Status.skip(NAME)
        state.write(STATE_KEY, _State(topologies))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.volumes:
            return None
        st = state.get(STATE_KEY)
        if isinstance(st, _State):
            topologies = st.topologies
        else:
            topologies, status = self._pv_topologies_for(pod)
            if status is not None:
                return status
        node = node_info.node
        if node is None:
            return Status.as_error("node not found", plugin=NAME)
        labels = node.labels
        if not any(k in labels for k in TOPOLOGY_LABELS):
            # a node without topology labels (single-zone cluster) fits
            return None
        for t in topologies:
            v = labels.get(t.key)
            if v is None:
                v = labels.get(_TO_GA.get(t.key, t.key))
            if v is None or v not in t.values:
                return Status.unresolvable(ERR_REASON_CONFLICT, plugin=NAME)
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            # a new WaitForFirstConsumer class lets unbound claims through PreFilter
            ClusterEventWithHint(
                ClusterEvent(Resource.STORAGE_CLASS, Action.ADD), is_schedulable_after_storage_class_added
            ),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(Resource.PVC, Action.ADD | Action.UPDATE), is_schedulable_after_pvc_change
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PV, Action.ADD | Action.UPDATE), is_schedulable_after_pv_change
            ),
        ]


# ------------------------------------------------------------------------------------ hints


def is_schedulable_after_pvc_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A claim the pod uses (same namespace, same name) was created or updated."""
    if not isinstance(new, Mapping):
        return QueueingHint.QUEUE
    if str(meta(new).get("namespace") or "") != pod.namespace:
        return QueueingHint.SKIP
    return (
        QueueingHint.QUEUE if str(meta(new).get("name") or "") in pvc_claim_names(pod) else QueueingHint.SKIP
    )


def is_schedulable_after_storage_class_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Only a new WaitForFirstConsumer class can help."""
    if not isinstance(new, Mapping):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE if new.get("volumeBindingMode") == "WaitForFirstConsumer" else QueueingHint.SKIP


def is_schedulable_after_pv_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A new PV, or a change of a PV's topology labels."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE if pv_topologies(old) != pv_topologies(new) else QueueingHint.SKIP


def new(args: None, handle: Handle) -> VolumeZone:
    return VolumeZone(handle)


PLUGIN = PluginSpec(NAME, new, None, "pods with zonal volumes fit only nodes in the volumes' zones")
