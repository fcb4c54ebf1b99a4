"""Run ``pyscheduler run`` as a separate process against a cluster, as a user would, for tests.

``SchedulerProcess`` writes the given KubeSchedulerConfiguration to a file, starts the daemon with a
kubeconfig (or in-cluster environment), waits for ``/readyz`` on its health port, and stops it with
SIGTERM (or SIGKILL on demand). Its log is kept for assertions and failure reports.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyscheduler.testing.cluster import free_port, spawn_logged, wait_http_ready


class SchedulerProcess:
    def __init__(
        self,
        kubeconfig: Path | str | None,
        config: Mapping[str, Any] | None = None,
        *,
        leader_elect: bool = False,
        env: Mapping[str, str] | None = None,
        extra_args: tuple[str, ...] = (),
        name: str = "pyscheduler",
    ) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=f"{name}-"))
        self.config_path: Path | None = None
        if config is not None:
            self.config_path = self.dir / "config.yaml"
            self.config_path.write_text(json.dumps(config))  # JSON is YAML
        self.port = free_port()
        self.log_path = self.dir / "scheduler.log"
        argv = [
            sys.executable,
            "-m",
            "pyscheduler.cli",
            "run",
            f"--port={self.port}",
            "--address=127.0.0.1",
            "--log-format=json",
            "--log-level=debug",
        ]
        if kubeconfig is not None:
            argv.append(f"--kubeconfig={kubeconfig}")
        if self.config_path is not None:
            argv.append(f"--config={self.config_path}")
        argv.append("--leader-elect" if leader_elect else "--no-leader-elect")
        argv.extend(extra_args)
        self.argv = argv
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, wait_ready: float = 60.0) -> SchedulerProcess:
        self.proc = spawn_logged(self.argv, self.log_path, self.env)  # dies with the test process
        if wait_ready:
            self.wait_ready(wait_ready)
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        assert self.proc is not None
        wait_http_ready(
            self.proc, f"http://127.0.0.1:{self.port}/readyz", timeout, "pyscheduler", self.log_tail
        )

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            return str(r.read().decode())

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_lines(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_text().splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-n:])

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 30.0) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return int(self.proc.returncode or 0)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def __enter__(self) -> SchedulerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.cleanup()

    def cleanup(self) -> None:
        """Remove the config and log directory (after stop(); the log is gone afterwards)."""
        shutil.rmtree(self.dir, ignore_errors=True)
