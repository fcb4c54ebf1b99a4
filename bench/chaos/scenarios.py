"""The scenario registry (name -> fault, replicas, and what each needs: a proxy, an extender, gangs...)
and ``run_scenario``: one scenario from its namespace and node pool to its figures."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.chaos.checker import Checker
from bench.chaos.common import Ctx, config
from bench.chaos.faults import (
    f_api_5xx,
    f_api_429,
    f_api_lost_response,
    f_api_slow,
    f_api_watch_429,
    f_apiserver_restart,
    f_etcd_compaction,
    f_extender,
    f_gang_permit_deletes,
    f_leader_kill,
    f_leader_stop,
    f_node_deleted_mid_bind,
    f_none,
    f_prometheus,
    f_proxy_resets,
    f_pvc_deleted_in_prebind,
    f_scheduler_kill,
)
from bench.chaos.figures import retry_figures
from bench.chaos.heap import HeapSampler
from bench.chaos.probe import safe_probe
from bench.chaos.procs import ExtenderProcess, HttpProxyProcess, PrometheusProcess, ProxyProcess
from bench.chaos.soak import soak_minutes
from bench.chaos.workload import Workload
from pyscheduler.testing.cluster import ADMIN_TOKEN, LocalCluster
from pyscheduler.testing.daemon import SchedulerProcess

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
    flat_nodes: bool = False,
    node_cpu: str = "4",
    heap: HeapSampler | None = None,
) -> dict[str, Any]:
    """``heap`` (the soak only): the first daemon runs with tracemalloc and is sampled (bench/chaos/heap.py);
    the caller prints its report."""
    fault, replicas = SCENARIOS[name]
    heap_env = heap.env() if heap is not None else {}
    ns = f"chaos-{name}-{int(time.time()) % 100000}"
    wl = Workload(cluster, ns, pool=ns, nodes=nodes, seed=zlib.crc32(name.encode()))
    checker = Checker(cluster.server, ADMIN_TOKEN, str(cluster.ca_file), ns).start()
    wl.gangs = name in GANGS
    wl.max_pods = max_pods
    wl.node_churn = not flat_nodes
    wl.node_cpu = node_cpu
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
            env={"POD_NAME": f"{name}-{i}", **(heap_env if i == 0 else {})},
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
            soak_rows = soak_minutes(t0, minutes, checker, scheds[0], heap)
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
        checker.check_preemptions(final=True)
        if checker.preempted:
            ctx.notes.append(
                f"{len(checker.preemptions)} Preempted events read (victim and preemptor), "
                f"{checker.judged_preemptions()} judged with both pods seen"
            )
        if checker.preemptors_unseen:
            ctx.notes.append(f"{checker.preemptors_unseen} Preempted events name a preemptor never seen")
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
    scenario_figures = ("pods", "bound", "pending", "pending_without_event")
    summary = {**checker.summary(), **{k: before_probe[k] for k in scenario_figures}}
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
    if leaked or any(
        summary[k] for k in ("lost", "overcommitted", "double_binds", "misfits", "preemption_violations")
    ):
        result["scheduler_logs"] = logs
    return result
