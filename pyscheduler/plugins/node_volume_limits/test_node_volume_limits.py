from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from pyscheduler.backend import objects as objects_module
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
    store.put("PersistentVolume", csi_pv("pv-c", driver=GCE))
    assert cycle() is None  # c's volume is another driver's now: 2 of 2 for EBS
    store.put("PersistentVolume", csi_pv("pv-c"))
    assert code(cycle()) == Code.UNSCHEDULABLE
    store.put("CSINode", csi_node("n1", ebs_csi_aws_com=3))
    assert cycle() is None  # 3 of 3
    store.put("VolumeAttachment", va("va-d", "n1", "pv-d"))
    assert code(cycle()) == Code.UNSCHEDULABLE  # d attached besides: 4 of 3
    store.remove("PersistentVolume", csi_pv("pv-d"))
    assert cycle() is None  # an attachment of a volume that is gone does not count
    store.put("PersistentVolume", csi_pv("pv-d"))
    assert code(cycle()) == Code.UNSCHEDULABLE
    store.remove("VolumeAttachment", va("va-d", "n1", "pv-d"))
    assert cycle() is None
    info.remove_pod(claims("f", "c").obj())
    store.put("CSINode", csi_node("n1", ebs_csi_aws_com=1))
    assert code(cycle()) == Code.UNSCHEDULABLE  # a, and b: 2 of 1


class _RandomChanges:
    """Four nodes with CSINodes, claims bound (or not) to CSI volumes, pods on the nodes, and random
    changes to each of them (seeded)."""

    def __init__(self, store: ObjectStore, seed: int) -> None:
        self.rng = rng = random.Random(seed)
        self.store = store
        self.nodes = [f"n{i}" for i in range(4)]
        self.claims = [f"c{i}" for i in range(8)]
        self.incoming = ["new0", "new1"]  # the incoming pods' claims: never removed, always bound
        self.volumes = [f"pv{i}" for i in range(12)]
        self.handles = [f"h{i}" for i in range(16)]
        self.infos = [make_node_info(make_node(n)) for n in self.nodes]
        self.serial = 0
        for c in self.claims:
            self.put(self.random_pvc(c))
        for c in self.incoming:
            self.put(pvc(c, rng.choice(self.volumes)))
        for v in self.volumes:
            self.put(csi_pv(v, handle=rng.choice(self.handles)))
        for n in self.nodes:
            self.put(self.random_csi_node(n))
        self.put(sc("fast", EBS))

    def put(self, obj: Obj) -> None:
        self.store.put(obj["kind"], obj)

    def random_pvc(self, name: str) -> Obj:
        if self.rng.random() < 0.2:
            return pvc(name, cls="fast")  # unbound: counts under the class's provisioner
        return pvc(name, self.rng.choice([*self.volumes, "pv-missing"]))

    def random_csi_node(self, name: str) -> Obj:
        ann = {MIGRATED: "kubernetes.io/aws-ebs"} if self.rng.random() < 0.3 else None
        return csi_node(name, ann, ebs_csi_aws_com=self.rng.choice([1, 2, 3, None]))

    def change(self, attachments: bool) -> None:
        """One random change; VolumeAttachments come and go only while ``attachments``, else go."""
        rng, store = self.rng, self.store
        what = rng.randrange(11)
        if what == 0:
            self.put(pvc(rng.choice(self.incoming), rng.choice(self.volumes)))
        elif what == 1:
            self.put(self.random_pvc(rng.choice(self.claims)))
        elif what == 2:
            store.remove("PersistentVolumeClaim", pvc(rng.choice(self.claims)))
        elif what == 3:
            driver = rng.choice([EBS, EBS, GCE])
            self.put(csi_pv(rng.choice(self.volumes), driver=driver, handle=rng.choice(self.handles)))
        elif what == 4:
            store.remove("PersistentVolume", csi_pv(rng.choice(self.volumes)))
        elif what == 5:
            self.put(self.random_csi_node(rng.choice(self.nodes)))
        elif what == 6:
            name = f"va{rng.randrange(3)}"
            if attachments and rng.random() < 0.5:
                self.put(va(name, rng.choice(self.nodes), rng.choice(self.volumes)))
            else:
                store.remove("VolumeAttachment", va(name, "", ""))
        elif what == 7:
            self.put(sc("fast", rng.choice([EBS, GCE, "example.com/other"])))
        elif what == 8:
            self.serial += 1
            b = claims(f"e{self.serial}", *rng.sample(self.claims, rng.randrange(1, 3)))
            if rng.random() < 0.2:
                b.volume({"name": "inline", "awsElasticBlockStore": {"volumeID": f"vol-{rng.randrange(3)}"}})
            rng.choice(self.infos).add_pod(b.obj())
        else:  # pods go as often as they come: nodes stay near their limits
            info = rng.choice(self.infos)
            if info.pods:
                info.remove_pod(rng.choice(info.pods).pod)


@pytest.mark.parametrize("log", [4096, 2], ids=["changes-remembered", "log-overrun"])
def test_kept_usage_agrees_with_a_fresh_plugin_through_random_changes(
    log: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random changes to every input of a node's usage (its pods, claims rebound or unbound, volumes
    replaced or gone, CSINode limits and migration, VolumeAttachments, the class's provisioner), one to
    three between cycles over all nodes: the plugin that keeps usages answers as a fresh one does. The
    VolumeAttachments go half-way, so that PV changes are then followed node by node."""
    monkeypatch.setattr(objects_module, "CHANGE_LOG", log)
    store = ObjectStore()
    world = _RandomChanges(store, 1)
    infos = world.infos
    pl = NodeVolumeLimits(make_handle(object_store=store))
    for step in range(800):
        for _ in range(world.rng.randrange(1, 4)):
            world.change(attachments=step < 400)
        pod = claims(f"p{step}", *world.rng.sample(world.incoming, world.rng.randrange(1, 3))).obj()
        state = make_cycle_state()
        assert pl.pre_filter(state, pod, infos)[1] is None
        got = [_seen(x) for x in pl.filter_nodes(state, pod, infos)]
        fresh = NodeVolumeLimits(make_handle(object_store=store))
        fresh_state = make_cycle_state()
        fresh.pre_filter(fresh_state, pod, infos)
        want = [_seen(fresh.filter(fresh_state, pod, info)) for info in infos]
        assert got == want, f"step {step}"


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
