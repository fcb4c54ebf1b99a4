"""``python -m bench.chaos [--scenario NAME ...] [--minutes M] [--nodes N] [--soak]``; see bench/chaos/__init__.py.

Each scenario: a fresh namespace and node pool on one shared LocalCluster (with kube-controller-manager for
the Deployments), the checker started before anything is created, the scheduler(s) as real processes,
the workload for ``--minutes``, the fault a third of the way in, then up to 30 s to settle. Figures per
scenario: pods, lost, overcommitted nodes, double binds, misfits, recovery (seconds from the fault's end
to the next bind the checker sees). Last line: ``chaos: S scenarios, P pods, lost L, overcommitted O,
double binds D``; exit 1 when L, O or D is non-zero.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.chaos.checker import SCHEDULER_NAME, Checker, Violation
from bench.chaos.workload import Workload
from pyscheduler.testing.cluster import ADMIN_TOKEN, LocalCluster
from pyscheduler.testing.daemon import SchedulerProcess

LEASE = "chaos-scheduler"
LEASE_S, RENEW_S, RETRY_S = 6, 4, 1


def config(
    ns: str,
    qps: int = 200,
    extenders: list[dict[str, Any]] | None = None,
    gangs: bool = False,
    prometheus: str | None = None,
) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {
            "leaderElect": True,
            "resourceLock": "leases",
            "resourceNamespace": ns,
            "resourceName": LEASE,
            "leaseDuration": f"{LEASE_S}s",
            "renewDeadline": f"{RENEW_S}s",
            "retryPeriod": f"{RETRY_S}s",
        },
        "clientConnection": {"qps": qps, "burst": 2 * qps},
        "profiles": [{"schedulerName": SCHEDULER_NAME}],
    }
    if extenders:
        cfg["extenders"] = extenders
    if gangs:  # Coscheduling (Permit waits for the gang) replaces PrioritySort as the queue sort
        cfg["profiles"][0]["plugins"] = {
            "multiPoint": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "PrioritySort"}]}
        }
        cfg["profiles"][0]["pluginConfig"] = [
            {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": GANG_WAIT_S}}
        ]
    if prometheus:  # NetworkTraffic scores by the stand-in Prometheus (PreScore too: a failure skips it)
        cfg["profiles"][0]["plugins"] = {
            "preScore": {"enabled": [{"name": "NetworkTraffic"}]},
            "score": {"enabled": [{"name": "NetworkTraffic", "weight": 1}]},
        }
        cfg["profiles"][0]["pluginConfig"] = [
            {
                "name": "NetworkTraffic",
                "args": {
                    "prometheusAddress": prometheus,
                    "timeoutSeconds": PROM_TIMEOUT_S,
                    "cacheSeconds": PROM_CACHE_S,
                },
            }
        ]
    return cfg


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


@dataclass
class Ctx:
    cluster: LocalCluster
    ns: str
    scheds: list[SchedulerProcess]
    checker: Checker
    notes: list[str] = field(default_factory=list)
    proxy: ProxyProcess | None = None
    extender: ExtenderProcess | None = None
    workload: Workload | None = None
    prometheus: PrometheusProcess | None = None


def holder(ctx: Ctx) -> str:
    status, out = ctx.cluster.request(
        "GET", f"/apis/coordination.k8s.io/v1/namespaces/{ctx.ns}/leases/{LEASE}"
    )
    return str(((out or {}).get("spec") or {}).get("holderIdentity") or "") if status == 200 else ""


def wait_for(what: str, fn: Callable[[], Any], timeout: float = 30.0) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    raise RuntimeError(f"timed out waiting for {what}")


def leader(ctx: Ctx) -> SchedulerProcess:
    name = wait_for("a lease holder", lambda: holder(ctx))
    return next(s for s in ctx.scheds if s.env.get("POD_NAME") == name)


def scheduled_after(s: SchedulerProcess, wall: float) -> list[str]:
    out = []
    for ln in s.log_lines():
        if ln.get("event") != "scheduled":
            continue
        with contextlib.suppress(KeyError, ValueError):
            t = dt.datetime.fromisoformat(str(ln["timestamp"]).replace("Z", "+00:00")).timestamp()
            if t >= wall:
                out.append(str(ln["pod"]))
    return out


# ---------------------------------------------------------------------------------------- faults
# Each takes the context and returns the monotonic time the fault ended.


def f_none(ctx: Ctx) -> float:
    return time.monotonic()


def f_scheduler_kill(ctx: Ctx) -> float:
    s = ctx.scheds[0]
    s.kill()
    time.sleep(2)
    s.start()
    return time.monotonic()


def f_leader_kill(ctx: Ctx) -> float:
    old = leader(ctx)
    old.kill()
    t = time.monotonic()
    new = wait_for("a new leader", lambda: (h := holder(ctx)) and h != old.env["POD_NAME"] and h, LEASE_S * 4)
    ctx.notes.append(f"lease moved to {new} {time.monotonic() - t:.1f}s after the kill")
    return t


def f_leader_stop(ctx: Ctx) -> float:
    """SIGSTOP the leader's whole process group (main + HTTP worker) for longer than the lease, let the
    standby take over, then SIGCONT: the woken process must not bind anything any more."""
    old = leader(ctx)
    assert old.proc is not None
    name = old.env["POD_NAME"]
    os.killpg(old.proc.pid, signal.SIGSTOP)
    t = time.monotonic()
    new = wait_for(
        "the standby to take the lease", lambda: (h := holder(ctx)) and h != name and h, LEASE_S * 5
    )
    ctx.notes.append(f"lease moved to {new} {time.monotonic() - t:.1f}s after SIGSTOP")
    time.sleep(3)  # the new leader binds for a while before the old one wakes up
    wake = time.time()
    os.killpg(old.proc.pid, signal.SIGCONT)
    time.sleep(RETRY_S * 3 + 2)
    late = scheduled_after(old, wake)
    ctx.notes.append(f"old leader bound {len(late)} pods after waking" + (f": {late[:5]}" if late else ""))
    if late:
        ctx.checker.violations.append(
            __import__("bench.chaos.checker", fromlist=["Violation"]).Violation(
                "double-bind", name, f"bound {len(late)} pods after losing the lease", time.monotonic()
            )
        )
    ctx.notes.append(
        f"old leader {'exited ' + str(old.proc.poll()) if old.proc.poll() is not None else 'still running'}"
    )
    return time.monotonic() - (RETRY_S * 3 + 2) - 3


def f_apiserver_restart(ctx: Ctx) -> float:
    ctx.cluster.restart_apiserver(down_seconds=3)
    return time.monotonic()


def f_etcd_compaction(ctx: Ctx) -> float:
    """Compact etcd at its head, let writes go on, then restart kube-apiserver: every watch reconnects
    with a resourceVersion below the compaction and gets 410 Gone; the reflectors must relist."""
    rev = ctx.cluster.compact_etcd()
    time.sleep(3)
    ctx.cluster.compact_etcd()
    ctx.cluster.restart_apiserver(down_seconds=1)
    end = time.monotonic()
    time.sleep(5)
    relists = sum(
        1
        for s in ctx.scheds
        for ln in s.log_lines()
        if ln.get("event") == "resource version expired, relisting"
    )
    ctx.notes.append(
        f"compacted at revision {rev}; 410 Gone seen by the checker on {sum(ctx.checker.gone.values())} "
        f"watches, by the scheduler's reflectors {relists} times (each relisted)"
    )
    return end


def f_proxy_resets(ctx: Ctx) -> float:
    """Through the proxy: every connection (watches included) reset every 2 s for 16 s, then new
    connections refused for 4 s, then 300 ms added to every chunk for 10 s."""
    assert ctx.proxy is not None
    resets = 0
    for _ in range(8):
        ctx.proxy.cmd("reset")
        resets += 1
        time.sleep(2)
    ctx.proxy.cmd("refuse 1")
    time.sleep(4)
    ctx.proxy.cmd("refuse 0")
    ctx.proxy.cmd("latency 0.3")
    time.sleep(10)
    ctx.proxy.cmd("latency 0")
    ctx.notes.append(f"{resets} resets of all connections, 4 s refused, 10 s at +300 ms per chunk")
    return time.monotonic()


# ------------------------------------------------------------------ HTTP faults (TLS-terminating proxy)
API_FAULT_S = 20.0
BIND_PATH = r"/pods/[^/]+/binding$"


def _http_fault(ctx: Ctx, rules: list[dict[str, Any]], what: str) -> float:
    proxy = ctx.proxy
    assert isinstance(proxy, HttpProxyProcess)
    for r in rules:
        proxy.rule(**r)
    time.sleep(API_FAULT_S)
    proxy.cmd("clear")
    end = time.monotonic()
    ctx.notes.append(f"{what} for {API_FAULT_S:.0f}s; proxy {proxy.cmd('stats')}")
    return end


def f_api_429(ctx: Ctx) -> float:
    """30% of all requests (lists, watches, binds, events, status patches) answered 429 with Retry-After
    2 s before the API server sees them."""
    return _http_fault(ctx, [{"status": 429, "retry_after": 2, "fraction": 0.3}], "30% of requests 429")


WATCH_FAULT_S = 24.0


def f_api_watch_429(ctx: Ctx) -> float:
    """Watches throttled: every 6 s the proxy ends every open watch (as the API server does at a watch's
    timeout); for the first 12 s every watch request is answered 429 with Retry-After 2 s, for the next
    12 s half of them. The reflectors must wait (Retry-After, their backoff), re-watch from their last
    resourceVersion without relisting, and miss no event: the pods created meanwhile are scheduled."""
    proxy = ctx.proxy
    assert isinstance(proxy, HttpProxyProcess)
    ended = 0
    start = time.monotonic()
    for i in range(4):
        if i == 0:
            proxy.rule(status=429, retry_after=2, watch=True)
        elif i == 2:
            proxy.cmd("clear")
            proxy.rule(status=429, retry_after=2, watch=True, fraction=0.5)
        ended += int(proxy.cmd("end-watches"))
        time.sleep(max(0.0, start + WATCH_FAULT_S / 4 * (i + 1) - time.monotonic()))
    proxy.cmd("clear")
    end = time.monotonic()
    ctx.notes.append(
        f"watches 429 (Retry-After 2s), all for 12s then half for 12s; {ended} watches ended; proxy "
        f"{proxy.cmd('stats')}"
    )
    return end


def f_api_5xx(ctx: Ctx) -> float:
    """15% of all requests answered 500 and 15% of the rest 503 (no Retry-After), not forwarded."""
    rules = [{"status": 500, "fraction": 0.15}, {"status": 503, "fraction": 0.15}]
    return _http_fault(ctx, rules, "~28% of requests 500/503")


def f_api_lost_response(ctx: Ctx) -> float:
    """The API server acts, the client gets an error instead of its answer: half of the Binding POSTs
    (the pod IS bound; the retry meets 409) and a fifth of the other writes, answered 500 after
    forwarding."""
    rules = [
        {"status": 500, "when": "after", "fraction": 0.5, "method": "POST", "path": BIND_PATH},
        {"status": 503, "when": "after", "fraction": 0.2, "method": "PATCH"},
        {"status": 503, "when": "after", "fraction": 0.2, "method": "POST"},
    ]
    return _http_fault(ctx, rules, "writes served but answered 500/503 (50% of binds)")


def f_api_slow(ctx: Ctx) -> float:
    """A slow API server: 5% of Binding POSTs answered after 31 s (past the client's 30 s read timeout:
    the pod is bound, the client times out and retries), 40% of the other requests after 2 s."""
    rules: list[dict[str, Any]] = [
        {"delay": 31.0, "fraction": 0.05, "method": "POST", "path": BIND_PATH},
        {"delay": 2.0, "fraction": 0.4, "watch": False},
    ]
    return _http_fault(ctx, rules, "5% of binds +31 s, 40% of requests +2 s")


# ------------------------------------------------------------------ races
GANG_WAIT_S = 10
RACE_S = 20.0


def f_node_deleted_mid_bind(ctx: Ctx) -> float:
    """Every Binding held 2 s in the proxy before it reaches the API server; meanwhile, again and again,
    a node that a held Binding names is deleted and created again 0.7 s later (same name, size, zone):
    binds land on a node that is gone or new. The scheduler's cache must keep counting the pods bound
    there (the checker re-checks a node's requests when it is created again)."""
    proxy, wl = ctx.proxy, ctx.workload
    assert isinstance(proxy, HttpProxyProcess) and wl is not None
    proxy.rule(delay=2.0, when="before", method="POST", path=BIND_PATH)
    windows: dict[str, list[tuple[float, float]]] = {}
    end = time.monotonic() + RACE_S
    while time.monotonic() < end:
        held = [n for n in json.loads(proxy.cmd("held")) if n in wl.node_names]
        if not held:
            time.sleep(0.2)
            continue
        node = wl.rng.choice(held)
        t = time.monotonic()
        ctx.cluster.request("DELETE", f"/api/v1/nodes/{node}")
        time.sleep(0.7)
        wl.recreate_node(node)
        windows.setdefault(node, []).append((t, time.monotonic()))
        time.sleep(0.3)
    proxy.cmd("clear")
    t_end = time.monotonic()
    time.sleep(2.5)  # the last held binds go through
    landed = sum(
        1
        for r in proxy.requests()
        if r.get("node") in windows
        and any(a <= r["t"] + r.get("held", 0) <= b for a, b in windows[r["node"]])
    )
    ctx.notes.append(
        f"{sum(len(w) for w in windows.values())} deletions+re-creations of {len(windows)} nodes named by "
        f"held binds; {landed} binds reached the API server while their node was gone"
    )
    return t_end


def f_gang_permit_deletes(ctx: Ctx) -> float:
    """Coscheduling gangs, some with a member that fits nowhere (the others wait in Permit up to 10 s);
    for 20 s, twice a second, a pending gang member that fits (most are waiting in Permit) is deleted."""
    deleted = 0
    end = time.monotonic() + RACE_S
    while time.monotonic() < end:
        st, out = ctx.cluster.request(
            "GET",
            f"/api/v1/namespaces/{ctx.ns}/pods?labelSelector=chaos%3Dgang&fieldSelector=spec.nodeName%3D",
        )
        items = [
            p
            for p in ((out or {}).get("items") or [] if st == 200 else [])
            if p["spec"]["containers"][0]["resources"]["requests"]["cpu"] != "5"
        ]
        if items:
            victim = random.choice(items)["metadata"]["name"]
            ctx.cluster.request("DELETE", f"/api/v1/namespaces/{ctx.ns}/pods/{victim}?gracePeriodSeconds=0")
            deleted += 1
        time.sleep(0.5)
    t_end = time.monotonic()
    time.sleep(1)
    in_permit = sum(
        1 for s in ctx.scheds for ln in s.log_lines() if ln.get("reason") == "pod deleted" and "pod" in ln
    )
    ctx.notes.append(
        f"{deleted} pending gang members deleted, {in_permit} of them while waiting in Permit (rejected "
        f"'pod deleted' by the scheduler)"
    )
    return t_end


def _claim_pod(ctx: Ctx, i: int, sc: str) -> None:
    ns, pool = ctx.ns, ctx.ns
    ctx.cluster.request(
        "POST",
        f"/api/v1/namespaces/{ns}/persistentvolumeclaims",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": f"claim-{i}"},
            "spec": {
                "storageClassName": sc,
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    ctx.cluster.request(
        "POST",
        f"/api/v1/namespaces/{ns}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"claim-pod-{i}", "labels": {"chaos": "claim"}},
            "spec": {
                "schedulerName": SCHEDULER_NAME,
                "nodeSelector": {"chaos-pool": pool},
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": f"claim-{i}"}}],
            },
        },
    )


def f_pvc_deleted_in_prebind(ctx: Ctx) -> float:
    """Pods with a claim of a WaitForFirstConsumer class: VolumeBinding's PreBind writes the claim's
    selected-node annotation. The proxy holds those PATCHes 2 s; meanwhile the claim is deleted (its
    pvc-protection finalizer removed first, as the controller does for a claim no scheduled pod uses).
    The write then fails, and the pod must not be bound (its claim is gone); its reservation must be
    released (the capacity probe)."""
    proxy = ctx.proxy
    assert isinstance(proxy, HttpProxyProcess)
    sc = f"{ctx.ns}-wffc"
    ctx.cluster.request(
        "POST",
        "/apis/storage.k8s.io/v1/storageclasses",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": sc},
            "provisioner": "chaos.example.com/none",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
    )
    proxy.rule(delay=2.0, when="before", method="PATCH", path=r"/persistentvolumeclaims/[^/]+$")
    deleted: dict[str, float] = {}
    created = 0
    end = time.monotonic() + RACE_S
    try:
        while time.monotonic() < end:
            _claim_pod(ctx, created, sc)
            created += 1
            t_next = time.monotonic() + 1.0
            while time.monotonic() < t_next:
                for path in json.loads(proxy.cmd("held")):
                    claim = path.rsplit("/", 1)[1] if "/persistentvolumeclaims/" in path else ""
                    if claim and claim not in deleted:
                        base = f"/api/v1/namespaces/{ctx.ns}/persistentvolumeclaims/{claim}"
                        ctx.cluster.request(
                            "PATCH",
                            base,
                            {"metadata": {"finalizers": None}},
                            content_type="application/merge-patch+json",
                        )
                        ctx.cluster.request("DELETE", base)
                        deleted[claim] = time.monotonic()
                time.sleep(0.1)
        proxy.cmd("clear")
        t_end = time.monotonic()
        time.sleep(4)  # the held writes go through and fail; the pods go back to the queue
        bound_anyway = []
        for claim in deleted:
            _, pod = ctx.cluster.request(
                "GET", f"/api/v1/namespaces/{ctx.ns}/pods/{claim.replace('claim', 'claim-pod')}"
            )
            if isinstance(pod, dict) and (pod.get("spec") or {}).get("nodeName"):
                bound_anyway.append(pod["metadata"]["name"])
                ctx.checker.violations.append(
                    Violation("misfit", pod["metadata"]["name"], "bound after its claim was deleted", t_end)
                )
        ctx.notes.append(
            f"{created} pods with a claim; {len(deleted)} claims deleted while PreBind's write was held; "
            f"{len(bound_anyway)} of their pods bound anyway"
        )
        return t_end
    finally:
        ctx.cluster.request("DELETE", f"/apis/storage.k8s.io/v1/storageclasses/{sc}")


def probe_capacity(ctx: Ctx, timeout: float = 45.0) -> int:
    """Nothing leaked: with every pod of the scenario deleted, a pod asking for a node's whole cpu, pinned
    to it, must bind on every schedulable node of the pool. A reservation the scheduler never released
    (an assumed pod forgotten neither on a failure nor on a deletion, a stale nomination) leaves one
    pending. Returns the number of nodes that did not take their probe pod (each also a violation)."""
    c, ns, chk = ctx.cluster, ctx.ns, ctx.checker
    if ctx.extender is not None:  # every node must be allowed: the extender's filter rules some out
        ctx.extender.cmd("exclude 0")
    for d in ctx.workload.deployments if ctx.workload else []:
        c.request(
            "PATCH",
            f"/apis/apps/v1/namespaces/{ns}/deployments/{d}/scale",
            {"spec": {"replicas": 0}},
            content_type="application/merge-patch+json",
        )
    time.sleep(1)
    # thousands of pods after a soak on a busy API server: a collection delete cut short by the client's
    # timeout stops where it was, so it is sent again until the checker sees no pod left
    deadline = time.monotonic() + 300
    while chk.live_pods() and time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            c.request("DELETE", f"/api/v1/namespaces/{ns}/pods?gracePeriodSeconds=0", timeout=60)
        with contextlib.suppress(RuntimeError):
            wait_for("the scenario's pods to be deleted", lambda: chk.live_pods() == 0, 10)
    if chk.live_pods():
        raise RuntimeError(f"{chk.live_pods()} pods still there after 300 s of deleting")
    with chk.lock:
        nodes = {
            n: obj["status"]["allocatable"]["cpu"]
            for n, obj in chk.nodes.items()
            if (obj["metadata"].get("labels") or {}).get("chaos-pool") == ns
            and not (obj.get("spec") or {}).get("unschedulable")
        }

    def create(item: tuple[int, tuple[str, str]]) -> None:
        i, (node, cpu) = item
        c.request(
            "POST",
            f"/api/v1/namespaces/{ns}/pods",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"probe-{i}", "labels": {"chaos": "probe"}},
                "spec": {
                    "schedulerName": SCHEDULER_NAME,
                    "nodeSelector": {"kubernetes.io/hostname": node},
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                    ],
                },
            },
            timeout=60,
        )

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, enumerate(sorted(nodes.items()))))
    end = time.monotonic() + timeout
    while time.monotonic() < end and chk.probes_bound() < len(nodes):
        time.sleep(0.5)
    left = chk.unbound_probes()
    # the daemon's own view with only the probe pods left: pods it still queues beyond the unbound probes
    # are ghosts (deleted pods it kept retrying); assumed pods or cached pods beyond the probes' are held
    # capacity (a nomination shows in neither: only as a probe left pending)
    time.sleep(1.5)  # the gauges are set once a second
    for s in ctx.scheds:
        if s.alive() and (g := scheduler_gauges(s)):
            queued = sum(v for k, v in g.items() if k.startswith("queue_"))
            ctx.notes.append(
                f"{s.env.get('POD_NAME')} after the probe: {queued} pods queued ({len(left)} probes unbound), "
                f"cache pods {g.get('cache_pods')} ({len(nodes) - len(left)} probes bound), assumed "
                f"{g.get('cache_assumed_pods')}"
            )
    for key, msg in left:
        chk.violations.append(Violation("leak", key, f"probe pod for a whole node not bound: {msg}", 0.0))
    ctx.notes.append(f"capacity probe: {len(nodes) - len(left)}/{len(nodes)} nodes took a whole-node pod")
    return len(left)


