from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from pyscheduler.backend.objects import ObjectStore
from pyscheduler.framework.events import Action, QueueingHint, Resource
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.node_volume_limits import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    NAME,
    PLUGIN,
    STATE_KEY,
    NodeVolumeLimits,
    csi_attach_limit_key,
    is_schedulable_after_csi_node_updated,
    is_schedulable_after_pod_deleted,
    is_schedulable_after_pvc_added,
)
from pyscheduler.plugins.node_volume_limits._intree import ebs_volume_id
from pyscheduler.testing import PodBuilder, make_cycle_state, make_handle, make_node, make_node_info, make_pod

Obj = dict[str, Any]
EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
PX = "pxd.portworx.com"
MIGRATED = "storage.alpha.kubernetes.io/migrated-plugins"


def csi_node(node: str, annotations: dict[str, str] | None = None, **limits: int | None) -> Obj:
    drivers = []
    for driver, count in limits.items():
        d: Obj = {"name": driver.replace("_", "."), "nodeID": node}
        if count is not None:
            d["allocatable"] = {"count": count}
        drivers.append(d)
    md: Obj = {"name": node}
    if annotations:
        md["annotations"] = annotations
    return {"kind": "CSINode", "metadata": md, "spec": {"drivers": drivers}}


def pvc(name: str, volume: str = "", cls: str = "", ns: str = "default", owner_uid: str = "") -> Obj:
    md: Obj = {"name": name, "namespace": ns}
    if owner_uid:
        md["ownerReferences"] = [{"kind": "Pod", "name": "x", "uid": owner_uid, "controller": True}]
    spec: Obj = {}
    if volume:
        spec["volumeName"] = volume
    if cls:
        spec["storageClassName"] = cls
    return {"kind": "PersistentVolumeClaim", "metadata": md, "spec": spec}


def csi_pv(name: str, driver: str = EBS, handle: str = "") -> Obj:
    return {
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {"csi": {"driver": driver, "volumeHandle": handle or f"h-{name}"}},
    }


def intree_pv(name: str, key: str, src: Obj, labels: dict[str, str] | None = None) -> Obj:
    return {
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {key: src},
    }


def sc(name: str, provisioner: str) -> Obj:
    return {"kind": "StorageClass", "metadata": {"name": name}, "provisioner": provisioner}


def va(name: str, node: str, pv_name: str, attacher: str = EBS) -> Obj:
    return {
        "kind": "VolumeAttachment",
        "metadata": {"name": name},
        "spec": {"attacher": attacher, "nodeName": node, "source": {"persistentVolumeName": pv_name}},
    }


def claims(name: str, *claim_names: str, node: str = "") -> PodBuilder:
    b = make_pod(name)
    for c in claim_names:
        b.pvc(c)
    if node:
        b.node(node)
    return b


def plugin(*objs: Obj) -> NodeVolumeLimits:
    return NodeVolumeLimits(make_handle(objects=objs))


def code(s: Status | None) -> Code:
    return Code.SUCCESS if s is None else s.code


def run(
    objs: list[Obj], pod: Pod, existing: list[PodBuilder], allocatable: dict[str, str] | None = None
) -> Status | None:
    pl = plugin(*objs)
    nb = make_node("n1")
    if allocatable:
        nb.res(allocatable)
    info = make_node_info(nb, *existing)
    state = make_cycle_state()
    _, pre = pl.pre_filter(state, pod, [info])
    assert pre is None
    status = pl.filter(state, pod, info)
    # the node-batch Filter answers the same, in that cycle and in the next (with the node's usage kept)
    assert [_seen(s) for s in pl.filter_nodes(state, pod, [info])] == [_seen(status)]
    again = make_cycle_state()
    assert pl.pre_filter(again, pod, [info])[1] is None
    assert [_seen(s) for s in pl.filter_nodes(again, pod, [info, info])] == [_seen(status)] * 2
    return status


def _seen(s: Status | None) -> tuple[Code, tuple[str, ...], str] | None:
    """What a user sees of a status (errors carry distinct exception objects)."""
    return None if s is None else (s.code, s.reasons, s.plugin)


