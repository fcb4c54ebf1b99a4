"""A smoke of the upstream course on the real control plane: one small upstream workload, pyscheduler."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import pytest

from bench.measure import Endpoint
from bench.run import PY
from bench.upstream import __main__ as upstream
from bench.upstream import course
from bench.upstream.ops import Executor
from pyscheduler.testing.cluster import ADMIN_TOKEN, LocalCluster


@pytest.mark.cluster
@pytest.mark.parametrize(
    "test_case",
    [
        pytest.param("SchedulingBasic", id="basic"),
        # createPods with PV and PVC templates: each pod's claim pre-bound to its own CSI volume
        pytest.param("SchedulingCSIPVs", id="csi-pvs"),
        # pod templates with spec.priority (the course's API server runs without Priority admission)
        pytest.param("PreemptionBasic", id="preemption"),
    ],
)
def test_an_upstream_workload_runs_and_reports_its_throughput(tmp_path: Path, test_case: str) -> None:
    try:
        course.course_dir()
    except course.CourseError as e:
        pytest.skip(str(e))
    rc = upstream.main(
        [
            "--test-case",
            test_case,
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


@pytest.mark.cluster
def test_churn_recreates_objects_in_the_background_until_the_workload_ends(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    # upstream's "recreate" churn with number 2: each template's objects are created for two rounds, then
    # every round deletes the oldest of its slot before making a new one; it stops when the workload ends
    (tmp_path / "node.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {generateName: churn-test-}\nstatus: {capacity: {pods: '0'}}\n"
    )
    endpoint = Endpoint.from_url(cluster.server, ADMIN_TOKEN, str(cluster.ca_file))
    ex = Executor(endpoint, tmp_path, None, "py-scheduler", timeout=30)
    ops: list[dict[str, Any]] = [
        {
            "opcode": "churn",
            "mode": "recreate",
            "number": 2,
            "intervalMilliseconds": 100,
            "templatePaths": ["node.yaml"],
        },
        {"opcode": "sleep", "duration": "1500ms"},
    ]
    res = ex.run(ops)
    assert res.churn_errors == []
    assert res.churn_rounds >= 6
    nodes = cluster.api("GET", "/api/v1/nodes")["items"]
    churned = [n for n in nodes if n["metadata"]["name"].startswith("churn-test-")]
    # at most `number` alive at once, and no more rounds after the workload ended
    assert 1 <= len(churned) <= 2
    rounds = res.churn_rounds
    time.sleep(0.5)
    assert ex.churned == rounds
    for n in churned:
        cluster.api("DELETE", f"/api/v1/nodes/{n['metadata']['name']}")


@pytest.mark.cluster
def test_steady_state_keeps_replacing_scheduled_pods_for_its_duration(tmp_path: Path) -> None:
    # upstream's steadyState createPods: 5 pods, deleted and made anew each time all are scheduled, for 3 s
    ops: list[dict[str, Any]] = [
        {"opcode": "createNodes", "count": 3},
        {"opcode": "createPods", "count": 5, "steadyState": True, "duration": "3s", "collectMetrics": True},
    ]
    tc = course.TestCase("SteadyStateSmoke", tmp_path, tuple(ops), ())
    args = argparse.Namespace(timeout=60, py_log_level="warning")
    run = upstream.run_workload(tc, course.Workload("smoke", {}), ops, PY, args)
    assert "error" not in run, run
    # more pods than one batch got a node: batches were replaced while the window was open
    assert run["pods"] > 5
    (window,) = run["windows"]
    assert window["scheduled"] > 5 and 2.5 < window["seconds"] < 10
