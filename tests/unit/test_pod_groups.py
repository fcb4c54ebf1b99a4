"""Pod groups end to end in process (the daemon's app, queue, cache and plugins, no API server): a gang is
bound all together or not at all, waits for its members, and is packed into one topology domain."""

from __future__ import annotations

from typing import Any

from pyscheduler.config import feature_gates
from pyscheduler.engine import MAX_ROUNDS, Engine
from pyscheduler.framework.events import Action, ClusterEvent, Resource
from pyscheduler.testing import make_node, make_pod, make_pod_group

GANG = "GenericWorkload=true,GangScheduling=true"
ALL = GANG + ",TopologyAwareWorkloadScheduling=true"
ZONE = "topology.kubernetes.io/zone"
NODE_ADD = ClusterEvent(Resource.NODE, Action.ADD)
WAIT_MSG = (
    "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
    "one or more plugins asked to wait and no plugin rejected pod"
)


def _node(name: str, cpu: str, zone: str = "") -> Any:
    b = make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).label("kubernetes.io/hostname", name)
    return b.label(ZONE, zone) if zone else b


def _member(name: str, cpu: str = "1", group: str = "pg", host: str = "") -> Any:
    b = make_pod(name).req(cpu=cpu).group(group)
    return b.node_selector({"kubernetes.io/hostname": host}) if host else b


def _run(gates: str, nodes: list[Any], groups: list[dict[str, Any]], pods: list[Any]) -> tuple[Engine, Any]:
    with feature_gates.overridden(gates):
        engine = Engine(seed=1)
        engine.add_nodes(nodes)
        engine.add_objects({"PodGroup": groups})
        results = engine.schedule(pods)
    return engine, results


def _condition(engine: Engine, name: str) -> dict[str, Any] | None:
    pg = engine.app.objects.get("PodGroup", "default", name) or {}
    conds = (pg.get("status") or {}).get("conditions") or []
    return next((c for c in conds if c["type"] == "PodGroupScheduled"), None)


def test_a_gang_that_fits_is_bound_whole() -> None:
    nodes = [_node(f"n{i}", "2") for i in range(1, 4)]
    pods = [_member(f"p{i}", host=f"n{i}") for i in range(1, 4)]
    engine, r = _run(GANG, nodes, [make_pod_group("pg", min_count=3)], pods)
    assert {k: v.node for k, v in r.items()} == {"default/p1": "n1", "default/p2": "n2", "default/p3": "n3"}
    cond = _condition(engine, "pg")
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "Scheduled")
    m = engine.app.metrics.registry
    labels = {"result": "scheduled", "profile": engine.default_scheduler_name}
    assert m.get_sample_value("scheduler_podgroup_schedule_attempts_total", labels) == 1.0
    assert m.get_sample_value("scheduler_podgroup_scheduling_algorithm_duration_seconds_count") == 1.0


def test_a_gang_that_cannot_fit_leaves_nothing_bound() -> None:
    nodes = [_node("n1", "2"), _node("n2", "2"), _node("n3", "1")]
    pods = [_member("p1", host="n1"), _member("p2", host="n2"), _member("p3", cpu="2", host="n3")]
    engine, r = _run(GANG, nodes, [make_pod_group("pg", min_count=3)], pods)
    assert [v.node for v in r.values()] == [None, None, None]
    assert r["default/p1"].message == WAIT_MSG and r["default/p2"].message == WAIT_MSG
    msg = r["default/p3"].message or ""
    assert msg.startswith("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node")
    assert engine.app.cache.assumed_pod_count() == 0 and not list(engine.app.waiting_pods)
    cond = _condition(engine, "pg")
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "Unschedulable")


