"""VolumeBinding: a pod's PersistentVolumeClaims must be bound, or bindable, to volumes that the
node can reach; the scheduler binds delayed (WaitForFirstConsumer) claims once it picks a node.

Behaviour (kube-scheduler 1.36, pkg/scheduler/framework/plugins/volumebinding):

- PreFilter. A pod without PVC or generic ephemeral volumes is skipped. Each claim must exist
  (``persistentvolumeclaim "<name>" not found``; for an ephemeral volume ``waiting for ephemeral
  volume controller to create the persistentvolumeclaim "<name>"``), must not be Lost or being
  deleted, and an ephemeral claim must be owned by the pod; all of these are
  UnschedulableAndUnresolvable. Claims are then sorted into bound ones (``spec.volumeName`` set and
  the ``pv.kubernetes.io/bind-completed`` annotation present), unbound ones of a
  WaitForFirstConsumer StorageClass, and unbound "immediate" ones (no class, a missing class, an
  Immediate class, or pre-bound by ``volumeName`` but not yet bound); any immediate one makes the pod
  UnschedulableAndUnresolvable with "pod has unbound immediate PersistentVolumeClaims" (the PV
  controller must bind it first).
- Filter, per node (every failure UnschedulableAndUnresolvable, reasons in kube's order):
  bound claims need their PV to exist ("node(s) unavailable due to one or more pvc(s) bound to
  non-existent pv(s)") and the PV's ``spec.nodeAffinity`` to match the node's labels ("node(s) had
  volume node affinity conflict"). Unbound claims that already carry a
  ``volume.kubernetes.io/selected-node`` annotation fit only that node. The others, smallest
  request first, each take the smallest Available PV of their class that fits size, volume mode,
  label selector, node affinity, access modes and volume attributes class (a PV pre-bound to the
  claim wins); claims left over need dynamic provisioning: a StorageClass provisioner other than
  ``kubernetes.io/no-provisioner`` whose ``allowedTopologies`` admit the node, else "node(s) didn't
  find available persistent volumes to bind". When the provisioner is a CSIDriver with
  ``storageCapacity: true``, a CSIStorageCapacity of the class reachable from the node must hold
  the request, else "node(s) did not have enough free storage".
- Reserve: remembers the chosen PVs (pre-bound to their claims) and the claims to provision (with
  the selected-node annotation) in an assume cache, so later cycles do not pick the same PV or
  re-place the claim. Unreserve drops them.
- PreBind: writes the decisions through ``handle.client.patch``: each chosen PV gets
  ``spec.claimRef`` (and ``pv.kubernetes.io/bound-by-controller``), each claim to provision gets the
  ``volume.kubernetes.io/selected-node`` annotation; both patches carry the resourceVersion the
  decision was based on so a concurrent change fails the bind. Unlike kube it does not then poll
  for the PV controller to finish (plugins must not sleep); the PV controller completes the binding.
- Score: kube's volume-capacity scoring is behind the alpha StorageCapacityScoring gate and off by
  default, so there is no Score.

Cluster objects come from ``handle.objects``: PersistentVolumeClaim, PersistentVolume,
StorageClass, CSINode, and (when served) CSIDriver and CSIStorageCapacity. A StorageClass without
``volumeBindingMode`` is treated as the API's default, Immediate. In-tree PVs are not translated to
their CSI form before the node-affinity check.

Args (VolumeBindingArgs): ``bindTimeoutSeconds`` (default 600, must be >= 0; kept for
compatibility, nothing waits on it here) and ``shape`` (the capacity-scoring function): refused, as
kube 1.36 refuses it while its StorageCapacityScoring feature gate is off (the default).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
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
    ANN_BOUND_BY_CONTROLLER,
    ANN_MIGRATED_PLUGINS,
    ANN_SELECTED_NODE,
    CSI_DRIVER,
    CSI_STORAGE_CAPACITY,
    NOT_SUPPORTED_PROVISIONER,
    PV,
    PVC,
    STORAGE_CLASS,
    WAIT_FOR_FIRST_CONSUMER,
    JSONMap,
    annotations_of,
    binding_mode,
    claim_class,
    ephemeral_owner_error,
    get_optional,
    is_deleting,
    is_pvc_fully_bound,
    list_optional,
    name_of,
    namespace_of,
    pod_claims,
    pv_class,
    quantity_value,
    rv_of,
    spec,
    thaw,
)
from pyscheduler.framework.interfaces import ClusterObjects, Handle, PreFilterResult
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.selectors import LabelSelector, SelectorError
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Node, NodeInfo, Pod
from pyscheduler.plugins.volume_binding.assume_cache import (
    AssumeCache,
)
from pyscheduler.plugins.volume_binding.binding import (
    VolumeError,
    bind_volume_to_claim,
)
from pyscheduler.plugins.volume_binding.matching import (
    Candidate,
    CandidateIndex,
    ClaimInfo,
    claim_candidates,
    pick_volume,
)
from pyscheduler.plugins.volume_binding.topology import (
    NodeAffinity,
    TopologySelector,
)

NAME = "VolumeBinding"
STATE_KEY = f"PreFilter{NAME}"

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

DEFAULT_BIND_TIMEOUT_SECONDS = 600
MAX_CUSTOM_PRIORITY_SCORE = 10

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "ERR_REASON_UNBOUND_IMMEDIATE",
    "NAME",
    "PLUGIN",
    "STATE_KEY",
    "PodVolumes",
    "VolumeBinding",
    "VolumeBindingArgs",
    "new",
]


# ------------------------------------------------------------------------------------------ args


@dataclass(frozen=True)
class VolumeBindingArgs:
    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    # [{"utilization": 0..100 increasing, "score": 0..10}], for capacity scoring (not active)
    shape: Any = None

    def validate(self, path: str) -> None:
        if self.bind_timeout_seconds < 0:
            raise ArgsError(
                f"{path}.bindTimeoutSeconds",
                f"Invalid value: {self.bind_timeout_seconds}: invalid BindTimeoutSeconds, "
                "should not be a negative value",
            )
        if self.shape is not None:
            # kube 1.36: the StorageCapacityScoring gate is off, and any shape (even []) is refused so
            # that a config does not change meaning the day the gate turns on
            raise ArgsError(
                f"{path}.shape",
                "Invalid value: unexpected field `shape`, remove it or turn on the feature gate "
                "StorageCapacityScoring",
            )


# ----------------------------------------------------------------------------------------- state


@dataclass(slots=True)
class PodVolumes:
    """The binding decisions for one node: (claim, PV) pairs to bind and claims to provision."""

    static_bindings: list[tuple[JSONMap, JSONMap]] = field(default_factory=list)
    dynamic_provisions: list[JSONMap] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _BoundClaim:
    pvc: JSONMap
    pv: JSONMap | None
    affinity: NodeAffinity


@dataclass(frozen=True, slots=True)
class _ClassInfo:
    name: str
    provisioner: str
    topology: TopologySelector
    # None: no capacity check (not a CSI driver with storageCapacity); else (volume limit, node topology)
    capacities: tuple[tuple[int | None, LabelSelector | None], ...] | None


@dataclass(slots=True)
class _State:
    """Per-cycle data. Like kube's, clones share it: Filter fills ``pod_volumes_by_node``."""

    has_claims: bool = False
    all_bound: bool = False
    bound: list[_BoundClaim] = field(default_factory=list)
    unbound_delay: list[ClaimInfo] = field(default_factory=list)
    # per unbound claim (namespace/name): the PVs that could serve it
    candidates: dict[str, CandidateIndex] = field(default_factory=dict)
    classes: dict[str, _ClassInfo | None] = field(default_factory=dict)
    pod_volumes_by_node: dict[str, PodVolumes] = field(default_factory=dict)
    has_static_bindings: bool = False

    def clone(self) -> _State:
        return self


