"""``make bench`` / ``python -m bench.run``: pyscheduler against kube-scheduler on the same cluster.

Design
------
Modelled on kube-scheduler's scheduler_perf. One ``LocalCluster`` (etcd + kube-apiserver 1.36, no
controller manager; KWOK off unless ``--kwok``: without a node-lifecycle controller nodes stay Ready as
created, and KWOK's heartbeats would rewrite every node's status every ~20 s, 250 writes/s at 5,000
nodes, competing with the schedulers). Nodes are created once through the API, status set.

For every workload (``bench/workloads.py``) and repeat, the two schedulers run ONE AFTER THE OTHER on
the same control plane and nodes (alternating which goes first on each repeat), both under the scheduler
name ``py-scheduler`` with the default plugins, leader election off and clientConnection qps/burst
5000/5000:

    delete all pods (and events), wait until gone → start an independent pod watch
    → start the scheduler, wait for /readyz → create init pods (30 creators), wait until bound
    → [Unschedulable: create pods that fit nowhere, wait for PodScheduled=False]
    → create the measured pods (30 creators) and wait until all are bound → stop the scheduler

DRA workloads (a ``DraLoad``) add, once, a ResourceSlice per node, a DeviceClass, a ResourceClaimTemplate
and kube-controller-manager's resourceclaim controller; per run, their claims (``bench/dra_run.py``).

Figures per run (``bench/measure.py``): throughput (pods bound per second, per-second samples: avg, p50,
p90, p99), creation→bind latency per pod (p50, p90, p99), scheduler CPU seconds during the measured
phase and peak RSS. Once per cluster: the API server's Binding ceiling (N threads posting Bindings for
pre-created pending pods). Output: a table per workload, one summary line, a JSON file under
bench/results/ and a PNG chart per workload. ``--profile`` samples pyscheduler with py-spy during the
measured phase and prints its hottest functions (those runs are slowed by the sampling).

The scheduler processes and the profiler are in ``bench/processes.py``, the tables and the JSON file's
machine and commit records in ``bench/report.py``; this module runs the benchmark.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import math
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bench import chart
from bench.dra_run import DraCluster, DraRun
from bench.measure import (
    Ceiling,
    Conn,
    Endpoint,
    PodWatch,
    ProcStats,
    Summary,
    bind_ceiling,
    post_objects,
    throughput_samples,
    timeline,
)
from bench.processes import (
    KUBE,
    PY,
    SCHEDULERS,
    KubeScheduler,
    Profiler,
    PyScheduler,
    Scheduler,
    profile_summary,
)
from bench.report import (
    REPO,
    find_py_spy,
    fmt,
    git_info,
    machine_info,
    report,
    results_path,
    say,
)
from bench.workloads import Workload, node, pod, priority_classes, workloads
from pyscheduler.testing.cluster import ADMIN_TOKEN, LocalCluster

__all__ = [
    "KUBE",
    "PY",
    "SCHEDULERS",
    "KubeScheduler",
    "PyScheduler",
    "Scheduler",
    "git_info",
    "machine_info",
]

RESULTS = REPO / "bench" / "results"
NS = "bench"


# ------------------------------------------------------------------------------------------ benchmark


@dataclass
class Env:
    cluster: LocalCluster
    endpoint: Endpoint
    conn: Conn
    nodes: list[str]
    args: argparse.Namespace


def create_nodes(env: Env, count: int) -> None:
    names = [f"node-{i}" for i in range(count)]
    env.nodes = names
    objects = [(n, orjson.dumps(node(n, i))) for i, n in enumerate(names)]
    sent: dict[str, float] = {}
    done = threading.Event()
    errors: list[str] = []

    def go() -> None:
        errors.extend(post_objects(env.endpoint, "/api/v1/nodes", objects, env.args.creators, sent=sent))
        done.set()

    t0 = time.monotonic()
    threading.Thread(target=go, daemon=True).start()
    while not done.wait(1.0):
        say(f"  nodes: {len(sent)}/{count} sent ({time.monotonic() - t0:.0f}s)")
    if errors:
        raise RuntimeError(f"creating nodes failed: {errors[:3]}")
    listed = env.conn.json("GET", "/api/v1/nodes?limit=1")
    say(
        f"  nodes: {count} created in {time.monotonic() - t0:.1f}s "
        f"(cluster has {len(listed['items']) + int(listed['metadata'].get('remainingItemCount', 0))})"
    )


def clean_namespace(env: Env, timeout: float = 300.0) -> None:
    """Delete every pod (and event) in the namespace and wait until the pods are gone."""
    # Deleting 10,000+ pods can outlast the API server's 60 s request timeout (504) on a loaded 2-CPU
    # machine; the server goes on deleting, so a 504 means "in progress": wait, and ask again now and then.
    pods = f"/api/v1/namespaces/{NS}/pods?gracePeriodSeconds=0"
    env.conn.json("DELETE", pods, ok=(200, 504))
    env.conn.json("DELETE", f"/api/v1/namespaces/{NS}/events", ok=(200, 404, 504))
    deadline = time.monotonic() + timeout
    again = time.monotonic() + 30
    while time.monotonic() < deadline:
        out = env.conn.json("GET", f"/api/v1/namespaces/{NS}/pods?limit=1")
        if not out["items"]:
            return
        if time.monotonic() > again:
            env.conn.json("DELETE", pods, ok=(200, 504))
            again = time.monotonic() + 30
        time.sleep(0.3)
    raise RuntimeError("pods not gone after cleanup")


def resource_version(env: Env) -> str:
    out = env.conn.json("GET", f"/api/v1/namespaces/{NS}/pods?limit=1")
    return str(out["metadata"]["resourceVersion"])


def encode(template: Callable[[str], dict[str, Any]], names: Sequence[str]) -> list[tuple[str, bytes]]:
    return [(n, orjson.dumps(template(n))) for n in names]


def measure_bind_ceiling(env: Env, count: int) -> Ceiling:
    clean_namespace(env)
    names = [f"ceiling-{i}" for i in range(count)]
    objs = [(n, orjson.dumps(pod(n, scheduler="nobody"))) for n in names]
    t0 = time.monotonic()
    errors = post_objects(env.endpoint, f"/api/v1/namespaces/{NS}/pods", objs, env.args.creators)
    create_seconds = time.monotonic() - t0
    if errors:
        raise RuntimeError(f"creating pods failed: {errors[:3]}")
    c = bind_ceiling(env.endpoint, NS, names, env.nodes, env.args.bind_threads)
    c.create_seconds, c.creators = create_seconds, env.args.creators
    clean_namespace(env)
    # again with the Scheduled event each bound pod gets: what a scheduler that reports can reach
    errors = post_objects(env.endpoint, f"/api/v1/namespaces/{NS}/pods", objs, env.args.creators)
    if errors:
        raise RuntimeError(f"creating pods failed: {errors[:3]}")
    plane = {p.name: ProcStats(p.popen.pid) for p in env.cluster.procs}
    plane0 = {k: v.cpu_seconds() for k, v in plane.items()}
    e = bind_ceiling(env.endpoint, NS, names, env.nodes, env.args.bind_threads, with_events=True)
    c.with_events_seconds = e.seconds if not e.errors else math.nan
    c.with_events_plane_cpu = {k: v.cpu_seconds() - plane0[k] for k, v in plane.items()}
    clean_namespace(env)
    return c


def _create_init_pods(
    env: Env, wl: Workload, tag: str, prefix: str, watch: PodWatch, alive_or_raise: Callable[[], None]
) -> list[str]:
    """The workload's init pods, created and waited for until all are bound; returns their names."""
    a = env.args
    pods_path = f"/api/v1/namespaces/{NS}/pods"
    init_names = [f"{tag}-i{k}" for k in range(wl.init_pods)]
    if init_names:
        t0 = time.monotonic()
        errs = post_objects(env.endpoint, pods_path, encode(wl.init_template, init_names), a.creators)
        if errs:
            raise RuntimeError(f"creating init pods: {errs[:3]}")
        say(f"{prefix} init: {len(init_names)} pods created in {time.monotonic() - t0:.1f}s")

        def init_tick() -> None:
            alive_or_raise()
            say(f"{prefix} init: {watch.count_bound(init_names)}/{len(init_names)} bound")

        ok = watch.wait(lambda: watch.count_bound(init_names) == len(init_names), a.timeout, init_tick)
        say(
            f"{prefix} init: {watch.count_bound(init_names)}/{len(init_names)} bound "
            f"in {time.monotonic() - t0:.1f}s"
        )
        if not ok:
            raise RuntimeError("init pods not all bound within the timeout")
    return init_names


