"""The faults, one per scenario: each takes the scenario's context (``common.Ctx``), injects its fault
while the workload runs, notes what it saw in ``ctx.notes`` and returns the monotonic time the fault
ended (recovery is measured from there)."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from typing import Any

from bench.chaos.checker import SCHEDULER_NAME, Violation
from bench.chaos.common import (
    LEASE_S,
    PROM_TIMEOUT_S,
    RETRY_S,
    Ctx,
    holder,
    leader,
    p99,
    scheduled_after,
    wait_for,
)
from bench.chaos.procs import EXTENDER_TIMEOUT_S, HttpProxyProcess

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


# ------------------------------------------------------------------ extender faults
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
