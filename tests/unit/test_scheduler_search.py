"""The scheduler's node search (scheduler.find_nodes_that_fit) against kube's node-by-node definition.

The search filters in chunks and lets plugins answer a whole chunk at once (filter_nodes); kube checks
node after node from ``nextStartNodeIndex`` until ``numFeasibleNodesToFind`` fit. On random clusters
(nodes too small, tainted, cordoned, some with nominated pods, default plugins), both must find the same
feasible nodes in the same order, the same status for every rejected node, and move the start index
by the same amount.

Every test runs twice: with ``parallelism: 1`` (one process) and with ``parallelism: 2`` and sharding
forced (pyscheduler.parallel: each chunk split over a forked worker and the parent), which must give the
same answers.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from pyscheduler.app import App, build_app
from pyscheduler.config.load import parse_config
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.interfaces import Diagnosis
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo
from pyscheduler.parallel import FORCE_ENV
from pyscheduler.plugins.registry import full_registry, plugin_extension_points
from pyscheduler.scheduler_search import num_feasible_nodes_to_find
from pyscheduler.testing.builders import make_node, make_pod


class _Null:
    def event(self, *a: Any, **k: Any) -> None: ...

    def submit(self, *a: Any, **k: Any) -> bool:
        return True


_PARALLELISM = {"parallelism": 1}


@pytest.fixture(autouse=True, params=[1, 2], ids=["one-process", "forked-shards"])
def parallelism(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    _PARALLELISM["parallelism"] = request.param
    if request.param > 1:
        monkeypatch.setenv(FORCE_ENV, "1")
    return int(request.param)


def _app(percentage: int | None) -> App:
    reg = full_registry()
    doc: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        **_PARALLELISM,
    }
    if percentage is not None:
        doc["percentageOfNodesToScore"] = percentage
    cfg = parse_config(doc, reg, lambda n: plugin_extension_points(reg[n]))
    return build_app(cfg, reg, object(), recorder=_Null(), writer=_Null())


def _reference(app: App, pod: Pod, start: int) -> tuple[list[str], dict[str, str], int, set[str]]:
    """kube's findNodesThatPassFilters, node by node (as pyscheduler did before batching)."""
    fwk = app.profiles["py-scheduler"]
    state = CycleState()
    nodes = app.scheduler.snapshot.list()
    _, s, _ = fwk.run_pre_filter_plugins(state, pod, nodes)
    assert s is None or s.is_success()
    n = len(nodes)
    to_find = num_feasible_nodes_to_find(
        fwk.percentage_of_nodes_to_score or app.scheduler.percentage_of_nodes_to_score, n
    )
    feasible: list[str] = []
    statuses: dict[str, str] = {}
    rejecting: set[str] = set()  # the plugins a failed pod waits on (queueing hints)
    processed = 0
    for i in range(n):
        ni = nodes[(start + i) % n]
        processed += 1
        st = fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)
        if st is None or st.code == Code.SUCCESS:
            feasible.append(ni.name)
            if len(feasible) >= to_find:
                break
        else:
            statuses[ni.name] = _describe(st)
            rejecting.add(f"{'pending' if st.code == Code.PENDING else 'unschedulable'}/{st.plugin}")
    return feasible, statuses, (start + processed) % n, rejecting


def _describe(s: Status) -> str:
    return f"{s.code.name}/{s.plugin}/{'|'.join(s.reasons)}"