def _create_unschedulable_pods(env: Env, wl: Workload, tag: str, prefix: str, watch: PodWatch) -> list[str]:
    """Pods that fit nowhere, tried (and found unschedulable) before the measured pods; their names."""
    pods_path = f"/api/v1/namespaces/{NS}/pods"
    unsched_names = [f"{tag}-u{k}" for k in range(wl.unschedulable_pods)]
    if unsched_names:
        t0 = time.monotonic()
        errs = post_objects(
            env.endpoint, pods_path, encode(wl.unschedulable_template, unsched_names), env.args.creators
        )
        if errs:
            raise RuntimeError(f"creating unschedulable pods: {errs[:3]}")
        watch.wait(lambda: sum(n in watch.unschedulable for n in unsched_names) == len(unsched_names), 60)
        say(
            f"{prefix} unschedulable: {sum(n in watch.unschedulable for n in unsched_names)}/"
            f"{len(unsched_names)} marked PodScheduled=False in {time.monotonic() - t0:.1f}s"
        )
    return unsched_names


@dataclass
class _Live:
    """What a run must stop however it ends: its scheduler (a fresh one after --precreate) and the
    py-spy profiler, if one was started."""

    sched: Scheduler
    profiler: Profiler | None = None

    def alive_or_raise(self) -> None:
        if not self.sched.alive():
            raise RuntimeError(f"{self.sched.name} died:\n{self.sched.log_tail()}")


