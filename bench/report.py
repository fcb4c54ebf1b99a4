"""``make bench``'s report: each workload's medians side by side with their ratios, and what the JSON
file records about the machine, the commit and where it goes."""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.measure import (
    Ceiling,
)
from bench.processes import KUBE, PY, SCHEDULERS
from bench.workloads import Workload

REPO = Path(__file__).resolve().parents[1]


def say(msg: str) -> None:
    print(msg, flush=True)


# ------------------------------------------------------------------------------------------ report

FIGURES: list[tuple[str, str, Callable[[dict[str, Any]], float]]] = [
    ("throughput avg", "pods/s", lambda r: r["throughput"]["avg"]),
    ("throughput p50", "pods/s", lambda r: r["throughput"]["p50"]),
    ("throughput p90", "pods/s", lambda r: r["throughput"]["p90"]),
    ("throughput p99", "pods/s", lambda r: r["throughput"]["p99"]),
    ("overall rate", "pods/s", lambda r: r["overall_pods_per_second"]),
    ("latency p50", "ms", lambda r: r["latency_ms"]["p50"]),
    ("latency p90", "ms", lambda r: r["latency_ms"]["p90"]),
    ("latency p99", "ms", lambda r: r["latency_ms"]["p99"]),
    ("CPU (measured phase)", "s", lambda r: r["cpu_seconds"]),
    ("CPU per pod", "ms/pod", lambda r: 1000.0 * r["cpu_seconds"] / max(1, r["bound"])),
    (
        "CPU per pod, events posted",
        "ms/pod",
        lambda r: 1000.0 * r.get("cpu_seconds_events_posted", math.nan) / max(1, r["bound"]),
    ),
    ("cores used", "cores", lambda r: r["cpu_seconds"] / r["seconds"] if r["seconds"] else math.nan),
    ("peak RSS", "MB", lambda r: r["peak_rss_mb"]),
    ("apiserver CPU", "s", lambda r: r["control_plane_cpu_seconds"].get("kube-apiserver", math.nan)),
    ("etcd CPU", "s", lambda r: r["control_plane_cpu_seconds"].get("etcd", math.nan)),
    (
        "apiserver CPU per pod",
        "ms/pod",
        lambda r: (
            1000.0 * r["control_plane_cpu_seconds"].get("kube-apiserver", math.nan) / max(1, r["bound"])
        ),
    ),
]


def medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    ok = [r for r in runs if "error" not in r]
    out: dict[str, float] = {}
    for label, _unit, fn in FIGURES:
        vals = [fn(r) for r in ok]
        vals = [v for v in vals if not math.isnan(v)]
        out[label] = statistics.median(vals) if vals else math.nan
    return out


def ratio(py: float, kube: float) -> float:
    return py / kube if kube and not math.isnan(kube) and not math.isnan(py) else math.nan


def fmt(v: float, digits: int = 1) -> str:
    return "-" if math.isnan(v) else f"{v:,.{digits}f}"


def report(
    name: str, wl: Workload, runs: dict[str, list[dict[str, Any]]], ceiling: Ceiling
) -> dict[str, Any]:
    med = {s: medians(runs.get(s, [])) for s in SCHEDULERS}
    rat = {label: ratio(med[PY][label], med[KUBE][label]) for label, _, _ in FIGURES}
    say("")
    say(
        f"{name}: {wl.init_pods} init pods, {wl.measured_pods} measured pods"
        + (f", {wl.unschedulable_pods} unschedulable pods" if wl.unschedulable_pods else "")
        + (f"  ({wl.notes})" if wl.notes else "")
    )
    say(f"  {'figure':<24}{'kube-scheduler':>16}{'pyscheduler':>14}{'py/kube':>10}")
    for label, unit, _ in FIGURES:
        digits = 0 if unit in ("ms", "MB") else (2 if unit in ("s", "ms/pod", "cores") else 1)
        say(
            f"  {label + ' (' + unit + ')':<24}{fmt(med[KUBE][label], digits):>16}{fmt(med[PY][label], digits):>14}"
            f"{fmt(rat[label], 2):>10}"
        )
    pct = {s: 100.0 * med[s]["throughput avg"] / ceiling.per_second for s in SCHEDULERS}
    say(
        f"  bind ceiling {ceiling.per_second:,.0f} bindings/s ({ceiling.threads} threads): "
        f"pyscheduler at {fmt(pct[PY])}% of it, kube-scheduler at {fmt(pct[KUBE])}%"
    )
    say(
        f"  (pod creation alone, no scheduler: {ceiling.create_per_second:,.0f} pods/s with {ceiling.creators} creators)"
    )
    pct_ev = {s: 100.0 * med[s]["throughput avg"] / ceiling.with_events_per_second for s in SCHEDULERS}
    say(
        f"  Binding + Scheduled event ceiling {ceiling.with_events_per_second:,.0f} pods/s: "
        f"pyscheduler at {fmt(pct_ev[PY])}% of it, kube-scheduler at {fmt(pct_ev[KUBE])}%"
    )
    api = ceiling.with_events_plane_cpu.get("kube-apiserver")
    if api is not None and ceiling.bindings:
        say(
            f"  apiserver CPU per pod in that ceiling {fmt(1000.0 * api / ceiling.bindings, 2)} ms "
            f"(the two writes alone); in the runs: kube-scheduler {fmt(med[KUBE]['apiserver CPU per pod'], 2)}, "
            f"pyscheduler {fmt(med[PY]['apiserver CPU per pod'], 2)}"
        )
    for s in SCHEDULERS:
        for r in runs.get(s, []):
            if "error" in r:
                say(f"  {s} run #{r['repeat'] + 1} failed: {r['error'][:300]}")
            elif not r["complete"]:
                say(f"  {s} run #{r['repeat'] + 1} timed out: {r['bound']}/{r['measured_pods']} bound")
            elif r.get("victims_deleted"):
                say(f"  {s} run #{r['repeat'] + 1}: {r['victims_deleted']} preemption victims deleted")
    return {
        "median": med,
        "ratio_py_over_kube": rat,
        "percent_of_bind_ceiling": pct,
        "percent_of_bind_with_events_ceiling": pct_ev,
    }


def machine_info() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = ""
    with contextlib.suppress(OSError):
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split(":", 1)[1].strip()
    return {
        "cpu_model": model,
        "cpus": os.cpu_count(),
        "memory": mem,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "loadavg": os.getloadavg(),
    }


def git_info() -> dict[str, Any]:
    def git(*a: str) -> str:
        p = subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True, check=False)
        return p.stdout.strip()

    return {
        "commit": git("rev-parse", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
    }


def results_path(out_dir: Path, nodes: int) -> Path:
    stem = f"{dt.datetime.now(dt.UTC).strftime('%Y-%m-%d')}-{nodes}"
    path = out_dir / f"{stem}.json"
    k = 2
    while path.exists():
        path = out_dir / f"{stem}-{k}.json"
        k += 1
    return path


def find_py_spy(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    # on PATH, beside this interpreter (a venv not activated), or the benchmark host's own venv
    for cand in (
        shutil.which("py-spy"),
        str(Path(sys.executable).with_name("py-spy")),
        "/tmp/pyspy-venv/bin/py-spy",
    ):
        if cand and Path(cand).exists():
            return cand
    return None