def _cluster(app: App, rng: random.Random, n: int) -> None:
    for i in range(n):
        b = make_node(f"n{i}").capacity(
            cpu=str(rng.choice([1, 2, 4])), memory="8Gi", pods=rng.choice([3, 110])
        )
        b.label("topology.kubernetes.io/zone", f"z{i % 3}")
        if rng.random() < 0.1:
            b.taint("dedicated", "gpu", "NoSchedule")
        if rng.random() < 0.05:
            b.unschedulable()
        app.cache.add_node(b.obj())
    k = 0
    for i in range(n):
        for _ in range(rng.randrange(4)):
            app.cache.add_pod(
                make_pod(f"e{k}").uid(f"e{k}").req(cpu="500m", memory="1Gi").node(f"n{i}").obj()
            )
            k += 1
    # pods nominated by an earlier preemption, higher and lower priority than the pod under test
    for j in range(rng.randrange(6)):
        nominee = make_pod(f"nom{j}").uid(f"nom{j}").req(cpu="1").priority(rng.choice([0, 1000])).obj()
        app.queue.add_nominated_pod(PodInfo(nominee), f"n{rng.randrange(n)}")
    app.cache.update_snapshot(app.scheduler.snapshot)


@pytest.mark.parametrize("seed", range(60))
def test_chunked_search_checks_the_same_nodes_as_kube_node_by_node(seed: int) -> None:
    rng = random.Random(seed)
    app = _app(rng.choice([None, 10, 50, 100]))
    _cluster(app, rng, rng.choice([5, 120, 300]))
    pod = make_pod("p").uid("p").req(cpu=rng.choice(["100m", "1500m", "3"])).priority(500).obj()
    start = rng.randrange(len(app.scheduler.snapshot.list()))
    want_feasible, want_statuses, want_next, want_rejecting = _reference(app, pod, start)

    sched = app.scheduler
    sched.next_start_node_index = start
    # the pass rate of an earlier search sizes the first chunk; what is checked and recorded must not
    # depend on it
    sched.last_pass_rate = rng.choice([1.0, 0.6, 0.3, 0.0])
    fwk = app.profiles["py-scheduler"]
    state = CycleState()
    feasible, diagnosis = sched.find_nodes_that_fit(fwk, state, pod, sched.snapshot.list())
    assert [ni.name for ni in feasible] == want_feasible
    if len(feasible) > 1:
        # the feasible nodes carry their table rows from the search; scoring through them must give
        # what scoring node by node gives
        by_rows = sched.prioritize_nodes(fwk, state, pod, feasible)
        by_node = sched.prioritize_nodes(fwk, state, pod, [ni.clone() for ni in feasible])
        assert by_rows == by_node
    assert {name: _describe(s) for name, s in diagnosis.node_to_status.items()} == want_statuses
    assert sched.next_start_node_index == want_next
    assert {f"pending/{p}" for p in diagnosis.pending_plugins} | {
        f"unschedulable/{p}" for p in diagnosis.unschedulable_plugins
    } == want_rejecting
    assert isinstance(diagnosis, Diagnosis)


def test_a_node_whose_nominated_pod_takes_the_room_is_rejected_in_a_chunk() -> None:
    app = _app(100)
    for i in range(4):
        app.cache.add_node(make_node(f"n{i}").capacity(cpu="2", memory="8Gi", pods=110).obj())
    app.queue.add_nominated_pod(PodInfo(make_pod("big").uid("big").req(cpu="2").priority(1000).obj()), "n2")
    app.cache.update_snapshot(app.scheduler.snapshot)
    pod: Pod = make_pod("p").uid("p").req(cpu="1").obj()
    feasible, diagnosis = app.scheduler.find_nodes_that_fit(
        app.profiles["py-scheduler"], CycleState(), pod, app.scheduler.snapshot.list()
    )
    assert sorted(ni.name for ni in feasible) == ["n0", "n1", "n3"]
    assert diagnosis.node_to_status["n2"].reasons == ("Insufficient cpu",)
    assert all(isinstance(ni, NodeInfo) for ni in feasible)


class _Flaky:
    """A batched Filter plugin that errors on one node and passes the rest."""

    name = "Flaky"

    def __init__(self, bad: str) -> None:
        self.bad = bad

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return Status.as_error("disk on fire") if node_info.name == self.bad else None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Any) -> list[Status | None]:
        return [self.filter(state, pod, ni) for ni in nodes]