def run_one(
    env: Env, wl: Workload, make: Callable[[], Scheduler], rep: int, profile_dir: Path | None
) -> dict[str, Any]:
    sched = make()
    tag = f"{wl.short}-{'k' if sched.name == KUBE else 'p'}{rep}"
    prefix = f"  [{wl.name} {sched.name} #{rep + 1}]"
    clean_namespace(env)
    dra = DraRun(env, wl, tag, NS) if wl.dra else None  # DRA workloads: this run's claims
    if dra is not None:
        dra.prepare()
    watch = PodWatch(env.endpoint, NS, resource_version(env))
    watch.start()
    result: dict[str, Any] = {
        "scheduler": sched.name,
        "repeat": rep,
        "complete": False,
        "precreate": env.args.precreate,
    }
    live = _Live(sched)
    try:
        t_start = time.monotonic()
        sched.start()
        result["startup_seconds"] = time.monotonic() - t_start
        stats = ProcStats(sched.pid)
        say(f"{prefix} started in {result['startup_seconds']:.1f}s (pid {sched.pid})")
        init_names = _create_init_pods(env, wl, tag, prefix, watch, live.alive_or_raise)
        unsched_names = _create_unschedulable_pods(env, wl, tag, prefix, watch)
        _measure(
            _Run(env, wl, make, tag, prefix, watch, dra, profile_dir),
            live,
            stats,
            init_names,
            unsched_names,
            result,
        )
    except Exception as e:
        result["error"] = f"{type(e).__name__}: {e}"
        say(f"{prefix} FAILED: {result['error']}")
    finally:
        if live.profiler is not None:
            live.profiler.stop()
        if dra is not None:
            dra.stop()
        live.sched.stop()
        watch.stop()
    _finish_run(env, live.sched, result, prefix)
    return result


@dataclass
class _Run:
    """One run's fixed parts: the workload, this run's scheduler factory, names and pod watch."""

    env: Env
    wl: Workload
    make: Callable[[], Scheduler]
    tag: str
    prefix: str
    watch: PodWatch
    dra: DraRun | None
    profile_dir: Path | None


