from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.framework.events import Action, QueueingHint, Resource
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.volume_zone import (
    ERR_REASON_CONFLICT,
    LABEL_BETA_REGION,
    LABEL_BETA_ZONE,
    LABEL_REGION,
    LABEL_ZONE,
    NAME,
    PLUGIN,
    STATE_KEY,
    VolumeZone,
    is_schedulable_after_pv_change,
    is_schedulable_after_pvc_change,
    is_schedulable_after_storage_class_added,
)
from pyscheduler.testing import make_handle
from pyscheduler.testing.builders import make_cycle_state, make_node, make_node_info, make_pod

Obj = dict[str, Any]


def pvc(name: str, volume: str = "", cls: str | None = None, ns: str = "default") -> Obj:
    spec: Obj = {}
    if volume:
        spec["volumeName"] = volume
    if cls is not None:
        spec["storageClassName"] = cls
    return {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def pv(name: str, **labels: str) -> Obj:
    return {"kind": "PersistentVolume", "metadata": {"name": name, "labels": dict(labels)}, "spec": {}}


def pv_l(name: str, labels: dict[str, str]) -> Obj:
    return {"kind": "PersistentVolume", "metadata": {"name": name, "labels": labels}, "spec": {}}


def sc(name: str, mode: str | None) -> Obj:
    o: Obj = {"kind": "StorageClass", "metadata": {"name": name}, "provisioner": "x"}
    if mode:
        o["volumeBindingMode"] = mode
    return o


def pod_with(*claims: str) -> Pod:
    b = make_pod("p")
    for c in claims:
        b.pvc(c)
    return b.obj()


def plugin(*objs: Obj) -> VolumeZone:
    return VolumeZone(make_handle(objects=objs))


def code(s: Status | None) -> Code:
    return Code.SUCCESS if s is None else s.code


# ---------------------------------------------------------------------------------- PreFilter


@pytest.mark.parametrize(
    ("objs", "pod", "want", "reason"),
    [
        pytest.param([], make_pod("p").obj(), Code.SKIP, None, id="no volumes"),
        pytest.param(
            [], make_pod("p").volume({"name": "v", "emptyDir": {}}).obj(), Code.SKIP, None, id="no claims"
        ),
        pytest.param(
            [],
            make_pod("p").volume({"name": "v", "persistentVolumeClaim": {"claimName": ""}}).obj(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "PersistentVolumeClaim had no name",
            id="empty claim name",
        ),
        pytest.param(
            [],
            pod_with("data"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'persistentvolumeclaim "data" not found',
            id="claim missing",
        ),
        pytest.param(
            [pvc("data")],
            pod_with("data"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "PersistentVolumeClaim had no pv name and storageClass name",
            id="unbound claim without class",
        ),
        pytest.param(
            [pvc("data", cls="gone")],
            pod_with("data"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'storageclass.storage.k8s.io "gone" not found',
            id="class missing",
        ),
        pytest.param(
            [pvc("data", cls="imm"), sc("imm", "Immediate")],
            pod_with("data"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "PersistentVolume had no name",
            id="unbound immediate claim",
        ),
        pytest.param(
            [pvc("data", cls="nomode"), sc("nomode", None)],
            pod_with("data"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "PersistentVolume had no name",
            id="class without mode is Immediate",
        ),
        pytest.param(
            [pvc("data", cls="wait"), sc("wait", "WaitForFirstConsumer")],
            pod_with("data"),
            Code.SKIP,
            None,
            id="unbound delayed claim left to VolumeBinding",
        ),
        pytest.param(
            [pvc("data", volume="pv1")],
            pod_with("data"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'persistentvolume "pv1" not found',
            id="PV missing",
        ),
        pytest.param(
            [pvc("data", volume="pv1"), pv("pv1")], pod_with("data"), Code.SKIP, None, id="PV without zone"
        ),
        pytest.param(
            [pvc("data", volume="pv1"), pv_l("pv1", {LABEL_ZONE: "a__"})],
            pod_with("data"),
            Code.SKIP,
            None,
            id="malformed zone label ignored",
        ),
        pytest.param(
            [pvc("data", volume="pv1"), pv_l("pv1", {LABEL_ZONE: "a"})],
            pod_with("data"),
            Code.SUCCESS,
            None,
            id="zonal PV",
        ),
    ],
)
def test_pre_filter(objs: list[Obj], pod: Pod, want: Code, reason: str | None) -> None:
    state = make_cycle_state()
    result, status = plugin(*objs).pre_filter(state, pod, [])
    assert result is None
    assert code(status) == want
    if reason is not None:
        assert status is not None and status.reasons == (reason,)
    assert (state.get(STATE_KEY) is not None) == (want == Code.SUCCESS)


# ------------------------------------------------------------------------------------- Filter


@pytest.mark.parametrize(
    ("pv_labels", "node_labels", "fits"),
    [
        pytest.param({LABEL_ZONE: "a"}, {LABEL_ZONE: "a"}, True, id="same zone"),
        pytest.param({LABEL_ZONE: "a"}, {LABEL_ZONE: "b"}, False, id="other zone"),
        pytest.param({LABEL_ZONE: "a"}, {}, True, id="node without topology labels fits"),
        pytest.param({LABEL_ZONE: "a"}, {"other": "x"}, True, id="node with unrelated labels fits"),
        pytest.param({LABEL_ZONE: "a"}, {LABEL_REGION: "r"}, False, id="node lacks the zone label"),
        pytest.param({LABEL_BETA_ZONE: "a"}, {LABEL_BETA_ZONE: "a"}, True, id="beta on both"),
        pytest.param({LABEL_BETA_ZONE: "a"}, {LABEL_ZONE: "a"}, True, id="beta PV label, GA node label"),
        pytest.param(
            {LABEL_BETA_ZONE: "a"}, {LABEL_ZONE: "b"}, False, id="beta PV label, GA node label differs"
        ),
        pytest.param(
            {LABEL_ZONE: "a"}, {LABEL_BETA_ZONE: "a"}, False, id="GA PV label is not matched to beta"
        ),
        pytest.param({LABEL_BETA_REGION: "r"}, {LABEL_REGION: "r"}, True, id="beta region to GA region"),
        pytest.param({LABEL_ZONE: "a__b"}, {LABEL_ZONE: "b"}, True, id="multi-zone PV"),
        pytest.param({LABEL_ZONE: " a __ c "}, {LABEL_ZONE: "c"}, True, id="multi-zone with spaces"),
        pytest.param({LABEL_ZONE: "a__b"}, {LABEL_ZONE: "c"}, False, id="multi-zone PV elsewhere"),
        pytest.param(
            {LABEL_ZONE: "a", LABEL_REGION: "r1"},
            {LABEL_ZONE: "a", LABEL_REGION: "r1"},
            True,
            id="zone and region",
        ),
        pytest.param(
            {LABEL_ZONE: "a", LABEL_REGION: "r1"},
            {LABEL_ZONE: "a", LABEL_REGION: "r2"},
            False,
            id="zone matches, region does not",
        ),
    ],
)
def test_filter(pv_labels: dict[str, str], node_labels: dict[str, str], fits: bool) -> None:
    pl = plugin(pvc("data", volume="pv1"), pv_l("pv1", pv_labels))
    pod = pod_with("data")
    state = make_cycle_state()
    pl.pre_filter(state, pod, [])
    info = make_node_info(make_node("n1").labels(node_labels))
    status = pl.filter(state, pod, info)
    if fits:
        assert status is None
    else:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == (ERR_REASON_CONFLICT,)
        assert status.plugin == NAME


def test_filter_two_volumes_must_both_match() -> None:
    pl = plugin(
        pvc("a", volume="pv1"),
        pvc("b", volume="pv2"),
        pv_l("pv1", {LABEL_ZONE: "z1"}),
        pv_l("pv2", {LABEL_ZONE: "z2"}),
    )
    pod = pod_with("a", "b")
    state = make_cycle_state()
    pl.pre_filter(state, pod, [])
    for zone in ("z1", "z2"):
        st = pl.filter(state, pod, make_node_info(make_node("n").label(LABEL_ZONE, zone)))
        assert st is not None and st.reasons == (ERR_REASON_CONFLICT,)


def test_filter_without_pre_filter() -> None:
    pl = plugin(pvc("data", volume="pv1"), pv_l("pv1", {LABEL_ZONE: "a"}))
    pod = pod_with("data")
    assert pl.filter(make_cycle_state(), pod, make_node_info(make_node("n").label(LABEL_ZONE, "a"))) is None
    st = pl.filter(make_cycle_state(), pod, make_node_info(make_node("n").label(LABEL_ZONE, "b")))
    assert st is not None and st.reasons == (ERR_REASON_CONFLICT,)
    # errors surface too
    st = plugin().filter(make_cycle_state(), pod, make_node_info(make_node("n")))
    assert st is not None and st.reasons == ('persistentvolumeclaim "data" not found',)
    # a pod without volumes needs nothing
    assert plugin().filter(make_cycle_state(), make_pod("q").obj(), make_node_info(make_node("n"))) is None


# ------------------------------------------------------------------------------------- events


def test_plugin_spec_and_events() -> None:
    assert PLUGIN.name == NAME == "VolumeZone"
    assert PLUGIN.decode(None, "args") is None
    events = {(e.event.resource, e.event.action): e.hint for e in plugin().events_to_register()}
    assert events == {
        (Resource.STORAGE_CLASS, Action.ADD): is_schedulable_after_storage_class_added,
        (Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL): None,
        (Resource.PVC, Action.ADD | Action.UPDATE): is_schedulable_after_pvc_change,
        (Resource.PV, Action.ADD | Action.UPDATE): is_schedulable_after_pv_change,
    }


def test_hints() -> None:
    pod = pod_with("data")
    assert is_schedulable_after_pvc_change(pod, None, pvc("data")) == QueueingHint.QUEUE
    assert is_schedulable_after_pvc_change(pod, pvc("data"), pvc("data", volume="pv")) == QueueingHint.QUEUE
    assert is_schedulable_after_pvc_change(pod, None, pvc("data", ns="other")) == QueueingHint.SKIP
    assert is_schedulable_after_pvc_change(pod, None, pvc("unrelated")) == QueueingHint.SKIP

    assert (
        is_schedulable_after_storage_class_added(pod, None, sc("w", "WaitForFirstConsumer"))
        == QueueingHint.QUEUE
    )
    assert is_schedulable_after_storage_class_added(pod, None, sc("i", "Immediate")) == QueueingHint.SKIP
    assert is_schedulable_after_storage_class_added(pod, None, sc("n", None)) == QueueingHint.SKIP

    old = pv_l("pv1", {LABEL_ZONE: "a"})
    assert is_schedulable_after_pv_change(pod, None, old) == QueueingHint.QUEUE
    assert is_schedulable_after_pv_change(pod, old, pv_l("pv1", {LABEL_ZONE: "b"})) == QueueingHint.QUEUE
    assert (
        is_schedulable_after_pv_change(pod, old, pv_l("pv1", {LABEL_ZONE: "a", "x": "y"}))
        == QueueingHint.SKIP
    )
