"""The dry run's short cuts (``dry_run``): on random clusters the candidates, victims, reasons, errors
and plugin evaluations are those of the full dry run (every step through the framework, clones of the
node and the state), with the real NodeResourcesFit, TaintToleration and NodeAffinity plugins."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.runtime import Framework, ProfilePlugins
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod
from pyscheduler.plugins import default_preemption as dp
from pyscheduler.plugins import node_affinity, node_resources_fit, taint_toleration
from pyscheduler.plugins.default_preemption import NAME, DefaultPreemption
from pyscheduler.plugins.default_preemption.dry_run import plan_dry_run
from pyscheduler.plugins.default_preemption.test_default_preemption import Blockers, pdb
from pyscheduler.testing import make_handle, make_node, make_node_info, make_pod, snapshot_of


def _real(module: Any, handle: Any) -> Any:
    spec = module.PLUGIN
    return spec.new(spec.decode(None, "args"), handle)


class World:
    """A cluster and a framework: the real resource, taint and node-affinity plugins, optionally the
    test's Blockers plugin (pod-dependent, with PreFilter extensions)."""

    def __init__(
        self,
        nodes: list[NodeInfo],
        *,
        pdbs: list[dict[str, Any]] | None = None,
        nominated: dict[str, list[Pod]] | None = None,
        blockers: bool = False,
        seed: int = 0,
    ) -> None:
        snapshot = snapshot_of(*nodes)
        self.handle = make_handle(snapshot, objects=pdbs or [], nominated=nominated)
        self.nodes = [ni for ni in (snapshot.get(n.name) for n in nodes) if ni is not None]
        self.plugin = DefaultPreemption(None, self.handle, rng=random.Random(seed), async_preemption=False)
        plugins = [_real(m, self.handle) for m in (taint_toleration, node_affinity, node_resources_fit)]
        random.Random(seed).shuffle(plugins)  # any Filter order (pod-independent ones after the fit too)
        if blockers:
            plugins.append(Blockers())
        names = tuple(p.name for p in plugins)
        plugins.append(self.plugin)
        pre_filter = tuple(p.name for p in plugins if hasattr(p, "pre_filter"))
        points = {"preFilter": pre_filter, "filter": names, "postFilter": (NAME,)}
        self.framework = Framework(
            "default-scheduler", {p.name: p for p in plugins}, ProfilePlugins(points=points), self.handle
        )

    def find(self, pod: Pod) -> tuple[Any, Counter[tuple[str, str]]]:
        """find_candidates' answer (comparable) and the Filter evaluations it counted."""
        state = CycleState()
        _, s, _ = self.framework.run_pre_filter_plugins(state, pod, self.nodes)
        assert s is None
        statuses = {}
        for ni in self.nodes:
            st = self.framework.run_filter_plugins_with_nominated_pods(state, pod, ni)
            if st is not None and not st.is_success():
                statuses[ni.name] = st
        before = Counter(self.framework.evaluations)
        cands, node_status, errors = self.plugin.find_candidates(state, pod, self.nodes, statuses)
        after = Counter(self.framework.evaluations)
        answer = (
            [(c.name, [v.name for v in c.victims], c.num_pdb_violations) for c in cands],
            {n: (s.code, s.reasons, s.plugin) for n, s in sorted(node_status.items())},
            errors,
        )
        return answer, after - before


def _random_world(rng: random.Random, *, blockers: bool) -> tuple[World, World, Pod]:
    """Two identical worlds (one per way of dry-running) and a preemptor."""
    specs = []
    for i in range(rng.randint(2, 7)):
        pods = []
        for j in range(rng.randint(0, 6)):
            b = make_pod(f"p{i}-{j}").priority(rng.choice((0, 1, 2, 5)))
            b.req(cpu=f"{rng.choice((10, 100, 500, 900, 1500))}m", memory=f"{rng.choice((0, 1, 3))}Gi")
            b.created(rng.choice((10.0, 20.0, 30.0)))
            if rng.random() < 0.5:
                b.label("app", rng.choice(("a", "b")))
            if blockers and rng.random() < 0.2:
                b.label("blocker", "true")
            pods.append(b)
        nb = make_node(f"n{i}").capacity(
            cpu=rng.choice(("2", "4")), memory="8Gi", pods=rng.choice((3, 4, 110))
        )
        if rng.random() < 0.2:
            nb.taint("dedicated", "x")
        specs.append((nb, pods))
    pod_b = (
        make_pod("preemptor")
        .priority(rng.choice((2, 5, 10)))
        .req(cpu=f"{rng.choice((500, 1500, 3000))}m", memory=f"{rng.choice((0, 2, 6))}Gi")
    )
    if rng.random() < 0.3:
        pod_b.toleration("dedicated", "x", "NoSchedule", "Equal")
    pdbs = [pdb("pdb-a", {"app": "a"}, rng.choice((0, 1, 2)))] if rng.random() < 0.5 else []
    nominated: dict[str, list[Pod]] = {}
    if rng.random() < 0.4:
        n = f"n{rng.randrange(len(specs))}"
        nominated[n] = [make_pod("nom").priority(rng.choice((1, 5, 10))).req(cpu="500m").obj()]
    seed = rng.randrange(1000)

    def world() -> World:
        nodes = [make_node_info(nb, *pods) for nb, pods in specs]
        return World(nodes, pdbs=pdbs, nominated=nominated, blockers=blockers, seed=seed)

    return world(), world(), pod_b.obj()