@dataclass
class _Baseline:
    """Readings taken just before the measured pods are created (or, with --precreate, before the
    scheduler that finds them is started)."""

    t0: float
    cpu0: float
    stats: ProcStats
    plane: dict[str, ProcStats]
    plane0: dict[str, float]
    bench0: float
    load0: float


def _measure(
    run: _Run,
    live: _Live,
    stats: ProcStats,
    init_names: list[str],
    unsched_names: list[str],
    result: dict[str, Any],
) -> None:
    """Create the measured pods, wait until all are bound (or the timeout) and put the figures in
    ``result``."""
    env, a, watch, prefix = run.env, run.env.args, run.watch, run.prefix
    names = [f"{run.tag}-m{k}" for k in range(run.wl.measured_pods)]
    bodies = encode(run.wl.template, names)
    if run.dra is not None:
        run.dra.start(watch, names)  # steady state: measured pods deleted once bound
    sent: dict[str, float] = {}
    created = threading.Event()
    create_errors: list[str] = []

    def creator() -> None:
        create_errors.extend(
            post_objects(
                env.endpoint,
                f"/api/v1/namespaces/{NS}/pods",
                bodies,
                a.creators,
                sent=sent,
                rate=a.create_rate,
            )
        )
        created.set()

    if a.precreate:
        # Scheduling alone: the measured pods exist before a fresh scheduler process starts.
        live.sched = _precreate(env, live.sched, run.make, creator, create_errors, len(names), prefix)
    base = _baseline(run, live, stats, creator)
    if a.precreate:
        sent.clear()
        sent.update(dict.fromkeys(names, base.t0))  # latency: from the scheduler's start
    last = [0]

    def tick() -> None:
        live.alive_or_raise()
        b = watch.count_bound(names)
        say(
            f"{prefix} {time.monotonic() - base.t0:4.0f}s created {len(sent)}/{len(names)} "
            f"bound {b}/{len(names)} (+{b - last[0]}/s)"
        )
        last[0] = b

    done = watch.wait(lambda: created.is_set() and watch.count_bound(names) == len(names), a.timeout, tick)
    t_end = time.monotonic()
    cpu1 = base.stats.cpu_seconds()
    plane_cpu = {k: v.cpu_seconds() - base.plane0[k] for k, v in base.plane.items()}
    bench_cpu = sum(os.times()[:2]) - base.bench0
    if live.profiler is not None:
        live.profiler.stop()
    events_at_end, cpu_posted, settle_s = _events_settled(run.env, base.stats)
    rss = base.stats.peak_rss_mb()
    created.wait(30)
    if create_errors:
        raise RuntimeError(f"creating measured pods: {create_errors[:3]}")
    figures = _bind_figures(watch, names, sent, base.t0)
    result.update(
        complete=done,
        nodes=len(env.nodes),
        init_pods=len(init_names),
        unschedulable_pods=len(unsched_names),
        measured_pods=len(names),
        bound=figures["bound"],
        seconds=t_end - base.t0,
        overall_pods_per_second=figures["overall_pods_per_second"],
        throughput=figures["throughput"],
        throughput_samples=figures["throughput_samples"],
        timeline=figures["timeline"],
        latency_ms=figures["latency_ms"],
        cpu_seconds=cpu1 - base.cpu0,
        cpu_seconds_total=cpu1,
        events_at_end=events_at_end,
        cpu_seconds_events_posted=cpu_posted - base.cpu0,
        events_settle_seconds=settle_s,
        peak_rss_mb=rss,
        control_plane_cpu_seconds=plane_cpu,
        bench_cpu_seconds=bench_cpu,
        loadavg_1m_before=base.load0,
        victims_deleted=sum(1 for n in init_names if n in watch.deleted),
        max_pods_per_node=figures["max_pods_per_node"],
        nodes_used=figures["nodes_used"],
        watch_error=watch.error,
    )
    if live.profiler is not None:
        result["profile"] = str(live.profiler.out)
    thr = result["throughput"]
    say(
        f"{prefix} done: {result['bound']}/{len(names)} bound in {t_end - base.t0:.1f}s, "
        f"throughput avg {thr['avg']:.1f} pods/s, latency p50 {result['latency_ms']['p50']:.0f} ms "
        f"p99 {result['latency_ms']['p99']:.0f} ms, CPU {result['cpu_seconds']:.1f}s "
        f"({result['cpu_seconds_events_posted']:.1f}s once {events_at_end} events at the end had settled "
        f"in {settle_s:.1f}s), RSS {rss:.0f} MB" + ("" if done else "  ** TIMED OUT **")
    )


