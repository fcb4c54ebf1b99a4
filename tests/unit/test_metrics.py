"""pyscheduler.metrics and the runtime's metric hooks: kube-scheduler's names, buckets and sampling.

The comparison with a running kube-scheduler is tests/integration/test_metrics_parity.py; these check what
a dashboard reads without a cluster: sampled plugin timings, evaluation counts, Go's bucket boundaries,
and that every metric kube-scheduler's own package defines is either ours or listed as absent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pyscheduler import KUBERNETES_VERSION
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.runtime import Framework, ProfilePlugins
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod
from pyscheduler.metrics import DELIBERATE_ABSENCES, NOT_YET_EXPOSED, SchedulerMetrics
from pyscheduler.testing import make_handle
from pyscheduler.testing.builders import make_node, make_node_info, make_pod

NODES = [make_node_info(make_node(f"n{i}")) for i in range(4)]
KUBE_METRICS = (
    Path.home() / f"go/pkg/mod/k8s.io/kubernetes@{KUBERNETES_VERSION}/pkg/scheduler/metrics/metrics.go"
)
VOLUME_METRICS = KUBE_METRICS.parent.parent / "framework/plugins/volumebinding/metrics/metrics.go"
T = TypeVar("T")


@dataclass
class Plugin:
    """PreFilter (Skip when ``skip``), Filter rejecting ``reject``, PreScore, Score."""

    name: str
    reject: frozenset[str] = frozenset()
    skip: bool = False

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[None, Status | None]:
        return None, Status.skip() if self.skip else None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return Status.unschedulable("no") if node_info.name in self.reject else None

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return 1, None

    def score_extensions(self) -> None:
        return None


def framework(metrics: SchedulerMetrics, *plugins: Plugin) -> Framework:
    names = tuple(p.name for p in plugins)
    points = {"preFilter": names, "filter": names, "preScore": names, "score": names}
    return Framework(
        "prof", {p.name: p for p in plugins}, ProfilePlugins(points=points), make_handle(), metrics=metrics
    )


def samples(m: SchedulerMetrics, name: str) -> list[tuple[dict[str, str], float]]:
    out = []
    for fam in text_string_to_metric_families(generate_latest(m.registry).decode()):
        for s in fam.samples:
            if s.name == name:
                out.append((s.labels, s.value))
    return out


def cycle(fwk: Framework, sampled: bool) -> None:
    state = CycleState()
    state.record_plugin_metrics = sampled
    pod = make_pod("p").obj()
    fwk.run_pre_filter_plugins(state, pod, NODES)
    statuses = fwk.run_filter_plugins_batch(state, pod, NODES)
    feasible = [n for n, s in zip(NODES, statuses, strict=True) if s is None]
    fwk.run_pre_score_plugins(state, pod, feasible)
    fwk.run_score_plugins_totals(state, pod, feasible)


def test_plugin_calls_are_timed_in_sampled_cycles_only() -> None:
    m = SchedulerMetrics()
    fwk = framework(m, Plugin("A", reject=frozenset({"n0"})), Plugin("B"))
    cycle(fwk, sampled=False)
    assert samples(m, "scheduler_plugin_execution_duration_seconds_count") == []

    cycle(fwk, sampled=True)
    counts = {
        (labels["plugin"], labels["extension_point"], labels["status"]): v
        for labels, v in samples(m, "scheduler_plugin_execution_duration_seconds_count")
    }
    assert counts == {
        (p, point, "Success"): 1.0
        for p in ("A", "B")
        for point in ("PreFilter", "Filter", "PreScore", "Score")
    }


def test_plugin_evaluations_count_nodes_at_filter_and_score_and_skip_nothing_else() -> None:
    m = SchedulerMetrics()
    fwk = framework(m, Plugin("A", reject=frozenset({"n0"})), Plugin("B"), Plugin("C", skip=True))
    cycle(fwk, sampled=False)
    cycle(fwk, sampled=False)
    got = {
        (labels["plugin"], labels["extension_point"]): v
        for labels, v in samples(m, "scheduler_plugin_evaluation_total")
        if labels["profile"] == "prof"
    }
    # A sees all 4 nodes at Filter, B the 3 that A passed; C skipped PreFilter, so neither counts.
    # Score runs on the 3 feasible nodes for every plugin (C's PreScore did not skip).
    assert got == {
        ("A", "PreFilter"): 2,
        ("B", "PreFilter"): 2,
        ("A", "Filter"): 8,
        ("B", "Filter"): 6,
        ("A", "PreScore"): 2,
        ("B", "PreScore"): 2,
        ("C", "PreScore"): 2,
        ("A", "Score"): 6,
        ("B", "Score"): 6,
        ("C", "Score"): 6,
    }


def test_a_plugin_that_raises_is_timed_with_status_error() -> None:
    class Boom(Plugin):
        def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
            raise RuntimeError("boom")

    m = SchedulerMetrics()
    fwk = framework(m, Boom("X"))
    state = CycleState()
    state.record_plugin_metrics = True
    st = fwk.run_pre_score_plugins(state, make_pod("p").obj(), NODES)
    assert st is not None and st.code == Code.ERROR
    assert ({"plugin": "X", "extension_point": "PreScore", "status": "Error"}, 1.0) in samples(
        m, "scheduler_plugin_execution_duration_seconds_count"
    )
    assert ({"extension_point": "PreScore", "status": "Error", "profile": "prof"}, 1.0) in samples(
        m, "scheduler_framework_extension_point_duration_seconds_count"
    )


def test_buckets_are_go_exponential_buckets_to_the_last_digit() -> None:
    m = SchedulerMetrics()
    m.plugin("P", "Filter", Code.SUCCESS, 0.001)
    les = [labels["le"] for labels, _ in samples(m, "scheduler_plugin_execution_duration_seconds_bucket")]
    # what kube-scheduler 1.36 prints (Go multiplies 1e-05 by 1.5 nineteen times, step by step)
    assert les[:3] == ["1e-05", "1.5000000000000002e-05", "2.2500000000000005e-05"]
    assert les[-2:] == ["0.02216837820053101", "+Inf"]
    m.rest_request("GET", "h:1", "200", 0.01, 10, 300)
    assert [labels["le"] for labels, _ in samples(m, "rest_client_response_size_bytes_bucket")][:3] == [
        "64.0",
        "256.0",
        "512.0",
    ]


def test_state_gauges_fall_to_zero_rather_than_vanish() -> None:
    m = SchedulerMetrics()
    m.set_state(
        cache={"nodes": 3, "pods": 5, "assumed_pods": 1},
        unschedulable={("NodeResourcesFit", "p"): 2},
        inflight_events={"PodPopped": 1, "NodeAdd": 4},
        goroutines={"binding": 2},
    )
    m.set_state(
        cache={"nodes": 3, "pods": 5, "assumed_pods": 0},
        unschedulable={},
        inflight_events={},
        goroutines={"binding": 0},
    )
    assert samples(m, "scheduler_unschedulable_pods") == [
        ({"plugin": "NodeResourcesFit", "profile": "p"}, 0.0)
    ]
    assert sorted(samples(m, "scheduler_inflight_events"), key=str) == [
        ({"event": "NodeAdd"}, 0.0),
        ({"event": "PodPopped"}, 0.0),
    ]
    assert ({"type": "nodes"}, 3.0) in samples(m, "scheduler_cache_size")


def test_the_sli_attempts_label_is_capped_at_15_as_kubes() -> None:
    # kube's getAttemptsLabel: "1".."14", then "15+"; uncapped, every new attempt count seen was a new
    # histogram child for as long as the process ran (a label set that only grows)
    m = SchedulerMetrics()
    for attempts in (1, 14, 15, 16, 40, 400):
        m.pod_scheduled("p", attempts, 1.0)
    labels = {
        s.labels["attempts"]
        for fam in text_string_to_metric_families(generate_latest(m.registry).decode())
        if fam.name == "scheduler_pod_scheduling_sli_duration_seconds"
        for s in fam.samples
    }
    assert labels == {"1", "14", "15+"}


def test_no_created_series_which_kube_scheduler_does_not_have() -> None:
    m = SchedulerMetrics()
    m.attempt("scheduled", "p", 0.01)
    assert "_created" not in generate_latest(m.registry).decode()


def _kube_names(path: Path, subsystem: str) -> set[str]:
    text = path.read_text()
    return {f"{subsystem}_{n}" for n in re.findall(r'Name:\s+"([a-z_]+)"', text)}


@pytest.mark.skipif(
    not KUBE_METRICS.exists(), reason="the pinned Kubernetes module is not in the Go module cache"
)
def test_every_metric_kube_scheduler_defines_is_exposed_or_listed_as_absent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    kube = _kube_names(KUBE_METRICS, "scheduler") | _kube_names(VOLUME_METRICS, "scheduler_volume")
    ours = {
        fam.name + ("_total" if fam.type == "counter" else "")
        for fam in text_string_to_metric_families(generate_latest(SchedulerMetrics().registry).decode())
    }
    present = sorted(kube & ours)
    missing = sorted(kube - ours)
    with capsys.disabled():
        print(
            f"\nkube-scheduler's pkg/scheduler/metrics: {len(present)} of {len(kube)} metric names registered"
        )
    assert len(kube) >= 30, "the pattern no longer finds kube-scheduler's metric names"
    unlisted = [n for n in missing if n not in DELIBERATE_ABSENCES and n not in NOT_YET_EXPOSED]
    assert not unlisted, f"neither exposed nor listed as absent: {unlisted}"
    stale = [n for n in (*DELIBERATE_ABSENCES, *NOT_YET_EXPOSED) if n in ours]
    assert not stale, f"listed as absent but exposed: {stale}"


def test_docs_name_every_absence() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "metrics.md").read_text()
    missing = [n for n in (*DELIBERATE_ABSENCES, *NOT_YET_EXPOSED) if f"`{n}" not in doc]
    assert not missing, f"docs/metrics.md does not name {missing}"


# ------------------------------------------------------------------------------------ feature gates


def _feature_rows(m: SchedulerMetrics) -> dict[str, tuple[str, float]]:
    return {labels["name"]: (labels["stage"], v) for labels, v in samples(m, "kubernetes_feature_enabled")}


def test_kubernetes_feature_enabled_shows_every_gate_with_its_stage_and_value() -> None:
    from pyscheduler.config import feature_gates

    rows = _feature_rows(SchedulerMetrics(feature_gates=feature_gates.DEFAULT))
    assert set(rows) == {*feature_gates.KNOWN, "AllAlpha", "AllBeta"}
    # component-base's stage labels: GA is the empty string
    assert rows["SchedulerAsyncPreemption"] == ("BETA", 1.0)
    assert rows["GenericWorkload"] == ("ALPHA", 0.0)
    assert rows["DynamicResourceAllocation"] == ("", 1.0)
    assert rows["KMSv1"] == ("DEPRECATED", 0.0)
    assert rows["AllAlpha"] == ("ALPHA", 0.0) and rows["AllBeta"] == ("BETA", 0.0)


def test_kubernetes_feature_enabled_follows_the_feature_gates_flag() -> None:
    from pyscheduler.config import feature_gates

    m = SchedulerMetrics()  # reads the process's gates at each scrape, as set by --feature-gates
    assert _feature_rows(m)["GangScheduling"] == ("ALPHA", 0.0)
    with feature_gates.overridden("GenericWorkload=true,GangScheduling=true,SchedulerAsyncPreemption=false"):
        rows = _feature_rows(m)
        assert rows["GenericWorkload"] == ("ALPHA", 1.0)
        assert rows["GangScheduling"] == ("ALPHA", 1.0)
        assert rows["SchedulerAsyncPreemption"] == ("BETA", 0.0)
    with feature_gates.overridden("AllBeta=false"):
        rows = _feature_rows(m)
        assert rows["AllBeta"] == ("BETA", 0.0)  # explicitly false
        assert rows["SchedulerPopFromBackoffQ"] == ("BETA", 0.0)
    with feature_gates.overridden("AllAlpha=true,WorkloadAwarePreemption=false"):
        rows = _feature_rows(m)
        assert rows["AllAlpha"] == ("ALPHA", 1.0) and rows["GenericWorkload"] == ("ALPHA", 1.0)


# ------------------------------------------------------------------------------ async API calls


class _StatusApi:
    """What AsyncWriter runs: ``patch_pod_status`` fails for pods named ``bad``, waits on ``gate``."""

    def __init__(self) -> None:
        import threading

        self.gate = threading.Event()
        self.gate.set()

    def patch_pod_status(self, namespace: str, name: str, **kw: object) -> None:
        self.gate.wait(10)
        if name == "bad":
            raise RuntimeError("boom")

    def delete_pod(self, namespace: str, name: str, **kw: object) -> None:
        return None


def _series(m: SchedulerMetrics, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(labels.items())): v for labels, v in samples(m, name)}


def test_status_patches_of_the_async_writer_are_kubes_pod_status_patch_calls() -> None:
    from pyscheduler.client.writer import AsyncWriter

    m = SchedulerMetrics()
    api = _StatusApi()
    with AsyncWriter(api, workers=1, observer=m) as w:  # type: ignore[arg-type]
        api.gate.clear()
        for name in ("a", "b", "bad"):
            w.submit(api.patch_pod_status, "ns", name, condition={"type": "PodScheduled"})
        w.submit(api.delete_pod, "ns", "victim")  # a preemption delete: not one of kube's dispatcher calls
        # one patch is in a worker's hands (blocked), the two others wait in the queue
        assert eventually_value(lambda: _series(m, "scheduler_pending_async_api_calls")) == {
            (("call_type", "pod_status_patch"),): 2.0
        }
        api.gate.set()
        assert w.flush(10)
    assert _series(m, "scheduler_async_api_call_execution_total") == {
        (("call_type", "pod_status_patch"), ("result", "error")): 1.0,
        (("call_type", "pod_status_patch"), ("result", "success")): 2.0,
    }
    assert _series(m, "scheduler_pending_async_api_calls") == {(("call_type", "pod_status_patch"),): 0.0}
    counts = _series(m, "scheduler_async_api_call_execution_duration_seconds_count")
    assert counts[(("call_type", "pod_status_patch"), ("result", "success"))] == 2.0
    les = [lbl["le"] for lbl, _ in samples(m, "scheduler_async_api_call_execution_duration_seconds_bucket")]
    assert (
        les[:3] == ["0.001", "0.002", "0.004"] and "16.384" in les
    )  # kube's ExponentialBuckets(0.001, 2, 15)


def test_the_daemons_guarded_status_patches_count_as_pod_status_patch_calls() -> None:
    """The daemon sends a failed attempt's condition and a preemptor's nomination through guards that
    skip a pod already bound (pyscheduler.app.ApiStatusWriter); they are still kube's status patches."""
    from pyscheduler.app import ApiStatusWriter
    from pyscheduler.client.writer import AsyncWriter
    from pyscheduler.framework.clock import RealClock
    from pyscheduler.testing import make_pod

    m = SchedulerMetrics()
    api = _StatusApi()
    bound = make_pod("bound").obj()
    waiting = make_pod("waiting").obj()
    latest = {bound.uid: (True, "2"), waiting.uid: (False, "2")}
    with AsyncWriter(api, workers=1, observer=m) as w:  # type: ignore[arg-type]
        status = ApiStatusWriter(api, w, RealClock(), latest=latest.get)
        status.nominated_node(bound, "n1")  # skipped inside the call: still a (successful) call
        status.nominated_node(waiting, "n1")
        status.pod_scheduled_condition(waiting, "False", "Unschedulable", "0/1 nodes are available.")
        assert w.flush(10)
    assert _series(m, "scheduler_async_api_call_execution_total") == {
        (("call_type", "pod_status_patch"), ("result", "success")): 3.0,
    }


