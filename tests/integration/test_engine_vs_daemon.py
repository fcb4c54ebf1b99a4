"""The in-process engine (pyscheduler.engine) decides what the daemon decides on the same objects.

Each scenario is run twice: by ``pyscheduler run`` against the real control plane, and by the engine fed
the very objects the API server holds (nodes listed from it, pods as it returned them on creation, with
``spec.priority`` filled in by admission). Scenarios are built so that no step is a tie between nodes
(the engine checks that itself), since kube breaks ties at random.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pyscheduler.engine import Engine
from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.cluster import LocalCluster
from pyscheduler.testing.daemon import SchedulerProcess
from pyscheduler.testing.kube import create, events_for, eventually, get_pod, node_of

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def daemon(cluster: LocalCluster) -> Iterator[SchedulerProcess]:
    with SchedulerProcess(cluster.kubeconfig, None) as d:
        yield d
        assert d.alive(), f"the daemon died during the tests:\n{d.log_tail()}"


def all_nodes(cluster: LocalCluster) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = cluster.api("GET", "/api/v1/nodes")["items"]
    return items


def pod(ns: str, name: str) -> Any:
    return make_pod(name, ns).scheduler("py-scheduler").node_selector({"pool": ns})


def priority_class(cluster: LocalCluster, name: str, value: int) -> None:
    create(
        cluster,
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        },
    )


def test_sequential_placements_on_uneven_nodes_match(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess
) -> None:
    cluster.create_nodes(1, prefix=f"{ns}-a", cpu="3", memory="8Gi", labels={"pool": ns})
    cluster.create_nodes(1, prefix=f"{ns}-b", cpu="5", memory="12Gi", labels={"pool": ns})
    cluster.create_nodes(1, prefix=f"{ns}-c", cpu="8", memory="6Gi", labels={"pool": ns})
    engine = Engine()
    engine.add_nodes(all_nodes(cluster))
    sizes = [("500m", "1Gi"), ("1", "512Mi"), ("700m", "2Gi"), ("300m", "3Gi"), ("1200m", "256Mi")]
    for i, (cpu, mem) in enumerate(sizes * 2):
        created = create(cluster, pod(ns, f"p{i}").req(cpu=cpu, memory=mem).json())
        name = f"p{i}"

        def bound(name: str = name) -> str:
            return node_of(cluster, ns, name)

        got = eventually(bound, timeout=30, what=f"{name} bound")
        r = engine.schedule([created])[f"{ns}/p{i}"]
        if len(r.scores) > 1:
            assert r.scores[0].total != r.scores[1].total, f"p{i}: a tie; the scenario must avoid ties"
        assert r.node == got, f"p{i}: engine {r.node}, daemon {got}; engine scores {r.scores}"


def test_preemption_picks_the_same_victim_and_node(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess
) -> None:
    (n0,) = cluster.create_nodes(1, prefix=f"{ns}-x", cpu="2", memory="4Gi", labels={"pool": ns})
    (n1,) = cluster.create_nodes(1, prefix=f"{ns}-y", cpu="2", memory="4Gi", labels={"pool": ns})
    for name, value in (("low", 1), ("mid", 500), ("high", 1000)):
        priority_class(cluster, f"{ns}-{name}", value)
    low = create(cluster, pod(ns, "low").req(cpu="2").priority_class(f"{ns}-low").node(n0).json())
    mid = create(cluster, pod(ns, "mid").req(cpu="2").priority_class(f"{ns}-mid").node(n1).json())
    nodes = all_nodes(cluster)
    high = create(cluster, pod(ns, "high").req(cpu="1").priority_class(f"{ns}-high").json())
    got = eventually(lambda: node_of(cluster, ns, "high"), timeout=60, what="the preemptor bound")
    eventually(lambda: events_for(cluster, ns, "low", "Preempted"), timeout=30, what="low preempted")
    assert get_pod(cluster, ns, "mid")["spec"]["nodeName"] == n1  # not a victim

    engine = Engine()
    engine.add_nodes(nodes)
    res = engine.schedule([low, mid, high])
    assert res[f"{ns}/high"].node == got == n0
    assert res[f"{ns}/high"].victims == [f"{ns}/low"]
    assert res[f"{ns}/mid"].node == n1


def test_failed_scheduling_text_is_the_daemons(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess
) -> None:
    cluster.create_nodes(2, prefix=f"{ns}-z", cpu="2", memory="4Gi", labels={"pool": ns})
    created = create(cluster, pod(ns, "huge").req(cpu="64").json())
    ev = eventually(lambda: events_for(cluster, ns, "huge", "FailedScheduling"), what="FailedScheduling")
    engine = Engine()
    engine.add_nodes(all_nodes(cluster))
    r = engine.schedule([created])[f"{ns}/huge"]
    assert not r.scheduled
    assert r.message == ev[0]["note"]
