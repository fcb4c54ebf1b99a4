"""The in-process engine (pyscheduler.engine): the real core on builder objects, no cluster, no threads."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from pyscheduler.config.load import ConfigError
from pyscheduler.engine import Engine
from pyscheduler.framework.status import Status
from pyscheduler.testing import make_node, make_pod, schedule


def nodes(n: int, cpu: str = "4") -> list[Any]:
    return [make_node(f"n{i}").capacity(cpu=cpu, memory="8Gi", pods=110) for i in range(n)]


def test_assumed_pods_count_on_their_node_and_the_rest_fail_with_kube_text() -> None:
    pods = [make_pod(f"p{i}").req(cpu="1") for i in range(5)]
    res = schedule(nodes(2, cpu="2"), pods)
    placed = [r.node for r in res.values() if r.node]
    assert sorted(placed) == ["n0", "n0", "n1", "n1"]  # never overcommitted: 2 CPUs each
    failed = [r for r in res.values() if not r.scheduled]
    assert len(failed) == 1
    assert failed[0].message == (
        # kube 1.36's default profile runs DynamicResources' PostFilter before preemption, for every pod
        "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes "
        "are available: 2 No preemption victims found for incoming pod."
    )
    assert failed[0].reason == "Unschedulable"


def test_pods_read_from_a_cluster_fail_with_kube_text_too() -> None:
    # a snapshot's pods carry a resourceVersion: their unschedulable condition takes the daemon's
    # precondition path (pyscheduler.app.ApiStatusWriter), which the engine's writer runs in line
    pod = make_pod("big").req(cpu="8").json()
    pod["metadata"]["resourceVersion"] = "4711"
    engine = Engine(seed=1)
    engine.add_nodes(nodes(2))
    (r,) = engine.schedule([pod]).values()
    assert not r.scheduled and r.reason == "Unschedulable"
    assert (r.message or "").startswith("0/2 nodes are available: 2 Insufficient cpu.")


def test_queue_order_is_priority_sort() -> None:
    low = make_pod("low").req(cpu="1").priority(1)
    high = make_pod("high").req(cpu="1").priority(100)
    res = schedule(nodes(1, cpu="1"), [low, high])
    assert res["default/high"].node == "n0"
    assert not res["default/low"].scheduled


def test_preemption_evicts_victims_and_the_preemptor_lands() -> None:
    victim = make_pod("victim").req(cpu="2").priority(0).node("n0")
    pre = make_pod("pre").req(cpu="1").priority(1000)
    res = schedule(nodes(1, cpu="2"), [victim, pre])
    assert res["default/pre"].node == "n0"
    assert res["default/pre"].victims == ["default/victim"]
    assert res["default/victim"].preempted_by == "default/pre"
    assert res["default/pre"].attempts == 2  # first attempt nominated, second bound


def test_same_seed_same_placements() -> None:
    def run(seed: int) -> list[str | None]:
        pods = [make_pod(f"p{i}").req(cpu="100m") for i in range(20)]
        return [r.node for r in schedule(nodes(10), pods, seed=seed).values()]

    assert run(7) == run(7)


def test_per_plugin_weighted_scores_of_top_nodes() -> None:
    busy = make_pod("busy").req(cpu="3").node("n0")
    res = schedule(nodes(2), [busy, make_pod("p").req(cpu="1")])
    r = res["default/p"]
    assert r.node == "n1"
    assert r.scores[0].node == "n1" and r.scores[0].total > r.scores[1].total
    assert sum(r.scores[0].plugins.values()) == r.scores[0].total
    assert "NodeResourcesFit" in r.scores[0].plugins


def test_config_as_yaml_text_is_validated_by_the_daemons_loader() -> None:
    cfg = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: mine
  plugins:
    score:
      disabled: [{name: "*"}]
      enabled: [{name: NodeResourcesFit, weight: 10}]
"""
    res = schedule(nodes(2), [make_pod("p").req(cpu="1")], config=cfg)
    assert res["default/p"].scores[0].plugins.keys() == {"NodeResourcesFit"}
    with pytest.raises(ConfigError):
        schedule(
            nodes(1),
            [],
            config={
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": 3,
            },
        )