def eventually_value(fn: Callable[[], T], timeout: float = 5.0) -> T:
    """fn() once it stops changing for 50 ms (a worker thread is catching up)."""
    import time

    deadline = time.monotonic() + timeout
    last = fn()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = fn()
        if now == last:
            return now
        last = now
    return last


class _Reply:
    def __init__(self, status: int, body: bytes) -> None:
        self.status, self.data, self.reason = status, body, ""
        self.headers: dict[str, str] = {}

    def release_conn(self) -> None:
        return None

    def close(self) -> None:
        return None


class _Pool:
    def __init__(self, *replies: _Reply) -> None:
        self.replies = list(replies)

    def request(self, method: str, url: str, **kw: object) -> _Reply:
        return self.replies.pop(0)

    def clear(self) -> None:
        return None


def test_binding_calls_are_kubes_pod_binding_calls() -> None:
    from kubernetes import client as k8s_client

    from pyscheduler.client.api import Api

    conflict = (
        b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":409,"reason":"Conflict",'
        b'"message":"pod p is already assigned to node \\"x\\""}'
    )
    pool = _Pool(_Reply(201, b"{}"), _Reply(201, b"{}"), _Reply(409, conflict))
    api = Api(k8s_client.Configuration(host="https://api.example:6443"), pool=pool, qps=0)
    m = SchedulerMetrics()
    api.metrics_observer = m
    pod = make_pod("p").obj()
    assert api.bind(pod, "n1") is None and api.bind(pod, "n1") is None
    assert api.bind(pod, "n1") is not None
    assert _series(m, "scheduler_async_api_call_execution_total") == {
        (("call_type", "pod_binding"), ("result", "error")): 1.0,
        (("call_type", "pod_binding"), ("result", "success")): 2.0,
    }


