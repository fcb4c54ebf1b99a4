"""The soak's per-minute figures (``--soak``): the daemon's RSS, threads, fds, CPU, queue and cache sizes;
pods created, binds and p99 create->bind, printed once a minute."""

from __future__ import annotations

import os
import time
from typing import Any

from bench.chaos.checker import Checker
from bench.chaos.common import p99
from bench.chaos.figures import proc_stats, scheduler_gauges
from bench.chaos.heap import HeapSampler
from pyscheduler.testing.daemon import SchedulerProcess


def soak_minutes(
    t0: float,
    minutes: float,
    checker: Checker,
    sched: SchedulerProcess,
    heap: HeapSampler | None = None,
) -> list[dict[str, Any]]:
    """Once a minute: the daemon's RSS, threads, fds, CPU, queue and cache sizes, whether it is still the
    process started (a restart would show as an exit code); pods created, binds and p99 create->bind.
    With ``heap``: a heap snapshot at the minutes it asks for (after that minute's figures)."""
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
            "preempted": len(checker.preempted),
            **g,
        }
        last_cpu, last_pods = cpu, created
        soak_rows.append(row)
        print(
            f"soak minute {minute + 1}: rss {row['rss_mib']} MiB, threads {row['threads']}, fds "
            f"{row['fds']}, cpu {row['cpu_s']}s, exit code {row['exit_code']}, created {row['created']}, "
            f"live {row['live']}, binds {len(lat)}, p99 create->bind {row['p99_s']:.2f}s, pending "
            f"{row['pending']}, violations so far {row['violations']}, preempted so far {row['preempted']}; queues active {g.get('queue_active')} backoff {g.get('queue_backoff')} "
            f"unschedulable {g.get('queue_unschedulable')}; cache nodes {g.get('cache_nodes')} "
            f"pods {g.get('cache_pods')} assumed {g.get('cache_assumed_pods')}",
            flush=True,
        )
        if heap is not None and sched.proc is not None and heap.due(minute + 1, int(minutes)):
            heap.take(sched.proc.pid, minute + 1)
    return soak_rows
