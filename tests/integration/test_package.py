"""A real package: ``python -m build`` gives a wheel and an sdist, and a clean virtualenv holding only the
wheel (and its dependencies from the registry) runs the scheduler against the local control plane, with
nothing imported from this source tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from pyscheduler import KUBERNETES_VERSION
from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.cluster import free_port
from pyscheduler.testing.kube import create, eventually, node_of

REPO = Path(__file__).resolve().parents[2]


def _run(*cmd: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert out.returncode == 0, f"{' '.join(cmd)}: {out.stdout[-2000:]}{out.stderr[-2000:]}"
    return out


@pytest.mark.cluster
@pytest.mark.slow
def test_the_wheel_alone_schedules_pods(cluster, ns: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "build", "--outdir", str(dist), str(REPO), cwd=tmp_path)
    (wheel,) = dist.glob("pyscheduler-*.whl")
    (sdist,) = dist.glob("pyscheduler-*.tar.gz")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert any(n.endswith("pyscheduler/cli.py") for n in names)
    assert any(n.startswith("pyscheduler/testing/kwok/") and n.endswith(".yaml") for n in names)
    assert not any(n.startswith(("tests/", "bench/")) for n in names)
    with tarfile.open(sdist) as t:
        assert any(n.endswith("/setup.cfg") for n in t.getnames())

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", str(venv), cwd=tmp_path)
    _run(str(venv / "bin" / "pip"), "install", "-q", str(wheel), cwd=tmp_path)
    where = _run(
        str(venv / "bin" / "python"), "-c", "import pyscheduler; print(pyscheduler.__file__)", cwd=tmp_path
    )
    assert str(venv) in where.stdout and str(REPO) not in where.stdout
    version = _run(str(venv / "bin" / "pyscheduler"), "--version", cwd=tmp_path)
    assert version.stdout.strip() == f"pyscheduler 0.1.0 (kube-scheduler {KUBERNETES_VERSION})"
    assert "NodeResourcesFit" in _run(str(venv / "bin" / "pyscheduler"), "plugins", cwd=tmp_path).stdout

    name = f"wheel-{ns}"
    config = tmp_path / "config.yaml"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": name}],
            }
        )
    )
    port = free_port()
    log = (tmp_path / "scheduler.log").open("w")
    proc = subprocess.Popen(
        [
            str(venv / "bin" / "pyscheduler"),
            "run",
            f"--kubeconfig={cluster.kubeconfig}",
            f"--config={config}",
            "--no-leader-elect",
            f"--port={port}",
            "--address=127.0.0.1",
        ],
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "scheduler.log").read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the wheel's scheduler never became ready"
            time.sleep(0.2)
        cluster.create_nodes(2, prefix=f"{ns}-w")
        create(cluster, make_pod("p", ns).scheduler(name).req(cpu="100m").json())
        assert eventually(lambda: node_of(cluster, ns, "p"), timeout=60, what="the pod bound by the wheel")
    finally:
        proc.terminate()
        proc.wait(15)
        log.close()
