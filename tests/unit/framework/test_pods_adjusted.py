"""Filtering a node with pods added or removed without a copy of it (framework/pods_adjusted.py) must
answer what kube's way answers: the Filter plugins run on a clone of the node (and of the cycle state)
with the pods put on or taken off, the PreFilter extensions told. Random clusters with the default
plugins: cordoned and tainted nodes, nodes full by pod count, CPU or memory, pods nominated with higher
and lower priority; pods with and without tolerations, host ports and anti-affinity (the last two make
the plan say "clone")."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from pyscheduler.app import App, build_app
from pyscheduler.config.load import parse_config
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.pods_adjusted import AdjustedFilter
from pyscheduler.framework.runtime import Framework
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo
from pyscheduler.plugins.registry import full_registry, plugin_extension_points
from pyscheduler.testing.builders import make_node, make_pod


class _Null:
    def event(self, *a: Any, **k: Any) -> None: ...

    def submit(self, *a: Any, **k: Any) -> bool:
        return True


def _app() -> App:
    reg = full_registry()
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "parallelism": 1,
    }
    cfg = parse_config(doc, reg, lambda n: plugin_extension_points(reg[n]))
    return build_app(cfg, reg, object(), recorder=_Null(), writer=_Null())


def _cluster(app: App, rng: random.Random, n: int) -> None:
    for i in range(n):
        b = make_node(f"n{i}").capacity(
            cpu=str(rng.choice([1, 2, 4])), memory=rng.choice(["2Gi", "8Gi"]), pods=rng.choice([2, 3, 110])
        )
        b.label("topology.kubernetes.io/zone", f"z{i % 3}")
        if rng.random() < 0.15:
            b.taint("dedicated", "gpu", "NoSchedule")
        if rng.random() < 0.1:
            b.unschedulable()
        app.cache.add_node(b.obj())
    k = 0
    for i in range(n):
        for _ in range(rng.randrange(4)):
            app.cache.add_pod(
                make_pod(f"e{k}")
                .uid(f"e{k}")
                .req(cpu=rng.choice(["300m", "900m"]), memory=rng.choice(["256Mi", "1Gi"]))
                .priority(rng.choice([0, 100, 1000]))
                .node(f"n{i}")
                .obj()
            )
            k += 1
    for j in range(rng.randrange(2 * n)):
        nominee = (
            make_pod(f"nom{j}")
            .uid(f"nom{j}")
            .req(cpu=rng.choice(["500m", "1", "3"]), memory=rng.choice(["0", "3Gi"]))
            .priority(rng.choice([0, 500, 1000]))
            .obj()
        )
        app.queue.add_nominated_pod(PodInfo(nominee), f"n{rng.randrange(n)}")
    app.cache.update_snapshot(app.scheduler.snapshot)


def _pod(rng: random.Random) -> Pod:
    b = (
        make_pod("p")
        .uid("p")
        .req(cpu=rng.choice(["100m", "1500m", "3"]), memory=rng.choice(["0", "1Gi", "5Gi"]))
    )
    b.priority(500)
    if rng.random() < 0.3:
        b.toleration("dedicated", "gpu", "NoSchedule")
    return b.obj()


def _describe(s: Status | None) -> str | None:
    return None if s is None or s.is_success() else f"{s.code.name}/{s.plugin}/{'|'.join(s.reasons)}"


def _cloned_pass(
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    ni: NodeInfo,
    added: Sequence[PodInfo],
    removed: Sequence[PodInfo],
) -> Status | None:
    """kube's way: a clone of the node and of the state, each change told to the PreFilter extensions."""
    st = state.clone()
    node = ni.clone()
    for pi in removed:
        node.remove_pod(pi.pod)
        s = fwk.run_pre_filter_extension_remove_pod(st, pod, pi, node)
        if s is not None and not s.is_success():
            return s
    for pi in added:
        node.add_pod(pi)
        s = fwk.run_pre_filter_extension_add_pod(st, pod, pi, node)
        if s is not None and not s.is_success():
            return s
    return fwk.run_filter_plugins(st, pod, node)


def _with_nominated_by_clones(fwk: Framework, state: CycleState, pod: Pod, ni: NodeInfo) -> Status | None:
    """RunFilterPluginsWithNominatedPods as kube writes it."""
    nominated = fwk.ge_nominated_pods(pod, ni.name)
    if nominated:
        s = _cloned_pass(fwk, state, pod, ni, nominated, ())
        if s is not None and not s.is_success():
            return s
    return fwk.run_filter_plugins(state, pod, ni)