def test_a_gang_that_cannot_fit_is_retried_at_backoff_pace_with_pop_from_backoff_on() -> None:
    # SchedulerPopFromBackoffQ stays on with the gang gates: an idle queue hands out a pod still backing
    # off. The gang's members must not come straight back (the run would never end): the pod no node
    # fits waits in the unschedulable pool for an event, the waiting ones back off as kube's do
    nodes = [_node("n1", "2"), _node("n2", "2"), _node("n3", "1")]
    pods = [_member("p1", host="n1"), _member("p2", host="n2"), _member("p3", cpu="2", host="n3")]
    engine, r = _run(GANG, nodes, [make_pod_group("pg", min_count=3)], pods)
    q = engine.app.queue
    assert [v.node for v in r.values()] == [None, None, None]
    where = {queue: sorted(p.name for p in pods) for queue, pods in q.pending_pod_list().items() if pods}
    assert where == {"backoff": ["p1", "p2"], "unschedulable": ["p3"]}
    labels = {"result": "unschedulable", "profile": engine.default_scheduler_name}
    attempts = engine.app.metrics.registry.get_sample_value(
        "scheduler_podgroup_schedule_attempts_total", labels
    )
    assert attempts is not None and 1 <= attempts <= MAX_ROUNDS


def test_an_idle_queue_pops_from_backoff_q_with_the_gang_gates_on() -> None:
    # a pod some plugin rejected while an event it registered for arrived backs off, and an idle queue
    # hands it out at once (kube's SchedulerPopFromBackoffQ), gangs on or off
    for gates in (GANG, ""):
        with feature_gates.overridden(gates):
            engine = Engine(seed=1)
        q = engine.app.queue
        q.add(make_pod("solo").req(cpu="1").obj())
        qpi = q.pop(0)
        assert qpi is not None and qpi.pod.name == "solo"
        q.move_all_to_active_or_backoff(NODE_ADD, None, _node("n1", "2").obj())
        qpi.unschedulable_plugins = {"NodeResourcesFit"}
        q.add_unschedulable_if_not_present(qpi)
        assert q.where(qpi.uid) == "backoff"
        assert q.pop(0) is qpi, gates


def test_min_count_is_what_must_fit() -> None:
    # 3 pods, minCount 2: the two that fit are bound, the third reports its own failure
    nodes = [_node("n1", "2"), _node("n2", "2"), _node("n3", "1")]
    pods = [_member("p1", host="n1"), _member("p2", host="n2"), _member("p3", cpu="2", host="n3")]
    _, r = _run(GANG, nodes, [make_pod_group("pg", min_count=2)], pods)
    assert (r["default/p1"].node, r["default/p2"].node, r["default/p3"].node) == ("n1", "n2", None)


def test_a_gang_waits_in_pre_enqueue_for_its_members_and_its_pod_group() -> None:
    nodes = [_node("n1", "8")]
    with feature_gates.overridden(GANG):
        engine = Engine(seed=1)
        engine.add_nodes(nodes)
        engine.add_objects({"PodGroup": [make_pod_group("pg", min_count=3)]})
        r = engine.schedule([_member("p1"), _member("p2"), _member("q1", group="late")])
        assert [v.node for v in r.values()] == [None, None, None]
        pending = engine.app.queue.pending_pods()
        assert pending.get("gated", 0) + pending.get("unschedulable", 0) == 3, pending
        engine.add_objects({"PodGroup": [make_pod_group("late", min_count=1)]})
        r = engine.schedule([_member("p3")])
    assert {k: v.node for k, v in r.items()} == {
        "default/p1": "n1",
        "default/p2": "n1",
        "default/q1": "n1",
        "default/p3": "n1",
    }


def _preemption_run(min_count: int, members: list[Any]) -> tuple[Engine, Any, list[tuple[str, ...]]]:
    """Two 2-CPU nodes, each full with a priority-0 pod; the members come with priority 100."""
    nodes = [_node("n1", "2"), _node("n2", "2")]
    victims = [make_pod(f"v{i}").req(cpu="2").node(f"n{i}").created(1000 + i) for i in (1, 2)]
    conditions: list[tuple[str, ...]] = []
    with feature_gates.overridden(GANG):
        engine = Engine(seed=1)
        engine.add_nodes(nodes)
        engine.add_objects({"PodGroup": [make_pod_group("pg", min_count=min_count)]})
        engine.add_pods(victims)
        writer: Any = engine.app.scheduler.status_writer
        write = writer.pod_group_condition

        def seen(*args: Any) -> None:
            conditions.append(args[3:])
            write(*args)

        writer.pod_group_condition = seen
        results = engine.schedule([m.priority(100) for m in members], max_rounds=3)
    return engine, results, conditions