# ---------------------------------------------------------------------------------------- plugin


class VolumeBinding:
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching: what this plugin's answers read of the pod (kube's SignPod)."""
        return [(signers.VOLUMES, signers.volumes(pod))], None

    def __init__(self, args: VolumeBindingArgs, handle: Handle) -> None:
        self.args = args
        self._handle = handle
        self.pv_cache = AssumeCache(PV)
        self.pvc_cache = AssumeCache(PVC)

    @property
    def _objects(self) -> ClusterObjects:
        return self._handle.objects

    # -- PreFilter ---------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        objects = self._objects
        claims = pod_claims(pod)
        if not claims:
            state.write(STATE_KEY, _State())
            return None, Status.skip(NAME)
        for c in claims:
            pvc = objects.get(PVC, pod.namespace, c.name)
            if pvc is None:
                if c.ephemeral:
                    msg = (
                        "waiting for ephemeral volume controller to create the "
                        f'persistentvolumeclaim "{c.name}"'
                    )
                else:
                    msg = f'persistentvolumeclaim "{c.name}" not found'
                return None, Status.unresolvable(msg, plugin=NAME)
            status = pvc.get("status")
            if isinstance(status, Mapping) and status.get("phase") == "Lost":
                msg = (
                    f'persistentvolumeclaim "{name_of(pvc)}" bound to non-existent persistentvolume '
                    f'"{spec(pvc).get("volumeName") or ""}"'
                )
                return None, Status.unresolvable(msg, plugin=NAME)
            if is_deleting(pvc):
                msg = f'persistentvolumeclaim "{name_of(pvc)}" is being deleted'
                return None, Status.unresolvable(msg, plugin=NAME)
            if c.ephemeral:
                err = ephemeral_owner_error(pod, pvc)
                if err:
                    return None, Status.unresolvable(err, plugin=NAME)
        try:
            st, immediate = self._pod_volume_claims(objects, pod)
        except VolumeError as e:
            return None, Status.as_error(e, plugin=NAME)
        if immediate:
            return None, Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE, plugin=NAME)
        state.write(STATE_KEY, st)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def _pod_volume_claims(self, objects: ClusterObjects, pod: Pod) -> tuple[_State, int]:
        """GetPodVolumeClaims, plus the per-cycle parsing Filter needs."""
        st = _State(has_claims=True)
        immediate = 0
        unbound_delay: list[JSONMap] = []
        for c in pod_claims(pod):
            pvc = self.pvc_cache.get(objects, pod.namespace, c.name)
            if pvc is None:
                raise VolumeError(
                    f'error getting PVC "{pod.namespace}/{c.name}": '
                    f'persistentvolumeclaim "{c.name}" not found'
                )
            if c.ephemeral:
                err = ephemeral_owner_error(pod, pvc)
                if err:
                    raise VolumeError(err)
            if is_pvc_fully_bound(pvc):
                pv = self.pv_cache.get(objects, "", str(spec(pvc).get("volumeName")))
                affinity = NodeAffinity.of(pv) if pv is not None else NodeAffinity(None)
                st.bound.append(_BoundClaim(pvc, pv, affinity))
            elif self._is_delay_binding(objects, pvc) and not spec(pvc).get("volumeName"):
                unbound_delay.append(pvc)
            else:
                immediate += 1
        if immediate or not unbound_delay:
            return st, immediate
        try:  # kube finds these in Filter (FindPodVolumes): its errors are the "predicate" stage's
            st.unbound_delay = [ClaimInfo.of(pvc) for pvc in unbound_delay]
            wanted = {c.storage_class for c in st.unbound_delay}
            by_class: dict[str, list[Candidate]] = {cls: [] for cls in wanted}
            for pv in self.pv_cache.list_all(objects):
                cls = pv_class(pv)
                if cls in wanted:
                    by_class[cls].append(Candidate.of(pv))
            for claim in st.unbound_delay:
                st.candidates[claim.key] = CandidateIndex(
                    claim_candidates(claim, by_class[claim.storage_class])
                )
        except VolumeError:
            self._stage_error("predicate")
            raise
        for cls in wanted:
            st.classes[cls] = self._class_info(objects, cls) if cls else None
        return st, immediate

    @staticmethod
    def _is_delay_binding(objects: ClusterObjects, pvc: JSONMap) -> bool:
        cls = claim_class(pvc)
        if not cls:
            return False
        sc = objects.get(STORAGE_CLASS, "", cls)
        if sc is None:
            return False
        return binding_mode(sc) == WAIT_FOR_FIRST_CONSUMER

    @staticmethod
    def _class_info(objects: ClusterObjects, cls: str) -> _ClassInfo | None:
        sc = objects.get(STORAGE_CLASS, "", cls)
        if sc is None:
            return None
        provisioner = str(sc.get("provisioner") or "")
        capacities: tuple[tuple[int | None, LabelSelector | None], ...] | None = None
        driver = get_optional(objects, CSI_DRIVER, "", provisioner) if provisioner else None
        if driver is not None and spec(driver).get("storageCapacity") is True:
            caps: list[tuple[int | None, LabelSelector | None]] = []
            for cap in list_optional(objects, CSI_STORAGE_CAPACITY):
                if cap.get("storageClassName") != cls:
                    continue
                raw = cap.get("maximumVolumeSize")
                if raw is None:
                    raw = cap.get("capacity")
                limit = quantity_value(raw) if raw is not None else None
                topo = cap.get("nodeTopology")
                sel: LabelSelector | None = None
                if isinstance(topo, Mapping):
                    try:
                        sel = LabelSelector.parse(topo, "nodeTopology")
                    except SelectorError:
                        sel = None
                caps.append((limit, sel))
            capacities = tuple(caps)
        return _ClassInfo(cls, provisioner, TopologySelector(sc.get("allowedTopologies")), capacities)

    # -- Filter ------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        st = state.get(STATE_KEY)
        if not isinstance(st, _State):
            # PreFilter did not run for this state: compute it here.
            tmp = CycleState()
            _, status = self.pre_filter(tmp, pod, [node_info])
            if status is not None and status.is_skip():
                return None
            if status is not None and not status.is_success():
                return status
            st = tmp.read(STATE_KEY)
            state.write(STATE_KEY, st)
        if not st.has_claims:
            return None
        node = node_info.node
        if node is None:
            return Status.as_error("node not found", plugin=NAME)
        try:
            pod_volumes, reasons = self._find_pod_volumes(st, node)
        except VolumeError as e:
            self._stage_error("predicate")
            return Status.as_error(e, plugin=NAME)
        if reasons:
            return Status.unresolvable(*reasons, plugin=NAME)
        st.pod_volumes_by_node[node.name] = pod_volumes
        if pod_volumes.static_bindings:
            st.has_static_bindings = True
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        st = state.get(STATE_KEY)
        if isinstance(st, _State) and st.has_claims and _fits_anywhere(st):
            # every claim bound to an existing PV that any node can reach: every node passes, with
            # nothing to bind (what Filter finds node by node)
            nothing = PodVolumes()
            by_node = st.pod_volumes_by_node
            for ni in nodes:
                node = ni.node
                if node is None:
                    break
                by_node[node.name] = nothing
            else:
                return [None] * len(nodes)
        f = self.filter
        return [f(state, pod, ni) for ni in nodes]

    def _find_pod_volumes(self, st: _State, node: Node) -> tuple[PodVolumes, list[str]]:
        labels = node.labels
        bound_ok = unbound_ok = storage_ok = pvs_found = True
        static: list[tuple[JSONMap, JSONMap]] = []
        dynamic: list[JSONMap] = []
        for bc in st.bound:
            if bc.pv is None:
                pvs_found = False
                break
            if not bc.affinity.matches(labels):
                bound_ok = False
                break
        if st.unbound_delay:
            to_match: list[ClaimInfo] = []
            to_provision: list[ClaimInfo] = []
            fast_fail = False
            for claim in st.unbound_delay:
                if claim.selected_node is not None:
                    if claim.selected_node != node.name:
                        unbound_ok = False
                        fast_fail = True
                        break
                    to_provision.append(claim)
                else:
                    to_match.append(claim)
            if not fast_fail:
                if to_match:
                    unbound_ok, static, leftover = self._find_matching_volumes(st, to_match, labels)
                    to_provision.extend(leftover)
                if to_provision:
                    unbound_ok, storage_ok, dynamic = self._check_volume_provisions(st, to_provision, labels)
        reasons: list[str] = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not storage_ok:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return PodVolumes(static, dynamic), reasons

    @staticmethod
    def _find_matching_volumes(
        st: _State, claims: list[ClaimInfo], labels: Mapping[str, str]
    ) -> tuple[bool, list[tuple[JSONMap, JSONMap]], list[ClaimInfo]]:
        found = True
        chosen: set[str] = set()
        bindings: list[tuple[JSONMap, JSONMap]] = []
        leftover: list[ClaimInfo] = []
        for claim in sorted(claims, key=lambda c: c.request):
            index = st.candidates.get(claim.key)
            pv = pick_volume(index.for_node(labels), labels, chosen) if index is not None else None
            if pv is None:
                leftover.append(claim)
                found = False
                continue
            chosen.add(pv.name)
            bindings.append((claim.pvc, pv.pv))
        return found, bindings, leftover

    @staticmethod
    def _check_volume_provisions(
        st: _State, claims: list[ClaimInfo], labels: Mapping[str, str]
    ) -> tuple[bool, bool, list[JSONMap]]:
        dynamic: list[JSONMap] = []
        for claim in claims:
            if not claim.storage_class:
                raise VolumeError(f'no class for claim "{claim.key}"')
            info = st.classes.get(claim.storage_class)
            if info is None:
                raise VolumeError(f'failed to find storage class "{claim.storage_class}"')
            if not info.provisioner or info.provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not info.topology.matches(labels):
                return False, True, []
            if not _has_enough_capacity(info, claim, labels):
                return True, False, []
            dynamic.append(claim.pvc)
        return True, True, dynamic

    # -- Reserve / Unreserve -----------------------------------------------------------------
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        st = state.get(STATE_KEY)
        if not isinstance(st, _State):
            if pod_claims(pod):
                return Status.as_error(_no_state(pod), plugin=NAME)
            return None
        pod_volumes = st.pod_volumes_by_node.get(node_name)
        if pod_volumes is None:
            # no claims, or the pod was never filtered against this node
            st.all_bound = True
            return None
        try:
            st.all_bound = self._assume_pod_volumes(pod, node_name, pod_volumes)
        except VolumeError as e:
            self._stage_error("assume")
            return Status.as_error(e, plugin=NAME)
        return None

    def _assume_pod_volumes(self, pod: Pod, node_name: str, pod_volumes: PodVolumes) -> bool:
        """AssumePodVolumes; a VolumeError (a PV or claim changed or vanished since the cycle read it) reverts
        what it had assumed."""
        objects = self._objects
        if self._are_pod_volumes_bound(objects, pod):
            return True
        new_bindings: list[tuple[JSONMap, JSONMap]] = []
        new_provisions: list[JSONMap] = []
        try:
            for pvc, pv in pod_volumes.static_bindings:
                new_pv, dirty = bind_volume_to_claim(pv, pvc)
                if dirty:
                    self.pv_cache.assume(objects, new_pv)
                new_bindings.append((pvc, new_pv))
            for pvc in pod_volumes.dynamic_provisions:
                clone: dict[str, Any] = thaw(pvc)
                clone.setdefault("metadata", {}).setdefault("annotations", {})[ANN_SELECTED_NODE] = node_name
                self.pvc_cache.assume(objects, clone)
                new_provisions.append(clone)
        except VolumeError:
            self._revert(new_bindings, new_provisions)
            raise
        pod_volumes.static_bindings = new_bindings
        pod_volumes.dynamic_provisions = new_provisions
        return False

    def _are_pod_volumes_bound(self, objects: ClusterObjects, pod: Pod) -> bool:
        for c in pod_claims(pod):
            pvc = self.pvc_cache.get(objects, pod.namespace, c.name)
            if pvc is None or (c.ephemeral and ephemeral_owner_error(pod, pvc)):
                return False
            if not is_pvc_fully_bound(pvc):
                return False
        return True

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        st = state.get(STATE_KEY)
        if not isinstance(st, _State):
            return
        pod_volumes = st.pod_volumes_by_node.get(node_name)
        if pod_volumes is None:
            return
        self._revert(pod_volumes.static_bindings, pod_volumes.dynamic_provisions)

    def _revert(self, bindings: Sequence[tuple[JSONMap, JSONMap]], provisions: Sequence[JSONMap]) -> None:
        for _, pv in bindings:
            self.pv_cache.restore("", name_of(pv))
        for pvc in provisions:
            self.pvc_cache.restore(namespace_of(pvc), name_of(pvc))

    # -- PreBind -----------------------------------------------------------------------------
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        st = state.get(STATE_KEY)
        if not isinstance(st, _State):
            if pod_claims(pod):
                return Status.as_error(_no_state(pod), plugin=NAME)
            return None
        if st.all_bound:
            return None
        pod_volumes = st.pod_volumes_by_node.get(node_name)
        if pod_volumes is None:
            return Status.as_error(f'no pod volumes found for node "{node_name}"', plugin=NAME)
        client = self._handle.client
        if client is None:
            return Status.as_error("no API client to write the volume bindings with", plugin=NAME)
        bindings = pod_volumes.static_bindings
        provisions = pod_volumes.dynamic_provisions
        done_bindings = done_provisions = 0
        try:
            for _pvc, pv in bindings:
                client.patch(PV, "", name_of(pv), _pv_patch(pv))
                done_bindings += 1
            for pvc in provisions:
                client.patch(PVC, namespace_of(pvc), name_of(pvc), _pvc_patch(pvc, node_name))
                done_provisions += 1
        except Exception as e:  # the API boundary: any failure fails the binding cycle
            self._revert(bindings[done_bindings:], provisions[done_provisions:])
            self._stage_error("bind")
            return Status.as_error(e, plugin=NAME)
        return None

    def _stage_error(self, operation: str) -> None:
        """scheduler_volume_scheduling_stage_error_total{operation}: kube counts an error (not a rejection)
        of its FindPodVolumes ("predicate"), AssumePodVolumes ("assume") and BindPodVolumes ("bind")."""
        extra = getattr(self._handle, "extra", None)
        metrics = extra.get("metrics") if isinstance(extra, Mapping) else None
        record = getattr(metrics, "volume_scheduling_stage_error", None)
        if record is not None:
            record(operation)

    # -- events ------------------------------------------------------------------------------
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        add_update = Action.ADD | Action.UPDATE
        return [
            # a new StorageClass, or new allowedTopologies
            ClusterEventWithHint(
                ClusterEvent(Resource.STORAGE_CLASS, add_update), is_schedulable_after_storage_class_change
            ),
            # claims get created and bound
            ClusterEventWithHint(ClusterEvent(Resource.PVC, add_update), is_schedulable_after_pvc_change),
            # volumes get created, released, relabelled
            ClusterEventWithHint(ClusterEvent(Resource.PV, add_update)),
            # node labels decide PV node affinity and allowed topologies
            ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL)),
            # in-tree to CSI migration state
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_NODE, add_update), is_schedulable_after_csi_node_change
            ),
        ]


def _fits_anywhere(st: _State) -> bool:
    """No unbound claim, and each bound claim's PV exists and has no required node affinity."""
    return not st.unbound_delay and all(bc.pv is not None and bc.affinity.terms is None for bc in st.bound)