def safe_probe(ctx: Ctx) -> int | None:
    """The capacity probe; if it breaks (an overloaded API server), the scenario's figures survive."""
    try:
        return probe_capacity(ctx)
    except (OSError, RuntimeError) as e:
        ctx.notes.append(f"capacity probe failed: {e!r}")
        return None


# ------------------------------------------------------------------ extender faults
EXTENDER_TIMEOUT_S = 1
EXTENDER_MODES = [  # (mode, seconds for slow, verbs it applies to)
    ("slow", f"{EXTENDER_TIMEOUT_S + 1}", "bind"),  # the extender binds, answers after httpTimeout
    ("error", "0", "bind"),  # the extender binds, answers 500
    ("garbage", "0", ""),
    ("error", "0", ""),
    ("down", "0", ""),
]
EXTENDER_MODE_S = 5.0


def f_extender(ctx: Ctx) -> float:
    """The extender (filter, prioritize, bind) answers its binds too late (after binding), then 500 (after
    binding), then garbage to every verb, 500 to every verb, then refuses connections: 5 s each. Binds made by the extender whose answer
    the scheduler never read must not turn into a second bind or an overcommitted node."""
    ext = ctx.extender
    assert ext is not None
    binds_during = []
    for mode, arg, verbs in EXTENDER_MODES:
        start = time.monotonic()
        reply = ext.cmd(f"mode {mode} {arg} {verbs}".strip())
        if reply != "ok":
            raise RuntimeError(f"extender refused mode {mode}: {reply!r}")
        time.sleep(EXTENDER_MODE_S)
        n = len([b for b in ctx.checker.bind_log if b >= start])
        binds_during.append(f"{mode} ({verbs or 'all verbs'}) {n}")
    if (reply := ext.cmd("mode ok")) != "ok":
        raise RuntimeError(f"extender refused mode ok: {reply!r}")
    end = time.monotonic()
    ctx.notes.append(f"binds seen per {EXTENDER_MODE_S:.0f}s fault: {', '.join(binds_during)}")
    ctx.notes.append(f"extender {ext.cmd('stats')}")
    return end


