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
    # and each counted pod's creation→bind latency: positive, p99 at least the median
    lat = run["latency_ms"]
    assert lat["n"] == sum(w["scheduled"] for w in run["windows"])
    assert 0 < lat["p50"] <= lat["p99"]


@pytest.mark.cluster
def test_a_workload_scaled_with_param_runs_at_that_size_and_says_so(tmp_path: Path) -> None:
    try:
        course.course_dir()
    except course.CourseError as e:
        pytest.skip(str(e))
    # SchedulingDaemonset exists at 5 and 15,000 nodes; --param runs its operations with other counts
    rc = upstream.main(
        [
            "--test-case",
            "SchedulingDaemonset",
            "--workload",
            "5Nodes_QueueingHintsEnabled",
            "--param",
            "initNodes=2",
            "--param",
            "measurePods=4",
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
    assert entry["workload"] == "5Nodes_QueueingHintsEnabled"
    assert entry["params_overridden"] == {"initNodes": 2, "measurePods": 4}
    run = entry["pyscheduler"]
    assert "error" not in run, run
    assert run["pods"] == 4  # upstream's workload makes 10
    assert sum(w["scheduled"] for w in run["windows"]) == 4


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
    args = argparse.Namespace(timeout=60, py_log_level="warning", profile=None, profile_with=None)
    run = upstream.run_workload(tc, course.Workload("smoke", {}), ops, PY, args)
    assert "error" not in run, run
    # more pods than one batch got a node: batches were replaced while the window was open
    assert run["pods"] > 5
    (window,) = run["windows"]
    assert window["scheduled"] > 5 and 2.5 < window["seconds"] < 10


@pytest.mark.cluster
@pytest.mark.parametrize(
    ("test_case", "workload"),
    [
        # blocker pods deleted at a rate; their RWOP claims pvc-<i> are what the VolumeRestrictions pods
        # wait for (before upstream's claim names were used, both schedulers timed out here)
        pytest.param("EventHandlingPodDelete", "2Nodes_20Pods", id="pod-delete"),
        # createResourceDriver's slices, pods with claim templates (the resourceclaim controller runs)
        pytest.param("SchedulingWithResourceClaimTemplate", "fast_QueueingHintsEnabled", id="dra-template"),
        # createPodSets: one createPods per init-ns-<i> namespace
        pytest.param(
            "SchedulingRequiredPodAntiAffinityWithNSSelector", "10Nodes_QueueingHintsEnabled", id="pod-sets"
        ),
    ],
)
def test_translated_opcodes_run_to_the_end(tmp_path: Path, test_case: str, workload: str) -> None:
    try:
        course.course_dir()
    except course.CourseError as e:
        pytest.skip(str(e))
    md = tmp_path / "course.md"
    rc = upstream.main(
        [
            "--test-case",
            test_case,
            "--workload",
            workload,
            "--schedulers",
            "pyscheduler",
            "--out",
            str(tmp_path),
            "--timeout",
            "120",
            "--markdown",
            str(md),
        ]
    )
    assert rc == 0
    (out,) = tmp_path.glob("upstream-*.json")
    (entry,) = json.loads(out.read_text())["results"]
    run = entry["pyscheduler"]
    assert "error" not in run, run
    assert sum(w["scheduled"] for w in run["windows"]) > 0
    # the table names the workload and pyscheduler's figure
    row = next(line for line in md.read_text().splitlines() if f"| {test_case} | {workload} |" in line)
    assert f"{run['throughput_average']:.1f}" in row


@pytest.mark.cluster
def test_alloc_resource_claims_writes_an_allocation_on_devices_the_driver_published(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    (tmp_path / "node.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {generateName: scheduler-perf-dra-}\n"
        "status: {capacity: {pods: '110'}}\n"
    )
    (tmp_path / "class.yaml").write_text(
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: alloc-test-class}\n"
        "spec: {selectors: [{cel: {expression: 'device.driver == \"alloc-test.example.com\"'}}]}\n"
    )
    (tmp_path / "claim.yaml").write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c-{{.Index}}}\n"
        "spec: {devices: {requests: [{name: r, exactly: {deviceClassName: alloc-test-class}}]}}\n"
    )
    endpoint = Endpoint.from_url(cluster.server, ADMIN_TOKEN, str(cluster.ca_file))
    ex = Executor(endpoint, tmp_path, None, "py-scheduler", timeout=30)
    ops: list[dict[str, Any]] = [
        {"opcode": "createNodes", "count": 2, "nodeTemplatePath": "node.yaml"},
        {
            "opcode": "createResourceDriver",
            "driverName": "alloc-test.example.com",
            "nodes": "scheduler-perf-dra-*",
            "maxClaimsPerNode": 2,
        },
        {"opcode": "createAny", "templatePath": "class.yaml"},
        {"opcode": "createAny", "templatePath": "claim.yaml", "count": 4, "namespace": "alloc-test"},
        {"opcode": "allocResourceClaims", "namespace": "alloc-test"},
    ]
    try:
        ex.run(ops)
        claims = cluster.api("GET", "/apis/resource.k8s.io/v1/namespaces/alloc-test/resourceclaims")["items"]
        devices = [
            (r["pool"], r["device"]) for c in claims for r in c["status"]["allocation"]["devices"]["results"]
        ]
        # four claims on the four devices of the two nodes' slices, none twice
        assert len(claims) == 4 and len(set(devices)) == 4
        assert {p for p, _ in devices} == {"scheduler-perf-dra-n0-0", "scheduler-perf-dra-n0-1"}
    finally:
        for c in cluster.api("GET", "/apis/resource.k8s.io/v1/namespaces/alloc-test/resourceclaims")["items"]:
            cluster.api(
                "DELETE",
                f"/apis/resource.k8s.io/v1/namespaces/alloc-test/resourceclaims/{c['metadata']['name']}",
            )
        cluster.api("DELETE", "/apis/resource.k8s.io/v1/resourceslices")
        cluster.api("DELETE", "/apis/resource.k8s.io/v1/deviceclasses/alloc-test-class")
        for n in ("scheduler-perf-dra-n0-0", "scheduler-perf-dra-n0-1"):
            cluster.api("DELETE", f"/api/v1/nodes/{n}")
