"""What simulate needs from the in-process engine: a per-cycle hook, the cheap top-score mode (enough to
flag ties), pods added without deep copies, and the DRA kinds a snapshot carries."""

from __future__ import annotations

from pyscheduler.engine import Engine
from pyscheduler.testing import make_node, make_pod
from pyscheduler.whatif.simulate import simulate
from pyscheduler.whatif.snapshot import ClusterSnapshot
from pyscheduler.whatif.workloads import expand


def test_on_cycle_is_called_once_per_scheduling_cycle() -> None:
    engine = Engine()
    engine.add_nodes([make_node("n0").capacity(cpu="2", memory="4Gi", pods=110)])
    engine.add_pods([make_pod(f"p{i}").req(cpu="1") for i in range(3)])
    calls: list[int] = []
    res = engine.run(on_cycle=lambda: calls.append(1))
    assert sum(1 for r in res.values() if r.scheduled) == 2
    assert len(calls) >= 3  # two placements and at least one failed attempt


def test_top_score_mode_keeps_the_best_nodes_without_the_breakdown() -> None:
    engine = Engine(score_breakdown=False)
    engine.add_nodes(
        [make_node(f"n{i}").capacity(cpu=str(2 + 2 * i), memory="8Gi", pods=110) for i in range(5)]
    )
    (key,) = engine.add_pods([make_pod("p").req(cpu="1")])
    r = engine.run()[key]
    assert r.node == "n4"  # the emptiest node under LeastAllocated
    assert r.scores[0].node == "n4" and len(r.scores) == 3
    assert r.scores[0].total > r.scores[1].total >= r.scores[2].total
    assert all(s.plugins == {} for s in r.scores)


def test_ties_at_the_top_are_flagged_in_the_simulation() -> None:
    spec = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}
    pods = expand([("p.yaml", {"kind": "Pod", "metadata": {"name": "p"}, "spec": spec})])
    same = [make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=110).json() for i in range(2)]
    assert simulate(ClusterSnapshot.from_objects(same), workloads=pods).pods[0].tied
    uneven = [make_node(f"n{i}").capacity(cpu=str(4 + i), memory="8Gi", pods=110).json() for i in range(2)]
    assert not simulate(ClusterSnapshot.from_objects(uneven), workloads=pods).pods[0].tied


def test_shallow_added_pods_leave_the_callers_json_alone() -> None:
    d = make_pod("p").req(cpu="1").json()
    del d["metadata"]["uid"]
    engine = Engine()
    engine.add_nodes([make_node("n0").capacity(cpu="2", memory="4Gi", pods=110)])
    engine.add_pods([d], deep_copy=False)
    assert engine.run()["default/p"].node == "n0"
    assert "uid" not in d["metadata"] and "schedulerName" not in d["spec"]


def test_dra_kinds_are_accepted() -> None:
    engine = Engine()
    engine.add_objects(
        [
            {"kind": "DeviceClass", "metadata": {"name": "gpu"}, "spec": {}},
            {
                "kind": "ResourceSlice",
                "metadata": {"name": "n0-gpu"},
                "spec": {"nodeName": "n0", "driver": "d"},
            },
        ]
    )
    assert engine.app.objects.get("DeviceClass", "", "gpu") is not None
