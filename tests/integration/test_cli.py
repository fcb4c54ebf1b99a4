"""The commands a person types: the demo behind `make run`, dev-cluster up/down, config errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyscheduler.testing.cluster import binaries_dir

PYSCHEDULER = [sys.executable, "-m", "pyscheduler.cli"]


def run(
    *args: str, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PYSCHEDULER, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="module")
def bins() -> str:
    return str(binaries_dir())


@pytest.mark.slow
@pytest.mark.cluster
def test_demo_schedules_the_workload_and_explains_the_pending_pod(bins: str) -> None:
    out = run("demo", "--once", env={"PYSCHEDULER_CONTROLPLANE_BIN": bins})
    assert out.returncode == 0, out.stdout + out.stderr
    scheduled = [line for line in out.stdout.splitlines() if line.strip().startswith("scheduled")]
    assert len(scheduled) == 8
    pending = [line for line in out.stdout.splitlines() if line.strip().startswith("pending")]
    assert pending and "too-big" in pending[0] and "Insufficient cpu" in pending[0]


@pytest.mark.cluster
def test_dev_cluster_up_prints_kubeconfig_last_and_down_stops_it(tmp_path: Path, bins: str) -> None:
    d = str(tmp_path / "dev")
    env = {"PYSCHEDULER_CONTROLPLANE_BIN": bins}
    up = run("dev-cluster", "up", "--nodes", "5", "--dir", d, env=env)
    try:
        assert up.returncode == 0, up.stderr
        last = up.stdout.strip().splitlines()[-1]
        assert last.startswith("export KUBECONFIG=")
        kubeconfig = last.split("=", 1)[1]
        nodes = subprocess.run(
            [str(Path(bins) / "kubectl"), f"--kubeconfig={kubeconfig}", "get", "nodes", "-o", "json"],
            capture_output=True,
            text=True,
            check=True,
        )
        items = json.loads(nodes.stdout)["items"]
        assert len(items) == 5
        assert run("dev-cluster", "status", "--dir", d).returncode == 0
        pid = int((Path(d) / "supervisor.pid").read_text())
    finally:
        down = run("dev-cluster", "down", "--dir", d)
    assert down.returncode == 0
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert run("dev-cluster", "status", "--dir", d).returncode == 1


def test_bad_config_stops_the_daemon_before_it_touches_the_cluster(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: x\n  plugins:\n    score:\n      enabled:\n      - name: NodeResourceFit\n"
    )
    # A kubeconfig pointing nowhere: if the daemon tried the cluster it would hang or fail differently.
    out = run(
        "run", "--config", str(cfg), "--kubeconfig", str(tmp_path / "missing"), "--port", "0", timeout=60
    )
    assert out.returncode == 2
    assert 'profiles[0].plugins.score.enabled[0].name: unknown plugin "NodeResourceFit"' in out.stderr
    assert 'did you mean "NodeResourcesFit"' in out.stderr


def test_plugins_lists_every_default_plugin_with_its_extension_points() -> None:
    out = run("plugins", timeout=60)
    assert out.returncode == 0
    lines = {line.split()[0]: line for line in out.stdout.splitlines()[1:]}
    for name in (
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
        "DefaultPreemption",
        "VolumeBinding",
    ):
        assert name in lines and "default" in lines[name]
    assert "filter" in lines["NodeResourcesFit"] and "score" in lines["NodeResourcesFit"]
    assert "postFilter" in lines["DefaultPreemption"]


@pytest.mark.cluster
def test_explain_says_why_a_pod_is_pending_node_by_node(cluster, ns: str) -> None:  # type: ignore[no-untyped-def]
    from pyscheduler.testing.builders import make_pod
    from pyscheduler.testing.kube import create

    cluster.create_nodes(2, prefix=f"{ns}-small", labels={"pool": ns}, cpu="1")
    cluster.create_nodes(
        1,
        prefix=f"{ns}-tainted",
        labels={"pool": ns},
        cpu="8",
        taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
    )
    create(
        cluster, make_pod("stuck", ns).scheduler("nobody-yet").node_selector({"pool": ns}).req(cpu="2").json()
    )
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "nobody-yet"}],
    }
    import json as _json
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(_json.dumps(cfg))
    out = run(
        "explain", f"{ns}/stuck", "--kubeconfig", str(cluster.kubeconfig), "--config", f.name, timeout=60
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert f"pod {ns}/stuck" in text
    assert "2 x NodeResourcesFit: Insufficient cpu" in text
    assert "1 x TaintToleration: node(s) had untolerated taint(s)" in text
    total = len(cluster.api("GET", "/api/v1/nodes")["items"])
    if total > 3:  # nodes of other tests' pools
        assert f"{total - 3} x NodeAffinity: node(s) didn't match Pod's node affinity/selector" in text
    assert f"no node fits: 0/{total} nodes are available: " in text