def _setup(seed: int) -> tuple[App, Framework, CycleState, Pod, list[NodeInfo]]:
    rng = random.Random(seed)
    app = _app()
    _cluster(app, rng, rng.choice([4, 40]))
    pod = _pod(rng)
    fwk = app.profiles["py-scheduler"]
    state = CycleState()
    nodes = list(app.scheduler.snapshot.list())
    _, s, _ = fwk.run_pre_filter_plugins(state, pod, nodes)
    assert s is None or s.is_success()
    return app, fwk, state, pod, nodes


@pytest.mark.parametrize("seed", range(40))
def test_the_nominated_pods_pass_answers_and_counts_as_with_clones(seed: int) -> None:
    _, fwk, state, pod, nodes = _setup(seed)
    assert fwk.adjusted_filter(state) is not None  # the default plugins, a plain pod: no clone needed

    before = dict(fwk.evaluations)
    want = [_describe(_with_nominated_by_clones(fwk, state, pod, ni)) for ni in nodes]
    want_counts = {k: v - before[k] for k, v in fwk.evaluations.items()}

    # node by node (the nominated node, preemption's dry runs)
    before = dict(fwk.evaluations)
    got = [_describe(fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)) for ni in nodes]
    assert got == want
    assert {k: v - before[k] for k, v in fwk.evaluations.items()} == want_counts

    # a whole chunk at once (the scheduler's search)
    adjusted = fwk.adjusted_filter(state)
    assert adjusted is not None
    ge = [(i, pis) for i, ni in enumerate(nodes) if (pis := fwk.ge_nominated_pods(pod, ni.name))]
    before = dict(fwk.evaluations)
    batch = adjusted.with_nominated_batch(fwk.run_filter_plugins_batch, state, pod, nodes, ge)
    assert batch is not None
    assert [_describe(s) for s in batch] == want
    assert {k: v - before[k] for k, v in fwk.evaluations.items()} == want_counts


@pytest.mark.parametrize("seed", range(40))
def test_a_node_without_some_pods_answers_as_a_clone_without_them(seed: int) -> None:
    _, fwk, state, pod, nodes = _setup(seed)
    adjusted = fwk.adjusted_filter(state)
    assert adjusted is not None
    rng = random.Random(seed)
    for ni in nodes:
        removed = [pi for pi in ni.pods if rng.random() < 0.5]
        want = _describe(_cloned_pass(fwk, state, pod, ni, (), removed))
        assert _describe(adjusted.run(state, pod, ni, (), removed)) == want
        assert len(ni.pods) == len(ni.clone().pods)  # the node itself is left alone


def test_a_pod_with_host_ports_or_anti_affinity_is_filtered_on_clones() -> None:
    app = _app()
    app.cache.add_node(make_node("n0").capacity(cpu="4", memory="8Gi", pods=110).obj())
    app.cache.update_snapshot(app.scheduler.snapshot)
    fwk = app.profiles["py-scheduler"]
    nodes = list(app.scheduler.snapshot.list())
    ported = make_pod("a").uid("a").req(cpu="1").host_port(8080).obj()
    anti = (
        make_pod("b")
        .uid("b")
        .req(cpu="1")
        .label("app", "x")
        .pod_affinity("kubernetes.io/hostname", {"app": "x"}, anti=True)
        .obj()
    )
    for pod in (ported, anti):
        state = CycleState()
        fwk.run_pre_filter_plugins(state, pod, nodes)
        # NodePorts (reads the node's ports) or InterPodAffinity (its PreFilter state changes with
        # the pods) runs: the plan must say no
        assert fwk.adjusted_filter(state) is None


def test_nominated_pods_take_the_room_without_changing_the_node() -> None:
    app = _app()
    app.cache.add_node(make_node("n0").capacity(cpu="4", memory="8Gi", pods=110).obj())
    app.cache.add_pod(make_pod("low").uid("low").req(cpu="1").node("n0").obj())
    app.queue.add_nominated_pod(PodInfo(make_pod("big").uid("big").req(cpu="2").priority(1000).obj()), "n0")
    app.cache.update_snapshot(app.scheduler.snapshot)
    fwk = app.profiles["py-scheduler"]
    ni = app.scheduler.snapshot.get("n0")
    assert ni is not None
    pod = make_pod("p").uid("p").req(cpu="1500m").priority(10).obj()
    state = CycleState()
    fwk.run_pre_filter_plugins(state, pod, [ni])
    requested = ni.requested.milli_cpu
    s = fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)
    assert s is not None and s.reasons == ("Insufficient cpu",) and s.plugin == "NodeResourcesFit"
    assert ni.requested.milli_cpu == requested and len(ni.pods) == 1
    # the same pod fits beside a nominated pod of lower priority (which is not counted)
    low = make_pod("p2").uid("p2").req(cpu="1500m").priority(2000).obj()
    state = CycleState()
    fwk.run_pre_filter_plugins(state, low, [ni])
    assert fwk.run_filter_plugins_with_nominated_pods(state, low, ni) is None