# ---------------------------------------------------------------------------------- PreFilter


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(make_pod("p").obj(), Code.SKIP, id="no volumes"),
        pytest.param(
            make_pod("p").volume({"name": "v", "emptyDir": {}}).obj(), Code.SKIP, id="emptyDir only"
        ),
        pytest.param(
            make_pod("p").volume({"name": "v", "csi": {"driver": EBS}}).obj(), Code.SKIP, id="inline CSI"
        ),
        pytest.param(claims("p", "data").obj(), Code.SUCCESS, id="claim"),
        pytest.param(
            make_pod("p").volume({"name": "v", "ephemeral": {}}).obj(), Code.SUCCESS, id="ephemeral"
        ),
        pytest.param(
            make_pod("p").volume({"name": "v", "awsElasticBlockStore": {"volumeID": "vol-1"}}).obj(),
            Code.SUCCESS,
            id="inline in-tree",
        ),
        pytest.param(
            make_pod("p").volume({"name": "v", "azureFile": {"shareName": "s"}}).obj(),
            Code.SUCCESS,
            id="inline migratable azureFile",
        ),
    ],
)
def test_pre_filter(pod: Pod, want: Code) -> None:
    state = make_cycle_state()
    result, status = plugin().pre_filter(state, pod, [])
    assert result is None
    assert code(status) == want
    assert (state.get(STATE_KEY) is not None) == (want == Code.SUCCESS)


# ------------------------------------------------------------------------------------- Filter

CSI_OBJS = [
    pvc("a", "pv-a"),
    pvc("b", "pv-b"),
    pvc("c", "pv-c"),
    csi_pv("pv-a"),
    csi_pv("pv-b"),
    csi_pv("pv-c"),
    pvc("g", "pv-g"),
    csi_pv("pv-g", GCE),
]