# ------------------------------------------------------------------ Prometheus faults (NetworkTraffic)
PROM_TIMEOUT_S = 1
PROM_CACHE_S = 5
PROM_MODES = ["down", "blackhole", "trickle", "error", "garbage", "ok"]
PROM_MODE_S = 10.0
PROM_WARNING = "prometheus query failed; scoring without NetworkTraffic"


def f_prometheus(ctx: Ctx) -> float:
    """NetworkTraffic's Prometheus refuses connections, then accepts and never answers, then answers a
    byte every 0.2 s, then 503, then HTML, then comes back: 10 s each. Pods must keep being bound in
    every phase, no PreScore may wait past timeoutSeconds (the stand-in sees when the client hangs up),
    the failure must be logged at most once a minute, and scoring must use Prometheus again at the end."""
    prom, sched = ctx.prometheus, ctx.scheds[0]
    assert prom is not None
    phases = []
    for mode in PROM_MODES:
        before = json.loads(prom.cmd("stats"))["queries"]
        if (reply := prom.cmd(f"mode {mode}")) != "ok":
            raise RuntimeError(f"prometheus refused mode {mode}: {reply!r}")
        start = time.monotonic()
        time.sleep(PROM_MODE_S)
        with ctx.checker.lock:
            lat = [
                r.bind_times[0] - r.created
                for r in ctx.checker.pods.values()
                if r.bind_times and start <= r.bind_times[0] < start + PROM_MODE_S
            ]
        after = json.loads(prom.cmd("stats"))["queries"]
        asked = after.get(mode, 0) - before.get(mode, 0)
        phases.append(f"{mode}: {len(lat)} binds, p99 create->bind {p99(lat):.2f}s, {asked} queries")
    end = time.monotonic()
    stats = json.loads(prom.cmd("stats"))
    warnings = [x for x in sched.log_lines() if x.get("event") == PROM_WARNING]
    ctx.notes.append("; ".join(phases))
    held = {k: f"max {max(v):.2f}s (n={len(v)})" for k, v in stats["held"].items() if v}
    ctx.notes.append(f"client hung up after (timeoutSeconds {PROM_TIMEOUT_S}): {held}")
    ctx.notes.append(
        f"{len(warnings)} '{PROM_WARNING}' warnings in the scheduler's log: "
        + ", ".join(f"{w.get('error', '')[:60]!r} (failures {w.get('failures')})" for w in warnings)
    )
    return end


