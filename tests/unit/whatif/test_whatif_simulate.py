"""simulate: placements, FailedScheduling groups, preemption victims and utilisation, by the real core."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pyscheduler.config import feature_gates
from pyscheduler.config.load import ConfigError
from pyscheduler.testing import make_node, make_pod, make_pod_group
from pyscheduler.whatif.changes import Changes
from pyscheduler.whatif.simulate import compare, simulate
from pyscheduler.whatif.snapshot import ClusterSnapshot
from pyscheduler.whatif.workloads import WorkloadError, expand

ZONE = "topology.kubernetes.io/zone"


def cluster(n: int = 2, cpu: str = "4", pods: Sequence[Any] = ()) -> ClusterSnapshot:
    nodes = [
        make_node(f"n{i}").capacity(cpu=cpu, memory="16Gi", pods=110).label(ZONE, f"z{i % 2}").json()
        for i in range(n)
    ]
    return ClusterSnapshot.from_objects([*nodes, *(p.json() for p in pods)], "test")


def deployment(name: str, replicas: int, cpu: str, **spec: Any) -> Any:
    doc = {
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
                    **spec,
                },
            },
        },
    }
    return expand([(f"{name}.yaml", doc)])


def test_added_replicas_fill_the_nodes_and_the_rest_get_kubes_text() -> None:
    res = simulate(cluster(2, cpu="2"), workloads=deployment("web", 5, "1"))
    placed = sorted(p.node for p in res.pods if p.node)
    assert placed == ["n0", "n0", "n1", "n1"]  # 2 CPUs each, never more
    assert res.unschedulable_groups() == {
        "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes are available: 2 No preemption "
        "victims found for incoming pod.": ["default/web-whatif-4"]
    }
    assert res.reason_counts() == {"Insufficient cpu": 1}
    assert res.summary()["scheduled"] == 4 and res.summary()["unschedulable"] == 1


def test_pending_pods_of_the_snapshot_are_placed_too() -> None:
    snap = cluster(1, pods=[make_pod("queued").req(cpu="1").scheduler("py-scheduler")])
    res = simulate(snap)
    assert [(p.pod, p.origin, p.node) for p in res.pods] == [("default/queued", "pending", "n0")]


def test_higher_priority_goes_first_and_preempts_lower_priority_pods() -> None:
    snap = cluster(1, cpu="2", pods=[make_pod("old").req(cpu="2").priority(0).node("n0")])
    doc = {
        "kind": "Pod",
        "metadata": {"name": "vip"},
        "spec": {
            "priority": 100,
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
        },
    }
    res = simulate(snap, workloads=expand([("vip.yaml", doc)]))
    (vip,) = res.pods
    assert vip.node == "n0" and vip.victims == ["default/old"]
    assert [(v.pod, v.node, v.preempted_by, v.priority) for v in res.victims] == [
        ("default/old", "n0", "default/vip", 0)
    ]
    assert (
        res.after.nodes["n0"].cpu_requested == 1000
    )  # the victim's 2 CPUs are gone, the preemptor's 1 is there
    assert res.before.nodes["n0"].cpu_requested == 2000


def test_drained_pods_move_and_utilisation_shows_before_and_after() -> None:
    pods = [make_pod(f"w{i}").req(cpu="1").owner("ReplicaSet", "w").node("n0") for i in range(2)]
    res = simulate(cluster(2, pods=pods), changes=Changes(drain=["n0"]))
    assert {(p.pod, p.previous_node, p.node) for p in res.pods} == {
        ("default/w0", "n0", "n1"),
        ("default/w1", "n0", "n1"),
    }
    assert res.before.nodes["n0"].cpu_requested == 2000 and res.after.nodes["n0"].cpu_requested == 0
    assert res.after.nodes["n1"].cpu_requested == 2000
    assert res.changes == ["drain n0"]
    assert {z: u.cpu_fraction for z, u in res.after.zones().items()} == {"z0": 0.0, "z1": 0.5}


def test_pods_for_another_scheduler_are_left_alone_unless_asked() -> None:
    snap = cluster(1, pods=[make_pod("theirs").req(cpu="1").scheduler("other-scheduler")])
    res = simulate(snap)
    assert res.pods == [] and res.skipped == {"other-scheduler": 1}
    res = simulate(snap, schedule_all=True)
    assert [(p.pod, p.node) for p in res.pods] == [("default/theirs", "n0")]


def test_an_invalid_configuration_is_refused_with_the_daemons_message() -> None:
    bad = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 120\n"
    with pytest.raises(ConfigError, match="percentageOfNodesToScore"):
        simulate(cluster(1), config=bad)


MOST_ALLOCATED = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 1}]}}
"""


