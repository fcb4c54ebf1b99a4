"""``python -m bench.chaos [--scenario NAME ...] [--minutes M] [--nodes N] [--soak]``; see bench/chaos/__init__.py.

Each scenario: a fresh namespace and node pool on one shared LocalCluster (with kube-controller-manager for
the Deployments), the checker started before anything is created, the scheduler(s) as real processes,
the workload for ``--minutes``, the fault a third of the way in, then up to 30 s to settle. Figures per
scenario: pods, lost, overcommitted nodes, double binds, misfits, recovery (seconds from the fault's end
to the next bind the checker sees), preemptions and bad ones (a victim not of lower priority than its
preemptor, or a preemptor never bound, nominated or deleted) on the line before the last. Last line:
``chaos: S scenarios, P pods, lost L, overcommitted O, double binds D``; exit 1 when L, O, D or the bad
preemptions are non-zero (or a pod was misplaced or a node's capacity leaked).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.chaos.heap import HeapSampler
from bench.chaos.scenarios import SCENARIOS, run_scenario
from pyscheduler.testing.cluster import LocalCluster


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
        "--flat-nodes",
        action="store_true",
        help="no node added, cordoned or deleted (the soak's memory growth is then the pods')",
    )
    ap.add_argument(
        "--node-cpu",
        default="4",
        help="cpu of each KWOK node (default 4); smaller nodes fill up, so preemption runs",
    )
    ap.add_argument(
        "--repeat", type=int, default=1, help="run the chosen scenarios this many times on one cluster"
    )
    ap.add_argument(
        "--tracemalloc",
        type=int,
        nargs="?",
        const=1,
        default=0,
        metavar="FRAMES",
        help="with --soak: run the daemon with tracemalloc (FRAMES frames per allocation, default 1), take "
        "a heap snapshot every --tracemalloc-every minutes and at the end, and print the allocation sites "
        "that grew most between the first snapshot and the last (slows the daemon: not for figures)",
    )
    ap.add_argument(
        "--tracemalloc-every",
        type=int,
        default=3,
        metavar="MINUTES",
        help="minutes between heap snapshots; the first is the baseline after warm-up (default 3)",
    )
    args = ap.parse_args(argv)
    if args.tracemalloc and not args.soak:
        ap.error("--tracemalloc needs --soak")
    names = ["baseline"] if args.soak else (args.scenario or list(SCENARIOS))
    names = names * max(1, args.repeat)
    results = []
    with LocalCluster(with_controller_manager=True, name="chaos") as cluster:
        for name in names:
            heap = HeapSampler(args.tracemalloc, args.tracemalloc_every) if args.tracemalloc else None
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
                flat_nodes=args.flat_nodes,
                node_cpu=args.node_cpu,
                heap=heap,
            )
            if heap is not None:
                r["heap"] = heap.report()
                heap.cleanup(args.keep_logs)
            results.append(r)
            print(
                f"{name}: pods {r['pods']} (bound {r['bound']}, pending at the end {r['pending']}, "
                f"of them without a FailedScheduling event {r.get('pending_without_event', 0)}), "
                f"lost {r['lost']}, overcommitted "
                f"{r['overcommitted']}, double binds {r['double_binds']}, misfits {r['misfits']}, "
                f"leaked nodes {r['leaked']}, preempted {r['preempted']} "
                f"(bad preemptions {r['preemption_violations']}), "
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
    preempted = sum(r["preempted"] for r in results)
    bad = sum(r["preemption_violations"] for r in results)
    print(f"preemptions {preempted}, bad {bad} (victim not of lower priority, or preemptor never placed)")
    silent = sum(r.get("pending_without_event", 0) for r in results)
    pending = sum(r["pending"] for r in results)
    print(f"pending at the end {pending}, of them without a FailedScheduling event {silent}")
    print(
        f"chaos: {len(results)} scenarios, {pods} pods, lost {lost}, overcommitted {over}, double binds {double}"
    )
    misfits = sum(r["misfits"] for r in results)
    leaked = sum(r["leaked"] or 0 for r in results)
    return 1 if lost or over or double or misfits or leaked or bad else 0


if __name__ == "__main__":
    sys.exit(main())
