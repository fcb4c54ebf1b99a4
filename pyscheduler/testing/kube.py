"""Small helpers for tests that talk to a real cluster through ``LocalCluster.request``."""

from __future__ import annotations

import ssl
import time
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from pyscheduler.framework.quantity import int_value, milli_value
from pyscheduler.testing.cluster import LocalCluster

T = TypeVar("T")


def eventually(fn: Callable[[], T], timeout: float = 30.0, interval: float = 0.2, what: str = "") -> T:
    """Call ``fn`` until it returns something truthy; fail with its last value after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last  # type: ignore[no-any-return]
        time.sleep(interval)
    raise AssertionError(f"{what or 'condition'} not met within {timeout}s (last value: {last!r})")


def kube_scheduler_argv(cluster: LocalCluster, config: Path, port: int, gates: str = "") -> list[str]:
    """The real kube-scheduler with ``config`` on ``127.0.0.1:port`` (certificates beside the config), its
    health and /metrics paths readable without credentials, as the parity tests and probes read them."""
    return [
        cluster.binary("kube-scheduler"),
        f"--config={config}",
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
        f"--cert-dir={config.parent}",
        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
        "--v=1",
        *([f"--feature-gates={gates}"] if gates else []),
    ]


def https_getter(port: int) -> Callable[[str], str]:
    """GET a path of a loopback HTTPS server with a self-signed certificate (a scheduler's /metrics)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE

    def get(path: str) -> str:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}", timeout=5, context=ctx) as r:
            return str(r.read().decode())

    return get


def create(cluster: LocalCluster, obj: dict[str, Any]) -> dict[str, Any]:
    kind = obj["kind"]
    ns = obj["metadata"].get("namespace", "default")
    paths = {
        "Pod": f"/api/v1/namespaces/{ns}/pods",
        "Node": "/api/v1/nodes",
        "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    }
    out: dict[str, Any] = cluster.api("POST", paths[kind], obj)
    return out


def create_pods(cluster: LocalCluster, pods: Iterable[dict[str, Any]]) -> None:
    for p in pods:
        create(cluster, p)


def list_pods(cluster: LocalCluster, ns: str, selector: str = "") -> list[dict[str, Any]]:
    q = f"?labelSelector={selector}" if selector else ""
    items: list[dict[str, Any]] = cluster.api("GET", f"/api/v1/namespaces/{ns}/pods{q}")["items"]
    return items


def get_pod(cluster: LocalCluster, ns: str, name: str) -> dict[str, Any]:
    out: dict[str, Any] = cluster.api("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    return out


def node_of(cluster: LocalCluster, ns: str, name: str) -> str:
    return str(get_pod(cluster, ns, name)["spec"].get("nodeName", ""))


def scheduled_condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    for c in pod.get("status", {}).get("conditions", []) or []:
        if c.get("type") == "PodScheduled":
            return dict(c)
    return None


def events_for(cluster: LocalCluster, ns: str, pod_name: str, reason: str = "") -> list[dict[str, Any]]:
    items = cluster.api("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events")["items"]
    return [
        e
        for e in items
        if e.get("regarding", {}).get("name") == pod_name and (not reason or e.get("reason") == reason)
    ]


def node_usage(
    cluster: LocalCluster, node_names: Iterable[str]
) -> dict[str, tuple[int, int, int, int, int, int]]:
    """node -> (cpu requested m, cpu allocatable m, memory requested, memory allocatable, pods, max pods)."""
    names = set(node_names)
    usage = {n: [0, 0, 0, 0, 0, 0] for n in names}
    for n in cluster.api("GET", "/api/v1/nodes")["items"]:
        name = n["metadata"]["name"]
        if name in usage:
            alloc = n["status"]["allocatable"]
            usage[name][1] = milli_value(alloc["cpu"])
            usage[name][3] = int_value(alloc["memory"])
            usage[name][5] = int_value(alloc["pods"])
    for p in cluster.api("GET", "/api/v1/pods")["items"]:
        node = p["spec"].get("nodeName")
        if node in usage and p["status"].get("phase") not in ("Succeeded", "Failed"):
            for c in p["spec"]["containers"]:
                req = (c.get("resources") or {}).get("requests") or {}
                usage[node][0] += milli_value(req.get("cpu", "0"))
                usage[node][2] += int_value(req.get("memory", "0"))
            usage[node][4] += 1
    return {k: (v[0], v[1], v[2], v[3], v[4], v[5]) for k, v in usage.items()}