@pytest.mark.parametrize("seed", range(40))
def test_plugins_that_ignore_the_pods_may_come_after_the_one_that_reads_them(seed: int) -> None:
    """The batch's bookkeeping (which plugins are not called again, the evaluations taken back or added)
    with NodeResourcesFit first, before the plugins that ignore the node's pods."""
    _, fwk, state, pod, nodes = _setup(seed)
    plan = fwk.adjusted_filter(state)
    assert plan is not None
    steps = sorted(plan.steps, key=lambda s: s[2] is None)  # the one with filter_adjusted first
    assert steps[0][0].name == "NodeResourcesFit" and len(steps) > 1
    evaluations: dict[Any, int] = {key: 0 for _, key, _ in steps}
    adjusted = AdjustedFilter(steps, evaluations, fwk._error)

    def plain(node: NodeInfo) -> Status | None:
        for p, key, _ in steps:
            evaluations[key] += 1
            s = p.filter(state, pod, node)
            if s is not None and not s.is_success():
                return s if s.plugin == p.name else s.with_plugin(p.name)
        return None

    def by_clones(ni: NodeInfo) -> Status | None:
        nominated = fwk.ge_nominated_pods(pod, ni.name)
        if nominated:
            node = ni.clone()
            for pi in nominated:
                node.add_pod(pi)
            s = plain(node)
            if s is not None:
                return s
        return plain(ni)

    want = [_describe(by_clones(ni)) for ni in nodes]
    want_counts = dict(evaluations)
    for key in evaluations:
        evaluations[key] = 0
    ge = [(i, pis) for i, ni in enumerate(nodes) if (pis := fwk.ge_nominated_pods(pod, ni.name))]
    got = adjusted.with_nominated_batch(lambda st, p, ns: [plain(n) for n in ns], state, pod, nodes, ge)
    assert got is not None
    assert [_describe(s) for s in got] == want
    assert evaluations == want_counts


def test_a_plugin_that_raises_gives_the_same_error_node_by_node_and_in_a_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, fwk, state, pod, nodes = _setup(3)
    ge = [(i, pis) for i, ni in enumerate(nodes) if (pis := fwk.ge_nominated_pods(pod, ni.name))]
    assert ge
    bad = nodes[ge[0][0]].name
    fit: Any = next(p for p in fwk.filter_plugins if p.name == "NodeResourcesFit")
    real = fit.filter_adjusted

    def raising(st: CycleState, p: Pod, ni: NodeInfo, added: Any, removed: Any) -> Status | None:
        if ni.name == bad:
            raise RuntimeError("disk on fire")
        return real(st, p, ni, added, removed)

    def raising_many(st: CycleState, p: Pod, nis: Any, added: Any) -> list[Status | None]:
        if any(ni.name == bad for ni in nis):
            raise RuntimeError("disk on fire")
        return real_many(st, p, nis, added)  # type: ignore[no-any-return]

    real_many = fit.filter_adjusted_many
    monkeypatch.setattr(fit, "filter_adjusted", raising)
    monkeypatch.setattr(fit, "filter_adjusted_many", raising_many)  # then node by node: only one raises
    state.delete("__framework.pods_adjusted")  # plan again with the patched method
    before = dict(fwk.evaluations)
    want = [_describe(fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)) for ni in nodes]
    want_counts = {k: v - before[k] for k, v in fwk.evaluations.items()}
    assert "disk on fire" in (want[ge[0][0]] or "")
    adjusted = fwk.adjusted_filter(state)
    assert adjusted is not None
    before = dict(fwk.evaluations)
    got = adjusted.with_nominated_batch(fwk.run_filter_plugins_batch, state, pod, nodes, ge)
    assert got is not None
    assert [_describe(s) for s in got] == want
    assert {k: v - before[k] for k, v in fwk.evaluations.items()} == want_counts