def _quantiles(v: list[float]) -> str:
    if not v:
        return "none"
    v = sorted(v)
    return f"n={len(v)} min {v[0]:.2f}s median {v[len(v) // 2]:.2f}s max {v[-1]:.2f}s"


def _kind(r: dict[str, Any]) -> str:
    if r.get("watch"):
        return "watches"
    return "binds" if r["m"] == "POST" and r["p"].endswith("/binding") else "other requests"


def retry_figures(reqs: list[dict[str, Any]]) -> dict[str, Any]:
    """From the proxy's request log: after each injected failure, when the same request (method, path,
    body) came again. 429: the gap must be at least Retry-After; 5xx: the gaps grow (exponential backoff;
    for a watch, the reflector's). Also: binds retried after a lost answer that met 409, and requests
    whose last attempt failed."""
    ended = [r for r in reqs if "ended_watch" in r]
    reqs = [r for r in reqs if "m" in r]
    by_key: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in reqs:
        by_key.setdefault((r["m"], r["p"], r.get("b", 0)), []).append(r)
    gaps_429: dict[str, list[float]] = {}
    early_429 = 0
    gaps_5xx: dict[str, list[float]] = {}
    gave_up = {"binds": 0, "other": 0}
    bind_409_after_lost = 0
    for rs in by_key.values():
        chain = 0
        for i, r in enumerate(rs):
            if not r.get("injected"):
                chain = 0
                continue
            kind = _kind(r)
            nxt = rs[i + 1] if i + 1 < len(rs) else None
            if nxt is None or nxt["t"] - r["t"] > 15:
                if kind != "watches":
                    gave_up["binds" if kind == "binds" else "other"] += 1
                continue
            gap = nxt["t"] - r["t"]
            chain += 1
            if r["status"] == 429:
                gaps_429.setdefault(kind, []).append(gap)
                early_429 += gap < 2 - 0.05
            else:
                key = kind if kind == "watches" else f"retry {min(chain, 4)}{'+' if chain >= 4 else ''}"
                gaps_5xx.setdefault(key, []).append(gap)
            if kind == "binds" and r.get("injected") == "after" and nxt.get("status") == 409:
                bind_409_after_lost += 1
    out: dict[str, Any] = {"requests": len(reqs), "injected": sum(1 for r in reqs if r.get("injected"))}
    for kind, g in sorted(gaps_429.items()):
        out[f"429 (Retry-After 2s) -> next attempt, {kind}"] = _quantiles(g)
    if gaps_429:
        out["retried before Retry-After"] = early_429
    for key, g in sorted(gaps_5xx.items()):
        out[f"5xx -> {'next request to that collection, watches' if key == 'watches' else key}"] = _quantiles(
            g
        )
    if bind_409_after_lost:
        out["binds retried after a lost answer, answered 409"] = bind_409_after_lost
    out["failed for good (last attempt failed)"] = gave_up
    out.update(_held_back_figures(reqs, by_key))
    out.update(watch_figures(reqs, ended))
    return out