def bare_pods(n: int, cpu: str) -> Any:
    spec = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    return expand(
        [("pods.yaml", {"kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": spec}) for i in range(n)]
    )


def test_compare_bin_packing_against_spreading() -> None:
    # bare pods: a Deployment's would also be spread by PodTopologySpread's system defaults (weight 2)
    snap = cluster(4, cpu="8")
    c = compare(None, MOST_ALLOCATED, names=("spread", "pack"), snapshot=snap, workloads=bare_pods(4, "2"))
    assert c.a.after.nodes_in_use() == 4 and c.b.after.nodes_in_use() == 1
    d = c.to_dict()
    assert d["difference"]["nodes_in_use_after"] == -3
    assert d["pods_placed_differently"] >= 3
    # packing leaves whole nodes free: no stranded CPU for the average (2-CPU) pod
    assert c.b.fragmentation_after["fragmentation"]["cpu"] == 0.0


def test_the_same_inputs_give_the_same_answer_and_the_snapshot_is_unchanged() -> None:
    snap = cluster(3, pods=[make_pod("q").req(cpu="1").scheduler("py-scheduler")])
    before = ClusterSnapshot.from_objects([*snap.nodes, *snap.pods]).pods
    runs = [
        simulate(snap, workloads=deployment("web", 6, "500m"), changes=Changes(cordon=["n1"]))
        for _ in range(2)
    ]
    assert [p.node for p in runs[0].pods] == [p.node for p in runs[1].pods]
    assert snap.pods == before and not snap.nodes[1]["spec"].get("unschedulable")


def test_json_has_every_section() -> None:
    d = simulate(cluster(2, cpu="1"), workloads=deployment("web", 3, "1")).to_dict()
    assert set(d) >= {
        "summary",
        "placements",
        "unschedulable",
        "victims",
        "utilisation",
        "fragmentation",
        "reasons",
    }
    assert d["unschedulable"][0]["count"] == 1
    assert set(d["utilisation"]["after"]["zones"]) == {"z0", "z1"}


def test_a_gated_pod_is_reported_not_attempted() -> None:
    snap = cluster(
        1, pods=[make_pod("gated").req(cpu="1").scheduler("py-scheduler").gate("example.com/wait")]
    )
    res = simulate(snap)
    (p,) = res.pods
    assert p.node is None
    assert res.unschedulable_groups() == {
        "not attempted: scheduling gates example.com/wait": ["default/gated"]
    }


def test_an_added_pod_that_already_exists_is_refused() -> None:
    snap = cluster(1, pods=[make_pod("p0").req(cpu="1").node("n0")])
    spec = {"containers": [{"name": "c", "image": "x"}]}
    with pytest.raises(WorkloadError, match=r"p\.yaml: pod default/p0 already exists in the snapshot"):
        simulate(
            snap, workloads=expand([("p.yaml", {"kind": "Pod", "metadata": {"name": "p0"}, "spec": spec})])
        )


def _gang_snapshot() -> ClusterSnapshot:
    """Two 1-CPU nodes and a pending gang of three 1-CPU pods that must be placed all together."""
    members = [make_pod(f"m{i}").req(cpu="1").group("g").scheduler("py-scheduler").json() for i in range(3)]
    nodes = [make_node(f"n{i}").capacity(cpu="1", memory="4Gi", pods=110).json() for i in range(2)]
    # as `kubectl get nodes,pods,podgroups -o yaml` gives them
    return ClusterSnapshot.from_objects([*nodes, *members, make_pod_group("g", min_count=3)], "kubectl")


def test_a_snapshots_pod_group_is_scheduled_all_or_nothing_with_its_gates_on() -> None:
    with feature_gates.overridden("GenericWorkload=true,GangScheduling=true"):
        res = simulate(_gang_snapshot())
    assert [p.node for p in res.pods] == [None, None, None]  # 3 CPUs asked, 2 exist: none of the gang binds
    assert not any("PodGroup" in w for w in res.warnings)


def test_a_snapshots_pod_group_is_ignored_with_a_warning_when_its_gate_is_off() -> None:
    res = simulate(_gang_snapshot())
    assert sorted(p.node or "" for p in res.pods) == ["", "n0", "n1"]  # one by one, as the daemon would
    assert any("1 PodGroup(s) in the snapshot ignored" in w for w in res.warnings)