@pytest.mark.parametrize(
    ("objs", "pod", "existing", "allocatable", "fits"),
    [
        pytest.param(
            [*CSI_OBJS, csi_node("n1", ebs_csi_aws_com=2)],
            claims("p", "b"),
            [claims("e", "a")],
            None,
            True,
            id="under the limit",
        ),
        pytest.param(
            [*CSI_OBJS, csi_node("n1", ebs_csi_aws_com=1)],
            claims("p", "b"),
            [claims("e", "a")],
            None,
            False,
            id="over the limit",
        ),
        pytest.param(
            [*CSI_OBJS, csi_node("n1", ebs_csi_aws_com=1)],
            claims("p", "a"),
            [claims("e", "a")],
            None,
            True,
            id="volume already attached is not counted twice",
        ),
        pytest.param(
            [*CSI_OBJS, csi_node("n1", ebs_csi_aws_com=1)],
            claims("p", "b", "b"),
            [],
            None,
            True,
            id="same claim twice in the pod counts once",
        ),
        pytest.param(
            [*CSI_OBJS, csi_node("n1", ebs_csi_aws_com=1)],
            claims("p", "b", "c"),
            [],
            None,
            False,
            id="two new volumes over a limit of one",
        ),
        pytest.param(
            [*CSI_OBJS, csi_node("n1", ebs_csi_aws_com=1)],
            claims("p", "g"),
            [claims("e", "a")],
            None,
            True,
            id="other driver has no limit",
        ),
        pytest.param(
            [*CSI_OBJS, csi_node("n1", ebs_csi_aws_com=None)],
            claims("p", "b"),
            [claims("e", "a")],
            None,
            True,
            id="driver without allocatable count is unlimited",
        ),
        pytest.param(
            [*CSI_OBJS, csi_node("n1", ebs_csi_aws_com=0)],
            claims("p", "b"),
            [],
            None,
            False,
            id="limit zero",
        ),
        pytest.param(CSI_OBJS, claims("p", "b"), [claims("e", "a")], None, True, id="no CSINode: no limits"),
        pytest.param(
            CSI_OBJS,
            claims("p", "b"),
            [claims("e", "a")],
            {"attachable-volumes-csi-ebs.csi.aws.com": "1"},
            False,
            id="legacy node allocatable limit",
        ),
        pytest.param(
            [*CSI_OBJS, csi_node("n1", ebs_csi_aws_com=2)],
            claims("p", "b"),
            [claims("e", "a")],
            {"attachable-volumes-csi-ebs.csi.aws.com": "1"},
            True,
            id="CSINode overrides legacy allocatable",
        ),
        pytest.param(
            [*CSI_OBJS, csi_node("n1", ebs_csi_aws_com=1)],
            claims("p", "b"),
            [claims("e", "missing")],
            None,
            True,
            id="missing claims of existing pods are not counted",
        ),
        # unbound claims count under their class's provisioner
        pytest.param(
            [
                pvc("u1", cls="fast"),
                pvc("u2", cls="fast"),
                sc("fast", EBS),
                csi_node("n1", ebs_csi_aws_com=1),
            ],
            claims("p", "u1", "u2"),
            [],
            None,
            False,
            id="unbound claims count as separate volumes",
        ),
        pytest.param(
            [pvc("u1", cls="fast"), sc("fast", EBS), csi_node("n1", ebs_csi_aws_com=1)],
            claims("p", "u1"),
            [],
            None,
            True,
            id="one unbound claim fits",
        ),
        pytest.param(
            [
                pvc("u1", "gone", cls="fast"),
                pvc("a", "pv-a"),
                csi_pv("pv-a"),
                sc("fast", EBS),
                csi_node("n1", ebs_csi_aws_com=1),
            ],
            claims("p", "u1"),
            [claims("e", "a")],
            None,
            False,
            id="claim of a missing PV counts via its class",
        ),
        pytest.param(
            [pvc("u1"), pvc("a", "pv-a"), csi_pv("pv-a"), csi_node("n1", ebs_csi_aws_com=1)],
            claims("p", "u1"),
            [claims("e", "a")],
            None,
            True,
            id="unbound claim without class not counted",
        ),
        pytest.param(
            [pvc("u1", cls="nope"), pvc("a", "pv-a"), csi_pv("pv-a"), csi_node("n1", ebs_csi_aws_com=1)],
            claims("p", "u1"),
            [claims("e", "a")],
            None,
            True,
            id="unbound claim with missing class not counted",
        ),
        # in-tree volumes migrated to CSI
        pytest.param(
            [
                pvc("t", "pv-t"),
                intree_pv("pv-t", "awsElasticBlockStore", {"volumeID": "aws://us-east-1a/vol-9"}),
                pvc("a", "pv-a"),
                csi_pv("pv-a"),
                csi_node("n1", ebs_csi_aws_com=1),
            ],
            claims("p", "t"),
            [claims("e", "a")],
            None,
            False,
            id="in-tree EBS PV counts under the EBS driver",
        ),
        pytest.param(
            [
                pvc("t", "pv-t"),
                intree_pv("pv-t", "awsElasticBlockStore", {"volumeID": "vol-9"}),
                pvc("a", "pv-a"),
                csi_pv("pv-a", handle="vol-9"),
                csi_node("n1", ebs_csi_aws_com=1),
            ],
            claims("p", "t"),
            [claims("e", "a")],
            None,
            True,
            id="in-tree and CSI PV of the same disk count once",
        ),
        pytest.param(
            [pvc("a", "pv-a"), csi_pv("pv-a", handle="vol-9"), csi_node("n1", ebs_csi_aws_com=1)],
            make_pod("p").volume({"name": "v", "awsElasticBlockStore": {"volumeID": "aws://zone/vol-9"}}),
            [claims("e", "a")],
            None,
            True,
            id="inline EBS of an attached disk",
        ),
        pytest.param(
            [pvc("a", "pv-a"), csi_pv("pv-a"), csi_node("n1", ebs_csi_aws_com=1)],
            make_pod("p").volume({"name": "v", "awsElasticBlockStore": {"volumeID": "vol-5"}}),
            [claims("e", "a")],
            None,
            False,
            id="inline EBS over the limit",
        ),
        pytest.param(
            [
                pvc("t", "pv-t"),
                intree_pv("pv-t", "portworxVolume", {"volumeID": "px1"}),
                pvc("x", "pv-x"),
                csi_pv("pv-x", PX),
                csi_node("n1", pxd_portworx_com=1),
            ],
            claims("p", "t"),
            [claims("e", "x")],
            None,
            True,
            id="portworx not migrated without annotation",
        ),
        pytest.param(
            [
                pvc("t", "pv-t"),
                intree_pv("pv-t", "portworxVolume", {"volumeID": "px1"}),
                pvc("x", "pv-x"),
                csi_pv("pv-x", PX),
                csi_node("n1", {MIGRATED: "kubernetes.io/portworx-volume"}, pxd_portworx_com=1),
            ],
            claims("p", "t"),
            [claims("e", "x")],
            None,
            False,
            id="portworx migrated per annotation",
        ),
        pytest.param(
            [
                pvc("t", "pv-t"),
                intree_pv("pv-t", "gcePersistentDisk", {"pdName": "d"}, {"topology.kubernetes.io/zone": "z"}),
                pvc("g", "pv-g"),
                csi_pv("pv-g", GCE, "projects/UNSPECIFIED/zones/z/disks/d"),
                csi_node("n1", pd_csi_storage_gke_io=1),
            ],
            claims("p", "t"),
            [claims("e", "g")],
            None,
            True,
            id="GCE PV handle carries its zone",
        ),
        pytest.param(
            [
                pvc("t", "pv-t"),
                intree_pv(
                    "pv-t",
                    "gcePersistentDisk",
                    {"pdName": "d"},
                    {"topology.kubernetes.io/zone": "us-c1-a__us-c1-b"},
                ),
                pvc("g", "pv-g"),
                csi_pv("pv-g", GCE, "projects/UNSPECIFIED/regions/us-c1/disks/d"),
                csi_node("n1", pd_csi_storage_gke_io=1),
            ],
            claims("p", "t"),
            [claims("e", "g")],
            None,
            True,
            id="regional GCE PV handle",
        ),
        # VolumeAttachments
        pytest.param(
            [*CSI_OBJS, va("va1", "n1", "pv-c"), csi_node("n1", ebs_csi_aws_com=2)],
            claims("p", "b"),
            [claims("e", "a")],
            None,
            False,
            id="attachment of an unused volume counts",
        ),
        pytest.param(
            [*CSI_OBJS, va("va1", "n1", "pv-a"), csi_node("n1", ebs_csi_aws_com=2)],
            claims("p", "b"),
            [claims("e", "a")],
            None,
            True,
            id="attachment of a used volume counts once",
        ),
        pytest.param(
            [*CSI_OBJS, va("va1", "n2", "pv-c"), csi_node("n1", ebs_csi_aws_com=2)],
            claims("p", "b"),
            [claims("e", "a")],
            None,
            True,
            id="attachment to another node",
        ),
    ],
)
def test_filter(
    objs: list[Obj],
    pod: PodBuilder,
    existing: list[PodBuilder],
    allocatable: dict[str, str] | None,
    fits: bool,
) -> None:
    status = run(objs, pod.obj(), existing, allocatable)
    if fits:
        assert status is None
    else:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE
        assert status.reasons == (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,)
        assert status.plugin == NAME


