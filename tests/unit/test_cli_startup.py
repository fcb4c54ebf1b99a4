"""Every start-up failure of ``pyscheduler run`` is one clear line on stderr and a non-zero exit."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyscheduler.cli", "run", "--log-format", "json", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def error_line(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    # log lines are JSON objects; the failure is the one plain line, and the last
    plain = [line for line in out.stderr.splitlines() if line and not line.startswith("{")]
    assert len(plain) == 1, out.stderr
    assert out.stderr.strip().splitlines()[-1] == plain[0]
    return plain[0]


def test_missing_kubeconfig(tmp_path: Path) -> None:
    line = error_line(run("--kubeconfig", str(tmp_path / "absent.yaml"), "--port", "0"))
    assert line.startswith(f"pyscheduler: cannot load the kubeconfig {tmp_path / 'absent.yaml'}: ")


def test_broken_kubeconfig(tmp_path: Path) -> None:
    kc = tmp_path / "kc.yaml"
    kc.write_text("clusters: [\n")
    line = error_line(run("--kubeconfig", str(kc), "--port", "0"))
    assert line.startswith(f"pyscheduler: cannot load the kubeconfig {kc}: ")


def test_kubeconfig_without_current_context(tmp_path: Path) -> None:
    kc = tmp_path / "kc.yaml"
    kc.write_text(KUBECONFIG.replace("current-context: x", "current-context: nowhere"))
    line = error_line(run("--kubeconfig", str(kc), "--port", "0"))
    assert line.startswith(f"pyscheduler: cannot load the kubeconfig {kc}: ")


def test_metrics_port_in_use(tmp_path: Path) -> None:
    kc = tmp_path / "kc.yaml"
    kc.write_text(KUBECONFIG)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = run("--kubeconfig", str(kc), "--port", str(port), "--address", "127.0.0.1", "--no-leader-elect")
    line = error_line(out)
    assert line.startswith(f"pyscheduler: cannot serve health and metrics on 127.0.0.1:{port}: ")
    assert "Address already in use" in line
    assert "not-a-real-token" not in out.stderr


def test_fields_not_acted_on_are_named_in_a_warning_at_start(tmp_path: Path) -> None:
    import json

    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "parallelism: 4\nclientConnection: {contentType: application/vnd.kubernetes.protobuf}\n"
    )
    out = run("--config", str(cfg), "--kubeconfig", str(tmp_path / "absent.yaml"), "--port", "0")
    error_line(out)  # the missing kubeconfig still ends it in one line
    logged = [json.loads(line) for line in out.stderr.splitlines() if line.startswith("{")]
    warned = {e["field"]: e for e in logged if e.get("level") == "warning"}
    assert set(warned) == {"parallelism", "clientConnection.contentType"}
    assert "application/json" in warned["clientConnection.contentType"]["detail"]


def test_output_piped_into_a_reader_that_quits_is_not_a_traceback() -> None:
    # ``pyscheduler plugins | head -1``: the reader exits first; the command stops quietly, as Unix tools do
    p = subprocess.Popen(
        [sys.executable, "-m", "pyscheduler.cli", "plugins"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()  # the reader is gone before the first line is written
    err = p.stderr.read()
    assert p.wait(timeout=60) == 141
    assert "Traceback" not in err and "BrokenPipeError" not in err


def test_a_bad_tracemalloc_frame_count_is_one_line(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pyscheduler.cli", "run", "--log-format", "json", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYSCHEDULER_TRACEMALLOC": "lots"},
    )
    line = error_line(out)
    assert line.startswith("pyscheduler: cannot start the heap profile: PYSCHEDULER_TRACEMALLOC='lots'")
