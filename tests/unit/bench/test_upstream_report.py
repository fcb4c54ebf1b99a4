"""The course table the runner writes (``--markdown``): one row per workload, figures and ratio from the
results, skip reasons and errors said in place of figures."""

from __future__ import annotations

from typing import Any

from bench.upstream import report


def _rows(text: str) -> dict[str, list[str]]:
    out = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| test case"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            out[cells[1]] = cells
    return out


def test_rows_give_both_figures_the_ratio_and_why_a_workload_did_not_run() -> None:
    results: list[dict[str, Any]] = [
        {
            "test_case": "SchedulingBasic",
            "workload": "ran",
            "threshold": 270,
            "labels": ["performance"],
            "kube-scheduler": {
                "throughput_average": 200.0,
                "cpu_ms_per_pod": 2.0,
                "latency_ms": {"p99": 400.0},
                "peak_rss_mb": 80.0,
            },
            "pyscheduler": {
                "throughput_average": 300.0,
                "cpu_ms_per_pod": 1.5,
                "latency_ms": {"p99": 500.0},
                "peak_rss_mb": 120.4,
            },
        },
        {
            "test_case": "SchedulingBasic",
            "workload": "skipped",
            "threshold": None,
            "labels": [],
            "skipped": ["feature gates X=true: unrecognized feature gate: X"],
        },
        {
            "test_case": "Dra",
            "workload": "failed",
            "threshold": None,
            "threshold_by_suite": {"dra": 56},
            "labels": ["performance"],
            "kube-scheduler": {"throughput_average": 50.0, "cpu_ms_per_pod": 1.0},
            "pyscheduler": {"error": "timed out after 300s waiting for barrier 3\nmore"},
        },
    ]
    text = report.markdown(results, {"version": "v1.36.3", "git": {"commit": "abc123", "dirty": False}})
    rows = _rows(text)
    assert rows["ran"][3:15] == [
        "ran",
        "270",
        "200.0",
        "300.0",
        "1.50",
        "400",
        "500",
        "1.25",
        "2.00",
        "1.50",
        "0.75",
        "80 / 120",
    ]
    assert rows["skipped"][3] == "skip: feature gates X=true: unrecognized feature gate: X"
    assert rows["failed"][4] == "dra: 56"
    assert rows["failed"][6] == "error: timed out after 300s waiting for barrier 3"
    assert rows["failed"][7] == "-"
    assert "at commit abc123" in text
    assert (
        "3 workloads, 2 runnable here, 1 skipped; measured with both schedulers: 1, "
        "pyscheduler's throughput >= kube-scheduler's in 1." in text
    )
    # the last line counts only workloads both schedulers ran; slower p99 (500 > 400 ms) is not counted
    assert text.rstrip().splitlines()[-1] == (
        "upstream scheduler_perf: 1 workloads, throughput py>=kube in 1/1, p99 py<=kube in 0/1"
    )


def test_the_last_line_says_which_runs_kept_no_latency() -> None:
    def run(thr: float, p99: float | None) -> dict[str, Any]:
        return {"throughput_average": thr} | ({"latency_ms": {"p99": p99}} if p99 is not None else {})

    results: list[dict[str, Any]] = [
        {"kube-scheduler": run(100, 50), "pyscheduler": run(90, 40)},  # slower, lower p99
        {"kube-scheduler": run(100, 50), "pyscheduler": run(110, 60)},  # faster, higher p99
        {"kube-scheduler": run(100, None), "pyscheduler": run(120, None)},  # an old run: no latency
        {"kube-scheduler": run(100, 50), "pyscheduler": {"error": "timed out"}},  # not counted
        {"pyscheduler": run(100, 50)},  # one scheduler only: not counted
    ]
    assert report.summary_line(results) == (
        "upstream scheduler_perf: 3 workloads, throughput py>=kube in 2/3, p99 py<=kube in 1/3 "
        "(p99 not recorded for 1)"
    )


def test_the_whole_course_table_takes_its_figures_from_the_runs_given() -> None:
    listed: list[dict[str, Any]] = [
        {"test_case": "A", "workload": "w1", "threshold": None, "labels": []},
        {"test_case": "A", "workload": "w2", "threshold": None, "labels": []},
        {"test_case": "B", "workload": "w1", "threshold": None, "labels": [], "skipped": ["why"]},
    ]
    old = {
        "date": "2026-11-25T08:00",
        "git": {"commit": "aaa"},
        "results": [
            {"test_case": "A", "workload": "w1", "pyscheduler": {"throughput_average": 1.0}},
        ],
    }
    new = {
        "date": "2026-11-26T08:00",
        "git": {"commit": "bbb"},
        "version": "v1.36.3",
        "results": [
            {"test_case": "A", "workload": "w1", "pyscheduler": {"throughput_average": 2.0}},
            {"test_case": "B", "workload": "w1", "pyscheduler": {"throughput_average": 9.0}},
        ],
    }
    rows = report.merge(listed, [old, new])
    assert rows[0]["pyscheduler"] == {"throughput_average": 2.0}  # the later run wins
    assert rows[0]["measured"] == "2026-11-26 bbb"  # said in the row: when and at which commit
    assert "pyscheduler" not in rows[1]  # never run: stays "runnable"
    assert "pyscheduler" not in rows[2]  # skipped now: an old figure is not shown
    meta = report.runs_meta([old, new])
    assert meta["git"]["commit"] == "aaa, bbb" and meta["version"] == "v1.36.3"


def test_a_scaled_down_run_says_so_in_its_row() -> None:
    listed: list[dict[str, Any]] = [
        {"test_case": "D", "workload": "15000Nodes", "threshold": 390, "labels": ["performance"]},
    ]
    run: dict[str, Any] = {
        "date": "2026-11-27T02:00",
        "git": {"commit": "ccc"},
        "results": [
            {
                "test_case": "D",
                "workload": "15000Nodes",
                "params_overridden": {"initNodes": 1500, "measurePods": 3000},
                "kube-scheduler": {"throughput_average": 100.0},
                "pyscheduler": {"throughput_average": 120.0},
            }
        ],
    }
    (row,) = report.merge(listed, [run])
    cells = _rows(report.markdown([row]))["15000Nodes"]
    assert "scaled down, not upstream's size: initNodes=1500, measurePods=3000" in cells[3]
    assert cells[5:8] == ["100.0", "120.0", "1.20"]
    # a later run at upstream's size replaces the figures and the note with them
    full_size = {k: v for k, v in run["results"][0].items() if k != "params_overridden"}
    full = {**run, "results": [full_size]}
    (row,) = report.merge(listed, [run, full])
    assert "scaled" not in report.status(row)


def test_a_row_from_a_run_before_the_collector_sampler_says_so() -> None:
    listed: list[dict[str, Any]] = [
        {"test_case": "P", "workload": "1000Nodes", "threshold": None, "labels": ["performance"]},
    ]
    figures = {"kube-scheduler": {"throughput_average": 45.4}, "pyscheduler": {"throughput_average": 22.3}}
    old = {"date": "2026-11-27T06:02", "results": [{"test_case": "P", "workload": "1000Nodes", **figures}]}
    (row,) = report.merge(listed, [old])
    assert "(old sampler)" in report.status(row)
    new = {**old, "date": "2026-11-28T08:00", "sampler": report.SAMPLER}
    (row,) = report.merge(listed, [old, new])
    assert "old sampler" not in report.status(row)
