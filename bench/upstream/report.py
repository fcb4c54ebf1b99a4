"""The course table as Markdown, from the runner's results (a run, a ``--list``, or a saved JSON file):

    python -m bench.upstream --label performance --markdown course.md          # run, then write the table
    python -m bench.upstream --list --markdown course.md                       # what runs, what is skipped
    python -m bench.upstream --from-json bench/results/upstream-....json --markdown course.md
    python -m bench.upstream --list --results a.json --results b.json --markdown course.md  # whole course,
                                                                  # figures from the runs given where they ran

One row per workload: test case, workload, labels, whether it runs here (or the skip reason), upstream's
threshold, each scheduler's average throughput (scheduler_perf's SchedulingThroughput mean), the py/kube
ratio, each one's p99 creation→bind latency and the ratio, CPU ms per pod of each and the ratio, peak RSS
of each. Workloads selected but not run (``--list``) show "runnable" without figures. The table ends with
``summary_line``: how many workloads both schedulers ran, and in how many pyscheduler's throughput was at
least and its p99 latency at most kube-scheduler's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

KUBE = "kube-scheduler"
PY = "pyscheduler"


def _num(v: Any, fmt: str = ".1f") -> str:
    if not isinstance(v, int | float) or math.isnan(v):
        return "-"
    return format(v, fmt)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _run_cell(r: Mapping[str, Any] | None) -> tuple[str, float]:
    """(cell text, throughput) for one scheduler's result."""
    if r is None:
        return "-", math.nan
    if "error" in r:
        return "error: " + _cell(str(r["error"]).splitlines()[0][:120]), math.nan
    t = r.get("throughput_average", math.nan)
    return _num(t), float(t) if isinstance(t, int | float) else math.nan


def _fig(r: Mapping[str, Any] | None, *path: str) -> float:
    """A number from a scheduler's result (``_fig(r, "latency_ms", "p99")``), NaN when absent or errored."""
    v: Any = r
    for p in path:
        if not isinstance(v, Mapping) or "error" in v:
            return math.nan
        v = v.get(p)
    return float(v) if isinstance(v, int | float) else math.nan


def _ratio(py: float, kube: float) -> float:
    return py / kube if kube and not math.isnan(kube) and not math.isnan(py) else math.nan


def summary_line(results: Sequence[Mapping[str, Any]]) -> str:
    """``upstream scheduler_perf: W workloads, throughput py>=kube in T/W, p99 py<=kube in L/W``: W counts
    the workloads with a throughput from both schedulers; a workload whose run kept no latency (runs
    before latency was recorded) counts against L and is said in brackets."""
    w = t = lat = unrecorded = 0
    for e in results:
        k, q = _fig(e.get(KUBE), "throughput_average"), _fig(e.get(PY), "throughput_average")
        if math.isnan(_ratio(q, k)):
            continue
        w += 1
        t += q >= k
        kp, qp = _fig(e.get(KUBE), "latency_ms", "p99"), _fig(e.get(PY), "latency_ms", "p99")
        if math.isnan(kp) or math.isnan(qp):
            unrecorded += 1
        else:
            lat += qp <= kp
    note = f" (p99 not recorded for {unrecorded})" if unrecorded else ""
    return f"upstream scheduler_perf: {w} workloads, throughput py>=kube in {t}/{w}, p99 py<=kube in {lat}/{w}{note}"


SAMPLER = "collector"
"""How the results' throughput samples were taken: ``collector`` (``bench.measure.collector_samples``,
scheduler_perf's way). Results files without it used one-second buckets scaled at the end."""


def scaled(overridden: Mapping[str, Any]) -> str:
    """``--param``'s changes as said in the table: ``nodes=500, measurePods=500``."""
    return ", ".join(f"{k}={v}" for k, v in overridden.items())


def status(e: Mapping[str, Any]) -> str:
    if e.get("skipped"):
        return "skip: " + _cell("; ".join(e["skipped"]))
    notes = e.get("gates_not_acted_on") or []
    ran = KUBE in e or PY in e
    text = "ran" if ran else "runnable"
    if e.get("measured"):
        text += f" ({e['measured']})"
    if ran and e.get("sampler", SAMPLER) != SAMPLER:
        text += " (old sampler)"
    if e.get("params_overridden"):
        text += f" (scaled down, not upstream's size: {scaled(e['params_overridden'])})"
    if notes:
        text += f" (gates pyscheduler accepts but does not act on: {', '.join(notes)})"
    return text


