"""The krew manifest of kubectl-pyscheduler, installed the way a user installs it.

``krew/build.py`` builds the archive (launcher + wheel) and fills the manifest; the real krew (built from
e2e/tools/krew/go.mod) installs it from that file into a scratch KREW_ROOT, and the real kubectl then finds
``kubectl pyscheduler`` on PATH: its first run makes the plugin's virtualenv from the shipped wheel (and
the registry, for the dependencies), and it explains a pending pod on the local control plane. Nothing is
imported from this source tree by the installed plugin.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from pyscheduler import __version__
from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.cluster import REPO_ROOT, LocalCluster
from pyscheduler.testing.kube import create

# The first `kubectl pyscheduler` makes the plugin's virtualenv (pip fetches every dependency): 242 s of
# this test's 271 s on a loaded two-core machine, past the suite's 300 s default once the load was higher.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _run(
    *cmd: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    assert out.returncode == 0, f"{' '.join(cmd)}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def test_krew_installs_the_plugin_and_kubectl_runs_it(cluster: LocalCluster, ns: str, tmp_path: Path) -> None:
    krew = _run("bash", str(REPO_ROOT / "e2e" / "tools" / "build.sh"), "krew").stdout.strip().splitlines()[-1]
    dist = tmp_path / "dist"
    _run(sys.executable, str(REPO_ROOT / "krew" / "build.py"), "--out", str(dist))
    tag = f"v{__version__}"
    archive = dist / f"kubectl-pyscheduler-{tag}.tar.gz"
    manifest = yaml.safe_load((dist / "pyscheduler.yaml").read_text())

    assert manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert manifest["kind"] == "Plugin" and manifest["metadata"]["name"] == "pyscheduler"
    assert manifest["spec"]["version"] == tag
    (platform,) = manifest["spec"]["platforms"]
    assert platform["sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert platform["uri"].endswith(f"/{tag}/{archive.name}")
    with tarfile.open(archive) as t:
        members = {m.name: m for m in t.getmembers()}
    assert members[platform["bin"]].mode & 0o111, "the launcher must be executable"
    assert any(n.startswith("pyscheduler-") and n.endswith(".whl") for n in members)

    # the archive is reproducible: building again gives the same bytes (krew-index pins the sha256)
    (wheel,) = [n for n in members if n.endswith(".whl")]
    with tarfile.open(archive) as t:
        t.extract(wheel, tmp_path / "w", filter="data")
    _run(
        sys.executable,
        str(REPO_ROOT / "krew" / "build.py"),
        "--out",
        str(tmp_path / "again"),
        "--wheel",
        str(tmp_path / "w" / wheel),
    )
    assert (tmp_path / "again" / archive.name).read_bytes() == archive.read_bytes()

    # from here on, nothing runs in the source tree (python -c would import pyscheduler from the cwd)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    krew_root = tmp_path / "krew-root"
    env["KREW_ROOT"] = str(krew_root)
    env["PATH"] = f"{krew_root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYSCHEDULER_PYTHON"] = sys.executable  # a Python 3.11+ (the venv's own base is fine)
    out = _run(
        krew,
        "install",
        f"--manifest={dist / 'pyscheduler.yaml'}",
        f"--archive={archive}",
        env=env,
        cwd=tmp_path,
    )
    assert "Installed plugin: pyscheduler" in out.stdout + out.stderr

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
    env["KUBECONFIG"] = str(cluster.kubeconfig)
    kubectl = cluster.binary("kubectl")
    first = _run(
        kubectl, "pyscheduler", "explain", "stuck", "-n", ns, "--config", str(cfg), env=env, cwd=tmp_path
    )
    assert "first run: installing" in first.stderr  # says what it does while it takes a while
    assert f"pod {ns}/stuck" in first.stdout and "Insufficient cpu" in first.stdout
    venv = next((krew_root / "store" / "pyscheduler").iterdir()) / "venv"
    where = _run(
        str(venv / "bin" / "python"),
        "-c",
        "import pyscheduler; print(pyscheduler.__file__)",
        env=env,
        cwd=tmp_path,
    )
    assert str(venv) in where.stdout and str(REPO_ROOT) not in where.stdout

    again = _run(kubectl, "pyscheduler", "plugins", env=env, cwd=tmp_path)
    assert "NodeResourcesFit" in again.stdout and "installing" not in again.stderr

    # krew's own layout: the plugin's files (and its virtualenv) live in the store, under the version, so
    # `kubectl krew uninstall pyscheduler` removes them all (uninstall needs krew's index: not run here)
    link = krew_root / "bin" / "kubectl-pyscheduler"
    assert link.is_symlink() and venv.parent in link.resolve().parents