def watch_figures(reqs: list[dict[str, Any]], ended: list[dict[str, Any]]) -> dict[str, Any]:
    """Watches ended by the proxy (``end-watches``): per ended watch, how long until a watch of the same
    collection was open again (answered 200), how many of its re-connections were refused on the way,
    and whether the client relisted (a plain GET of that collection) instead of re-watching from its
    resourceVersion."""
    if not ended:
        return {}
    by_path: dict[str, list[dict[str, Any]]] = {}
    for r in reqs:
        if r["m"] == "GET":
            by_path.setdefault(r["p"], []).append(r)
    back: list[float] = []
    refused: list[int] = []
    relists = 0
    never = 0
    for e in ended:
        rs = [r for r in by_path.get(e["ended_watch"], []) if r["t"] >= e["t"]]
        ok = next((r for r in rs if r.get("watch") and r["status"] == 200), None)
        if ok is None:
            never += 1
            continue
        back.append(ok["t"] - e["t"])
        before = [r for r in rs if r["t"] <= ok["t"]]
        refused.append(sum(1 for r in before if r.get("watch") and r["status"] != 200))
        relists += sum(1 for r in before if not r.get("watch"))
    return {
        "watches ended by the proxy": len(ended),
        "ended watch -> open again": _quantiles(back),
        "re-connections refused before it opened (per ended watch)": _quantiles([float(n) for n in refused]),
        "relists instead of a re-watch": relists,
        "never re-opened": never,
    }


