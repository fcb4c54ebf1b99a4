"""``kubectl pyscheduler ...``: the real kubectl finds the installed ``kubectl-pyscheduler`` on PATH and
the plugin answers with kubectl's habits (-n, the context's namespace, --context)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.kube import create

BIN = Path(sys.executable).parent


def kubectl(cluster, *args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    """The real kubectl with $KUBECONFIG set (kubectl passes no flag placed before a plugin's name)."""
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "KUBECONFIG": str(kubeconfig or cluster.kubeconfig),
    }
    return subprocess.run(
        [cluster.binary("kubectl"), *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.cluster
def test_kubectl_pyscheduler_explain_uses_the_contexts_namespace(cluster, ns: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    if not (BIN / "kubectl-pyscheduler").exists():
        pytest.skip("kubectl-pyscheduler is not installed in this environment (make install)")
    listed = kubectl(cluster, "plugin", "list")
    assert "kubectl-pyscheduler" in listed.stdout, listed.stdout + listed.stderr

    cluster.create_nodes(1, prefix=f"{ns}-small", labels={"pool": ns}, cpu="1")
    create(
        cluster, make_pod("stuck", ns).scheduler("nobody-yet").node_selector({"pool": ns}).req(cpu="2").json()
    )
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "nobody-yet"}],
            }
        )
    )
    # a kubeconfig whose current context names the test's namespace: no -n needed, as with kubectl get
    kc = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    kc["contexts"][0]["context"]["namespace"] = ns
    own = tmp_path / "kubeconfig"
    own.write_text(yaml.safe_dump(kc))

    out = kubectl(cluster, "pyscheduler", "explain", "stuck", "--config", str(cfg), kubeconfig=own)
    assert out.returncode == 0, out.stderr
    assert f"pod {ns}/stuck" in out.stdout
    assert "Insufficient cpu" in out.stdout

    # an explicit -n wins over the context's namespace; a context that does not exist is an error line
    other = kubectl(
        cluster, "pyscheduler", "explain", "stuck", "-n", "default", "--config", str(cfg), kubeconfig=own
    )
    assert other.returncode == 1 and "namespaces/default/pods/stuck" in other.stderr, (
        other.stdout + other.stderr
    )
    bad = kubectl(cluster, "pyscheduler", "explain", "stuck", "--context", "nope", kubeconfig=own)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "nope" in bad.stderr


@pytest.mark.cluster
def test_kubectl_pyscheduler_refuses_the_commands_that_write(cluster) -> None:  # type: ignore[no-untyped-def]
    if not (BIN / "kubectl-pyscheduler").exists():
        pytest.skip("kubectl-pyscheduler is not installed in this environment (make install)")
    out = kubectl(cluster, "pyscheduler", "run")
    assert out.returncode == 2 and "unknown command 'run'" in out.stderr