def test_binding_cycles_waiting_for_a_binder_thread_are_pending_pod_binding_calls() -> None:
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from typing import Any

    from pyscheduler.app import build_app
    from pyscheduler.config.load import parse_config
    from pyscheduler.event_handlers import NodeHandler, PodHandler
    from pyscheduler.plugins.registry import full_registry, plugin_extension_points

    release = threading.Event()

    class BlockingApi:
        def bind(self, pod: Pod, node_name: str) -> None:
            release.wait(10)

        def patch_pod_status(self, *a: Any, **k: Any) -> None: ...

    class Null:
        def submit(self, *a: Any, **k: Any) -> bool:
            return True

        def event(self, *a: Any, **k: Any) -> bool:
            return True

    reg = full_registry()
    cfg = parse_config(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"},
        reg,
        lambda n: plugin_extension_points(reg[n]),
    )
    app = build_app(cfg, reg, BlockingApi(), recorder=Null(), writer=Null())
    app.scheduler._binders = ThreadPoolExecutor(max_workers=1)  # one binder thread instead of 64
    NodeHandler(app).on_add(make_node("n1").capacity(cpu="8", memory="8Gi", pods=10).obj())
    for i in range(3):
        PodHandler(app).on_add(make_pod(f"p{i}").scheduler("py-scheduler").req(cpu="1").obj())
    try:
        for _ in range(3):
            assert app.scheduler.schedule_one(1.0)
        # one binding cycle holds the thread (its Binding call in flight), two wait for it
        assert eventually_value(lambda: _series(app.metrics, "scheduler_pending_async_api_calls")) == {
            (("call_type", "pod_binding"),): 2.0
        }
        release.set()
        assert app.scheduler.drain_binds(10)
        assert _series(app.metrics, "scheduler_pending_async_api_calls") == {
            (("call_type", "pod_binding"),): 0.0
        }
    finally:
        release.set()
        app.scheduler.shutdown()


def test_histograms_expose_what_prometheus_clients_own_would() -> None:
    """Our Histogram finds the bucket by bisection: every bound, both sides of it, the extremes and
    NaN land where prometheus_client's walk puts them."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client import Histogram as Walking

    from pyscheduler.metrics import Histogram, _exp_buckets

    bounds = _exp_buckets(0.001, 2, 15)
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    a = Histogram("h", "d", ["l"], buckets=bounds, registry=ours)
    b = Walking("h", "d", ["l"], buckets=bounds, registry=theirs)
    values = [0.0, -1.0, float("inf"), float("nan"), 1e-9, 1e9]
    values += [v * f for v in bounds for f in (0.999, 1.0, 1.001)]
    for v in values:
        a.labels("x").observe(v)
        b.labels("x").observe(v)
    assert generate_latest(ours) == generate_latest(theirs)
