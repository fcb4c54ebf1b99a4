"""``python -m bench.differential``: choose scenarios, run them, print the summary, write the report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.differential.common import SCHEDULER_NAME
from bench.differential.driver import Differential, write_report
from bench.differential.schedulers import PyScheduler
from bench.scenarios import SCENARIOS, by_name

_DESCRIPTION = "Differential test: pyscheduler against the real kube-scheduler 1.36, scenario by scenario, on one cluster."


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.differential", description=_DESCRIPTION)
    ap.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this scenario (repeatable; comma-separated lists work too)",
    )
    ap.add_argument("--list", action="store_true", help="list the scenarios and exit")
    ap.add_argument(
        "--kube-only",
        action="store_true",
        help="run kube-scheduler alone and print what it did with each pod (to check a new scenario)",
    )
    ap.add_argument(
        "--output",
        type=Path,
        default=None,
        help="where to write the JSON report (default bench/results/differential-<UTC date>.json; "
        "with --scenario, differential-<UTC date>-subset.json)",
    )
    ap.add_argument(
        "--keep-logs", action="store_true", help="keep scheduler logs (their directory is printed)"
    )
    ap.add_argument(
        "--py-parallelism",
        type=int,
        default=None,
        metavar="N",
        help="pyscheduler's parallelism; N > 1 also forces every Filter chunk onto N forked shards",
    )
    args = ap.parse_args(argv)
    PyScheduler.parallelism = args.py_parallelism
    if args.list:
        width = max(len(s.name) for s in SCENARIOS)
        for s in SCENARIOS:
            print(f"{s.name:<{width}}  {s.placements():2d} pods  {','.join(s.plugins):<40}  {s.description}")
        return 0
    known = by_name()
    names = [n for arg in args.scenario for n in arg.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"unknown scenario(s): {', '.join(unknown)} (see --list)", file=sys.stderr)
        return 2
    selected = [known[n] for n in names] if names else list(SCENARIOS)
    print(
        f"differential: {len(selected)} scenario(s), {sum(s.placements() for s in selected)} pod placements, "
        f"kube-scheduler then pyscheduler, profile {SCHEDULER_NAME}",
        flush=True,
    )

    def out(line: str) -> None:
        print(line, flush=True)

    with Differential(keep_logs=args.keep_logs, kube_only=args.kube_only) as d:
        if args.keep_logs:
            out(f"logs: {d.workdir}")
        report = d.run(selected, out)
    if args.kube_only:
        for failed in report.errors:
            print(f"scenario {failed.name} could not be run: {failed.error.splitlines()[0]}", file=sys.stderr)
        return 2 if report.errors else 0
    for line in report.summary_lines():
        print(line)
    path = write_report(report, args.output, subset=bool(names))
    print(f"details: {path}  ({report.seconds:.0f}s)")
    for failed in report.errors:
        print(f"scenario {failed.name} could not be run: {failed.error.splitlines()[0]}", file=sys.stderr)
    return report.exit_code()
