"""VolumeBinding PreFilter and Filter: bound, static and dynamic claims, node affinity, capacity, messages."""

from __future__ import annotations

import pytest

from pyscheduler.framework.status import Code
from pyscheduler.framework.types import Node, Pod
from pyscheduler.plugins.volume_binding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    ERR_REASON_UNBOUND_IMMEDIATE,
    STATE_KEY,
)
from pyscheduler.plugins.volume_binding._fixtures import (
    BOUND_A,
    DYN,
    IMM,
    WAIT,
    WFFC,
    ZONE,
    Obj,
    capacity,
    code,
    csi_driver,
    node,
    plugin_for,
    pod_with,
    pv,
    pvc,
    sc,
)
from pyscheduler.testing import make_cycle_state, make_node_info, make_pod

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
@pytest.mark.parametrize("batch", [False, True], ids=["filter", "filter_nodes"])
def test_filter(
    objs: list[Obj],
    claims: list[str],
    node_obj: Node,
    want_reasons: list[str],
    want_static: list[tuple[str, str]],
    want_dynamic: list[str],
    batch: bool,
) -> None:
    pl, _, _ = plugin_for(*objs)
    pod = pod_with(*claims)
    state = make_cycle_state()
    _, pre = pl.pre_filter(state, pod, [])
    assert code(pre) == Code.SUCCESS
    if batch:
        [status] = pl.filter_nodes(state, pod, [make_node_info(node_obj)])
    else:
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
