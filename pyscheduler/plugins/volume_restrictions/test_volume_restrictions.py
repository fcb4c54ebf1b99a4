from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.events import Action, QueueingHint, Resource
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo
from pyscheduler.plugins.volume_restrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    NAME,
    PLUGIN,
    STATE_KEY,
    VolumeRestrictions,
    is_schedulable_after_pod_deleted,
    is_schedulable_after_pvc_added,
)
from pyscheduler.testing import make_handle
from pyscheduler.testing.builders import make_cycle_state, make_node, make_node_info, make_pod

Obj = dict[str, Any]


def pvc(name: str, *modes: str, ns: str = "default") -> Obj:
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"accessModes": list(modes or ("ReadWriteOnce",))},
    }


def plugin(*objs: Obj, nodes: Sequence[NodeInfo] = ()) -> VolumeRestrictions:
    snapshot = Snapshot.from_nodes(
        [ni.node for ni in nodes if ni.node is not None],
        [pi.pod.with_node_name(pi.pod.node_name or ni.name) for ni in nodes for pi in ni.pods],
    )
    return VolumeRestrictions(make_handle(snapshot, objects=objs))


def code(s: Status | None) -> Code:
    return Code.SUCCESS if s is None else s.code


def gce(pd: str, ro: bool = False) -> Obj:
    return {"name": "v", "gcePersistentDisk": {"pdName": pd, "readOnly": ro}}


def ebs(vid: str, ro: bool = False) -> Obj:
    return {"name": "v", "awsElasticBlockStore": {"volumeID": vid, "readOnly": ro}}