def _baseline(run: _Run, live: _Live, stats: ProcStats, creator: Callable[[], None]) -> _Baseline:
    """The readings before the measured phase, then its start: with --precreate the fresh scheduler is
    started (the pods exist already), otherwise the creator thread; the profiler attaches in between."""
    a = run.env.args
    plane = {p.name: ProcStats(p.popen.pid) for p in run.env.cluster.procs}
    plane0 = {k: v.cpu_seconds() for k, v in plane.items()}
    bench0 = sum(os.times()[:2])
    load0 = os.getloadavg()[0]
    cpu0 = t0 = 0.0
    if a.precreate:
        t0 = time.monotonic()
        live.sched.start()
        stats = ProcStats(live.sched.pid)
    if run.profile_dir is not None and live.sched.name == PY and a.py_spy:
        live.profiler = Profiler(a.py_spy, live.sched.pid, run.profile_dir / f"{run.tag}.collapsed.txt")
        time.sleep(0.5)
    if not a.precreate:
        cpu0 = stats.cpu_seconds()
        t0 = time.monotonic()
        threading.Thread(target=creator, daemon=True).start()
    return _Baseline(t0, cpu0, stats, plane, plane0, bench0, load0)


def _precreate(
    env: Env,
    sched: Scheduler,
    make: Callable[[], Scheduler],
    creator: Callable[[], None],
    create_errors: list[str],
    count: int,
    prefix: str,
) -> Scheduler:
    """--precreate: stop the scheduler, create the measured pods with none running, and return a new
    (not yet started) scheduler."""
    sched.stop()
    if not env.args.keep_logs:
        sched.cleanup()
    t_c = time.monotonic()
    creator()
    if create_errors:
        raise RuntimeError(f"creating measured pods: {create_errors[:3]}")
    say(
        f"{prefix} {count} measured pods created in {time.monotonic() - t_c:.1f}s, "
        "no scheduler running; starting a new one"
    )
    return make()


def _event_count(env: Env) -> int:
    """Events in the benchmark's namespace (one list call: the first item and the remaining count)."""
    out = env.conn.json("GET", f"/api/v1/namespaces/{NS}/events?limit=1")
    return len(out["items"]) + int(out["metadata"].get("remainingItemCount", 0))


def _events_settled(
    env: Env, stats: ProcStats, quiet: float = 1.0, limit: float = 15.0
) -> tuple[int, float, float]:
    """Events posted when the measured phase ends, then the scheduler's CPU once its event count has
    stood still for ``quiet`` seconds (at most ``limit``), and how long that took. A scheduler that lets
    its event posts trail its binds does their work after the phase: with four posting threads
    pyscheduler had posted ~470 of 1,200 events when Unschedulable's last pod bound, and the rest
    (~0.8 s of CPU) fell outside ``cpu_seconds`` (docs/benchmark.md, session 15). -1 counts if the API
    server could not be asked."""
    t0 = time.monotonic()
    try:
        first = last = _event_count(env)
    except Exception:
        return -1, stats.cpu_seconds(), 0.0
    still_since = t0
    while time.monotonic() - t0 < limit:
        time.sleep(0.25)
        with contextlib.suppress(Exception):
            n = _event_count(env)
            if n != last:
                last, still_since = n, time.monotonic()
        if time.monotonic() - still_since >= quiet:
            break
    return first, stats.cpu_seconds(), time.monotonic() - t0


def _finish_run(env: Env, sched: Scheduler, result: dict[str, Any], prefix: str) -> None:
    """Count the run's events into ``result``; keep the scheduler's log if the run failed or was asked to."""
    with contextlib.suppress(Exception):
        result["events_in_namespace"] = _event_count(env)
    if "error" in result or env.args.keep_logs:
        say(f"{prefix} scheduler log kept in {sched.log_dir}")
    else:
        sched.cleanup()