@pytest.mark.parametrize("bad_index", [0, 150, 299])
def test_an_error_anywhere_in_a_chunk_fails_the_search(bad_index: int) -> None:
    """Even when the chunk holds enough passing nodes before it (kube checks nodes in parallel, so an
    Error on any node it reaches fails the cycle)."""
    from pyscheduler.framework.registry import PluginSpec

    reg = dict(full_registry())

    def new(args: Any, handle: Any) -> _Flaky:
        return _Flaky(f"n{bad_index}")

    reg["Flaky"] = PluginSpec("Flaky", new)
    doc: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,
        **_PARALLELISM,
        "profiles": [
            {"schedulerName": "py-scheduler", "plugins": {"filter": {"enabled": [{"name": "Flaky"}]}}}
        ],
    }
    cfg = parse_config(doc, reg, lambda n: plugin_extension_points(reg[n]))
    app = build_app(cfg, reg, object(), recorder=_Null(), writer=_Null())
    for i in range(300):
        app.cache.add_node(make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=110).obj())
    app.cache.update_snapshot(app.scheduler.snapshot)
    sched = app.scheduler
    pod = make_pod("p").uid("p").req(cpu="100m").obj()
    with pytest.raises(RuntimeError, match="disk on fire"):
        sched.find_nodes_that_fit(app.profiles["py-scheduler"], CycleState(), pod, sched.snapshot.list())
    if _PARALLELISM["parallelism"] > 1:  # Flaky is not known read-only: never sharded
        assert sched.fork_filter is not None and sched.fork_filter.sharded == 0


@pytest.mark.parametrize("seed", range(10))
def test_scores_from_the_searchs_rows_equal_scores_node_by_node(seed: int) -> None:
    """Every node fits (differently loaded): the chunks pass whole and the feasible nodes keep the
    chunks' table rows; the scores through them equal the scores of the same nodes looked up afresh."""
    rng = random.Random(seed)
    app = _app(None)
    for i in range(200):
        app.cache.add_node(make_node(f"n{i}").capacity(cpu="8", memory="32Gi", pods=110).obj())
        for k in range(rng.randrange(6)):
            app.cache.add_pod(
                make_pod(f"e{i}-{k}").uid(f"e{i}-{k}").req(cpu="700m", memory="3Gi").node(f"n{i}").obj()
            )
    app.cache.update_snapshot(app.scheduler.snapshot)
    sched, fwk = app.scheduler, app.profiles["py-scheduler"]
    sched.next_start_node_index = rng.randrange(200)
    pod = make_pod("p").uid("p").req(cpu="500m", memory="1Gi").obj()
    state = CycleState()
    feasible, _ = sched.find_nodes_that_fit(fwk, state, pod, sched.snapshot.list())
    assert len(feasible) == num_feasible_nodes_to_find(None, 200)
    by_rows = sched.prioritize_nodes(fwk, state, pod, feasible)
    by_node = sched.prioritize_nodes(fwk, state, pod, [ni.clone() for ni in feasible])
    assert by_rows == by_node
    assert len({s.score for s in by_rows}) > 1  # the loads differ, so a wrong row would show
    if _PARALLELISM["parallelism"] > 1:  # the chunks were filtered by forked shards, not in line
        assert sched.fork_filter is not None and sched.fork_filter.sharded > 0
        assert sched.fork_filter.fallbacks == 0


