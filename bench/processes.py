"""The processes ``make bench`` compares: kube-scheduler and pyscheduler started with the same profile,
name and client QPS (pinned to CPUs with ``--scheduler-cpus``), and the py-spy profiler of ``--profile``
with the summary of its samples."""

from __future__ import annotations

import json
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.workloads import SCHEDULER_NAME
from pyscheduler.testing.cluster import (
    LocalCluster,
    free_port,
    log_tail,
    spawn_logged,
    stop_process_group,
    wait_http_ready,
)
from pyscheduler.testing.daemon import SchedulerProcess

KUBE = "kube-scheduler"
PY = "pyscheduler"
SCHEDULERS = (KUBE, PY)
QPS = 5000


# ------------------------------------------------------------------------------------------ schedulers


class KubeScheduler:
    """The real kube-scheduler 1.36 binary, configured like pyscheduler."""

    name = KUBE

    def __init__(self, cluster: LocalCluster, extra_args: Sequence[str] = (), cpus: str = "") -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bench-kube-scheduler-"))
        config = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(cluster.kubeconfig), "qps": QPS, "burst": QPS},
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": SCHEDULER_NAME}],
        }
        (self.dir / "config.yaml").write_text(json.dumps(config))
        self.port = free_port()
        self.log = self.dir / "kube-scheduler.log"
        self.argv = [
            cluster.binary("kube-scheduler"),
            f"--config={self.dir / 'config.yaml'}",
            f"--secure-port={self.port}",
            "--bind-address=127.0.0.1",
            f"--cert-dir={self.dir}",  # self-signed serving certificate
            "--v=0",
            *extra_args,
        ]
        self.argv = pinned(self.argv, cpus)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 60.0) -> None:
        self.proc = spawn_logged(self.argv, self.log)  # dies with the benchmark
        url = f"https://127.0.0.1:{self.port}/readyz"
        ctx = ssl._create_unverified_context()  # its own self-signed loopback certificate
        wait_http_ready(self.proc, url, timeout, "kube-scheduler", self.log_tail, context=ctx)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        stop_process_group(self.proc, 15)

    def log_tail(self, n: int = 30) -> str:
        return log_tail(self.log, n)

    @property
    def log_dir(self) -> Path:
        return self.dir

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class PyScheduler:
    """``pyscheduler run`` through SchedulerProcess, configured like kube-scheduler."""

    name = PY

    def __init__(self, cluster: LocalCluster, log_level: str = "info", cpus: str = "") -> None:
        config = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"qps": QPS, "burst": QPS},
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": SCHEDULER_NAME}],
        }
        # SchedulerProcess logs at debug for tests; the later --log-level wins (kube-scheduler runs at -v=0).
        self.sp = SchedulerProcess(
            cluster.kubeconfig, config, extra_args=(f"--log-level={log_level}",), name="bench-pyscheduler"
        )
        self.sp.argv = pinned(self.sp.argv, cpus)

    @property
    def pid(self) -> int:
        assert self.sp.proc is not None
        return self.sp.proc.pid

    def start(self, timeout: float = 120.0) -> None:
        self.sp.start(wait_ready=timeout)

    def alive(self) -> bool:
        return self.sp.alive()

    def stop(self) -> None:
        self.sp.stop(timeout=15)

    def log_tail(self, n: int = 30) -> str:
        return self.sp.log_tail(n)

    @property
    def log_dir(self) -> Path:
        return self.sp.dir

    def cleanup(self) -> None:
        shutil.rmtree(self.sp.dir, ignore_errors=True)


Scheduler = KubeScheduler | PyScheduler


def pinned(argv: list[str], cpus: str) -> list[str]:
    """``argv`` run on the CPUs listed (``taskset -c``: the process, its threads and its children, such as
    pyscheduler's HTTP worker, inherit the set); unchanged when ``cpus`` is empty."""
    if not cpus:
        return argv
    taskset = shutil.which("taskset")
    if taskset is None:
        raise SystemExit("--scheduler-cpus needs taskset (util-linux)")
    return [taskset, "-c", cpus, *argv]


class Profiler:
    """py-spy sampling one process into collapsed stacks (``--format raw``), non-blocking."""

    def __init__(self, py_spy: str, pid: int, out: Path, rate: int = 200) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            [
                py_spy,
                "record",
                "--pid",
                str(pid),
                "--rate",
                str(rate),
                "--format",
                "raw",
                "--nonblocking",
                # py-spy 0.4.0 panics reading a line table mid-update when it does not stop the process
                # (Preemption, session 16: no profile at all); the summary drops line numbers anyway
                "--nolineno",
                "--gil",
                "--threads",
                "--output",
                str(out),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


_LINE = re.compile(r":\d+\)$")
_THREAD_ID = re.compile(r" \(\d+\)|(?<=_)\d+$")


def profile_summary(collapsed: Path, top: int = 25) -> dict[str, Any]:
    """Self and inclusive sample shares per function (line numbers folded) from py-spy's collapsed stacks."""
    self_c: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    total = 0
    for line in collapsed.read_text(errors="replace").splitlines():
        stack, _, n_s = line.rpartition(" ")
        if not stack or not n_s.isdigit():
            continue
        n = int(n_s)
        frames = stack.split(";")
        total += n
        threads[_THREAD_ID.sub("", frames[0])] += n
        fns = [_LINE.sub(")", f.strip()) for f in frames[1:] if f.strip()]
        if fns:
            self_c[fns[-1]] += n
        for f in set(fns):
            incl[f] += n

    def table(c: Counter[str]) -> list[tuple[str, float]]:
        return [(f, 100.0 * n / total) for f, n in c.most_common(top)] if total else []

    return {"samples": total, "self": table(self_c), "inclusive": table(incl), "threads": table(threads)}