def _bind_figures(watch: PodWatch, names: list[str], sent: dict[str, float], t0: float) -> dict[str, Any]:
    """What the watch saw of the measured pods: binds, throughput, latency from creation (or from the
    scheduler's start with --precreate), and how they spread over the nodes."""
    binds = [watch.bound[n] for n in names if n in watch.bound]
    lat_ms = [1000.0 * (watch.bound[n] - sent[n]) for n in names if n in watch.bound and n in sent]
    samples = throughput_samples(binds)
    per_node = Counter(watch.nodes[n] for n in names if n in watch.nodes)
    return {
        "bound": len(binds),
        "overall_pods_per_second": len(binds) / (max(binds) - t0) if binds else 0.0,
        "throughput": Summary.of(samples).as_dict(),
        "throughput_samples": samples,
        "timeline": timeline(binds, t0),
        "latency_ms": Summary.of(lat_ms).as_dict() | {"max": max(lat_ms, default=math.nan)},
        "max_pods_per_node": max(per_node.values(), default=0),
        "nodes_used": len(per_node),
    }


# ------------------------------------------------------------------------------------------ main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.run", description=__doc__.split("\n\n")[0] if __doc__ else ""
    )
    p.add_argument("--large", action="store_true", help="5,000 nodes / 10,000 measured pods")
    p.add_argument("--nodes", type=int, help="node count (default 500, --large 5000)")
    p.add_argument("--pods", type=int, help="measured pods (default 2 x nodes)")
    p.add_argument("--workloads", default="", help="comma-separated names (default: all)")
    p.add_argument("--schedulers", default="kube-scheduler,pyscheduler", help="which to run (default: both)")
    p.add_argument("--repeat", type=int, default=1, help="runs per scheduler per workload; medians reported")
    p.add_argument("--creators", type=int, default=30, help="concurrent pod creators")
    p.add_argument(
        "--create-rate",
        type=float,
        default=None,
        help="create the measured pods at this many per second (open-loop arrivals; default: "
        "as fast as the creators can, which depends on the CPU the scheduler leaves them)",
    )
    p.add_argument("--bind-threads", type=int, default=16, help="threads of the bind-ceiling client")
    p.add_argument("--timeout", type=float, help="seconds to wait for a phase's pods to bind")
    p.add_argument(
        "--precreate",
        action="store_true",
        help="create the measured pods before a fresh scheduler starts: scheduling alone, no creation "
        "in the way (latency is then counted from the scheduler's start)",
    )
    p.add_argument(
        "--scheduler-cpus",
        default="",
        help="run each scheduler on these CPUs only (taskset list, e.g. 0 or 0,1): the 1-core vs "
        "2-core scaling figure; the control plane and the load generator stay unpinned",
    )
    p.add_argument("--kwok", action="store_true", help="run KWOK (node heartbeats) during the benchmark")
    p.add_argument("--py-log-level", default="info", help="pyscheduler --log-level (default info)")
    p.add_argument(
        "--profile", action="store_true", help="sample pyscheduler with py-spy in the measured phase"
    )
    p.add_argument("--py-spy", help="py-spy binary (default: on PATH or /tmp/pyspy-venv/bin/py-spy)")
    p.add_argument("--out", type=Path, default=RESULTS, help="results directory")
    p.add_argument("--no-chart", action="store_true")
    p.add_argument(
        "--keep-logs", action="store_true", help="keep the schedulers' logs (kept anyway on failure)"
    )
    a = p.parse_args(argv)
    a.nodes = a.nodes or (5000 if a.large else 500)
    a.pods = a.pods or 2 * a.nodes
    a.timeout = a.timeout or max(300.0, a.pods / 5)
    return a


def _exit_on_sigterm(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)  # unwinds: schedulers stopped, cluster stopped