@pytest.mark.parametrize("fits", [1, 2, 7])
def test_the_scheduled_log_counts_every_rejected_node_as_evaluated(fits: int) -> None:
    """kube's "evaluatedNodes": feasible plus rejected nodes. The rejections of a pod that fits are
    counted without being named (Diagnosis.defer), and a pod that fits nowhere still gets every node's
    reason."""
    app = _app(100)
    for i in range(40):
        cpu = "4" if i % (40 // fits) == 0 and i // (40 // fits) < fits else "1"
        app.cache.add_node(make_node(f"n{i}").capacity(cpu=cpu, memory="8Gi", pods=110).obj())
    sched = app.scheduler
    fwk = app.profiles["py-scheduler"]
    result = sched.schedule_pod(fwk, CycleState(), make_pod("p").uid("p").req(cpu="2").obj())
    assert (result.evaluated, result.feasible) == (40, fits)

    feasible, diagnosis = sched.find_nodes_that_fit(
        fwk, CycleState(), make_pod("q").uid("q").req(cpu="8").obj(), sched.snapshot.list()
    )
    assert feasible == []
    assert sorted(diagnosis.node_to_status) == sorted(f"n{i}" for i in range(40))
    assert {s.reasons for s in diagnosis.node_to_status.values()} == {("Insufficient cpu",)}


@pytest.mark.parametrize("subset", [False, True], ids=["all-nodes", "a-placement-subset"])
def test_a_pod_naming_its_nodes_is_filtered_on_those_alone_in_the_lists_order(subset: bool) -> None:
    """A DaemonSet pod's matchFields on metadata.name make NodeAffinity's PreFilter name its node; the
    search then filters the named nodes alone, in the node list's order (kube walks allNodes and keeps
    the named ones), whether the list is the snapshot's or a pod group placement's subset of it, and a
    name with no node is left out."""
    app = _app(None)
    for i in range(200):
        app.cache.add_node(make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=110).obj())
    app.cache.update_snapshot(app.scheduler.snapshot)
    named = ["n150", "n7", "gone", "n42"]
    pod = Pod.from_dict(
        {
            "metadata": {"name": "ds", "namespace": "default", "uid": "ds"},
            "spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [  # one name a term: the API allows one value
                                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]}
                                for n in named
                            ]
                        }
                    }
                },
            },
        }
    )
    sched = app.scheduler
    sched.next_start_node_index = 0
    nodes = list(sched.snapshot.list())
    if subset:  # every other node, backwards: positions are not the table's rows
        nodes = nodes[::-2]
    fwk = app.profiles["py-scheduler"]
    feasible, diagnosis = sched.find_nodes_that_fit(fwk, CycleState(), pod, nodes)
    want = [ni.name for ni in nodes if ni.name in named]
    assert [ni.name for ni in feasible] == want
    assert len(want) == (1 if subset else 3)  # n150, n7, n42; of the odd-indexed backwards half, n7
    assert diagnosis.absent_nodes_status is not None


def test_after_a_search_where_half_the_nodes_failed_the_next_filters_its_sample_in_one_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = _app(None)
    for i in range(400):
        b = make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=110)
        if i % 2:
            b.taint("dedicated", "gpu", "NoSchedule")
        app.cache.add_node(b.obj())
    app.cache.update_snapshot(app.scheduler.snapshot)
    sched, fwk = app.scheduler, app.profiles["py-scheduler"]
    calls: list[int] = []  # the size of each chunk filtered
    chunks = sched._filter_in_chunks

    def counted(*args: Any, **kwargs: Any) -> Any:
        for chunk, results, passing in chunks(*args, **kwargs):
            calls.append(len(chunk))
            yield chunk, results, passing

    monkeypatch.setattr(sched, "_filter_in_chunks", counted)
    to_find = num_feasible_nodes_to_find(None, 400)
    for k in range(3):
        calls.clear()
        pod = make_pod(f"p{k}").uid(f"p{k}").req(cpu="100m").obj()
        feasible, _ = sched.find_nodes_that_fit(fwk, CycleState(), pod, sched.snapshot.list())
        assert len(feasible) == to_find
        if k == 0:  # nothing known yet: the sample, then what its pass rate says is still missing
            assert calls[0] == to_find and len(calls) == 2
        else:
            assert len(calls) == 1 and calls[0] > to_find
        assert sched.last_pass_rate == pytest.approx(0.5, abs=0.01)
