"""Node changes: what a drain, a cordon, a removal and added nodes do to the snapshot's pods."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.testing import make_node, make_pod
from pyscheduler.whatif.changes import ChangeError, Changes, apply
from pyscheduler.whatif.snapshot import ClusterSnapshot


def snapshot() -> ClusterSnapshot:
    nodes = [make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=110).json() for i in range(3)]
    pods = [
        make_pod("web-1").req(cpu="1").owner("ReplicaSet", "web").node("n0").json(),
        make_pod("agent-n0").owner("DaemonSet", "agent").node("n0").json(),
        make_pod("static").annotation("kubernetes.io/config.mirror", "x").node("n0").json(),
        make_pod("debug").node("n0").json(),
        make_pod("web-2").req(cpu="1").owner("ReplicaSet", "web").node("n1").json(),
        make_pod("queued").req(cpu="1").json(),
    ]
    csinode = {"kind": "CSINode", "metadata": {"name": "n2"}, "spec": {"drivers": []}}
    return ClusterSnapshot.from_objects([*nodes, *pods, csinode])


def names(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods)


def test_drain_cordons_and_sends_controller_pods_back_to_the_queue() -> None:
    out = apply(snapshot(), Changes(drain=["n0"]))
    n0 = next(n for n in out.nodes if n["metadata"]["name"] == "n0")
    assert n0["spec"]["unschedulable"] is True
    assert names(out.displaced) == ["web-1"]
    assert out.displaced_from == {"default/web-1": "n0"}
    assert "nodeName" not in out.displaced[0]["spec"]
    # kubectl drain --ignore-daemonsets leaves DaemonSet and mirror pods; a bare pod is deleted for good
    assert names(out.bound) == ["agent-n0", "static", "web-2"]
    assert [(lp.pod, lp.why) for lp in out.lost] == [("default/debug", "no controller: not re-created")]
    assert names(out.pending) == ["queued"]


def test_the_snapshot_itself_is_left_as_it_was() -> None:
    snap = snapshot()
    apply(snap, Changes(drain=["n0"], remove=["n1"]))
    assert not snap.nodes[0]["spec"].get("unschedulable")
    assert len(snap.nodes) == 3 and snap.pods[0]["spec"]["nodeName"] == "n0"


def test_removing_a_node_loses_its_daemonset_pods_too() -> None:
    out = apply(snapshot(), Changes(remove=["n0"]))
    assert "n0" not in [n["metadata"]["name"] for n in out.nodes]
    assert names(out.displaced) == ["web-1"]
    assert sorted(lp.pod for lp in out.lost) == ["default/agent-n0", "default/debug", "default/static"]


def test_cordon_keeps_the_pods() -> None:
    out = apply(snapshot(), Changes(cordon=["n1"]))
    assert next(n for n in out.nodes if n["metadata"]["name"] == "n1")["spec"]["unschedulable"] is True
    assert not out.displaced and not out.lost


def test_added_nodes_copy_the_like_node_and_its_csinode() -> None:
    snap = snapshot()
    out = apply(snap, Changes(add_nodes=2, like="n2", cordon=["n2"]))
    added = [n for n in out.nodes if n["metadata"]["name"] in out.added_nodes]
    assert out.added_nodes == ["n2-whatif-1", "n2-whatif-2"]
    assert [n["metadata"]["labels"]["kubernetes.io/hostname"] for n in added] == out.added_nodes
    assert all(not n["spec"].get("unschedulable") for n in added)
    assert added[0]["status"]["allocatable"] == snap.nodes[2]["status"]["allocatable"]
    assert sorted(c["metadata"]["name"] for c in out.objects["CSINode"]) == [
        "n2",
        "n2-whatif-1",
        "n2-whatif-2",
    ]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        pytest.param(Changes(drain=["n9"]), "--drain: no node 'n9' in the snapshot", id="unknown-drain"),
        pytest.param(Changes(remove=["x", "y"]), "--remove-node: no node 'x', 'y'", id="unknown-remove"),
        pytest.param(Changes(add_nodes=2), "--add-nodes needs --like NODE", id="no-like"),
        pytest.param(Changes(add_nodes=1, like="zz"), "--like: no node 'zz'", id="unknown-like"),
        pytest.param(Changes(add_nodes=-1, like="n0"), "--add-nodes must be from 0", id="negative"),
    ],
)
def test_changes_that_cannot_apply_say_why(changes: Changes, message: str) -> None:
    with pytest.raises(ChangeError, match=message):
        apply(snapshot(), changes)