@pytest.mark.parametrize("blockers", [False, True], ids=["resources-only", "with-extensions"])
def test_short_cuts_decide_as_the_full_dry_run(blockers: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    used: Counter[str] = Counter()
    compared = 0
    for _ in range(150):
        fast, full, pod = _random_world(rng, blockers=blockers)
        got, got_evals = fast.find(pod)
        with monkeypatch.context() as m:
            m.setattr(dp, "plan_dry_run", lambda fw, st: None)  # every step through the framework
            want, want_evals = full.find(pod)
        assert got == want
        assert got_evals == want_evals
        assert set(full.plugin.dry_runs) <= {"full"}
        used.update(fast.plugin.dry_runs)
        compared += bool(want[0])
    assert compared > 50  # enough cases with candidates to mean something
    if blockers:  # a pod-dependent plugin with extensions: only the reprieve short cut applies
        assert used["reprieve"] > 50 and not used["resources"]
    else:
        assert used["resources"] > 50
    assert used["full"] > 0  # nodes with higher-priority nominations take every step


def _plan_for(pod: Pod, *, blockers: bool) -> Any:
    w = World([make_node_info(make_node("n").capacity(cpu="2", memory="1Gi", pods=10))], blockers=blockers)
    state = CycleState()
    w.framework.run_pre_filter_plugins(state, pod, w.nodes)
    return plan_dry_run(w.framework, state)


def test_plan_for_a_pod_only_resources_can_stop() -> None:
    plan = _plan_for(make_pod("p").req(cpu="1").obj(), blockers=False)
    assert plan.by_resources and not plan.clone_state and not plan.run_extensions
    assert plan.reprieve.dependent() == ["NodeResourcesFit"]


def test_plan_with_a_plugin_that_tracks_removed_pods() -> None:
    plan = _plan_for(make_pod("p").req(cpu="1").obj(), blockers=True)
    assert plan.clone_state and plan.run_extensions and not plan.by_resources
    assert plan.reprieve.dependent() == ["NodeResourcesFit", "Blockers"]


def test_scalar_requests_take_the_framework_path() -> None:
    """Extended resources are left to NodeResourcesFit itself (the reprieve short cut still applies)."""
    nb = make_node("n1").capacity(cpu="4", memory="8Gi", pods=110, **{"example.com/gpu": "1"})
    low = make_pod("low").priority(0).res({"cpu": "1", "example.com/gpu": "1"})
    w = World([make_node_info(nb, low)])
    pod = make_pod("p").priority(5).res({"cpu": "1", "example.com/gpu": "1"}).obj()
    answer, _ = w.find(pod)
    assert answer[0] == [("n1", ["low"], 0)]
    assert w.plugin.dry_runs == Counter({"reprieve": 1})


def test_a_failed_check_falls_back_to_the_full_dry_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """If the Filter pass that checks the numbers rejects the node, the full dry run decides and the
    evaluations counted are the full dry run's alone."""
    nodes = [
        make_node_info(
            make_node("n1").capacity(cpu="2", memory="8Gi", pods=110),
            make_pod("low").priority(0).req(cpu="2"),
        )
    ]
    fast, full = World(nodes), World([ni.clone() for ni in nodes])
    pod = make_pod("p").priority(5).req(cpu="2").obj()
    calls = {"n": 0}
    framework = fast.framework
    real_plan = framework.adjusted_filter

    class _FirstCheckFails:
        """The check's Filter pass (on the node without the victims, no copy) rejects the first time."""

        def __init__(self, adjusted: Any) -> None:
            self.adjusted = adjusted

        def run(self, state: CycleState, p: Pod, ni: NodeInfo, added: Any = (), removed: Any = ()) -> Any:
            calls["n"] += 1
            if calls["n"] == 1:
                return Status.unschedulable("checked")
            return self.adjusted.run(state, p, ni, added, removed)

    def plan(state: CycleState) -> Any:
        adjusted = real_plan(state)
        assert adjusted is not None  # the plain pod: the check needs no copy of the node
        return _FirstCheckFails(adjusted)

    monkeypatch.setattr(framework, "adjusted_filter", plan)
    got, got_evals = fast.find(pod)
    monkeypatch.setattr(dp, "plan_dry_run", lambda fw, st: None)
    want, want_evals = full.find(pod)
    assert got == want and got[0] == [("n1", ["low"], 0)]
    assert fast.plugin.dry_runs == Counter({"reprieve": 1})
    assert got_evals == want_evals
