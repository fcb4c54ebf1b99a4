"""The helper processes a scenario talks to, each started as its own process that prints its ports and
takes one-line commands on a control port: the TCP fault proxy (``proxy.py``), the TLS-terminating HTTP
fault proxy (``httpproxy.py``), the extender (``extender.py``) and the stand-in Prometheus
(``prometheus.py``)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pyscheduler.testing.cluster import ADMIN_TOKEN, LocalCluster

EXTENDER_TIMEOUT_S = 1  # the extender's httpTimeout: its 'slow' answers come after it


class Controlled:
    """A helper process (proxy, extender) that prints its control port and takes one-line commands."""

    proc: subprocess.Popen[str]
    control: int

    def cmd(self, line: str) -> str:
        with socket.create_connection(("127.0.0.1", self.control), timeout=5) as s:
            s.sendall(line.encode() + b"\n")
            return s.makefile().readline().strip()

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


class ProxyProcess(Controlled):
    """bench/chaos/proxy.py as its own process in front of the cluster's API server."""

    kubeconfig: Path

    def __init__(self, cluster: LocalCluster) -> None:
        upstream = cluster.server.split("://", 1)[1]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.chaos.proxy", "--upstream", upstream],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        _, port, _, control = self.proc.stdout.readline().split()
        self.port, self.control = int(port), int(control)
        self.kubeconfig = Path(tempfile.mkdtemp(prefix="chaos-proxy-")) / "kubeconfig"
        cfg = json.loads(cluster.kubeconfig.read_text())
        cfg["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{self.port}"
        self.kubeconfig.write_text(json.dumps(cfg))


class HttpProxyProcess(ProxyProcess):
    """bench/chaos/httpproxy.py (TLS terminated with a certificate from the cluster's CA): injects 429,
    500, 503 and slow answers; every request it saw is in ``self.log`` (JSON lines)."""

    def __init__(self, cluster: LocalCluster) -> None:  # the TCP proxy's __init__ is not called
        assert cluster.state_dir is not None
        upstream = cluster.server.split("://", 1)[1]
        self.dir = Path(tempfile.mkdtemp(prefix="chaos-httpproxy-"))
        self.log = self.dir / "requests.jsonl"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.chaos.httpproxy",
                "--upstream",
                upstream,
                "--pki",
                str(cluster.state_dir / "pki"),
                "--log",
                str(self.log),
                "--workdir",
                str(self.dir / "cert"),
            ],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        _, port, _, control = self.proc.stdout.readline().split()
        self.port, self.control = int(port), int(control)
        self.kubeconfig = self.dir / "kubeconfig"
        cfg = json.loads(cluster.kubeconfig.read_text())
        cfg["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{self.port}"
        self.kubeconfig.write_text(json.dumps(cfg))

    def rule(self, **spec: Any) -> None:
        reply = self.cmd("set " + json.dumps(spec))
        if reply != "ok":
            raise RuntimeError(f"proxy refused rule {spec}: {reply}")

    def stop(self) -> None:
        super().stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def requests(self) -> list[dict[str, Any]]:
        self.cmd("stats")  # flushes the log
        out = []
        for line in self.log.read_text().splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out


class ExtenderProcess(Controlled):
    """bench/chaos/extender.py as its own process: filter, prioritize and bind (it binds through the API
    server itself), with answers broken on command."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.chaos.extender",
                "--server",
                cluster.server,
                "--ca",
                str(cluster.ca_file),
            ],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={**os.environ, "CHAOS_EXTENDER_TOKEN": ADMIN_TOKEN},
        )
        assert self.proc.stdout is not None
        _, port, _, control = self.proc.stdout.readline().split()
        self.port, self.control = int(port), int(control)

    def config(self, ignorable: bool) -> dict[str, Any]:
        return {
            "urlPrefix": f"http://127.0.0.1:{self.port}",
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "bindVerb": "bind",
            "weight": 1,
            "nodeCacheCapable": True,
            "httpTimeout": f"{EXTENDER_TIMEOUT_S}s",
            "ignorable": ignorable,
        }


class PrometheusProcess(Controlled):
    """bench/chaos/prometheus.py as its own process: answers NetworkTraffic's query for the pool's nodes,
    or is down, a black hole, a trickle, a 503 or garbage on command."""

    def __init__(self, pool: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.chaos.prometheus", "--prefix", pool, "--count", "5000"],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        _, port, _, control = self.proc.stdout.readline().split()
        self.port, self.control = int(port), int(control)

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"
