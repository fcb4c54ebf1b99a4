from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from pyscheduler.backend.objects import ObjectStore
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import Action, QueueingHint, Resource
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import Node, Pod
from pyscheduler.plugins.volume_binding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    ERR_REASON_UNBOUND_IMMEDIATE,
    NAME,
    PLUGIN,
    STATE_KEY,
    VolumeBinding,
    VolumeBindingArgs,
    is_schedulable_after_csi_node_change,
    is_schedulable_after_pvc_change,
    is_schedulable_after_storage_class_change,
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


# -------------------------------------------------------------------------------- PreFilter


@pytest.mark.parametrize(
    ("objs", "pod", "want_code", "want_reason"),
    [
        pytest.param([], make_pod("p").obj(), Code.SKIP, None, id="no volumes: skip"),
        pytest.param(
            [],
            make_pod("p").volume({"name": "tmp", "emptyDir": {}}).obj(),
            Code.SKIP,
            None,
            id="no claims: skip",
        ),
        pytest.param(
            [],
            pod_with("data"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'persistentvolumeclaim "data" not found',
            id="claim missing",
        ),
        pytest.param(
            [],
            pod_with(ephemeral="scratch"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"',
            id="ephemeral claim not created yet",
        ),
        pytest.param(
            [WAIT, pvc("p-scratch", owner_uid="someone-else")],
            pod_with(ephemeral="scratch"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "PVC default/p-scratch was not created for pod default/p (pod is not owner)",
            id="ephemeral claim owned by another pod",
        ),
        pytest.param(
            [WAIT, pvc("p-scratch", owner_uid="uid-default-p")],
            pod_with(ephemeral="scratch"),
            Code.SUCCESS,
            None,
            id="ephemeral claim owned by the pod",
        ),
        pytest.param(
            [WAIT, pvc("data", deleting=True)],
            pod_with("data"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'persistentvolumeclaim "data" is being deleted',
            id="claim being deleted",
        ),
        pytest.param(
            [WAIT, pvc("data", volume="gone", phase="Lost")],
            pod_with("data"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'persistentvolumeclaim "data" bound to non-existent persistentvolume "gone"',
            id="claim lost",
        ),
        pytest.param(
            [IMM, pvc("data", cls="imm")],
            pod_with("data"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ERR_REASON_UNBOUND_IMMEDIATE,
            id="unbound immediate claim",
        ),
        pytest.param(
            [sc("nomode", None), pvc("data", cls="nomode")],
            pod_with("data"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ERR_REASON_UNBOUND_IMMEDIATE,
            id="class without volumeBindingMode is Immediate",
        ),
        pytest.param(
            [pvc("data", cls=None)],
            pod_with("data"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ERR_REASON_UNBOUND_IMMEDIATE,
            id="unbound claim without class",
        ),
        pytest.param(
            [pvc("data", cls="nope")],
            pod_with("data"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ERR_REASON_UNBOUND_IMMEDIATE,
            id="unbound claim with missing class",
        ),
        pytest.param(
            [WAIT, pvc("data", volume="pv1")],
            pod_with("data"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ERR_REASON_UNBOUND_IMMEDIATE,
            id="pre-bound claim not yet bound counts as immediate",
        ),
        pytest.param([WAIT, pvc("data")], pod_with("data"), Code.SUCCESS, None, id="unbound delayed claim"),
        pytest.param(
            [IMM, pvc("data", cls="imm", volume="pv1", bound=True), pv("pv1", cls="imm")],
            pod_with("data"),
            Code.SUCCESS,
            None,
            id="bound claim",
        ),
    ],
)
def test_pre_filter(objs: list[Obj], pod: Pod, want_code: Code, want_reason: str | None) -> None:
    pl, _, _ = plugin_for(*objs)
    state = make_cycle_state()
    result, status = pl.pre_filter(state, pod, [])
    assert result is None
    assert code(status) == want_code
    if want_reason is not None:
        assert status is not None and status.reasons == (want_reason,)
    if want_code in (Code.SUCCESS, Code.SKIP):
        assert state.get(STATE_KEY) is not None


# ----------------------------------------------------------------------------------- Filter

BOUND_A = [IMM, pvc("data", cls="imm", volume="pv1", bound=True), pv("pv1", cls="imm", zone="a")]


@pytest.mark.parametrize(
    ("objs", "claims", "node_obj", "want_reasons", "want_static", "want_dynamic"),
    [
        # bound claims
        pytest.param(BOUND_A, ["data"], node(zone="a"), [], [], [], id="bound PV affinity matches"),
        pytest.param(
            BOUND_A, ["data"], node(zone="b"), [ERR_REASON_NODE_CONFLICT], [], [], id="bound PV elsewhere"
        ),
        pytest.param(
            [IMM, pvc("data", cls="imm", volume="pv1", bound=True), pv("pv1", cls="imm")],
            ["data"],
            node(zone="b"),
            [],
            [],
            [],
            id="bound PV without affinity fits anywhere",
        ),
        pytest.param(
            [IMM, pvc("data", cls="imm", volume="pv1", bound=True)],
            ["data"],
            node(),
            [ERR_REASON_PV_NOT_EXIST],
            [],
            [],
            id="bound PV missing",
        ),
        pytest.param(
            [
                IMM,
                pvc("data", cls="imm", volume="pv1", bound=True),
                pv(
                    "pv1",
                    cls="imm",
                    node_affinity={
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                        ]
                    },
                ),
            ],
            ["data"],
            node("n1"),
            [ERR_REASON_NODE_CONFLICT],
            [],
            [],
            id="PV matchFields never match (kube checks labels only)",
        ),
        pytest.param(
            [
                IMM,
                pvc("data", cls="imm", volume="pv1", bound=True),
                pv(
                    "pv1",
                    cls="imm",
                    node_affinity={
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": ZONE, "operator": "Bogus", "values": ["a"]}]},
                            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a"]}]},
                        ]
                    },
                ),
            ],
            ["data"],
            node(zone="a"),
            [],
            [],
            [],
            id="invalid affinity term ignored, valid one matches",
        ),
        # static binding
        pytest.param(
            [WAIT, pvc("data"), pv("pv1")], ["data"], node(), [], [("data", "pv1")], [], id="static PV fits"
        ),
        pytest.param(
            [WAIT, pvc("data", request="2Gi"), pv("pv1")],
            ["data"],
            node(),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="static PV too small, no provisioner",
        ),
        pytest.param(
            [WAIT, pvc("data", modes=("ReadWriteMany",)), pv("pv1")],
            ["data"],
            node(),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="static PV lacks access mode",
        ),
        pytest.param(
            [
                WAIT,
                pvc("data", selector={"matchLabels": {"tier": "fast"}}),
                pv("pv1", labels={"tier": "slow"}),
            ],
            ["data"],
            node(),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="claim selector excludes PV",
        ),
        pytest.param(
            [
                WAIT,
                pvc("data", selector={"matchLabels": {"tier": "fast"}}),
                pv("pv1", labels={"tier": "fast"}),
            ],
            ["data"],
            node(),
            [],
            [("data", "pv1")],
            [],
            id="claim selector matches PV",
        ),
        pytest.param(
            [WAIT, pvc("data"), pv("pv1", zone="b")],
            ["data"],
            node(zone="a"),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="static PV in another zone",
        ),
        pytest.param(
            [WAIT, pvc("data"), pv("pv1", claim="other")],
            ["data"],
            node(),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="PV claimed by another claim",
        ),
        pytest.param(
            [WAIT, pvc("data"), pv("pv1", claim="data", claim_uid="not-this-one")],
            ["data"],
            node(),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="PV pre-bound to a claim of the same name but other uid",
        ),
        pytest.param(
            [
                WAIT,
                pvc("data"),
                pv("pv1", claim="data", phase="Released", cls="wait", modes=("ReadOnlyMany",)),
            ],
            ["data"],
            node(),
            [],
            [("data", "pv1")],
            [],
            id="PV pre-bound to the claim wins whatever its phase/modes",
        ),
        pytest.param(
            [WAIT, pvc("data"), pv("pv1", claim="data", zone="b")],
            ["data"],
            node(zone="a"),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="pre-bound PV elsewhere: no match at all",
        ),
        pytest.param(
            [WAIT, pvc("data"), pv("small"), pv("pre", capacity="5Gi", claim="data")],
            ["data"],
            node(),
            [],
            [("data", "pre")],
            [],
            id="pre-bound PV wins over a smaller free one listed first",
        ),
        pytest.param(
            [WAIT, pvc("data"), pv("free"), pv("pre", claim="data", zone="b")],
            ["data"],
            node(zone="a"),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="pre-bound PV elsewhere hides free PVs",
        ),
        pytest.param(
            [WAIT, pvc("data"), pv("first", capacity="2Gi"), pv("second", capacity="2Gi")],
            ["data"],
            node(),
            [],
            [("data", "first")],
            [],
            id="ties go to the first PV",
        ),
        pytest.param(
            [WAIT, pvc("data"), pv("pv1", phase="Released")],
            ["data"],
            node(),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="PV not Available",
        ),
        pytest.param(
            [WAIT, pvc("data"), pv("pv1", volumeMode="Block")],
            ["data"],
            node(),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="volume mode mismatch",
        ),
        pytest.param(
            [WAIT, pvc("data"), pv("pv1", deleting=True)],
            ["data"],
            node(),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="PV being deleted",
        ),
        pytest.param(
            [WAIT, pvc("data"), pv("pv1", volumeAttributesClassName="gold")],
            ["data"],
            node(),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="volume attributes class mismatch",
        ),
        pytest.param(
            [WAIT, pvc("data"), pv("pv1", cls="other")],
            ["data"],
            node(),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="PV of another class",
        ),
        pytest.param(
            [
                WAIT,
                pvc("data"),
                pv("big", capacity="10Gi"),
                pv("small", capacity="2Gi"),
                pv("tiny", capacity="512Mi"),
            ],
            ["data"],
            node(),
            [],
            [("data", "small")],
            [],
            id="smallest fitting PV",
        ),
        pytest.param(
            [WAIT, pvc("a", request="5Gi"), pvc("b", request="1Gi"), pv("pv5", capacity="5Gi"), pv("pv1")],
            ["a", "b"],
            node(),
            [],
            [("b", "pv1"), ("a", "pv5")],
            [],
            id="claims matched smallest first",
        ),
        pytest.param(
            [WAIT, pvc("a"), pvc("b"), pv("pv1")],
            ["a", "b"],
            node(),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="one PV cannot serve two claims",
        ),
        # dynamic provisioning
        pytest.param(
            [DYN, pvc("data", cls="dyn")],
            ["data"],
            node(),
            [],
            [],
            ["data"],
            id="dynamically provisioned",
        ),
        pytest.param(
            [DYN, pvc("data", cls="dyn", request="2Gi"), pv("pv1", cls="dyn")],
            ["data"],
            node(),
            [],
            [],
            ["data"],
            id="no static fit, provisioned instead",
        ),
        pytest.param(
            [
                sc(
                    "dyn",
                    WFFC,
                    "csi.example.com",
                    [{"matchLabelExpressions": [{"key": ZONE, "values": ["b"]}]}],
                ),
                pvc("data", cls="dyn"),
            ],
            ["data"],
            node(zone="a"),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="allowedTopologies exclude node",
        ),
        pytest.param(
            [
                sc(
                    "dyn",
                    WFFC,
                    "csi.example.com",
                    [{"matchLabelExpressions": [{"key": ZONE, "values": ["a", "b"]}]}],
                ),
                pvc("data", cls="dyn"),
            ],
            ["data"],
            node(zone="a"),
            [],
            [],
            ["data"],
            id="allowedTopologies admit node",
        ),
        pytest.param(
            [sc("dyn", WFFC, "csi.example.com", [{"matchLabelExpressions": []}]), pvc("data", cls="dyn")],
            ["data"],
            node(zone="a"),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="empty topology term matches nothing",
        ),
        pytest.param(
            [sc("dyn", WFFC, ""), pvc("data", cls="dyn")],
            ["data"],
            node(),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="empty provisioner cannot provision",
        ),
        pytest.param(
            [DYN, pvc("data", cls="dyn", annotations={"volume.kubernetes.io/selected-node": "n2"})],
            ["data"],
            node("n1"),
            [ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="claim already placed on another node",
        ),
        pytest.param(
            [
                DYN,
                pvc("data", cls="dyn", annotations={"volume.kubernetes.io/selected-node": "n1"}),
                pv("pv1", cls="dyn"),
            ],
            ["data"],
            node("n1"),
            [],
            [],
            ["data"],
            id="claim placed on this node goes straight to provisioning",
        ),
        # storage capacity
        pytest.param(
            [DYN, csi_driver("csi.example.com", True), pvc("data", cls="dyn")],
            ["data"],
            node(),
            [ERR_REASON_NOT_ENOUGH_SPACE],
            [],
            [],
            id="capacity tracked, none published",
        ),
        pytest.param(
            [
                DYN,
                csi_driver("csi.example.com", True),
                capacity("c1", "dyn", "a", "10Gi"),
                pvc("data", cls="dyn"),
            ],
            ["data"],
            node(zone="a"),
            [],
            [],
            ["data"],
            id="capacity reachable and sufficient",
        ),
        pytest.param(
            [
                DYN,
                csi_driver("csi.example.com", True),
                capacity("c1", "dyn", "b", "10Gi"),
                pvc("data", cls="dyn"),
            ],
            ["data"],
            node(zone="a"),
            [ERR_REASON_NOT_ENOUGH_SPACE],
            [],
            [],
            id="capacity in another zone",
        ),
        pytest.param(
            [
                DYN,
                csi_driver("csi.example.com", True),
                capacity("c1", "dyn", "a", "10Gi", "512Mi"),
                pvc("data", cls="dyn"),
            ],
            ["data"],
            node(zone="a"),
            [ERR_REASON_NOT_ENOUGH_SPACE],
            [],
            [],
            id="maximumVolumeSize wins over capacity",
        ),
        pytest.param(
            [
                DYN,
                csi_driver("csi.example.com", True),
                capacity("c1", "dyn", None, "10Gi"),
                pvc("data", cls="dyn"),
            ],
            ["data"],
            node(zone="a"),
            [ERR_REASON_NOT_ENOUGH_SPACE],
            [],
            [],
            id="capacity without topology unusable",
        ),
        pytest.param(
            [DYN, csi_driver("csi.example.com", False), pvc("data", cls="dyn")],
            ["data"],
            node(),
            [],
            [],
            ["data"],
            id="driver without storageCapacity: no check",
        ),
        pytest.param(
            [DYN, csi_driver("csi.example.com", True), pvc("data", cls="dyn", request=None)],
            ["data"],
            node(),
            [],
            [],
            ["data"],
            id="claim without request: no check",
        ),
        # several reasons at once, in kube's order
        pytest.param(
            [*BOUND_A, WAIT, pvc("data2")],
            ["data", "data2"],
            node(zone="b"),
            [ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT],
            [],
            [],
            id="bound and unbound both fail",
        ),
    ],
)
def test_filter(
    objs: list[Obj],
    claims: list[str],
    node_obj: Node,
    want_reasons: list[str],
    want_static: list[tuple[str, str]],
    want_dynamic: list[str],
) -> None:
    pl, _, _ = plugin_for(*objs)
    pod = pod_with(*claims)
    state = make_cycle_state()
    _, pre = pl.pre_filter(state, pod, [])
    assert code(pre) == Code.SUCCESS
    status = pl.filter(state, pod, make_node_info(node_obj))
    if want_reasons:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert list(status.reasons) == want_reasons
        assert node_obj.name not in state.read(STATE_KEY).pod_volumes_by_node
    else:
        assert status is None
        pv_ = state.read(STATE_KEY).pod_volumes_by_node[node_obj.name]
        assert [(c["metadata"]["name"], v["metadata"]["name"]) for c, v in pv_.static_bindings] == want_static
        assert [c["metadata"]["name"] for c in pv_.dynamic_provisions] == want_dynamic


def test_filter_bad_claim_selector_is_an_error() -> None:
    pl, _, _ = plugin_for(
        WAIT, pvc("data", selector={"matchExpressions": [{"key": "k", "operator": "Bogus"}]}), pv("pv1")
    )
    _, status = pl.pre_filter(make_cycle_state(), pod_with("data"), [])
    assert status is not None and status.code == Code.ERROR


def test_filter_without_pre_filter_computes_state() -> None:
    pl, _, _ = plugin_for(*BOUND_A)
    state = make_cycle_state()
    assert code(pl.filter(state, pod_with("data"), make_node_info(node(zone="b")))) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    )
    assert code(pl.filter(state, pod_with("data"), make_node_info(node("n2", zone="a")))) == Code.SUCCESS
    # and a rejection PreFilter would have made is reported by Filter
    pl, _, _ = plugin_for(IMM, pvc("data", cls="imm"))
    st = pl.filter(make_cycle_state(), pod_with("data"), make_node_info(node()))
    assert st is not None and st.reasons == (ERR_REASON_UNBOUND_IMMEDIATE,)


# ----------------------------------------------------------------------- Reserve / PreBind


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


def test_static_binding_reserve_prebind_unreserve() -> None:
    pl, _, client = plugin_for(WAIT, pvc("a"), pvc("b"), pv("pv1"))
    n = node()
    state, status = schedule(pl, pod_with("a", name="p1"), n)
    assert status is None
    assert state.read(STATE_KEY).all_bound is False

    # the PV is now assumed taken: a second pod's claim finds nothing
    _, status2 = schedule(pl, pod_with("b", name="p2"), n)
    assert status2 is not None and status2.reasons == (ERR_REASON_BIND_CONFLICT,)

    assert pl.pre_bind(state, pod_with("a", name="p1"), n.name) is None
    assert client.patches == [
        (
            "PersistentVolume",
            "",
            "pv1",
            {
                "metadata": {
                    "resourceVersion": "5",
                    "annotations": {"pv.kubernetes.io/bound-by-controller": "yes"},
                },
                "spec": {
                    "claimRef": {
                        "kind": "PersistentVolumeClaim",
                        "apiVersion": "v1",
                        "namespace": "default",
                        "name": "a",
                        "uid": "uid-a",
                        "resourceVersion": "10",
                    }
                },
            },
        )
    ]

    # the binding failed later on: Unreserve makes the PV available again
    pl.unreserve(state, pod_with("a", name="p1"), n.name)
    _, status3 = schedule(pl, pod_with("b", name="p2"), n)
    assert status3 is None


def test_assumed_pv_dropped_when_api_object_changes() -> None:
    pl, objects, _ = plugin_for(WAIT, pvc("a"), pvc("b"), pv("pv1"))
    n = node()
    schedule(pl, pod_with("a", name="p1"), n)
    assert pl.pv_cache.assumed_keys() == ["pv1"]
    # the informer delivers a newer version of the PV (here: released again, e.g. claim deleted)
    newer = pv("pv1")
    newer["metadata"]["resourceVersion"] = "6"
    objects.put("PersistentVolume", newer)
    _, status = schedule(pl, pod_with("b", name="p2"), n)
    assert status is None
    assert pl.pv_cache.assumed_keys() == ["pv1"]  # now assumed for p2's claim


def test_dynamic_provisioning_reserve_prebind() -> None:
    pl, _, client = plugin_for(DYN, pvc("data", cls="dyn"))
    n1, n2 = node("n1"), node("n2")
    state, status = schedule(pl, pod_with("data", name="p1"), n1)
    assert status is None
    # the claim is assumed placed on n1: another pod using it fits only there
    _, other = schedule(pl, pod_with("data", name="p2"), n2)
    assert other is not None and other.reasons == (ERR_REASON_BIND_CONFLICT,)
    assert pl.pre_bind(state, pod_with("data", name="p1"), "n1") is None
    assert client.patches == [
        (
            "PersistentVolumeClaim",
            "default",
            "data",
            {
                "metadata": {
                    "annotations": {"volume.kubernetes.io/selected-node": "n1"},
                    "resourceVersion": "10",
                }
            },
        )
    ]
    pl.unreserve(state, pod_with("data", name="p1"), "n1")
    _, again = schedule(pl, pod_with("data", name="p2"), n2)
    assert again is None


def test_all_bound_pod_needs_no_prebind() -> None:
    pl, _, client = plugin_for(*BOUND_A)
    state, status = schedule(pl, pod_with("data"), node(zone="a"))
    assert status is None
    assert state.read(STATE_KEY).all_bound is True
    assert pl.pre_bind(state, pod_with("data"), "n1") is None
    assert client.patches == []


def test_pod_without_claims_passes_every_point() -> None:
    pl, _, client = plugin_for()
    pod = make_pod("p").obj()
    state = make_cycle_state()
    _, status = pl.pre_filter(state, pod, [])
    assert code(status) == Code.SKIP
    assert pl.reserve(state, pod, "n1") is None
    assert pl.pre_bind(state, pod, "n1") is None
    pl.unreserve(state, pod, "n1")
    # no state at all (PreFilter never ran) is fine for such a pod
    fresh = make_cycle_state()
    assert pl.reserve(fresh, pod, "n1") is None
    assert pl.pre_bind(fresh, pod, "n1") is None
    pl.unreserve(fresh, pod, "n1")
    assert client.patches == []


def test_prebind_failure_is_an_error_and_reverts() -> None:
    pl, _, _ = plugin_for(WAIT, pvc("a"), pvc("b"), pv("pv1"), client=FakeClient(fail_on="pv1"))
    n = node()
    state, _ = schedule(pl, pod_with("a", name="p1"), n)
    status = pl.pre_bind(state, pod_with("a", name="p1"), n.name)
    assert status is not None and status.code == Code.ERROR
    assert "conflict on pv1" in status.message()
    assert pl.pv_cache.assumed_keys() == []
    pl.unreserve(state, pod_with("a", name="p1"), n.name)  # idempotent after the revert


def test_prebind_on_unfiltered_node_is_an_error() -> None:
    pl, _, _ = plugin_for(WAIT, pvc("a"), pv("pv1"))
    state, _ = schedule(pl, pod_with("a"), node("n1"))
    state.read(STATE_KEY).all_bound = False
    status = pl.pre_bind(state, pod_with("a"), "elsewhere")
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == ('no pod volumes found for node "elsewhere"',)


def test_unreserve_without_state_or_node_is_noop() -> None:
    pl, _, _ = plugin_for(WAIT, pvc("a"), pv("pv1"))
    pl.unreserve(make_cycle_state(), pod_with("a"), "n1")
    state, _ = schedule(pl, pod_with("a"), node("n1"))
    pl.unreserve(state, pod_with("a"), "n9")
    assert pl.pv_cache.assumed_keys() == ["pv1"]


# ------------------------------------------------------------------------------------- args


def test_args_defaults() -> None:
    args = PLUGIN.decode(None, "args")
    assert args == VolumeBindingArgs(bind_timeout_seconds=600, shape=None)
    assert PLUGIN.name == NAME == "VolumeBinding"


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        pytest.param({"bindTimeoutSeconds": -1}, "args.bindTimeoutSeconds", id="negative timeout"),
        pytest.param({"bindTimeoutSeconds": "10"}, "args.bindTimeoutSeconds", id="timeout as a string"),
        pytest.param({"shape": []}, "args.shape", id="empty shape"),
        # StorageCapacityScoring is off in kube 1.36: even a well-formed shape is refused
        pytest.param(
            {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
            "args.shape",
            id="shape while StorageCapacityScoring is off",
        ),
        pytest.param({"bindTimeout": 5}, "args.bindTimeout", id="unknown field"),
    ],
)
def test_bad_args(raw: Obj, path: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert e.value.path == path


def test_good_args() -> None:
    args = PLUGIN.decode({"bindTimeoutSeconds": 0, "shape": None}, "args")
    assert args.bind_timeout_seconds == 0
    assert args.shape is None


# ------------------------------------------------------------------------------------ events


def test_events() -> None:
    pl, _, _ = plugin_for()
    events = {(e.event.resource, e.event.action): e.hint for e in pl.events_to_register()}
    assert (Resource.PV, Action.ADD | Action.UPDATE) in events
    assert events[(Resource.PV, Action.ADD | Action.UPDATE)] is None
    assert (Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL) in events
    assert events[(Resource.PVC, Action.ADD | Action.UPDATE)] is is_schedulable_after_pvc_change
    assert (
        events[(Resource.STORAGE_CLASS, Action.ADD | Action.UPDATE)]
        is is_schedulable_after_storage_class_change
    )
    assert events[(Resource.CSI_NODE, Action.ADD | Action.UPDATE)] is is_schedulable_after_csi_node_change


@pytest.mark.parametrize(
    ("claim", "want"),
    [
        pytest.param(pvc("data"), QueueingHint.QUEUE, id="the pod's claim"),
        pytest.param(pvc("p-scratch"), QueueingHint.QUEUE, id="the pod's ephemeral claim"),
        pytest.param(pvc("data", ns="other"), QueueingHint.SKIP, id="same name in another namespace"),
        pytest.param(pvc("unrelated"), QueueingHint.SKIP, id="another claim"),
    ],
)
def test_pvc_hint(claim: Obj, want: QueueingHint) -> None:
    pod = pod_with("data", ephemeral="scratch")
    assert is_schedulable_after_pvc_change(pod, None, claim) == want


def test_storage_class_hint() -> None:
    pod = pod_with("data")
    topo = [{"matchLabelExpressions": [{"key": ZONE, "values": ["a"]}]}]
    assert is_schedulable_after_storage_class_change(pod, None, sc("x")) == QueueingHint.QUEUE
    assert (
        is_schedulable_after_storage_class_change(pod, sc("x"), sc("x", topologies=topo))
        == QueueingHint.QUEUE
    )
    assert (
        is_schedulable_after_storage_class_change(pod, sc("x", topologies=[]), sc("x")) == QueueingHint.SKIP
    )
    relabelled = sc("x")
    relabelled["metadata"]["labels"] = {"a": "b"}
    assert is_schedulable_after_storage_class_change(pod, sc("x"), relabelled) == QueueingHint.SKIP


def test_csi_node_hint() -> None:
    pod = pod_with("data")
    ann = "storage.alpha.kubernetes.io/migrated-plugins"
    plain = {"kind": "CSINode", "metadata": {"name": "n1"}, "spec": {"drivers": []}}
    migrated = {"kind": "CSINode", "metadata": {"name": "n1", "annotations": {ann: "kubernetes.io/gce-pd"}}}
    assert is_schedulable_after_csi_node_change(pod, None, plain) == QueueingHint.QUEUE
    assert is_schedulable_after_csi_node_change(pod, plain, migrated) == QueueingHint.QUEUE
    assert is_schedulable_after_csi_node_change(pod, plain, copy.deepcopy(plain)) == QueueingHint.SKIP


# --------------------------------------------------------------------------- local PV index


def host_pv(name: str, *hosts: str, operator: str = "In", capacity: str = "1Gi", claim: str = "") -> Obj:
    expr: Obj = {"key": "kubernetes.io/hostname", "operator": operator}
    if operator in ("In", "NotIn"):
        expr["values"] = list(hosts)
    return pv(
        name,
        capacity=capacity,
        claim=claim,
        node_affinity={"nodeSelectorTerms": [{"matchExpressions": [expr]}]},
    )


@pytest.mark.parametrize(
    ("pvs", "node_name", "want"),
    [
        pytest.param([host_pv("pv1", "n1"), host_pv("pv2", "n2")], "n1", "pv1", id="local PV of this node"),
        pytest.param(
            [host_pv("pv1", "n1"), host_pv("pv2", "n2")], "n2", "pv2", id="local PV of the other node"
        ),
        pytest.param([host_pv("pv1", "n1"), host_pv("pv2", "n2")], "n3", None, id="no local PV here"),
        pytest.param(
            [host_pv("big", "n1", capacity="5Gi"), host_pv("any", "n9", operator="NotIn")],
            "n1",
            "any",
            id="non-indexable affinity is checked everywhere",
        ),
        pytest.param(
            [host_pv("pv1", "n1", "n2", capacity="5Gi"), host_pv("pv2", "n2")],
            "n2",
            "pv2",
            id="several hosts",
        ),
        pytest.param(
            [
                pv("empty", node_affinity={"nodeSelectorTerms": [{}]}),
                pv(
                    "multi",
                    node_affinity={
                        "nodeSelectorTerms": [
                            {},
                            {
                                "matchExpressions": [
                                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}
                                ]
                            },
                        ]
                    },
                ),
            ],
            "n1",
            "multi",
            id="empty terms match nothing",
        ),
        pytest.param(
            [host_pv("free", "n1"), host_pv("pre", "n2", claim="data")],
            "n1",
            None,
            id="pre-bound elsewhere decides",
        ),
    ],
)
def test_local_volumes(pvs: list[Obj], node_name: str, want: str | None) -> None:
    pl, _, _ = plugin_for(WAIT, pvc("data"), *pvs)
    pod = pod_with("data")
    state = make_cycle_state()
    pl.pre_filter(state, pod, [])
    status = pl.filter(state, pod, make_node_info(make_node(node_name)))
    if want is None:
        assert status is not None and status.reasons == (ERR_REASON_BIND_CONFLICT,)
    else:
        assert status is None
        bindings = state.read(STATE_KEY).pod_volumes_by_node[node_name].static_bindings
        assert [v["metadata"]["name"] for _, v in bindings] == [want]


class StrictObjects(ObjectStore):
    """The real store, serving only the four kinds the contract names."""

    KINDS = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode")

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        if kind not in self.KINDS:
            raise KeyError(kind)
        return super().get(kind, namespace, name)

    def list(self, kind: str, namespace: str | None = None) -> Iterable[Mapping[str, Any]]:
        if kind not in self.KINDS:
            raise KeyError(kind)
        return super().list(kind, namespace)


def test_objects_without_csi_driver_kinds() -> None:
    store = store_of(DYN, pvc("data", cls="dyn"), store=StrictObjects())
    pl = VolumeBinding(VolumeBindingArgs(), make_handle(object_store=store, client=FakeClient()))
    _, status = schedule(pl, pod_with("data"), node())
    assert status is None
