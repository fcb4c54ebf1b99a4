"""A short smoke of ``make chaos``: one fault scenario (scheduler SIGKILL + restart mid-burst) on the
session cluster, judged by the independent checker, plus proof that the checker is not blind: a pod
bound by hand onto a full node is reported as an overcommit, a second pod on the same node with an
untolerated taint as a misfit."""

from __future__ import annotations

import time

import pytest

from bench.chaos.__main__ import run_scenario
from bench.chaos.checker import Checker
from pyscheduler.testing.cluster import ADMIN_TOKEN, LocalCluster


@pytest.mark.cluster
def test_scheduler_sigkill_loses_nothing_overcommits_nothing(cluster: LocalCluster) -> None:
    r = run_scenario(cluster, "scheduler-sigkill", minutes=0.3, nodes=8, rate=6.0)
    assert r["pods"] >= 30, r
    assert (r["lost"], r["overcommitted"], r["double_binds"], r["misfits"]) == (0, 0, 0, 0), r["violations"]
    assert r["recovery_s"] is not None and r["recovery_s"] < 30, r


@pytest.mark.cluster
def test_checker_reports_an_overcommit_and_a_misfit_it_did_not_cause(cluster: LocalCluster, ns: str) -> None:
    node = cluster.create_nodes(
        1,
        prefix=f"{ns}-full",
        cpu="1",
        memory="1Gi",
        taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
    )[0]
    checker = Checker(cluster.server, ADMIN_TOKEN, str(cluster.ca_file), ns).start()
    try:
        for i in range(2):
            cluster.api(
                "POST",
                f"/api/v1/namespaces/{ns}/pods",
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"big-{i}"},
                    "spec": {
                        "schedulerName": "nobody",
                        "tolerations": [{"key": "k", "operator": "Exists"}] if i == 0 else [],
                        "containers": [
                            {"name": "c", "image": "x", "resources": {"requests": {"cpu": "600m"}}}
                        ],
                    },
                },
            )
            cluster.api(
                "POST",
                f"/api/v1/namespaces/{ns}/pods/big-{i}/binding",
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": f"big-{i}"},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                },
            )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and checker.summary()["bound"] < 2:
            time.sleep(0.2)
        kinds = sorted({(v.kind, v.subject) for v in checker.violations})
        assert kinds == [("misfit", f"{ns}/big-1"), ("overcommit", node)], checker.violations
        assert checker.usage(node) == {"cpu": 1200, "memory": 0, "pods": 2}
    finally:
        checker.stop()
        cluster.request("DELETE", f"/api/v1/nodes/{node}")