def _choices(a: argparse.Namespace, all_wls: Mapping[str, Workload]) -> tuple[list[str], list[str]] | None:
    """The workloads and schedulers asked for (and py-spy found for --profile); None (said why) if not."""
    chosen = [w.strip() for w in a.workloads.split(",") if w.strip()] or list(all_wls)
    unknown = [w for w in chosen if w not in all_wls]
    if unknown:
        say(f"unknown workload(s) {unknown}; choose from {', '.join(all_wls)}")
        return None
    scheds = [s.strip() for s in a.schedulers.split(",") if s.strip()]
    if any(s not in SCHEDULERS for s in scheds):
        say(f"--schedulers: choose from {', '.join(SCHEDULERS)}")
        return None
    if a.profile:
        a.py_spy = find_py_spy(a.py_spy)
        if not a.py_spy:
            say("--profile needs py-spy (pip install py-spy into any venv; pass --py-spy PATH)")
            return None
    return chosen, scheds


def _summarise_profiles(results: dict[str, Any]) -> None:
    """Each pyscheduler run's py-spy profile: its summary into the run's result, the top functions said."""
    for name, res in results.items():
        for r in res["runs"].get(PY, []):
            prof = r.get("profile")
            if prof and Path(prof).exists() and Path(prof).stat().st_size:
                r["profile_summary"] = ps = profile_summary(Path(prof))
                say(
                    f"\npy-spy profile of pyscheduler, {name} (measured phase, {ps['samples']} samples): "
                    f"{prof}"
                )
                say("  self %   function")
                for fn, share in ps["self"][:20]:
                    say(f"  {share:6.1f}   {fn}")
                say("  inclusive %   function")
                for fn, share in ps["inclusive"][:25]:
                    say(f"  {share:6.1f}   {fn}")


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    all_wls = workloads(a.nodes, a.pods)
    choices = _choices(a, all_wls)
    if choices is None:
        return 2
    chosen, scheds = choices
    a.out.mkdir(parents=True, exist_ok=True)
    out_path = results_path(a.out, a.nodes)
    profile_dir = out_path.with_suffix("") if a.profile else None
    if profile_dir is not None:
        profile_dir.mkdir(exist_ok=True)
    machine = machine_info()
    say(
        f"pyscheduler benchmark: {a.nodes} nodes, {a.pods} measured pods, workloads {', '.join(chosen)}, "
        f"repeat {a.repeat}; {machine['cpus']} CPUs ({machine['cpu_model']}), load {machine['loadavg']}"
    )

    cluster = LocalCluster(
        with_kwok=a.kwok,
        with_controller_manager=False,
        name="bench",
        apiserver_args=["--max-requests-inflight=3000", "--max-mutating-requests-inflight=3000"],
    )
    t0 = time.monotonic()
    cluster.start()
    dra_cluster: DraCluster | None = None
    try:
        say(
            f"control plane up in {time.monotonic() - t0:.1f}s ({cluster.server}, KWOK {'on' if a.kwok else 'off'})"
        )
        env = _prepare(cluster, a)
        ceiling = _ceilings(env, a.pods)

        dra_wls = [all_wls[n] for n in chosen if all_wls[n].dra is not None]
        if dra_wls:  # devices on every node, the DeviceClass, the resourceclaim controller
            dra_cluster = DraCluster(env, NS)
            dra_cluster.start(dra_wls)

        results = {name: _run_workload(env, name, all_wls[name], scheds, profile_dir) for name in chosen}
        clean_namespace(env)
        for pc in priority_classes():
            env.conn.json(
                "DELETE",
                f"/apis/scheduling.k8s.io/v1/priorityclasses/{pc['metadata']['name']}",
                ok=(200, 404),
            )
    finally:
        if dra_cluster is not None:
            dra_cluster.stop()
        cluster.stop()

    say("\n" + "=" * 78)
    say(f"Results ({a.nodes} nodes; medians of {a.repeat} run(s); py/kube > 1 means pyscheduler is higher)")
    summary, charts = _summarise(a, all_wls, results, ceiling, out_path)
    if profile_dir is not None:
        _summarise_profiles(results)
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "git": git_info(),
        "machine": machine | {"loadavg_end": os.getloadavg()},
        "control_plane": str(cluster.bin_dir),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
        "nodes": a.nodes,
        "kwok": a.kwok,
        "bind_ceiling": ceiling.as_dict(),
        "workloads": results,
    }
    out_path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    say("")
    say(f"results: {out_path.relative_to(REPO) if out_path.is_relative_to(REPO) else out_path}")
    for c in charts:
        say(f"chart:   {c}")
    say(f"throughput ratio (pyscheduler/kube-scheduler): {' '.join(summary)}")
    return 0