def _held_back_figures(
    reqs: list[dict[str, Any]], by_key: dict[tuple[str, str, int], list[dict[str, Any]]]
) -> dict[str, Any]:
    """Answers held back past the client's read timeout: the same request sent again meanwhile."""
    delayed = [r for r in reqs if r.get("delay")]
    if not delayed:
        return {}
    out: dict[str, Any] = {"delayed": len(delayed)}
    again = []
    for r in delayed:
        rs = by_key[(r["m"], r["p"], r.get("b", 0))]
        nxt = next((x for x in rs if r["t"] < x["t"] <= r["t"] + r["delay"]), None)
        if nxt is not None:
            again.append((nxt["t"] - r["t"], nxt.get("status")))
    if again:
        out["sent again while the answer was held back"] = (
            f"{len(again)} (after {_quantiles([g for g, _ in again])}; "
            f"answered {sorted({str(st) for _, st in again})})"
        )
    return out


SCENARIOS: dict[str, tuple[Callable[[Ctx], float], int]] = {  # name -> (fault, replicas)
    "baseline": (f_none, 1),
    "scheduler-sigkill": (f_scheduler_kill, 1),
    "leader-sigkill": (f_leader_kill, 2),
    "leader-sigstop": (f_leader_stop, 2),
    "apiserver-restart": (f_apiserver_restart, 1),
    "etcd-compaction": (f_etcd_compaction, 1),
    "apiserver-resets-latency": (f_proxy_resets, 1),
    # the same SIGSTOP, with the client throttled to 10 QPS so binds queue in the rate limiter when the
    # process is frozen: without bind fencing they are sent on SIGCONT, after the standby took over
    "leader-sigstop-throttled": (f_leader_stop, 2),
    "api-429": (f_api_429, 1),
    "api-watch-429": (f_api_watch_429, 1),
    "api-5xx": (f_api_5xx, 1),
    "api-lost-response": (f_api_lost_response, 1),
    "api-slow": (f_api_slow, 1),
    "extender-faults": (f_extender, 1),
    "extender-faults-ignorable": (f_extender, 1),
    "node-deleted-mid-bind": (f_node_deleted_mid_bind, 1),
    "gang-permit-deletes": (f_gang_permit_deletes, 1),
    "pvc-deleted-in-prebind": (f_pvc_deleted_in_prebind, 1),
    "prometheus-faults": (f_prometheus, 1),
}
PROMETHEUS = {"prometheus-faults"}
GANGS = {"gang-permit-deletes"}
EXTENDERS = {"extender-faults": False, "extender-faults-ignorable": True}  # name -> ignorable
THROTTLED = {"leader-sigstop-throttled": 10}
VIA_PROXY = {"apiserver-resets-latency"}
VIA_HTTP_PROXY = {
    "api-429",
    "api-watch-429",
    "api-5xx",
    "api-lost-response",
    "api-slow",
    "node-deleted-mid-bind",
    "pvc-deleted-in-prebind",
}


