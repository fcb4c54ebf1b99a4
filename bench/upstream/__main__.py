"""``python -m bench.upstream``: upstream's scheduler_perf test cases, kube-scheduler against pyscheduler.

    python -m bench.upstream --list --label performance
    python -m bench.upstream --test-case SchedulingBasic --workload 500Nodes
    python -m bench.upstream --label integration-test,short            # upstream's quick set

Each selected workload runs once per scheduler on a fresh local control plane (no KWOK; kube-controller-
manager's resourceclaim controller only for workloads that make ResourceClaimTemplates; nothing else binds
or deletes pods), both schedulers configured like ``bench.run`` configures them and given the workload's
feature gates. Prints a line per workload and a table; writes a JSON file (and ``--markdown`` a table).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.differential import CLAIM_CONTROLLER
from bench.measure import Conn, Endpoint, ProcStats
from bench.processes import Profiler, profile_summary
from bench.report import find_py_spy
from bench.run import KUBE, PY, SCHEDULERS, KubeScheduler, PyScheduler, Scheduler, git_info, machine_info
from bench.upstream import course, dra, report
from bench.upstream.ops import Executor, OpError, unsupported
from bench.workloads import SCHEDULER_NAME
from pyscheduler.testing.cluster import ADMIN_TOKEN, LocalCluster

RESULTS = Path(__file__).resolve().parents[1] / "results"


def say(msg: str) -> None:
    print(msg, flush=True)


def run_workload(
    tc: course.TestCase,
    wl: course.Workload,
    ops: list[dict[str, Any]],
    scheduler: str,
    args: argparse.Namespace,
) -> dict[str, Any]:
    # pods naming a ResourceClaimTemplate get their claims from kube-controller-manager's resourceclaim
    # controller, as in scheduler_perf (nothing else of the controller manager runs)
    claims = dra.needs_claim_controller(ops, tc.folder)
    cluster = LocalCluster(
        with_kwok=False,
        with_controller_manager=claims,
        controllers=(CLAIM_CONTROLLER,),
        controller_manager_args=(
            "--kube-api-qps=2000",
            "--kube-api-burst=4000",
            "--concurrent-resourceclaim-syncs=50",
        ),
        name="upstream",
        apiserver_args=[
            "--max-requests-inflight=3000",
            "--max-mutating-requests-inflight=3000",
            # as scheduler_perf's API server (test/integration/util InitTestAPIServer): its pod templates
            # set spec.priority directly, which the Priority admission plugin refuses
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,Priority,StorageObjectInUseProtection",
        ],
    )
    cluster.start()
    sched: Scheduler | None = None
    try:
        endpoint = Endpoint.from_url(cluster.server, ADMIN_TOKEN, str(cluster.ca_file))
        sched = make_scheduler(scheduler, cluster, tc.gate_flag(wl), args.py_log_level)
        sched.start()
        stats = ProcStats(sched.pid)
        cpu0 = stats.cpu_seconds()
        collapsed = None
        if args.profile and scheduler == PY:  # the whole workload, pyscheduler's main process
            args.profile.mkdir(parents=True, exist_ok=True)
            collapsed = args.profile / f"{tc.name}-{wl.name.replace('/', '_')}.collapsed.txt"
            profiler = Profiler(args.profile_with, sched.pid, collapsed)
        ex = Executor(
            endpoint, tc.folder, tc.default_pod_template, SCHEDULER_NAME, timeout=args.timeout, say=say
        )
        try:
            res = ex.run(ops)
        except OpError as e:
            return {"error": str(e)}
        finally:
            if collapsed is not None:
                profiler.stop()
        if not sched.alive():
            return {"error": f"{scheduler} exited:\n{sched.log_tail()}"}
        cpu = stats.cpu_seconds() - cpu0
        events = count_events(endpoint)
        prof = {"profile": profile_summary(collapsed)} if collapsed is not None and collapsed.exists() else {}
        return prof | {
            "seconds": res.seconds,
            "pods": res.pods_created,
            "throughput_average": res.average(),
            "throughput": res.throughput(),
            "latency_ms": res.latency(),
            "windows": res.windows,
            "churn_rounds": res.churn_rounds,
            "churn_errors": res.churn_errors,
            "cpu_seconds": cpu,
            "cpu_ms_per_pod": 1000.0 * cpu / max(1, res.pods_created),
            "peak_rss_mb": stats.peak_rss_mb(),
            "events": events,
        }
    finally:
        if sched is not None:
            sched.stop()
            sched.cleanup()
        cluster.stop()


def count_events(endpoint: Endpoint, settle: float = 10.0) -> int | None:
    """Events in the cluster once the count stops growing (each run has a cluster of its own, and no
    controller but the scheduler writes events there). A scheduler that drops events under load (its
    queue full) shows it here beside the pods it bound; None if the count could not be read."""
    conn = Conn(endpoint)
    try:
        last, deadline = -1, time.monotonic() + settle
        while True:
            out = conn.json("GET", "/apis/events.k8s.io/v1/events?limit=1")
            n = len(out["items"]) + int(out["metadata"].get("remainingItemCount") or 0)
            if n == last or time.monotonic() >= deadline:
                return n
            last = n
            time.sleep(1.0)
    except (RuntimeError, OSError, KeyError, ValueError):
        return None
    finally:
        conn.close()


def make_scheduler(name: str, cluster: LocalCluster, gates: str, log_level: str) -> Scheduler:
    """The scheduler as bench.run configures it, with the workload's feature gates (both get the same
    ``--feature-gates``)."""
    flag = [f"--feature-gates={gates}"] if gates else []
    if name == KUBE:
        return KubeScheduler(cluster, extra_args=flag)
    py = PyScheduler(cluster, log_level)
    py.sp.argv = [*py.sp.argv, *flag]
    return py


def threshold_of(wl: course.Workload) -> float | None:
    t = wl.threshold
    if isinstance(t, int | float):
        return float(t)
    return None  # per-topic thresholds: not compared here


def entry_of(tc: course.TestCase, wl: course.Workload, reasons: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "test_case": tc.name,
        "workload": wl.name,
        "threshold": threshold_of(wl),
        # upstream's per-suite thresholds ({dra: 56}: the figure its DRA test binary enforces)
        "threshold_by_suite": dict(wl.threshold) if isinstance(wl.threshold, dict) else None,
        "labels": sorted(tc.labels | wl.labels),
        "feature_gates": tc.gate_flag(wl),
        "gates_not_acted_on": tc.gates_not_acted_on(wl),
    }
    if wl.overridden:  # scaled with --param: not upstream's size, said wherever the figures go
        entry["params_overridden"] = dict(wl.overridden)
        entry["params"] = dict(wl.params)
    if reasons:
        entry["skipped"] = reasons
    return entry


def results_path(folder: Path, now: dt.datetime) -> Path:
    """``upstream-<date>-<HHMM>.json``, with ``-2``, ``-3``... when a run of the same minute left one (one
    invocation per test case: short ones end within a minute of each other)."""
    stem = f"upstream-{now.strftime('%Y-%m-%d-%H%M')}"
    out = folder / f"{stem}.json"
    n = 2
    while out.exists():
        out = folder / f"{stem}-{n}.json"
        n += 1
    return out


def table_from_json(saved_path: Path, markdown: Path | None) -> int:
    saved = json.loads(saved_path.read_text())
    text = report.markdown(saved["results"], saved)
    if markdown:
        markdown.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def list_plan(
    plan: list[tuple[course.TestCase, course.Workload, list[dict[str, Any]], list[str]]],
    a: argparse.Namespace,
) -> int:
    """``--list``: what runs and what is skipped; with ``--results`` the table's figures from saved runs
    (``--markdown``) and, last, the summary line over them."""
    for tc, wl, _ops, reasons in plan:
        thr = threshold_of(wl)
        say(
            f"{tc.name}/{wl.name}  labels={','.join(sorted(tc.labels | wl.labels)) or '-'}"
            f"{f'  threshold={thr:g}' if thr else ''}{'  SKIP: ' + '; '.join(reasons) if reasons else ''}"
        )
    runnable = sum(1 for *_, r in plan if not r)
    say(f"{len(plan)} workloads selected, {runnable} runnable, {len(plan) - runnable} skipped")
    if a.markdown or a.results:
        entries = [entry_of(tc, wl, r) for tc, wl, _ops, r in plan]
        saved = [json.loads(f.read_text()) for f in a.results]
        merged = report.merge(entries, saved)
        if a.markdown:
            a.markdown.write_text(report.markdown(merged, report.runs_meta(saved)))
        say(report.summary_line(merged))
    return 0


def plan_of(
    a: argparse.Namespace,
) -> list[tuple[course.TestCase, course.Workload, list[dict[str, Any]], list[str]]]:
    """The selected workloads (``--param`` applied) with their operations and any reasons to skip them."""
    split = lambda s: [x for x in s.split(",") if x]  # noqa: E731
    chosen = course.select(course.load(), split(a.test_case), split(a.workload), split(a.label))
    chosen = course.override(chosen, course.parse_params(a.param))
    plan = []
    for tc, wl in chosen:
        if wl.overridden:
            say(f"{tc.name}/{wl.name}: scaled with --param: {report.scaled(wl.overridden)}")
        ops = course.operations(tc, wl)
        reasons = [r for r in [tc.skip_reason(wl), *unsupported(ops)] if r]
        plan.append((tc, wl, ops, reasons))
    return plan


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.upstream", description=__doc__.split("\n\n")[0])
    p.add_argument("--test-case", default="", help="comma-separated test case names (default: all)")
    p.add_argument("--workload", default="", help="comma-separated workload names (default: all)")
    p.add_argument(
        "--label", default="", help="upstream label filter, e.g. performance or integration-test,-short"
    )
    p.add_argument("--schedulers", default=",".join(SCHEDULERS))
    p.add_argument(
        "--list", action="store_true", help="list the selected workloads and why any would be skipped"
    )
    p.add_argument("--timeout", type=float, default=900.0, help="seconds any one wait may take")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=N",
        help="set a workload parameter in place of upstream's (e.g. --param initNodes=1500 --param "
        "measurePods=3000): the same operations at a size this machine can run; the results and the "
        "table say which parameters were changed",
    )
    p.add_argument("--py-log-level", default="info")
    p.add_argument(
        "--profile",
        type=Path,
        help="sample pyscheduler with py-spy for the whole workload: collapsed stacks to this folder, "
        "the top functions and threads into the results",
    )
    p.add_argument("--py-spy", help="py-spy binary (default: on PATH or /tmp/pyspy-venv/bin/py-spy)")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--markdown", type=Path, help="also write the course table (Markdown) to this file")
    p.add_argument(
        "--from-json", type=Path, help="no run: the table of a saved results file (with --markdown)"
    )
    p.add_argument(
        "--results",
        type=Path,
        action="append",
        default=[],
        help="with --list --markdown: saved results files whose figures fill the listed rows (later wins)",
    )
    a = p.parse_args(argv)
    if a.from_json:
        return table_from_json(a.from_json, a.markdown)
    a.profile_with = find_py_spy(a.py_spy) if a.profile else None
    if a.profile and not a.profile_with:
        say("--profile: py-spy not found (pip install py-spy, or --py-spy PATH)")
        return 2
    try:
        plan = plan_of(a)
    except course.CourseError as err:
        say(f"upstream course: {err}")
        return 2
    if not plan:
        say("no workload matches the selection")
        return 2
    schedulers = [x for x in a.schedulers.split(",") if x]
    if a.list:
        return list_plan(plan, a)

    results: list[dict[str, Any]] = []
    for tc, wl, ops, reasons in plan:
        entry = entry_of(tc, wl, reasons)
        if reasons:
            say(f"{tc.name}/{wl.name}: skipped: {'; '.join(reasons)}")
            results.append(entry)
            continue
        for s in schedulers:
            say(f"{tc.name}/{wl.name}: {s} ...")
            t0 = time.monotonic()
            entry[s] = run_workload(tc, wl, ops, s, a)
            r = entry[s]
            if "error" in r:
                say(f"  {s}: ERROR {r['error'][:300]}")
            else:
                say(
                    f"  {s}: {r['throughput_average']:.1f} pods/s average, {r['pods']} pods, "
                    f"{r['cpu_ms_per_pod']:.2f} ms CPU/pod, {r['events']} events, workload {r['seconds']:.1f}s "
                    f"(with cluster {time.monotonic() - t0:.0f}s)"
                )
        results.append(entry)

    say("")
    say(f"{'test case / workload':<58}{'threshold':>10}{'kube':>9}{'py':>9}{'py/kube':>9}")
    for e in results:
        name = f"{e['test_case']}/{e['workload']}"
        if "skipped" in e:
            say(f"{name:<58}{'skipped':>10}")
            continue
        k = e.get(KUBE, {}).get("throughput_average", math.nan)
        q = e.get(PY, {}).get("throughput_average", math.nan)
        thr = e["threshold"]
        ratio = q / k if k and not math.isnan(k) else math.nan
        say(f"{name:<58}{thr if thr else '-':>10}{k:>9.1f}{q:>9.1f}{ratio:>9.2f}")
    a.out.mkdir(parents=True, exist_ok=True)
    out = results_path(a.out, dt.datetime.now(dt.UTC))
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(),
        "git": git_info(),
        "machine": machine_info(),
        "version": course.pinned_version(),
        "sampler": report.SAMPLER,
        "results": results,
    }
    out.write_text(json.dumps(doc, indent=1, default=str))
    say(f"results: {out}")
    if a.markdown:
        a.markdown.write_text(report.markdown(results, doc))
        say(f"table: {a.markdown}")
    ran = [e for e in results if "skipped" not in e]
    below = [
        e
        for e in ran
        if e["threshold"] and PY in e and not e[PY].get("throughput_average", 0) >= e["threshold"]
    ]
    say(
        f"upstream course: {len(ran)} run, {len(results) - len(ran)} skipped; pyscheduler below upstream's "
        f"threshold on {len(below)}"
    )
    say(report.summary_line(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