def test_missing_claim_of_new_pod() -> None:
    status = run([csi_node("n1", ebs_csi_aws_com=1)], claims("p", "data").obj(), [])
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ('looking up PVC default/data: persistentvolumeclaim "data" not found',)


def test_empty_claim_name_is_an_error() -> None:
    pod = make_pod("p").volume({"name": "v", "persistentVolumeClaim": {"claimName": ""}}).obj()
    status = run([], pod, [])
    assert status is not None and status.code == Code.ERROR


@pytest.mark.parametrize(
    ("owner", "want"),
    [
        pytest.param("uid-default-p", Code.UNSCHEDULABLE, id="the pod's own claim counts"),
        pytest.param("someone-else", Code.ERROR, id="a claim another pod owns is an error"),
    ],
)
def test_ephemeral_volume(owner: str, want: Code) -> None:
    objs = [
        pvc("p-scratch", "pv-s", owner_uid=owner),
        csi_pv("pv-s"),
        pvc("a", "pv-a"),
        csi_pv("pv-a"),
        csi_node("n1", ebs_csi_aws_com=1),
    ]
    pod = make_pod("p").volume({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}).obj()
    status = run(objs, pod, [claims("e", "a")])
    assert code(status) == want
    if want == Code.ERROR:
        assert status is not None
        assert status.reasons == (
            "PVC default/p-scratch was not created for pod default/p (pod is not owner)",
        )