def test_a_gang_that_must_preempt_waits_for_its_preemptions_then_binds_whole() -> None:
    # kube 1.36: the first member preempts on one node and is assumed there; the second sees it, so it
    # preempts on the other node; the gang is feasible once the victims are gone: nothing is bound in
    # that cycle ("waiting for preemption"), everything in the next
    engine, r, conditions = _preemption_run(2, [_member("p1", cpu="2"), _member("p2", cpu="2")])
    assert {r["default/p1"].node, r["default/p2"].node} == {"n1", "n2"}
    assert {r["default/v1"].preempted_by, r["default/v2"].preempted_by} == {"default/p1", "default/p2"}
    assert conditions == [
        (
            "False",
            "Unschedulable",
            "pod group is unschedulable, pod group is waiting for preemption to complete",
        ),
        ("True", "Scheduled", ""),
    ]
    m = engine.app.metrics.registry
    for result, count in (("waiting_on_preemption", 1.0), ("scheduled", 1.0), ("unschedulable", None)):
        labels = {"result": result, "profile": engine.default_scheduler_name}
        assert m.get_sample_value("scheduler_podgroup_schedule_attempts_total", labels) == count, result


def test_a_gang_that_does_not_fit_even_with_preemption_binds_nothing() -> None:
    # p3 fits no node, preemption or not: the gang stays unbound and the members that preempted say
    # what they wait for, nominated nowhere (their victims are evicted all the same, as in kube 1.36
    # without workload-aware preemption)
    members = [_member("p1", cpu="2"), _member("p2", cpu="2"), _member("p3", cpu="3")]
    engine, r, conditions = _preemption_run(3, members)
    assert [r[f"default/p{i}"].node for i in (1, 2, 3)] == [None, None, None]
    assert r["default/p1"].message == WAIT_MSG and r["default/p2"].message == WAIT_MSG
    assert not engine.app.queue.nominated_pods_by_node()
    assert conditions and all(
        c == ("False", "Unschedulable", "pod group is unschedulable") for c in conditions
    )


def test_topology_packs_the_group_into_the_one_zone_it_fits() -> None:
    # zone a, which the pods prefer: two nodes of one pod each (2 < 3); zone b: one node for all three
    nodes = [_node("a1", "1", "a"), _node("a2", "1", "a"), _node("b1", "3", "b")]
    pods = [_member(f"p{i}").preferred_node_affinity(100, ZONE, ["a"]) for i in range(3)]
    group = make_pod_group("pg", min_count=3, topology_key=ZONE)
    _, r = _run(ALL, nodes, [group], pods)
    assert {v.node for v in r.values()} == {"b1"}
    # without the constraint, the same pods fill zone a first and spill over into zone b
    _, r = _run(ALL, nodes, [make_pod_group("pg", min_count=3)], pods)
    assert sorted(str(v.node) for v in r.values()) == ["a1", "a2", "b1"]


def test_topology_group_that_fits_no_zone() -> None:
    nodes = [_node("a1", "1", "a"), _node("b1", "1", "b")]
    pods = [_member(f"p{i}") for i in range(2)]
    engine, r = _run(ALL, nodes, [make_pod_group("pg", min_count=2, topology_key=ZONE)], pods)
    assert [v.node for v in r.values()] == [None, None]
    # as in kube, each pod reports its own outcome in the first placement tried (a zone of one node,
    # preemption not tried for a group with topology constraints); the group's condition sums it up
    msgs = sorted(v.message or "" for v in r.values())
    assert msgs == [
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: not eligible due to placement-based pod "
        "group scheduling limitation",
        WAIT_MSG,
    ]
    cond = _condition(engine, "pg")
    assert cond is not None and cond["reason"] == "Unschedulable"
    assert cond["message"].startswith("0/2 placements are available, first placement status: ")


def test_gates_off_schedule_pods_one_by_one() -> None:
    nodes = [_node("n1", "2"), _node("n2", "2"), _node("n3", "1")]
    pods = [_member("p1", host="n1"), _member("p2", host="n2"), _member("p3", cpu="2", host="n3")]
    engine, r = _run("", nodes, [], pods)
    assert "GangScheduling" not in engine.app.profiles[engine.default_scheduler_name].plugins
    assert (r["default/p1"].node, r["default/p2"].node, r["default/p3"].node) == ("n1", "n2", None)