# ---------------------------------------------------------------------------------------- running
def proc_stats(pid: int) -> dict[str, int]:
    """RSS (KiB), threads, fds and CPU (clock ticks) of a process and its children (the HTTP worker)."""
    pids = [pid]
    with contextlib.suppress(OSError):
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            pids.append(int(child))
    out = {"rss_kib": 0, "threads": 0, "fds": 0, "cpu_ticks": 0}
    for p in pids:
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            out["cpu_ticks"] += int(stat[11]) + int(stat[12])  # utime + stime
            status = Path(f"/proc/{p}/status").read_text()
            out["rss_kib"] += int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
            out["threads"] += int(re.search(r"Threads:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
            out["fds"] += len(os.listdir(f"/proc/{p}/fd"))
    return out


def scheduler_gauges(s: SchedulerProcess) -> dict[str, int]:
    """The daemon's queue sizes (scheduler_pending_pods by queue) and cache sizes, from /metrics."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for m in re.finditer(
            r'^scheduler_(pending_pods|cache_size)\{(?:queue|type)="(\w+)"\} ([0-9.e+]+)$', s.metrics(), re.M
        ):
            out[f"{'queue' if m.group(1) == 'pending_pods' else 'cache'}_{m.group(2)}"] = int(
                float(m.group(3))
            )
    return out


def p99(values: list[float]) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(0.99 * len(v)))]


def soak_minutes(
    t0: float, minutes: float, checker: Checker, sched: SchedulerProcess
) -> list[dict[str, Any]]:
    """Once a minute: the daemon's RSS, threads, fds, CPU, queue and cache sizes, whether it is still the
    process started (a restart would show as an exit code); pods created, binds and p99 create->bind."""
    soak_rows: list[dict[str, Any]] = []
    tick_hz = os.sysconf("SC_CLK_TCK")
    last_cpu = 0
    last_pods = 0
    for minute in range(int(minutes)):
        start = time.monotonic()
        time.sleep(max(0.0, t0 + 60 * (minute + 1) - time.monotonic()))
        with checker.lock:
            lat = [
                r.bind_times[0] - r.created
                for r in checker.pods.values()
                if r.bind_times and r.bind_times[0] >= start
            ]
        st = proc_stats(sched.proc.pid) if sched.proc else {}
        g = scheduler_gauges(sched)
        with checker.lock:
            created = len(checker.pods)
        cpu = st.get("cpu_ticks", 0)
        row = {
            "minute": minute + 1,
            "rss_mib": round(st.get("rss_kib", 0) / 1024),
            "threads": st.get("threads"),
            "fds": st.get("fds"),
            "cpu_s": round((cpu - last_cpu) / tick_hz, 1),
            "exit_code": sched.proc.poll() if sched.proc else None,
            "created": created - last_pods,
            "live": checker.live_pods(),
            "binds": len(lat),
            "p99_s": round(p99(lat), 2),
            "pending": checker.pending_count(),
            "violations": len(checker.violations),
            **g,
        }
        last_cpu, last_pods = cpu, created
        soak_rows.append(row)
        print(
            f"soak minute {minute + 1}: rss {row['rss_mib']} MiB, threads {row['threads']}, fds "
            f"{row['fds']}, cpu {row['cpu_s']}s, exit code {row['exit_code']}, created {row['created']}, "
            f"live {row['live']}, binds {len(lat)}, p99 create->bind {row['p99_s']:.2f}s, pending "
            f"{row['pending']}, violations so far {row['violations']}; queues active {g.get('queue_active')} backoff {g.get('queue_backoff')} "
            f"unschedulable {g.get('queue_unschedulable')}; cache nodes {g.get('cache_nodes')} "
            f"pods {g.get('cache_pods')} assumed {g.get('cache_assumed_pods')}",
            flush=True,
        )
    return soak_rows


def stop_schedulers(scheds: list[SchedulerProcess], ns: str, keep_logs: Path | None) -> dict[str, str]:
    """Stop every replica (a SIGSTOPped one is woken first); their logs' tails, the whole logs copied to
    ``keep_logs`` as ``<namespace>-<replica>.log`` if given, then deleted."""
    logs = {s.env["POD_NAME"]: s.log_tail(15) for s in scheds}
    for s in scheds:
        if s.proc is not None and s.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(s.proc.pid, signal.SIGCONT)
        s.stop(timeout=15)
        if keep_logs is not None:
            keep_logs.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                shutil.copy(s.log_path, keep_logs / f"{ns}-{s.env['POD_NAME']}.log")
        s.cleanup()
    return logs


def run_scenario(
    cluster: LocalCluster,
    name: str,
    minutes: float,
    nodes: int,
    rate: float,
    soak: bool = False,
    probe: bool = True,
    workers: int = 1,
    max_pods: int | None = None,
    keep_logs: Path | None = None,
) -> dict[str, Any]:
    fault, replicas = SCENARIOS[name]
    ns = f"chaos-{name}-{int(time.time()) % 100000}"
    wl = Workload(cluster, ns, pool=ns, nodes=nodes, seed=zlib.crc32(name.encode()))
    checker = Checker(cluster.server, ADMIN_TOKEN, str(cluster.ca_file), ns).start()
    wl.gangs = name in GANGS
    wl.max_pods = max_pods
    wl.setup()
    proxy: ProxyProcess | None = None
    if name in VIA_PROXY:
        proxy = ProxyProcess(cluster)
    elif name in VIA_HTTP_PROXY:
        proxy = HttpProxyProcess(cluster)
    extender = ExtenderProcess(cluster) if name in EXTENDERS else None
    ext_cfg = [extender.config(EXTENDERS[name])] if extender is not None else None
    prom = PrometheusProcess(ns) if name in PROMETHEUS else None
    scheds = [
        SchedulerProcess(
            proxy.kubeconfig if proxy else cluster.kubeconfig,
            config(
                ns,
                THROTTLED.get(name, 200),
                ext_cfg,
                gangs=name in GANGS,
                prometheus=prom.address if prom is not None else None,
            ),
            leader_elect=replicas > 1,
            env={"POD_NAME": f"{name}-{i}"},
            name=f"chaos-{i}",
        )
        for i in range(replicas)
    ]
    ctx = Ctx(cluster, ns, scheds, checker, proxy=proxy, extender=extender, workload=wl, prometheus=prom)
    t0 = time.monotonic()
    try:
        for s in scheds:
            s.start()
        duration = minutes * 60
        wl.start(duration, rate, workers)
        fault_end = None
        soak_rows: list[dict[str, Any]] = []
        if soak:
            soak_rows = soak_minutes(t0, minutes, checker, scheds[0])
        else:
            time.sleep(duration / 3)
            fault_start = time.monotonic()
            fault_end = fault(ctx)
            ctx.notes.append(f"fault lasted {fault_end - fault_start:.1f}s")
        wl.join()
        # settle: every pod left bound or tried
        end = time.monotonic() + 30
        while time.monotonic() < end:
            with checker.lock:
                waiting = [
                    r for r in checker.pods.values() if not r.deleted and not r.binds and r.attempted is None
                ]
            if not waiting:
                break
            time.sleep(1)
        checker.check_lost(time.monotonic(), final=True)
        first = checker.binds_since(fault_end) if fault_end is not None else None
        recovery = (first - fault_end) if first is not None and fault_end is not None else None
        before_probe = checker.summary()  # pods, bound, pending: the scenario's, not the probe's
        leaked = safe_probe(ctx) if probe else None
    finally:
        logs = stop_schedulers(scheds, ns, keep_logs)
        checker.stop()
        retries = retry_figures(proxy.requests()) if isinstance(proxy, HttpProxyProcess) else None
        if proxy is not None:
            proxy.stop()
        if extender is not None:
            extender.stop()
        if prom is not None:
            prom.stop()
        wl.teardown()
    summary = {**checker.summary(), **{k: before_probe[k] for k in ("pods", "bound", "pending")}}
    result: dict[str, Any] = {
        "scenario": name,
        **summary,
        "recovery_s": None if recovery is None else round(recovery, 2),
        "leaked": leaked,
        "seconds": round(time.monotonic() - t0, 1),
        "notes": ctx.notes,
        "actions": wl.actions,
        "workload_errors": len(wl.errors),
        "watch_410": dict(checker.gone),
        "pending_reasons": checker.pending_reasons(),
        "violations": [v.__dict__ for v in checker.violations[:20]],
    }
    if retries is not None:
        result["retries"] = retries
    if soak_rows:
        result["soak"] = soak_rows
    if leaked or any(summary[k] for k in ("lost", "overcommitted", "double_binds", "misfits")):
        result["scheduler_logs"] = logs
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.chaos",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="repeatable; default all")
    ap.add_argument("--minutes", type=float, default=1.0, help="workload minutes per scenario (default 1)")
    ap.add_argument("--nodes", type=int, default=50, help="initial KWOK nodes per scenario (default 50)")
    ap.add_argument("--rate", type=float, default=8.0, help="workload actions per second (default 8)")
    ap.add_argument("--soak", action="store_true", help="no fault; print RSS, threads, fds, p99 per minute")
    ap.add_argument("--workers", type=int, default=1, help="workload threads sharing --rate (default 1)")
    ap.add_argument(
        "--max-pods",
        type=int,
        default=0,
        help="steady churn: at most this many bare pods alive, deletions picked from the driver's own "
        "record (default 0: no cap, deletions picked by listing)",
    )
    ap.add_argument("--out", type=Path, default=None, help="write the per-scenario figures as JSON here")
    ap.add_argument(
        "--keep-logs",
        type=Path,
        default=None,
        metavar="DIR",
        help="copy each scheduler's debug log here as <namespace>-<replica>.log (default: deleted)",
    )
    ap.add_argument(
        "--repeat", type=int, default=1, help="run the chosen scenarios this many times on one cluster"
    )
    args = ap.parse_args(argv)
    names = ["baseline"] if args.soak else (args.scenario or list(SCENARIOS))
    names = names * max(1, args.repeat)
    results = []
    with LocalCluster(with_controller_manager=True, name="chaos") as cluster:
        for name in names:
            r = run_scenario(
                cluster,
                name,
                args.minutes,
                args.nodes,
                args.rate,
                soak=args.soak,
                workers=args.workers,
                max_pods=args.max_pods or None,
                keep_logs=args.keep_logs,
            )
            results.append(r)
            print(
                f"{name}: pods {r['pods']} (bound {r['bound']}, pending at the end {r['pending']}), "
                f"lost {r['lost']}, overcommitted "
                f"{r['overcommitted']}, double binds {r['double_binds']}, misfits {r['misfits']}, "
                f"leaked nodes {r['leaked']}, preempted {r['preempted']}, "
                f"recovery {r['recovery_s']}s, {r['seconds']}s; {'; '.join(r['notes'])}",
                flush=True,
            )
            acts = r["actions"]
            print(
                f"  workload: {sum(acts.values())} actions ({sum(acts.values()) / (args.minutes * 60):.1f}/s of "
                f"{args.rate}), {r['workload_errors']} failed: {dict(sorted(acts.items()))}",
                flush=True,
            )
            for k, v in (r.get("retries") or {}).items():
                print(f"  {k}: {v}", flush=True)
            for msg, n in list(r["pending_reasons"].items())[:3]:
                print(f"  pending {n}: {msg}", flush=True)
            for v in r["violations"][:5]:
                print(f"  {v['kind']}: {v['subject']}: {v['detail']}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    lost = sum(r["lost"] for r in results)
    over = sum(r["overcommitted"] for r in results)
    double = sum(r["double_binds"] for r in results)
    pods = sum(r["pods"] for r in results)
    print(
        f"chaos: {len(results)} scenarios, {pods} pods, lost {lost}, overcommitted {over}, double binds {double}"
    )
    misfits = sum(r["misfits"] for r in results)
    leaked = sum(r["leaked"] or 0 for r in results)
    return 1 if lost or over or double or misfits or leaked else 0


if __name__ == "__main__":
    sys.exit(main())