def test_bad_inline_ebs_id_is_an_error_only_where_migrated() -> None:
    pod = make_pod("p").volume({"name": "v", "awsElasticBlockStore": {"volumeID": "aws://zone/bad"}}).obj()
    status = run([csi_node("n1", ebs_csi_aws_com=1)], pod, [])
    assert status is not None and status.code == Code.ERROR
    assert "converting volume(v) from inline to csi" in status.message()
    assert run([], pod, [], {"attachable-volumes-csi-ebs.csi.aws.com": "1"}) is None


def test_filter_without_pre_filter() -> None:
    pl = plugin(*CSI_OBJS, csi_node("n1", ebs_csi_aws_com=1))
    info = make_node_info(make_node("n1"), claims("e", "a"))
    status = pl.filter(make_cycle_state(), claims("p", "b").obj(), info)
    assert status is not None and status.reasons == (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,)
    assert pl.filter(make_cycle_state(), make_pod("q").obj(), info) is None


def test_usage_kept_across_cycles_follows_every_change() -> None:
    """The node's usage is kept from one cycle to the next, yet each change to what it comes from (the
    node's pods, a claim's volume, the CSINode's limit, a VolumeAttachment) shows in the next cycle."""
    store = ObjectStore()
    for obj in (*CSI_OBJS, csi_pv("pv-d"), csi_node("n1", ebs_csi_aws_com=2)):
        store.put(obj["kind"], dict(obj))
    pl = NodeVolumeLimits(make_handle(object_store=store))
    info = make_node_info(make_node("n1"), claims("e", "a"))
    pod = claims("p", "b").obj()

    def cycle() -> Status | None:
        state = make_cycle_state()
        assert pl.pre_filter(state, pod, [info])[1] is None
        [status] = pl.filter_nodes(state, pod, [info])
        # a plugin that keeps nothing (no usage of earlier cycles) agrees
        fresh = NodeVolumeLimits(make_handle(object_store=store))
        assert _seen(fresh.filter(make_cycle_state(), pod, info)) == _seen(status)
        return status

    assert cycle() is None  # a, and b coming: 2 of 2
    info.add_pod(claims("f", "c").obj())
    assert code(cycle()) == Code.UNSCHEDULABLE  # a, c, and b: 3 of 2
    store.put("PersistentVolumeClaim", pvc("c", "pv-b"))
    assert cycle() is None  # c now mounts b's volume: b is attached already
    store.put("PersistentVolumeClaim", pvc("c", "pv-c"))
    assert code(cycle()) == Code.UNSCHEDULABLE
    store.put("CSINode", csi_node("n1", ebs_csi_aws_com=3))
    assert cycle() is None  # 3 of 3
    store.put("VolumeAttachment", va("va-d", "n1", "pv-d"))
    assert code(cycle()) == Code.UNSCHEDULABLE  # d attached besides: 4 of 3
    store.remove("VolumeAttachment", va("va-d", "n1", "pv-d"))
    assert cycle() is None
    info.remove_pod(claims("f", "c").obj())
    store.put("CSINode", csi_node("n1", ebs_csi_aws_com=1))
    assert code(cycle()) == Code.UNSCHEDULABLE  # a, and b: 2 of 1


# ------------------------------------------------------------------------------------ helpers


def test_attach_limit_key() -> None:
    assert csi_attach_limit_key(EBS) == "attachable-volumes-csi-ebs.csi.aws.com"
    long = "a-very-long-csi-driver-name.storage.example.com"
    key = csi_attach_limit_key(long)
    assert key == "attachable-volumes-csi-" + long[:23] + hashlib.sha1(long.encode()).hexdigest()[:16]
    assert len(key) < 63


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param("vol-1", "vol-1", id="bare id"),
        pytest.param("aws://us-east-1a/vol-1", "vol-1", id="aws URL with zone"),
        pytest.param("aws:///vol-2", "vol-2", id="aws URL without zone"),
        pytest.param("anything", "anything", id="anything else unchanged"),
    ],
)
def test_ebs_volume_id(raw: str, want: str) -> None:
    assert ebs_volume_id(raw) == want


# ------------------------------------------------------------------------------------- events