def test_waiting_permit_is_reported_and_no_thread_is_started() -> None:
    class Hold:
        name = "Hold"

        def permit(self, state: Any, pod: Any, node: str) -> tuple[Status, float]:
            return Status.wait("held"), 30.0

    eng = Engine()
    fwk = next(iter(eng.app.profiles.values()))
    fwk.permit_plugins = [*fwk.permit_plugins, Hold()]  # as an out-of-tree Permit plugin would
    before = threading.active_count()
    eng.add_nodes(nodes(1))
    res = eng.schedule([make_pod("p").req(cpu="1")])
    assert res["default/p"].waiting == ["Hold"] and not res["default/p"].scheduled
    assert threading.active_count() == before


def test_tens_of_nodes_in_milliseconds() -> None:
    eng = Engine()
    eng.add_nodes(nodes(50))
    pods = [make_pod(f"p{i}").req(cpu="100m") for i in range(50)]
    t = time.perf_counter()
    res = eng.schedule(pods)
    per_pod = (time.perf_counter() - t) / 50
    assert all(r.scheduled for r in res.values())
    assert per_pod < 0.05, per_pod


def test_scores_put_the_chosen_node_first_among_equals() -> None:
    res = schedule(nodes(4), [make_pod(f"p{i}").req(cpu="1") for i in range(3)], seed=3)
    for r in res.values():
        assert r.scores and r.scores[0].node == r.node
        assert r.scores[0].total == max(s.total for s in r.scores)


def test_two_preemptors_each_own_their_victims() -> None:
    victims = [make_pod(f"v{i}").req(cpu="2").priority(0).node(f"n{i}") for i in range(2)]
    pre = [make_pod(f"pre{i}").req(cpu="2").priority(1000) for i in range(2)]
    res = schedule(nodes(2, cpu="2"), [*victims, *pre])
    got = {}
    for i in range(2):
        r = res[f"default/pre{i}"]
        assert r.scheduled and len(r.victims) == 1, r
        got[r.victims[0]] = r.node
        assert res[r.victims[0]].preempted_by == f"default/pre{i}"
    assert got == {"default/v0": "n0", "default/v1": "n1"}


def test_a_pod_rejected_at_prefilter_reads_as_kube_1_36_writes_it() -> None:
    """An earlier PreFilter plugin rejects the pod, so DynamicResources' PostFilter finds no cycle state
    and fails with "not found", which kube-scheduler 1.36 puts into the message (checked against it on the
    local control plane); preemption does not run after a PostFilter error."""
    res = schedule(nodes(2, cpu="2"), [make_pod("p").pvc("missing")])
    [r] = res.values()
    assert not r.scheduled
    assert r.message == '0/2 nodes are available: persistentvolumeclaim "missing" not found. not found'


def test_a_slow_plugin_prints_no_warning_in_process() -> None:
    # the daemon warns of a plugin call over 100 ms; the what-if tools run the same core in process,
    # where such a line speaks of the user's machine, not of the answer, and would land in their output
    from structlog.testing import capture_logs

    class Slow:
        name = "Slow"

        def permit(self, state: Any, pod: Any, node: str) -> tuple[Status, float]:
            time.sleep(0.15)
            return Status.success(), 0.0

    eng = Engine()
    fwk = next(iter(eng.app.profiles.values()))
    fwk.permit_plugins = [*fwk.permit_plugins, Slow()]
    eng.add_nodes(nodes(1))
    with capture_logs() as logs:
        res = eng.schedule([make_pod("p").req(cpu="1")])
    assert res["default/p"].node == "n0"
    assert [e for e in logs if e["event"] == "slow plugin call"] == []