def _no_state(pod: Pod) -> str:
    return f"{NAME}: no state for pod {pod.key} (PreFilter did not run)"


def _pv_patch(pv: JSONMap) -> dict[str, Any]:
    md: dict[str, Any] = {}
    if rv_of(pv):
        md["resourceVersion"] = rv_of(pv)
    ann = annotations_of(pv)
    if ANN_BOUND_BY_CONTROLLER in ann:
        md["annotations"] = {ANN_BOUND_BY_CONTROLLER: ann[ANN_BOUND_BY_CONTROLLER]}
    body: dict[str, Any] = {"spec": {"claimRef": thaw(spec(pv).get("claimRef"))}}
    if md:
        body["metadata"] = md
    return body


def _pvc_patch(pvc: JSONMap, node_name: str) -> dict[str, Any]:
    md: dict[str, Any] = {"annotations": {ANN_SELECTED_NODE: node_name}}
    if rv_of(pvc):
        md["resourceVersion"] = rv_of(pvc)
    return {"metadata": md}


def _has_enough_capacity(info: _ClassInfo, claim: ClaimInfo, labels: Mapping[str, str]) -> bool:
    if not claim.has_request or info.capacities is None:
        return True
    size = _ceil(claim.request)
    return any(
        limit is not None and limit >= size and sel is not None and sel.matches(labels)
        for limit, sel in info.capacities
    )


