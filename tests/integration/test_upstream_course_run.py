"""A smoke of the upstream course on the real control plane: one small upstream workload, pyscheduler."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.upstream import __main__ as upstream
from bench.upstream import course


@pytest.mark.cluster
def test_an_upstream_workload_runs_and_reports_its_throughput(tmp_path: Path) -> None:
    try:
        course.course_dir()
    except course.CourseError as e:
        pytest.skip(str(e))
    rc = upstream.main(
        [
            "--test-case",
            "SchedulingBasic",
            "--workload",
            "5Nodes_QueueingHintsEnabled",
            "--schedulers",
            "pyscheduler",
            "--out",
            str(tmp_path),
            "--timeout",
            "120",
        ]
    )
    assert rc == 0
    (out,) = tmp_path.glob("upstream-*.json")
    (entry,) = json.loads(out.read_text())["results"]
    run = entry["pyscheduler"]
    assert "error" not in run, run
    # every pod the workload created got a node, and the metrics window counted them
    assert run["pods"] > 0
    assert sum(w["scheduled"] for w in run["windows"]) > 0
    assert run["throughput_average"] > 0