def _prepare(cluster: LocalCluster, a: argparse.Namespace) -> Env:
    """The benchmark's namespace, priority classes and nodes on a started cluster."""
    endpoint = Endpoint.from_url(cluster.server, ADMIN_TOKEN, str(cluster.ca_file))
    env = Env(cluster, endpoint, Conn(endpoint), [], a)
    env.conn.json("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    for pc in priority_classes():
        env.conn.json("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", pc, ok=(201, 409))
    create_nodes(env, a.nodes)
    return env


def _ceilings(env: Env, pods: int) -> Ceiling:
    """The API server's create and bind ceilings with no scheduler running, measured and printed."""
    ceiling = measure_bind_ceiling(env, pods)
    say(
        f"create ceiling: {ceiling.bindings} pods created in {ceiling.create_seconds:.1f}s by {ceiling.creators} "
        f"creators, no scheduler running = {ceiling.create_per_second:,.0f}/s"
    )
    say(
        f"bind ceiling: {ceiling.bindings} Bindings in {ceiling.seconds:.1f}s with {ceiling.threads} threads "
        f"= {ceiling.per_second:,.0f}/s ({ceiling.errors} errors); with a Scheduled event each: "
        f"{ceiling.with_events_per_second:,.0f} pods/s"
    )
    if ceiling.with_events_plane_cpu:
        per_pod = ", ".join(
            f"{k} {1000.0 * v / max(ceiling.bindings, 1):.2f} ms"
            for k, v in sorted(ceiling.with_events_plane_cpu.items())
        )
        say(f"  control-plane CPU per pod in that pass (Binding + event only): {per_pod}")
    return ceiling


def _run_workload(
    env: Env, name: str, wl: Workload, scheds: Sequence[str], profile_dir: Path | None
) -> dict[str, Any]:
    """``--repeat`` runs of one workload with each scheduler, the order alternating between repeats."""
    a = env.args
    say(
        f"\n== {name}: {wl.init_pods} init, {wl.unschedulable_pods} unschedulable, {wl.measured_pods} measured pods"
    )
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in SCHEDULERS}
    for rep in range(a.repeat):
        order = scheds if rep % 2 == 0 else list(reversed(scheds))
        for s in order:

            def make(s: str = s) -> Scheduler:
                if s == KUBE:
                    return KubeScheduler(env.cluster, cpus=a.scheduler_cpus)
                return PyScheduler(env.cluster, a.py_log_level, cpus=a.scheduler_cpus)

            runs[s].append(run_one(env, wl, make, rep, profile_dir))
    return {
        "workload": {
            "init_pods": wl.init_pods,
            "measured_pods": wl.measured_pods,
            "unschedulable_pods": wl.unschedulable_pods,
            "notes": wl.notes,
        },
        "runs": runs,
    }


def _summarise(
    a: argparse.Namespace,
    all_wls: Mapping[str, Workload],
    results: dict[str, Any],
    ceiling: Ceiling,
    out_path: Path,
) -> tuple[list[str], list[str]]:
    """Each workload's report (printed, and merged into its results); the ratio summary and the charts."""
    summary = []
    charts = []
    for name, res in results.items():
        res.update(report(name, all_wls[name], res["runs"], ceiling))
        summary.append(f"{name}={fmt(res['ratio_py_over_kube']['throughput avg'], 2)}")
        if not a.no_chart:
            series = {s: res["runs"][s][0].get("timeline", []) for s in SCHEDULERS if res["runs"][s]}
            png = out_path.with_name(f"{out_path.stem}-{name}.png")
            with contextlib.suppress(Exception):
                charts.append(
                    str(chart.draw(png, f"{name}: pods bound per second ({a.nodes} nodes)", series))
                )
    return summary, charts


if __name__ == "__main__":
    raise SystemExit(main())