def test_plugin_spec_and_events() -> None:
    assert PLUGIN.name == NAME == "NodeVolumeLimits"
    events = {(e.event.resource, e.event.action): e.hint for e in plugin().events_to_register()}
    assert events == {
        (Resource.CSI_NODE, Action.ADD): None,
        (Resource.CSI_NODE, Action.UPDATE): is_schedulable_after_csi_node_updated,
        (Resource.ASSIGNED_POD, Action.DELETE): is_schedulable_after_pod_deleted,
        (Resource.PVC, Action.ADD): is_schedulable_after_pvc_added,
    }


def test_csi_node_updated_hint() -> None:
    pod = claims("p", "a").obj()
    base = csi_node("n1", ebs_csi_aws_com=1)
    assert (
        is_schedulable_after_csi_node_updated(pod, base, csi_node("n1", ebs_csi_aws_com=2))
        == QueueingHint.QUEUE
    )
    assert (
        is_schedulable_after_csi_node_updated(pod, base, csi_node("n1", ebs_csi_aws_com=None))
        == QueueingHint.QUEUE
    )
    assert (
        is_schedulable_after_csi_node_updated(pod, base, csi_node("n1", ebs_csi_aws_com=1))
        == QueueingHint.SKIP
    )
    assert (
        is_schedulable_after_csi_node_updated(pod, base, csi_node("n1", ebs_csi_aws_com=0))
        == QueueingHint.SKIP
    )
    migrated = csi_node("n1", {MIGRATED: "kubernetes.io/portworx-volume"}, ebs_csi_aws_com=1)
    assert is_schedulable_after_csi_node_updated(pod, base, migrated) == QueueingHint.QUEUE


@pytest.mark.parametrize(
    ("deleted", "want"),
    [
        pytest.param(claims("old", "a", node="n1").obj(), QueueingHint.QUEUE, id="assigned pod with a claim"),
        pytest.param(
            claims("old", "a").nominated("n1").obj(), QueueingHint.QUEUE, id="nominated pod with a claim"
        ),
        pytest.param(claims("old", "a").obj(), QueueingHint.SKIP, id="pod never placed"),
        pytest.param(make_pod("old").node("n1").obj(), QueueingHint.SKIP, id="pod without volumes"),
        pytest.param(
            make_pod("old").node("n1").volume({"name": "v", "emptyDir": {}}).obj(),
            QueueingHint.SKIP,
            id="pod without attachable volumes",
        ),
        pytest.param(
            make_pod("old").node("n1").volume({"name": "v", "gcePersistentDisk": {"pdName": "d"}}).obj(),
            QueueingHint.QUEUE,
            id="pod with an in-tree disk",
        ),
    ],
)
def test_pod_deleted_hint(deleted: Pod, want: QueueingHint) -> None:
    assert is_schedulable_after_pod_deleted(claims("p", "b").obj(), deleted, None) == want


def test_pvc_added_hint() -> None:
    pod = make_pod("p").pvc("data").volume({"name": "scratch", "ephemeral": {}}).obj()
    assert is_schedulable_after_pvc_added(pod, None, pvc("data")) == QueueingHint.QUEUE
    assert is_schedulable_after_pvc_added(pod, None, pvc("p-scratch")) == QueueingHint.QUEUE
    assert is_schedulable_after_pvc_added(pod, None, pvc("data", ns="other")) == QueueingHint.SKIP
    assert is_schedulable_after_pvc_added(pod, None, pvc("unrelated")) == QueueingHint.SKIP


def test_objects_without_volume_attachments() -> None:
    class StrictObjects(ObjectStore):
        """The real store, except that it serves no VolumeAttachments (as a store not watching them)."""

        def list(self, kind: str, namespace: str | None = None) -> Iterable[Mapping[str, Any]]:
            if kind == "VolumeAttachment":
                raise KeyError(kind)
            return super().list(kind, namespace)

    store = StrictObjects()
    for obj in (*CSI_OBJS, csi_node("n1", ebs_csi_aws_com=2)):
        store.put(obj["kind"], obj)
    pl = NodeVolumeLimits(make_handle(object_store=store))
    info = make_node_info(make_node("n1"), claims("e", "a"))
    assert pl.filter(make_cycle_state(), claims("p", "b").obj(), info) is None
