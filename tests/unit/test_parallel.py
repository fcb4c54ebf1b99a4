"""pyscheduler.parallel: when a Filter chunk goes to forked workers, and that it answers as one process.

The search's identity with kube's node-by-node definition, sharded and not, is in
test_scheduler_search.py; here: the crossover (measured cost, the CPUs this process may use, plugins
whose Filter writes the CycleState) and the fallback when a worker fails.
"""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler import parallel
from pyscheduler.app import App, build_app
from pyscheduler.config.load import parse_config
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.node_table import NodeBatch
from pyscheduler.parallel import ForkFilter
from pyscheduler.plugins.registry import full_registry, plugin_extension_points
from pyscheduler.testing.builders import make_node, make_pod


class _Null:
    def event(self, *a: Any, **k: Any) -> None: ...

    def submit(self, *a: Any, **k: Any) -> bool:
        return True


def _app(nodes: int = 600) -> App:
    reg = full_registry()
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "parallelism": 1,
    }
    app = build_app(
        parse_config(doc, reg, lambda n: plugin_extension_points(reg[n])),
        reg,
        object(),
        recorder=_Null(),
        writer=_Null(),
    )
    for i in range(nodes):
        cpu = "1" if i % 3 == 0 else "4"  # every third node too small for the pod below
        app.cache.add_node(make_node(f"n{i}").capacity(cpu=cpu, memory="8Gi", pods=110).obj())
    app.cache.update_snapshot(app.scheduler.snapshot)
    return app


def _prefiltered(app: App) -> tuple[Any, CycleState, Any, NodeBatch]:
    fwk = app.profiles["py-scheduler"]
    pod = make_pod("p").uid("p").req(cpu="2").obj()
    state = CycleState()
    nodes = app.scheduler.snapshot.list()
    fwk.run_pre_filter_plugins(state, pod, nodes)
    return fwk, state, pod, NodeBatch(nodes, app.scheduler.snapshot.node_table())


def test_workers_are_capped_at_the_cpus_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0})
    assert ForkFilter(16, force=False).workers == 1  # taskset -c 0: one process, whatever parallelism says
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert ForkFilter(16, force=False).workers == 4
    assert ForkFilter(2, force=False).workers == 2


def test_a_chunk_is_sharded_only_once_its_measured_cost_passes_the_crossover(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0, 1})
    app = _app()
    fwk, state, pod, chunk = _prefiltered(app)
    ff = ForkFilter(2, min_serial_seconds=0.05, min_shard=256, force=False)
    assert ff.shards(fwk, state, len(chunk)) == 1  # nothing measured yet
    ff.run(fwk, state, pod, chunk)  # measures the Filter time per node in one process
    assert ff.sharded == 0
    ff._per_node[fwk.profile_name] = 0.05 / 600 * 0.9  # just below: the fork would cost more
    assert ff.shards(fwk, state, 600) == 1
    ff._per_node[fwk.profile_name] = 0.05 / 600 * 1.1
    assert ff.shards(fwk, state, 600) == 2
    assert ff.shards(fwk, state, 400) == 1  # under two shards of min_shard nodes
    # a Filter plugin that writes the CycleState for Reserve (here: VolumeBinding, not skipped for a pod
    # with a claim) keeps the chunk in one process
    assert "VolumeBinding" in state.skip_filter_plugins  # the pod has no claim
    state.skip_filter_plugins.discard("VolumeBinding")
    assert "VolumeBinding" in {p.name for p in fwk.filter_plugins}
    assert ff.shards(fwk, state, 600) == 1


def test_sharded_statuses_equal_the_single_process_ones() -> None:
    app = _app()
    fwk, state, pod, chunk = _prefiltered(app)
    want, want_passing = fwk.run_filter_plugins_counted(state, pod, chunk)
    ev_before = dict(fwk.evaluations)
    ff = ForkFilter(3, force=True)
    got, passing = ff.run(fwk, state, pod, chunk)
    assert (ff.sharded, ff.fallbacks) == (1, 0)
    assert passing == want_passing == 400
    assert [None if s is None else (s.code, s.plugin, s.reasons) for s in got] == [
        None if s is None else (s.code, s.plugin, s.reasons) for s in want
    ]
    # the workers' plugin runs are counted in the parent (scheduler_plugin_evaluation_total)
    assert fwk.evaluations[("NodeResourcesFit", "Filter")] - ev_before[("NodeResourcesFit", "Filter")] == 600


def test_a_worker_that_fails_leaves_the_chunk_to_the_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    app = _app()
    fwk, state, pod, chunk = _prefiltered(app)
    want, _ = fwk.run_filter_plugins_counted(state, pod, chunk)

    def broken(*a: Any, **k: Any) -> bytes:  # runs in the forked child: it exits without an answer
        raise OSError("pipe gone")

    monkeypatch.setattr(parallel.pickle, "dumps", broken)
    ev_before = dict(fwk.evaluations)
    ff = ForkFilter(2, force=True)
    got, passing = ff.run(fwk, state, pod, chunk)
    assert (ff.sharded, ff.fallbacks) == (0, 1)
    assert passing == 400
    assert [s is None for s in got] == [s is None for s in want]
    assert fwk.evaluations[("NodeResourcesFit", "Filter")] - ev_before[("NodeResourcesFit", "Filter")] == 600
