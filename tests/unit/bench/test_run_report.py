"""make bench's per-workload report: the API server's CPU per pod beside the ceiling's."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bench.measure import Ceiling
from bench.processes import KUBE, PY
from bench.report import report
from bench.workloads import workloads


def _run(apiserver_s: float, bound: int = 1000) -> dict[str, Any]:
    return {
        "repeat": 0,
        "complete": True,
        "bound": bound,
        "measured_pods": bound,
        "seconds": 4.0,
        "throughput": {"avg": 250.0, "p50": 240.0, "p90": 300.0, "p99": 320.0},
        "overall_pods_per_second": 250.0,
        "latency_ms": {"p50": 100.0, "p90": 200.0, "p99": 300.0},
        "cpu_seconds": 1.5,
        "cpu_seconds_events_posted": 1.5,
        "peak_rss_mb": 100.0,
        "control_plane_cpu_seconds": {"kube-apiserver": apiserver_s, "etcd": 0.5},
    }


def test_report_sets_each_schedulers_apiserver_cpu_per_pod_against_the_ceilings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    wl = workloads(10, 20)["SchedulingBasic"]
    ceiling = Ceiling(1000, 1.0, 16, 0, with_events_seconds=2.0)
    ceiling.with_events_plane_cpu = {"kube-apiserver": 1.6, "etcd": 0.4}
    runs = {KUBE: [_run(2.6), _run(2.4)], PY: [_run(2.2)]}
    out = report("SchedulingBasic", wl, runs, ceiling)
    assert out["median"][KUBE]["apiserver CPU per pod"] == pytest.approx(2.5)
    assert out["median"][PY]["apiserver CPU per pod"] == pytest.approx(2.2)
    assert out["ratio_py_over_kube"]["apiserver CPU per pod"] == pytest.approx(2.2 / 2.5)
    text = capsys.readouterr().out
    assert "apiserver CPU per pod in that ceiling 1.60 ms (the two writes alone); in the runs: " in text
    assert "kube-scheduler 2.50, pyscheduler 2.20" in text


def test_report_without_the_ceilings_control_plane_figure_says_nothing_of_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    wl = workloads(10, 20)["SchedulingBasic"]
    out = report("SchedulingBasic", wl, {KUBE: [_run(2.0)], PY: []}, Ceiling(1000, 1.0, 16, 0))
    assert math.isnan(out["median"][PY]["apiserver CPU per pod"])
    assert "in that ceiling" not in capsys.readouterr().out