def _ceil(q: Fraction) -> int:
    return -((-q.numerator) // q.denominator)


# ------------------------------------------------------------------------------------ hints


def _claim_names(pod: Pod) -> set[str]:
    return {c.name for c in pod_claims(pod)}


def is_schedulable_after_pvc_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A claim the pod uses (in its namespace) was created or updated."""
    if not isinstance(new, Mapping):
        return QueueingHint.QUEUE
    if namespace_of(new) != pod.namespace:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE if name_of(new) in _claim_names(pod) else QueueingHint.SKIP


def is_schedulable_after_storage_class_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Any new StorageClass, or a change of allowedTopologies."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return QueueingHint.QUEUE
    if (old.get("allowedTopologies") or None) != (new.get("allowedTopologies") or None):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_csi_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A new CSINode, or a change of its migrated-plugins annotation."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return QueueingHint.QUEUE
    if annotations_of(old).get(ANN_MIGRATED_PLUGINS) != annotations_of(new).get(ANN_MIGRATED_PLUGINS):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def new(args: VolumeBindingArgs | None, handle: Handle) -> VolumeBinding:
    return VolumeBinding(args or VolumeBindingArgs(), handle)


PLUGIN = PluginSpec(
    NAME,
    new,
    VolumeBindingArgs,
    "PVCs must be bound or bindable to volumes the node can reach; binds delayed claims",
)