def iscsi(iqn: str, ro: bool = False) -> Obj:
    return {"name": "v", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": iqn, "lun": 0, "readOnly": ro}}


def rbd(monitors: list[str], pool: str | None, image: str, ro: bool = False) -> Obj:
    src: Obj = {"monitors": monitors, "image": image, "readOnly": ro}
    if pool is not None:
        src["pool"] = pool
    return {"name": "v", "rbd": src}


def pod_vol(name: str, *volumes: Obj, ns: str = "default") -> Pod:
    b = make_pod(name, ns)
    for v in volumes:
        b.volume(v)
    return b.obj()


# --------------------------------------------------------------------------------- disk conflicts


@pytest.mark.parametrize(
    ("new", "existing", "conflict"),
    [
        pytest.param(gce("d1"), gce("d1"), True, id="GCE PD same disk read-write"),
        pytest.param(gce("d1", ro=True), gce("d1"), True, id="GCE PD one read-only"),
        pytest.param(gce("d1", ro=True), gce("d1", ro=True), False, id="GCE PD both read-only"),
        pytest.param(gce("d1"), gce("d2"), False, id="GCE PD other disk"),
        pytest.param(ebs("vol-1"), ebs("vol-1"), True, id="EBS same volume"),
        pytest.param(ebs("vol-1", ro=True), ebs("vol-1", ro=True), True, id="EBS same volume even read-only"),
        pytest.param(ebs("vol-1"), ebs("vol-2"), False, id="EBS other volume"),
        pytest.param(iscsi("iqn.a"), iscsi("iqn.a"), True, id="iSCSI same iqn"),
        pytest.param(iscsi("iqn.a", ro=True), iscsi("iqn.a", ro=True), False, id="iSCSI both read-only"),
        pytest.param(iscsi("iqn.a"), iscsi("iqn.b"), False, id="iSCSI other iqn"),
        pytest.param(
            rbd(["m1", "m2"], "p", "img"), rbd(["m2", "m3"], "p", "img"), True, id="RBD shared monitor"
        ),
        pytest.param(rbd(["m1"], "p", "img"), rbd(["m2"], "p", "img"), False, id="RBD no common monitor"),
        pytest.param(rbd(["m1"], "p", "img"), rbd(["m1"], "q", "img"), False, id="RBD other pool"),
        pytest.param(rbd(["m1"], "p", "img"), rbd(["m1"], "p", "other"), False, id="RBD other image"),
        pytest.param(rbd(["m1"], None, "img"), rbd(["m1"], "rbd", "img"), True, id="RBD default pool is rbd"),
        pytest.param(
            rbd(["m1"], "p", "img", ro=True), rbd(["m1"], "p", "img", ro=True), False, id="RBD both read-only"
        ),
        pytest.param(gce("x"), ebs("x"), False, id="different volume kinds never conflict"),
    ],
)
def test_disk_conflicts(new: Obj, existing: Obj, conflict: bool) -> None:
    pl = plugin()
    pod = pod_vol("new", new)
    info = make_node_info(make_node("n1"), pod_vol("old", {"name": "other", "emptyDir": {}}, existing))
    state = make_cycle_state()
    _, pre = pl.pre_filter(state, pod, [info])
    assert pre is None
    status = pl.filter(state, pod, info)
    if conflict:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE
        assert status.reasons == (ERR_REASON_DISK_CONFLICT,)
        assert status.plugin == NAME
    else:
        assert status is None
    # the same disk on another node is no problem
    assert pl.filter(state, pod, make_node_info(make_node("n2"))) is None


def test_pod_without_restricted_volumes_or_claims_is_skipped() -> None:
    _, status = plugin().pre_filter(make_cycle_state(), pod_vol("p", {"name": "v", "emptyDir": {}}), [])
    assert code(status) == Code.SKIP


# ----------------------------------------------------------------------------- ReadWriteOncePod


def claim_pod(name: str, *claims: str, ns: str = "default") -> Pod:
    b = make_pod(name, ns)
    for c in claims:
        b.pvc(c)
    return b.obj()


@pytest.mark.parametrize(
    ("objs", "users", "want_pre", "want_filter", "reason"),
    [
        pytest.param(
            [],
            [],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            None,
            'persistentvolumeclaim "data" not found',
            id="claim missing",
        ),
        pytest.param([pvc("data", "ReadWriteOncePod")], [], Code.SKIP, None, None, id="RWOP claim unused"),
        pytest.param(
            [pvc("data", "ReadWriteOncePod")],
            [claim_pod("user", "data")],
            Code.SUCCESS,
            Code.UNSCHEDULABLE,
            ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
            id="RWOP claim in use",
        ),
        pytest.param(
            [pvc("data", "ReadWriteOnce")],
            [claim_pod("user", "data")],
            Code.SKIP,
            None,
            None,
            id="RWO claim in use",
        ),
        pytest.param(
            [pvc("data", "ReadWriteOncePod"), pvc("data", "ReadWriteOncePod", ns="other")],
            [claim_pod("user", "data", ns="other")],
            Code.SKIP,
            None,
            None,
            id="same claim name in another namespace",
        ),
    ],
)
def test_read_write_once_pod(
    objs: list[Obj], users: list[Pod], want_pre: Code, want_filter: Code | None, reason: str | None
) -> None:
    other = make_node_info(make_node("n2"), *users)
    target = make_node_info(make_node("n1"))
    pl = plugin(*objs)
    pod = claim_pod("p", "data")
    state = make_cycle_state()
    _, pre = pl.pre_filter(state, pod, [target, other])
    assert code(pre) == want_pre
    if want_pre == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        assert pre is not None and pre.reasons == (reason,)
        return
    if want_filter is None:
        return
    for info in (target, other):
        status = pl.filter(state, pod, info)
        assert code(status) == want_filter
        assert status is not None and status.reasons == (reason,)


def test_pre_filter_extensions_follow_preemption() -> None:
    user = claim_pod("user", "data")
    info = make_node_info(make_node("n1"), user)
    pl = plugin(pvc("data", "ReadWriteOncePod"))
    pod = claim_pod("p", "data")
    state = make_cycle_state()
    pl.pre_filter(state, pod, [info])
    assert code(pl.filter(state, pod, info)) == Code.UNSCHEDULABLE

    ext = pl.pre_filter_extensions()
    trial = state.clone()
    assert ext.remove_pod(trial, pod, PodInfo(user), info) is None
    assert pl.filter(trial, pod, info) is None  # evicting the user would help
    assert code(pl.filter(state, pod, info)) == Code.UNSCHEDULABLE  # the original state is untouched
    ext.add_pod(trial, pod, PodInfo(user), info)
    assert code(pl.filter(trial, pod, info)) == Code.UNSCHEDULABLE
    # an unrelated pod changes nothing
    ext.remove_pod(state, pod, PodInfo(claim_pod("x", "other")), info)
    assert code(pl.filter(state, pod, info)) == Code.UNSCHEDULABLE
    # no state (PreFilter skipped): nothing to do
    assert ext.add_pod(make_cycle_state(), pod, PodInfo(user), info) is None


def test_filter_without_pre_filter_uses_snapshot() -> None:
    user = claim_pod("user", "data")
    info = make_node_info(make_node("n1"), user)
    pl = plugin(pvc("data", "ReadWriteOncePod"), nodes=[info])
    status = pl.filter(make_cycle_state(), claim_pod("p", "data"), make_node_info(make_node("n2")))
    assert status is not None and status.reasons == (ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,)
    status = plugin(nodes=[info]).filter(make_cycle_state(), claim_pod("p", "data"), info)
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# ----------------------------------------------------------------------------------- events


def test_plugin_spec_and_events() -> None:
    assert PLUGIN.name == NAME == "VolumeRestrictions"
    assert STATE_KEY == "PreFilterVolumeRestrictions"
    events = {(e.event.resource, e.event.action): e.hint for e in plugin().events_to_register()}
    assert events == {
        (Resource.ASSIGNED_POD, Action.DELETE): is_schedulable_after_pod_deleted,
        (Resource.NODE, Action.ADD): None,
        (Resource.PVC, Action.ADD): is_schedulable_after_pvc_added,
    }


@pytest.mark.parametrize(
    ("deleted", "want"),
    [
        pytest.param(pod_vol("old", gce("d1")), QueueingHint.QUEUE, id="held a conflicting disk"),
        pytest.param(pod_vol("old", gce("d2")), QueueingHint.SKIP, id="held another disk"),
        pytest.param(claim_pod("old", "data"), QueueingHint.QUEUE, id="used the same claim"),
        pytest.param(claim_pod("old", "other"), QueueingHint.SKIP, id="used another claim"),
        pytest.param(pod_vol("old", gce("d1"), ns="elsewhere"), QueueingHint.SKIP, id="other namespace"),
    ],
)
def test_pod_deleted_hint(deleted: Pod, want: QueueingHint) -> None:
    b = make_pod("p").volume(gce("d1")).pvc("data")
    assert is_schedulable_after_pod_deleted(b.obj(), deleted, None) == want


def test_pvc_added_hint() -> None:
    pod = claim_pod("p", "data")
    assert is_schedulable_after_pvc_added(pod, None, pvc("data")) == QueueingHint.QUEUE
    assert is_schedulable_after_pvc_added(pod, None, pvc("data", ns="other")) == QueueingHint.SKIP
    assert is_schedulable_after_pvc_added(pod, None, pvc("unrelated")) == QueueingHint.SKIP
