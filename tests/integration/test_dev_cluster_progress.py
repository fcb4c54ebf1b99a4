"""``pyscheduler dev-cluster up`` with thousands of nodes shows what it is doing: on a terminal a bar that
counts the nodes as they are created, in CI one line per finished step."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyscheduler.testing.cluster import binaries_dir

pytestmark = [pytest.mark.slow, pytest.mark.cluster]

NODES = 2000


def _down(d: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pyscheduler.cli", "dev-cluster", "down", "--dir", str(d)], timeout=60
    )


def test_dev_cluster_up_draws_a_node_bar_on_a_terminal(tmp_path: Path) -> None:
    d = tmp_path / "dev"
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYSCHEDULER_CONTROLPLANE_BIN"] = str(binaries_dir())
    master, slave = pty.openpty()  # stderr is a terminal, as when a person runs it
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pyscheduler.cli",
            "dev-cluster",
            "up",
            "--nodes",
            str(NODES),
            "--dir",
            str(d),
        ],
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 600
        while proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        proc.wait(30)
        while True:  # what is left in the terminal's buffer
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        assert proc.returncode == 0, seen.decode(errors="replace")[-3000:]
        assert proc.stdout is not None
        assert proc.stdout.read().decode().strip().startswith("export KUBECONFIG=")
    finally:
        os.close(master)
        _down(d)
    text = seen.decode(errors="replace")
    frames = [f for f in re.split(r"\r\x1b\[2K", text) if f]
    counts = [
        int(m.group(1).replace(",", "")) for f in frames if (m := re.search(r"\] ([\d,]+)/2,000 nodes", f))
    ]
    # the bar moved through the creation, not just at its ends
    assert len(counts) >= 3 and counts == sorted(counts), frames[:20]
    assert any(0 < c < NODES for c in counts), counts
    assert any("starting etcd, kube-apiserver and KWOK" in f for f in frames)
    assert re.search(r"created 2,000 fake nodes in [\d.]+s", text)
    assert "control plane started in" in text


def test_dev_cluster_up_in_ci_prints_one_line_per_step(tmp_path: Path) -> None:
    d = tmp_path / "dev"
    env = {**os.environ, "CI": "true", "PYSCHEDULER_CONTROLPLANE_BIN": str(binaries_dir())}
    try:
        out = subprocess.run(
            [sys.executable, "-m", "pyscheduler.cli", "dev-cluster", "up", "--nodes", "50", "--dir", str(d)],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
    finally:
        _down(d)
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr and not re.search(r"\[[#.]{30}\]", out.stderr)
    lines = out.stderr.strip().splitlines()
    assert any(line.startswith("control plane started in") for line in lines), lines
    assert any(re.fullmatch(r"created 50 fake nodes in [\d.]+s", line) for line in lines), lines