def merge(entries: Sequence[Mapping[str, Any]], saved: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The listed rows with each scheduler's figures from the saved runs (the later file wins), so one
    table covers the whole course while the runs cover parts of it."""
    ran: dict[tuple[str, str], tuple[Mapping[str, Any], str, str]] = {}
    for doc in saved:
        when = f"{str(doc.get('date', '?'))[:10]} {str((doc.get('git') or {}).get('commit', ''))[:7]}"
        for e in doc.get("results") or ():
            if KUBE in e or PY in e:
                ran[(e["test_case"], e["workload"])] = (e, when, str(doc.get("sampler", "buckets")))
    out = []
    for e in entries:
        row = dict(e)
        got = ran.get((e["test_case"], e["workload"]))
        if got is not None and not e.get("skipped"):
            row.update({k: got[0][k] for k in (KUBE, PY, "params_overridden") if k in got[0]})
            row["measured"], row["sampler"] = got[1], got[2]
        out.append(row)
    return out


def runs_meta(saved: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The header facts of the saved runs (the latest one's version; every commit and date)."""
    if not saved:
        return {}
    dates = ", ".join(str(d.get("date", "?"))[:16] for d in saved)
    commits = sorted({str((d.get("git") or {}).get("commit", ""))[:12] for d in saved})
    return {"version": saved[-1].get("version", "?"), "date": dates, "git": {"commit": ", ".join(commits)}}


def markdown(results: Sequence[Mapping[str, Any]], meta: Mapping[str, Any] | None = None) -> str:
    meta = meta or {}
    lines = []
    if meta:
        git = meta.get("git") or {}
        commit = str(git.get("commit", "")) + (" (dirty)" if git.get("dirty") else "")
        lines.append(
            f"Course: k8s.io/kubernetes {meta.get('version', '?')} scheduler_perf; measured "
            f"{meta.get('date', '?')} at commit {commit or '?'}."
        )
        lines.append("")
    lines.append(
        "| test case | workload | labels | runs here | threshold | kube pods/s | py pods/s | py/kube "
        "| kube p99 ms | py p99 ms | p99 py/kube | kube CPU ms/pod | py CPU ms/pod | CPU py/kube "
        "| peak RSS kube / py MB |"
    )
    lines.append("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    ran = faster = 0
    for e in results:
        kr, qr = e.get(KUBE), e.get(PY)
        kube_cell, k = _run_cell(kr)
        py_cell, q = _run_cell(qr)
        ratio = _ratio(q, k)
        if not math.isnan(ratio):
            ran += 1
            faster += ratio >= 1.0
        thr: Any = e.get("threshold")
        by_suite = e.get("threshold_by_suite") or {}
        thr_cell = _num(thr, "g") if thr else ", ".join(f"{k}: {v}" for k, v in by_suite.items()) or "-"
        kp, qp = _fig(kr, "latency_ms", "p99"), _fig(qr, "latency_ms", "p99")
        kc, qc = _fig(kr, "cpu_ms_per_pod"), _fig(qr, "cpu_ms_per_pod")
        km, qm = _fig(kr, "peak_rss_mb"), _fig(qr, "peak_rss_mb")
        rss = "-" if math.isnan(km) and math.isnan(qm) else f"{_num(km, '.0f')} / {_num(qm, '.0f')}"
        lines.append(
            f"| {e['test_case']} | {e['workload']} | {','.join(e.get('labels') or ()) or '-'} | {status(e)} "
            f"| {thr_cell} | {kube_cell} | {py_cell} | {_num(ratio, '.2f')} "
            f"| {_num(kp, '.0f')} | {_num(qp, '.0f')} | {_num(_ratio(qp, kp), '.2f')} "
            f"| {_num(kc, '.2f')} | {_num(qc, '.2f')} | {_num(_ratio(qc, kc), '.2f')} | {rss} |"
        )
    runnable = sum(1 for e in results if not e.get("skipped"))
    lines.append("")
    lines.append(
        f"{len(results)} workloads, {runnable} runnable here, {len(results) - runnable} skipped; "
        f"measured with both schedulers: {ran}, pyscheduler's throughput >= kube-scheduler's in {faster}."
    )
    lines.append("")
    lines.append(summary_line(results))
    return "\n".join(lines) + "\n"
