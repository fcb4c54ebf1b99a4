"""DefaultPreemption: who may preempt, how victims are evicted (sync and async, API errors) and how the
preemptor waits for them (PreEnqueue), through the same framework as test_default_preemption."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import Action, QueueingHint
from pyscheduler.framework.events import Resource as Ev
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.default_preemption import (
    MSG_NOT_ELIGIBLE_NEVER,
    MSG_NOT_ELIGIBLE_TERMINATING,
    MSG_WAITING_FOR_PREEMPTION,
    NAME,
    DefaultPreemption,
)
from pyscheduler.plugins.default_preemption.test_default_preemption import (
    Deferred,
    Env,
    FakeClient,
    code,
    node,
    pdb,
    vpod,
)
from pyscheduler.testing import make_handle, make_node, make_node_info, make_pod
from pyscheduler.testing.builders import make_pod_group

# ------------------------------------------------------------------------------------------ eligibility


@pytest.mark.parametrize(
    ("policy", "nominated", "terminating", "nominated_blocked", "want"),
    [
        pytest.param("PreemptLowerPriority", "", False, False, "", id="eligible"),
        pytest.param("Never", "", False, False, MSG_NOT_ELIGIBLE_NEVER, id="policy Never"),
        pytest.param(
            "PreemptLowerPriority",
            "n1",
            True,
            False,
            MSG_NOT_ELIGIBLE_TERMINATING,
            id="nominated node has terminating victims",
        ),
        pytest.param(
            "PreemptLowerPriority", "n1", False, False, "", id="nothing terminating"
        ),  # nothing terminating: try again
        pytest.param(
            "PreemptLowerPriority", "n1", True, True, "", id="nominated node blocked"
        ),  # nominated node cannot help any more
        pytest.param(
            "PreemptLowerPriority", "gone", True, False, "", id="nominated node gone"
        ),  # nominated node no longer exists
    ],
)
def test_eligibility(
    policy: str, nominated: str, terminating: bool, nominated_blocked: bool, want: str
) -> None:
    dying = vpod("dying", 1, "1")
    if terminating:
        dying.terminating()
    n1 = node("n1", "2", dying, vpod("x", 20, "1"), blocked=nominated_blocked)
    n2 = node("n2", "2", vpod("b", 1, "2"))
    env = Env([n1, n2])
    b = vpod("p", 10, "2").preemption_policy(policy)
    if nominated:
        b.nominated(nominated)
    result, status = env.post_filter(b.obj())
    if want:
        assert code(status) == Code.UNSCHEDULABLE and status is not None
        assert status.reasons == ("preemption: " + want,)
        assert result is None  # the nomination is kept
        assert env.client.calls == []
    else:
        assert code(status) == Code.SUCCESS and result is not None and result.nominated_node_name


def test_a_nomination_held_in_memory_counts_before_the_status_shows_it() -> None:
    """The status write naming the nominated node can lag behind the next attempt; the scheduler's own
    nomination then says the pod already preempted there, and terminating victims keep it waiting
    instead of "preempting" the same node again."""
    dying = vpod("dying", 1, "1").terminating()
    pod = vpod("p", 10, "2").obj()
    env = Env(
        [node("n1", "2", dying, vpod("x", 1, "1")), node("n2", "2", vpod("b", 1, "2"))],
        nominated={"n1": [pod]},
    )
    result, status = env.post_filter(pod)
    assert code(status) == Code.UNSCHEDULABLE and status is not None
    assert status.reasons == ("preemption: " + MSG_NOT_ELIGIBLE_TERMINATING,)
    assert result is None and env.client.calls == []
    # nominated nowhere, in memory or in its status: it may preempt
    result, status = Env(
        [node("n1", "2", vpod("dying", 1, "1").terminating(), vpod("x", 1, "1"))]
    ).post_filter(pod)
    assert code(status) == Code.SUCCESS and result is not None


def test_a_newer_nomination_in_memory_wins_over_the_status_of_an_older_one() -> None:
    """The pod preempted on n2 after its first nomination (n1) failed; the write naming n2 has not
    landed, so the status still says n1, where nothing terminates any more. The victims on n2 are still
    terminating: the pod waits for them instead of looking eligible and "preempting" n2 again."""
    pod = vpod("p", 10, "2").nominated("n1").obj()
    env = Env(
        [node("n1", "2", vpod("x", 20, "2")), node("n2", "2", vpod("dying", 1, "2").terminating())],
        nominated={"n2": [pod]},
    )
    result, status = env.post_filter(pod)
    assert code(status) == Code.UNSCHEDULABLE and status is not None
    assert status.reasons == ("preemption: " + MSG_NOT_ELIGIBLE_TERMINATING,)
    assert result is None and env.client.calls == []


def test_terminating_higher_priority_pod_does_not_block() -> None:
    env = Env([node("n1", "2", vpod("dying", 50, "1").terminating(), vpod("a", 1, "1"))])
    result, status = env.post_filter(vpod("p", 10, "1").nominated("n1").obj())
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"


# ------------------------------------------------------------------------------------------ errors


def test_zero_victims_on_an_unschedulable_node_is_an_error() -> None:
    env = Env([node("n1", "4", vpod("a", 1, "1"))])
    p = vpod("p", 10, "1").obj()
    state = CycleState()
    env.framework.run_pre_filter_plugins(state, p, env.nodes)
    result, status = env.plugin.post_filter(state, p, {"n1": Status.unschedulable("stale")})
    assert code(status) == Code.ERROR and result is None
    assert status is not None
    assert status.reasons == ('preemption: expected at least one victim pod on node "n1"',)


def test_sync_preemption_api_error_is_an_error() -> None:
    env = Env([node("n1", "2", vpod("a", 1, "2"))], client=FakeClient(fail_on={"a"}), async_preemption=False)
    result, status = env.post_filter(vpod("p", 10, "2").obj())
    assert code(status) == Code.ERROR and result is None
    assert status is not None and status.reasons == ("preemption: HTTP 500 deleting a",)


def test_async_preemption_failure_spares_the_last_victim_and_activates() -> None:
    activated: list[list[Pod]] = []
    env = Env(
        [node("n1", "3", vpod("a", 1, "1"), vpod("b", 2, "1"), vpod("c", 3, "1"))],
        client=FakeClient(fail_on={"b"}),
        extra={"activate": activated.append},
    )
    p = vpod("p", 10, "3").obj()
    result, status = env.post_filter(p)
    # the result comes back at once; the API calls run on the (here inline) preemption runner
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"
    victims = sorted(c[1] for c in env.client.calls if c[0] == "delete")
    assert victims == ["default/b", "default/c"]  # evicted together; "a" (the last) is spared
    assert [[x.name for x in pods] for pods in activated] == [["p"]]
    assert not env.plugin.is_pod_running_preemption(p.uid)


def test_async_preemption_evicts_all_but_the_last_victim_at_once() -> None:
    both_in_flight = threading.Barrier(2, timeout=5)  # broken (an error) if b and c go one after the other
    activated: list[list[Pod]] = []

    def on_delete(name: str) -> None:
        if name in ("b", "c"):
            both_in_flight.wait()

    env = Env(
        [node("n1", "3", vpod("a", 1, "1"), vpod("b", 2, "1"), vpod("c", 3, "1"))],
        client=FakeClient(on_delete=on_delete),
        extra={"activate": activated.append},
    )
    p = vpod("p", 10, "3").obj()
    result, status = env.post_filter(p)
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"
    assert sorted(env.client.deleted()) == ["a", "b", "c"] and env.client.deleted()[-1] == "a"
    assert activated == []


def test_no_object_store_means_no_pdbs() -> None:
    env = Env([node("n1", "2", vpod("a", 1, "2", app="db"))], pdbs=[pdb("db", {"app": "db"}, 0)])
    env.plugin.handle._objects = None  # a handle without an object store
    result, status = env.post_filter(vpod("p", 10, "2").obj())
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"


def test_missing_client_recorder_and_writer_are_tolerated() -> None:
    low = vpod("low", 1, "0").nominated("n1").obj()
    env = Env([node("n1", "2", vpod("a", 1, "2"))], nominated={"n1": [low]})
    env.plugin.handle._client = None
    env.plugin.handle.extra.clear()
    result, status = env.post_filter(vpod("p", 10, "2").obj())
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"


# ------------------------------------------------------------------------------------------ async


def test_pre_enqueue_holds_the_preemptor_until_its_victims_are_evicted() -> None:
    runner = Deferred()
    env = Env([node("n1", "2", vpod("a", 1, "1"), vpod("b", 1, "1"))], runner=runner)
    p = vpod("p", 10, "2").obj()
    result, status = env.post_filter(p)
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"
    assert env.client.calls == []  # nothing happened yet
    st = env.framework.run_pre_enqueue_plugins(p)
    assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == (MSG_WAITING_FOR_PREEMPTION,) and st.plugin == NAME
    assert env.plugin.pre_enqueue(vpod("other", 10).obj()) is None
    runner.run()
    assert sorted(env.client.deleted()) == ["a", "b"]
    assert env.framework.run_pre_enqueue_plugins(p) is None


@pytest.mark.parametrize(
    ("lister_says", "held"),
    [
        pytest.param(None, True, id="no pod lister"),  # no pod lister: held until the delete call returns
        pytest.param("present", True, id="victim still present"),
        pytest.param("deleting", False, id="victim deleting"),
        pytest.param("gone", False, id="victim gone"),
        pytest.param("replaced", False, id="victim replaced"),
    ],
)
def test_pre_enqueue_while_the_last_victim_is_deleted(lister_says: str | None, held: bool) -> None:
    a = vpod("a", 1, "1").node("n1").obj()
    b = vpod("b", 2, "1").node("n1").obj()  # more important: evicted first; "a" is the last victim
    seen: list[Status | None] = []
    client = FakeClient()
    extra: dict[str, Any] = {}
    says: list[str] = [lister_says or ""]
    if lister_says is not None:

        def lister(ns: str, name: str) -> Any:
            assert (ns, name) == ("default", "a")
            return {
                "present": a,
                "deleting": vpod("a", 1, "1").node("n1").terminating().obj(),
                "gone": None,
                "replaced": {"metadata": {"name": "a", "uid": "another"}},
            }[says[0]]

        extra["pod_lister"] = lister
    env = Env([make_node_info(make_node("n1").capacity(cpu="2", pods=110), a, b)], client=client, extra=extra)
    p = vpod("p", 10, "2").obj()
    client.on_delete = lambda name: seen.append(env.plugin.pre_enqueue(p)) if name == "a" else None
    env.post_filter(p)
    assert [c[1] for c in client.calls if c[0] == "delete"] == ["default/b", "default/a"]
    assert len(seen) == 1 and (seen[0] is not None) == held
    if lister_says == "present":  # the call returned, the lister has not seen it yet: still held
        assert env.plugin.pre_enqueue(p) is not None
        says[0] = "gone"
    assert env.plugin.pre_enqueue(p) is None


@pytest.mark.parametrize(
    ("cache_says", "held"),
    [
        pytest.param("present", True, id="victim still in the cache"),
        pytest.param("deleting", False, id="victim terminating"),
        pytest.param("gone", False, id="victim removed from the cache"),
    ],
)
def test_pre_enqueue_reads_the_last_victim_from_the_schedulers_cache(cache_says: str, held: bool) -> None:
    # the daemon gives extra["assigned_pod"] (uid -> bound pod in its cache); the delete event of the
    # last victim must find the preemptor no longer "running preemption", or it stays gated
    a = vpod("a", 1, "1").node("n1").obj()
    b = vpod("b", 2, "1").node("n1").obj()
    states: dict[str, Pod | None] = {
        "present": a,
        "deleting": vpod("a", 1, "1").node("n1").terminating().obj(),
        "gone": None,
    }
    asked: list[str] = []

    def assigned_pod(uid: str) -> Pod | None:
        asked.append(uid)
        return states[cache_says]

    seen: list[Status | None] = []
    client = FakeClient()
    env = Env(
        [make_node_info(make_node("n1").capacity(cpu="2", pods=110), a, b)],
        client=client,
        extra={"assigned_pod": assigned_pod},
    )
    p = vpod("p", 10, "2").obj()
    client.on_delete = lambda name: seen.append(env.plugin.pre_enqueue(p)) if name == "a" else None
    env.post_filter(p)
    assert asked == [a.uid]
    assert len(seen) == 1 and (seen[0] is not None) == held


def test_the_preemptor_stays_held_until_the_cache_sees_its_last_victim_go() -> None:
    """The last eviction's call has returned, but the watch has not delivered the deletion: another
    pod's deletion requeues the preemptor, which must not run while its victim still looks bound (it
    would not fit, look eligible to preempt again and move to another node)."""
    a = vpod("a", 1, "1").node("n1").obj()
    b = vpod("b", 2, "1").node("n1").obj()
    cache: dict[str, Pod] = {a.uid: a, b.uid: b}
    client = FakeClient()
    env = Env(
        [make_node_info(make_node("n1").capacity(cpu="2", pods=110), a, b)],
        client=client,
        extra={"assigned_pod": cache.get},
    )
    p = vpod("p", 10, "2").obj()
    _, status = env.post_filter(p)
    assert code(status) == Code.SUCCESS and sorted(client.deleted()) == ["a", "b"]
    held = env.plugin.pre_enqueue(p)
    assert held is not None and held.reasons == (MSG_WAITING_FOR_PREEMPTION,)
    del cache[b.uid]  # the watch delivers the first victim's deletion: not the one that counts
    assert env.plugin.pre_enqueue(p) is not None
    cache[a.uid] = vpod("a", 1, "1").node("n1").terminating().obj()
    assert env.plugin.pre_enqueue(p) is None
    assert env.plugin.pre_enqueue(p) is None  # and stays open: the entry is forgotten
    assert env.plugin.executor._last_victim == {}


def test_holds_of_preemptors_never_asked_again_are_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    """A preemptor deleted while held is never asked again; once more holds pile up than SWEEP_AT, the
    next preemption forgets those whose last victim is gone, and keeps those still waiting."""
    from pyscheduler.plugins.default_preemption import executor

    monkeypatch.setattr(executor, "SWEEP_AT", 2)
    pods = {f"v{i}": vpod(f"v{i}", 1, "2").node(f"n{i}").obj() for i in range(4)}
    cache: dict[str, Pod] = {p.uid: p for p in pods.values()}
    env = Env(
        [make_node_info(make_node(f"n{i}").capacity(cpu="2", pods=110), pods[f"v{i}"]) for i in range(4)],
        extra={"assigned_pod": cache.get},
    )
    for i in range(3):  # each preempts a node's one victim, then waits for the cache to see it go
        env.post_filter(vpod(f"p{i}", 10, "2").obj())
    holds = dict(env.plugin.executor._last_victim)  # preemptor uid -> its last victim
    assert sorted(holds) == [f"uid-default-p{i}" for i in range(3)]
    kept = holds["uid-default-p2"].uid
    for uid in {v.uid for v in holds.values()} - {kept}:
        del cache[uid]  # the watch delivers these deletions; nobody asks p0 or p1 again
    env.post_filter(vpod("p3", 10, "2").obj())
    assert sorted(env.plugin.executor._last_victim) == ["uid-default-p2", "uid-default-p3"]


def test_a_failed_preemption_does_not_hold_the_preemptor() -> None:
    a = vpod("a", 1, "1").node("n1").obj()
    b = vpod("b", 2, "1").node("n1").obj()
    client = FakeClient()
    client.fail_on = {"b"}
    env = Env(
        [make_node_info(make_node("n1").capacity(cpu="2", pods=110), a, b)],
        client=client,
        extra={"assigned_pod": {a.uid: a, b.uid: b}.get},
    )
    p = vpod("p", 10, "2").obj()
    env.post_filter(p)
    assert env.plugin.pre_enqueue(p) is None


def test_sync_preemption_never_gates() -> None:
    env = Env([node("n1", "2", vpod("a", 1, "2"))], async_preemption=False, runner=Deferred())
    p = vpod("p", 10, "2").obj()
    _, status = env.post_filter(p)
    assert code(status) == Code.SUCCESS and env.client.deleted() == ["a"]
    assert env.plugin.pre_enqueue(p) is None
    assert list(env.plugin.events_to_register()) == []


def test_feature_gate_from_the_handle() -> None:
    h = make_handle()
    h.extra["feature_gates"] = {"SchedulerAsyncPreemption": False}
    assert DefaultPreemption(None, h).async_preemption is False
    h.extra.clear()
    assert DefaultPreemption(None, h).async_preemption is True


@pytest.mark.parametrize(
    ("gates", "pod_groups", "want"),
    [
        pytest.param(
            {"TopologyAwareWorkloadScheduling": True},
            [],
            "preemption: pod group for pod not found",
            id="no-pod-group",
        ),
        pytest.param(
            {"TopologyAwareWorkloadScheduling": True},
            [make_pod_group("pg", min_count=2, topology_key="zone")],
            "preemption: not eligible due to placement-based pod group scheduling limitation",
            id="topology-constraint",
        ),
        pytest.param(
            {"TopologyAwareWorkloadScheduling": True},
            [make_pod_group("pg", min_count=2)],
            None,
            id="no-constraint",
        ),
        pytest.param({}, [make_pod_group("pg", min_count=2, topology_key="zone")], None, id="gate-off"),
    ],
)
def test_pod_group_with_topology_constraints_does_not_preempt(
    gates: dict[str, bool], pod_groups: list[dict[str, Any]], want: str | None
) -> None:
    """kube 1.36 with TopologyAwareWorkloadScheduling: a pod group placed by topology is not preempted for
    pod by pod (its placements would each preempt); other pods and groups go on to the evaluator."""
    from pyscheduler.testing import make_handle

    h = make_handle(objects=pod_groups)
    h.extra["feature_gates"] = gates
    pl = DefaultPreemption(None, h)
    got = pl._pod_group_not_eligible(make_pod("p").group("pg").obj())
    assert (got.message() if got is not None else None) == want
    if got is not None:
        assert got.code == Code.UNSCHEDULABLE and got.plugin == "DefaultPreemption"
    assert pl._pod_group_not_eligible(make_pod("lone").obj()) is None


def test_events_to_register() -> None:
    env = Env([node("n1")])
    evs = list(env.plugin.events_to_register())
    assert len(evs) == 1
    assert evs[0].event.resource == Ev.ASSIGNED_POD and evs[0].event.action == Action.DELETE
    assert evs[0].hint is not None and evs[0].hint(None, vpod("x", 1).obj(), None) == QueueingHint.SKIP
