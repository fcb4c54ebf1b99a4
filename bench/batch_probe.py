"""Does opportunistic batching happen? kube-scheduler 1.36.3 and pyscheduler on the real local control plane,
one after the other, each scheduling a burst of identical pods that go one per node (a host port), under
the default profile and under a profile whose PodTopologySpread has ``defaultingType: List`` (no default
constraints); prints each scheduler's batching metrics.

    python -m bench.batch_probe --nodes 50 --pods 40
    python -m bench.batch_probe --profiles list --schedulers kube
    python -m bench.batch_probe --nodes 1000 --pods 500 --profiles list --cpu [--feature-gates OpportunisticBatching=false]

Design
------
For each profile and scheduler: a namespace, ``--nodes`` KWOK nodes labelled for it (the pods select them
by nodeSelector), ``--pods`` pending pods created before the scheduler starts (so they are popped one
right after the other, the only way a hint can be used), then the scheduler, a wait until every pod is
bound, a scrape of its ``/metrics`` (kube-scheduler's through ``--authorization-always-allow-paths``), and
the scheduler stopped and the nodes deleted. Only the series of kube's batching metrics are printed:
``scheduler_batch_attempts_total{result}``, ``scheduler_batch_cache_flushed_total{reason}``, the counts of
``scheduler_get_node_hint_duration_seconds{hinted}`` and ``scheduler_store_schedule_results_duration_seconds``
and of the ``Sign`` extension point. One cluster at a time, every process stopped on the way out.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from pyscheduler.testing.cluster import LocalCluster, free_port, spawn_logged, stop_process_group
from pyscheduler.testing.daemon import SchedulerProcess
from pyscheduler.testing.kube import https_getter, kube_scheduler_argv

API_VERSION = "kubescheduler.config.k8s.io/v1"
PROFILES: dict[str, list[dict[str, Any]]] = {
    "default": [],
    "list": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
}
_SERIES = re.compile(
    r"^(scheduler_batch_attempts_total|scheduler_batch_cache_flushed_total"
    r"|scheduler_get_node_hint_duration_seconds_count|scheduler_store_schedule_results_duration_seconds_count"
    r'|scheduler_framework_extension_point_duration_seconds_count\{extension_point="Sign")'
)


def config(profile: str, kubeconfig: Path | None) -> dict[str, Any]:
    prof: dict[str, Any] = {"schedulerName": "default-scheduler"}
    if PROFILES[profile]:
        prof["pluginConfig"] = PROFILES[profile]
    cfg: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        "profiles": [prof],
    }
    if kubeconfig is not None:
        cfg["clientConnection"] = {"kubeconfig": str(kubeconfig)}
        cfg["leaderElection"] = {"leaderElect": False}
    return cfg


@contextlib.contextmanager
def kube_scheduler(cluster: LocalCluster, profile: str, gates: str = "") -> Iterator[Callable[[], str]]:
    d = Path(tempfile.mkdtemp(prefix="batch-probe-kube-"))
    (d / "config.yaml").write_text(yaml.safe_dump(config(profile, cluster.kubeconfig)))
    port = free_port()
    argv = kube_scheduler_argv(cluster, d / "config.yaml", port, gates)
    get = https_getter(port)

    proc: subprocess.Popen[bytes] = spawn_logged(argv, d / "kube-scheduler.log")
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"kube-scheduler exited: {(d / 'kube-scheduler.log').read_text()[-2000:]}")
            with contextlib.suppress(OSError, urllib.error.URLError):
                if get("/readyz") == "ok":
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("kube-scheduler not ready in 60 s")
            time.sleep(0.2)
        yield lambda: get("/metrics")
    finally:
        stop_process_group(proc, 10)


@contextlib.contextmanager
def pyscheduler(cluster: LocalCluster, profile: str, gates: str = "") -> Iterator[Callable[[], str]]:
    sp = SchedulerProcess(
        None,
        config(profile, None),
        env={"KUBECONFIG": str(cluster.kubeconfig)},
        extra_args=(
            f"--kubeconfig={cluster.kubeconfig}",
            "--log-level=info",
            *([f"--feature-gates={gates}"] if gates else []),
        ),
        name="batch-probe-py",
    )
    sp.start()
    try:
        yield sp.metrics
    finally:
        sp.stop()
        sp.cleanup()


def _pod(ns: str, name: str, pool: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "probe"}},
        "spec": {
            "nodeSelector": {"pool": pool},
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    "ports": [{"containerPort": 8080, "hostPort": 8080}],
                }
            ],
        },
    }


def _cpu_seconds(page: str) -> float:
    m = re.search(r"^process_cpu_seconds_total (\S+)$", page, re.M)
    return float(m.group(1)) if m else float("nan")


def probe(
    cluster: LocalCluster, who: str, profile: str, nodes: int, pods: int, gates: str = "", cpu: bool = False
) -> tuple[list[str], float]:
    """The batching series of ``who``'s /metrics after it bound ``pods`` identical pods, and its CPU ms
    per pod (``cpu``: the pods are created once the scheduler is ready, 8 at a time, and the figure is
    the process's CPU from then until the last is bound; else NaN)."""
    ns = f"probe-{profile}-{who}"
    cluster.api(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    )
    names = cluster.create_nodes(nodes, prefix=ns, labels={"pool": ns})

    def create_all() -> None:
        with ThreadPoolExecutor(8) as ex:
            list(
                ex.map(
                    lambda i: cluster.api("POST", f"/api/v1/namespaces/{ns}/pods", _pod(ns, f"p{i:04d}", ns)),
                    range(pods),
                )
            )

    if not cpu:  # pending together before the scheduler starts
        create_all()
    runner = kube_scheduler if who == "kube" else pyscheduler
    per_pod = float("nan")
    try:
        with runner(cluster, profile, gates) as scrape:
            if cpu:
                before = _cpu_seconds(scrape())
                create_all()
            deadline = time.monotonic() + 300
            while True:
                items = cluster.api("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
                bound = sum(1 for p in items if p["spec"].get("nodeName"))
                if bound >= pods:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{who}/{profile}: {bound}/{pods} pods bound after 300 s")
                time.sleep(0.5)
            if cpu:
                per_pod = (_cpu_seconds(scrape()) - before) / pods * 1000
            time.sleep(1.5)
            page = scrape()
    finally:
        cluster.delete_all("pods", ns)
        for n in names:
            with contextlib.suppress(Exception):
                cluster.api("DELETE", f"/api/v1/nodes/{n}", ok=(200, 202, 404))
    return [line for line in page.splitlines() if _SERIES.match(line)], per_pod


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--pods", type=int, default=40)
    ap.add_argument("--profiles", default="default,list", help="comma-separated: default, list")
    ap.add_argument("--schedulers", default="kube,py", help="comma-separated: kube, py")
    ap.add_argument(
        "--feature-gates", default="", help="for both schedulers, e.g. OpportunisticBatching=false"
    )
    ap.add_argument(
        "--cpu",
        action="store_true",
        help="create the pods once the scheduler is ready and print its CPU ms per pod (process_cpu_seconds_total)",
    )
    a = ap.parse_args(argv)
    if a.pods > a.nodes:
        ap.error("--pods must be at most --nodes (one pod per node)")
    with LocalCluster(name="batch-probe") as cluster:
        for profile in a.profiles.split(","):
            for who in a.schedulers.split(","):
                lines, per_pod = probe(cluster, who, profile, a.nodes, a.pods, a.feature_gates, a.cpu)
                gates = f" gates={a.feature_gates}" if a.feature_gates else ""
                cpu = f" cpu_ms_per_pod={per_pod:.3f}" if a.cpu else ""
                print(f"== {who} profile={profile} nodes={a.nodes} pods={a.pods}{gates}{cpu}")
                for line in lines or ["(no batching series)"]:
                    print(f"   {line}")
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
