"""A short smoke of ``make chaos``: one fault scenario (scheduler SIGKILL + restart mid-burst) on the
session cluster, judged by the independent checker, plus proof that the checker is not blind: a pod
bound by hand onto a full node is reported as an overcommit, a second pod on the same node with an
untolerated taint as a misfit; and the HTTP fault proxy with the client's retries through it."""

from __future__ import annotations

import time

import pytest

from bench.chaos.checker import Checker
from bench.chaos.faults import BIND_PATH
from bench.chaos.procs import HttpProxyProcess
from bench.chaos.scenarios import run_scenario
from pyscheduler.client.api import Api
from pyscheduler.client.connection import load_configuration
from pyscheduler.framework.types import Pod
from pyscheduler.testing.builders import make_pod
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


@pytest.mark.cluster
def test_through_the_http_fault_proxy_a_bind_waits_out_retry_after_and_survives_a_lost_answer(
    cluster: LocalCluster, ns: str
) -> None:
    """The TLS-terminating proxy (bench/chaos/httpproxy.py) in front of the real API server: the first
    Binding POST is answered 429 with Retry-After 1 (not forwarded), the second is carried out but
    answered 500; the client waits the second out, and its third attempt meets 409 on our node, which
    is the success it is."""
    (node,) = cluster.create_nodes(1, prefix=f"{ns}-hp")
    proxy = HttpProxyProcess(cluster)
    api = Api(load_configuration(str(proxy.kubeconfig)), qps=0)
    try:
        body = make_pod("lost", ns).scheduler("nobody").req(cpu="100m").json()
        pod = Pod.from_dict(api.create("Pod", ns, body))  # through the proxy: TLS and auth pass
        proxy.rule(status=429, retry_after=1, count=1, method="POST", path=BIND_PATH)
        proxy.rule(status=500, when="after", count=1, method="POST", path=BIND_PATH)
        t0 = time.monotonic()
        assert api.bind(pod, node) is None
        assert time.monotonic() - t0 >= 1.0
        binds = [r for r in proxy.requests() if r["p"].endswith("/lost/binding")]
        assert [(r["status"], r.get("injected")) for r in binds] == [
            (429, "before"),
            (500, "after"),
            (409, None),
        ]
        assert binds[1]["upstream"] == 201
        assert binds[1]["t"] - binds[0]["t"] >= 1.0  # Retry-After honoured
        assert cluster.api("GET", f"/api/v1/namespaces/{ns}/pods/lost")["spec"]["nodeName"] == node
    finally:
        api.close()
        proxy.stop()
        cluster.request("DELETE", f"/api/v1/nodes/{node}")
