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
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.chaos.checker import SCHEDULER_NAME, Checker
from bench.chaos.workload import Workload
from pyscheduler.testing.cluster import ADMIN_TOKEN, LocalCluster
from pyscheduler.testing.daemon import SchedulerProcess

LEASE = "chaos-scheduler"
LEASE_S, RENEW_S, RETRY_S = 6, 4, 1


def config(ns: str, qps: int = 200) -> dict[str, Any]:
    return {
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


class ProxyProcess:
    """bench/chaos/proxy.py as its own process in front of the cluster's API server."""

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

    def cmd(self, line: str) -> str:
        with socket.create_connection(("127.0.0.1", self.control), timeout=5) as s:
            s.sendall(line.encode() + b"\n")
            return s.makefile().readline().strip()

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


@dataclass
class Ctx:
    cluster: LocalCluster
    ns: str
    scheds: list[SchedulerProcess]
    checker: Checker
    notes: list[str] = field(default_factory=list)
    proxy: ProxyProcess | None = None


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
}
THROTTLED = {"leader-sigstop-throttled": 10}
VIA_PROXY = {"apiserver-resets-latency"}


# ---------------------------------------------------------------------------------------- running
def proc_stats(pid: int) -> dict[str, int]:
    """RSS (KiB), threads and fds of a process and its children (the HTTP worker)."""
    pids = [pid]
    with contextlib.suppress(OSError):
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            pids.append(int(child))
    out = {"rss_kib": 0, "threads": 0, "fds": 0}
    for p in pids:
        with contextlib.suppress(OSError):
            status = Path(f"/proc/{p}/status").read_text()
            out["rss_kib"] += int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
            out["threads"] += int(re.search(r"Threads:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
            out["fds"] += len(os.listdir(f"/proc/{p}/fd"))
    return out


def p99(values: list[float]) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(0.99 * len(v)))]


def run_scenario(
    cluster: LocalCluster, name: str, minutes: float, nodes: int, rate: float, soak: bool = False
) -> dict[str, Any]:
    fault, replicas = SCENARIOS[name]
    ns = f"chaos-{name}-{int(time.time()) % 100000}"
    wl = Workload(cluster, ns, pool=ns, nodes=nodes, seed=zlib.crc32(name.encode()))
    checker = Checker(cluster.server, ADMIN_TOKEN, str(cluster.ca_file), ns).start()
    wl.setup()
    proxy = ProxyProcess(cluster) if name in VIA_PROXY else None
    scheds = [
        SchedulerProcess(
            proxy.kubeconfig if proxy else cluster.kubeconfig,
            config(ns, THROTTLED.get(name, 200)),
            leader_elect=replicas > 1,
            env={"POD_NAME": f"{name}-{i}"},
            name=f"chaos-{i}",
        )
        for i in range(replicas)
    ]
    ctx = Ctx(cluster, ns, scheds, checker, proxy=proxy)
    t0 = time.monotonic()
    try:
        for s in scheds:
            s.start()
        duration = minutes * 60
        wl.start(duration, rate)
        fault_end = None
        if soak:
            for minute in range(int(minutes)):
                start = time.monotonic()
                time.sleep(max(0.0, t0 + 60 * (minute + 1) - time.monotonic()))
                with checker.lock:
                    lat = [
                        r.bind_times[0] - r.created
                        for r in checker.pods.values()
                        if r.bind_times and r.bind_times[0] >= start
                    ]
                st = proc_stats(scheds[0].proc.pid) if scheds[0].proc else {}
                print(
                    f"soak minute {minute + 1}: rss {st.get('rss_kib', 0) / 1024:.0f} MiB, threads "
                    f"{st.get('threads')}, fds {st.get('fds')}, binds {len(lat)}, p99 create->bind "
                    f"{p99(lat):.2f}s, pending {checker.pending_count()}",
                    flush=True,
                )
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
    finally:
        logs = {s.env["POD_NAME"]: s.log_tail(15) for s in scheds}
        for s in scheds:
            if s.proc is not None and s.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(s.proc.pid, signal.SIGCONT)
            s.stop(timeout=15)
        checker.stop()
        if proxy is not None:
            proxy.stop()
        wl.teardown()
    summary = checker.summary()
    result: dict[str, Any] = {
        "scenario": name,
        **summary,
        "recovery_s": None if recovery is None else round(recovery, 2),
        "seconds": round(time.monotonic() - t0, 1),
        "notes": ctx.notes,
        "actions": wl.actions,
        "workload_errors": len(wl.errors),
        "watch_410": dict(checker.gone),
        "pending_reasons": checker.pending_reasons(),
        "violations": [v.__dict__ for v in checker.violations[:20]],
    }
    if any(summary[k] for k in ("lost", "overcommitted", "double_binds", "misfits")):
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
    ap.add_argument("--out", type=Path, default=None, help="write the per-scenario figures as JSON here")
    args = ap.parse_args(argv)
    names = ["baseline"] if args.soak else (args.scenario or list(SCENARIOS))
    results = []
    with LocalCluster(with_controller_manager=True, name="chaos") as cluster:
        for name in names:
            r = run_scenario(cluster, name, args.minutes, args.nodes, args.rate, soak=args.soak)
            results.append(r)
            print(
                f"{name}: pods {r['pods']} (bound {r['bound']}, pending at the end {r['pending']}), "
                f"lost {r['lost']}, overcommitted "
                f"{r['overcommitted']}, double binds {r['double_binds']}, misfits {r['misfits']}, "
                f"recovery {r['recovery_s']}s, {r['seconds']}s; {'; '.join(r['notes'])}",
                flush=True,
            )
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
    return 1 if lost or over or double or misfits else 0


if __name__ == "__main__":
    sys.exit(main())
