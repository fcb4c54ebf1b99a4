"""VolumeBinding tests' shared support: the API-object builders (StorageClass, PVC, PV, CSIDriver,
CSIStorageCapacity), a recording API client, the plugin over an ObjectStore and a PreFilter-Filter-Reserve driver."""

from __future__ import annotations

import copy
from typing import Any

from pyscheduler.backend.objects import ObjectStore
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import Node, Pod
from pyscheduler.plugins.volume_binding import (
    VolumeBinding,
    VolumeBindingArgs,
)
from pyscheduler.testing import make_cycle_state, make_handle, make_node, make_node_info, make_pod

WFFC = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
ZONE = "topology.kubernetes.io/zone"

Obj = dict[str, Any]


# ------------------------------------------------------------------------------------ fakes


class FakeClient:
    """The API client: records each patch; a patch of the object named ``fail_on`` raises."""

    def __init__(self, fail_on: str = "") -> None:
        self.patches: list[tuple[str, str, str, dict[str, Any]]] = []
        self.fail_on = fail_on

    def patch(self, kind: str, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        if name == self.fail_on:
            raise RuntimeError(f"conflict on {name}")
        self.patches.append((kind, namespace, name, copy.deepcopy(body)))
        return {}


# ---------------------------------------------------------------------------------- objects


def sc(name: str, mode: str | None = WFFC, provisioner: str = NO_PROVISIONER, topologies: Any = None) -> Obj:
    o: dict[str, Any] = {"kind": "StorageClass", "metadata": {"name": name}, "provisioner": provisioner}
    if mode is not None:
        o["volumeBindingMode"] = mode
    if topologies is not None:
        o["allowedTopologies"] = topologies
    return o


def pvc(
    name: str,
    cls: str | None = "wait",
    request: str | None = "1Gi",
    volume: str = "",
    bound: bool = False,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    ns: str = "default",
    annotations: dict[str, str] | None = None,
    selector: Obj | None = None,
    phase: str = "Pending",
    deleting: bool = False,
    owner_uid: str = "",
    **spec_extra: Any,
) -> Obj:
    md: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}", "resourceVersion": "10"}
    ann = dict(annotations or {})
    if bound:
        ann["pv.kubernetes.io/bind-completed"] = "yes"
    if ann:
        md["annotations"] = ann
    if deleting:
        md["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if owner_uid:
        md["ownerReferences"] = [{"kind": "Pod", "name": "p", "uid": owner_uid, "controller": True}]
    spec: dict[str, Any] = {"accessModes": list(modes), **spec_extra}
    if cls is not None:
        spec["storageClassName"] = cls
    if request is not None:
        spec["resources"] = {"requests": {"storage": request}}
    if volume:
        spec["volumeName"] = volume
    if selector is not None:
        spec["selector"] = selector
    return {"kind": "PersistentVolumeClaim", "metadata": md, "spec": spec, "status": {"phase": phase}}


def pv(
    name: str,
    cls: str = "wait",
    capacity: str = "1Gi",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    phase: str = "Available",
    claim: str = "",
    claim_uid: str = "",
    zone: str = "",
    labels: dict[str, str] | None = None,
    node_affinity: Obj | None = None,
    deleting: bool = False,
    **spec_extra: Any,
) -> Obj:
    md: dict[str, Any] = {"name": name, "resourceVersion": "5"}
    if labels:
        md["labels"] = labels
    if deleting:
        md["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: dict[str, Any] = {
        "storageClassName": cls,
        "capacity": {"storage": capacity},
        "accessModes": list(modes),
        **spec_extra,
    }
    if claim:
        spec["claimRef"] = {"namespace": "default", "name": claim}
        if claim_uid:
            spec["claimRef"]["uid"] = claim_uid
    if zone:
        node_affinity = {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}]
        }
    if node_affinity is not None:
        spec["nodeAffinity"] = {"required": node_affinity}
    return {"kind": "PersistentVolume", "metadata": md, "spec": spec, "status": {"phase": phase}}


def csi_driver(name: str, storage_capacity: bool) -> Obj:
    return {"kind": "CSIDriver", "metadata": {"name": name}, "spec": {"storageCapacity": storage_capacity}}


def capacity(name: str, cls: str, zone: str | None, cap: str, max_size: str | None = None) -> Obj:
    o: dict[str, Any] = {
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "kube-system"},
        "storageClassName": cls,
        "capacity": cap,
    }
    if zone is not None:
        o["nodeTopology"] = {"matchLabels": {ZONE: zone}}
    if max_size is not None:
        o["maximumVolumeSize"] = max_size
    return o


def pod_with(*claims: str, name: str = "p", ephemeral: str = "", uid: str = "") -> Pod:
    b = make_pod(name)
    if uid:
        b.uid(uid)
    for c in claims:
        b.pvc(c)
    if ephemeral:
        b.volume({"name": ephemeral, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}})
    return b.obj()


def store_of(*objs: Obj, store: ObjectStore | None = None) -> ObjectStore:
    store = store if store is not None else ObjectStore()
    for o in objs:
        store.put(o["kind"], o)
    return store


def plugin_for(*objs: Obj, client: FakeClient | None = None) -> tuple[VolumeBinding, ObjectStore, FakeClient]:
    """The plugin over a real object store holding ``objs`` (the informers' view), and the API client
    its PreBind writes through."""
    store = store_of(*objs)
    client = client if client is not None else FakeClient()
    return VolumeBinding(VolumeBindingArgs(), make_handle(object_store=store, client=client)), store, client


def code(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code


def node(name: str = "n1", zone: str = "a", **labels: str) -> Node:
    b = make_node(name)
    if zone:
        b.label(ZONE, zone)
    for k, v in labels.items():
        b.label(k, v)
    return b.obj()


WAIT = sc("wait")
IMM = sc("imm", IMMEDIATE)
DYN = sc("dyn", WFFC, "csi.example.com")


BOUND_A = [IMM, pvc("data", cls="imm", volume="pv1", bound=True), pv("pv1", cls="imm", zone="a")]


def schedule(pl: VolumeBinding, pod: Pod, node_obj: Node) -> tuple[CycleState, Status | None]:
    """PreFilter, Filter on one node and Reserve there, as the framework would."""
    state = make_cycle_state()
    _, status = pl.pre_filter(state, pod, [])
    if status is not None and not status.is_success():
        return state, status
    status = pl.filter(state, pod, make_node_info(node_obj))
    if status is not None:
        return state, status
    return state, pl.reserve(state, pod, node_obj.name)
