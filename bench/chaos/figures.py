"""Figures read from what a scenario left behind: the HTTP fault proxy's request log (the client's retries
and their spacing, watches ended and re-opened) and the daemon's process and /metrics gauges."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Any

from pyscheduler.testing.daemon import SchedulerProcess


def _quantiles(v: list[float]) -> str:
    if not v:
        return "none"
    v = sorted(v)
    return f"n={len(v)} min {v[0]:.2f}s median {v[len(v) // 2]:.2f}s max {v[-1]:.2f}s"


def _kind(r: dict[str, Any]) -> str:
    if r.get("watch"):
        return "watches"
    return "binds" if r["m"] == "POST" and r["p"].endswith("/binding") else "other requests"


def retry_figures(reqs: list[dict[str, Any]]) -> dict[str, Any]:
    """From the proxy's request log: after each injected failure, when the same request (method, path,
    body) came again. 429: the gap must be at least Retry-After; 5xx: the gaps grow (exponential backoff;
    for a watch, the reflector's). Also: binds retried after a lost answer that met 409, and requests
    whose last attempt failed."""
    ended = [r for r in reqs if "ended_watch" in r]
    reqs = [r for r in reqs if "m" in r]
    by_key: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in reqs:
        by_key.setdefault((r["m"], r["p"], r.get("b", 0)), []).append(r)
    gaps_429: dict[str, list[float]] = {}
    early_429 = 0
    gaps_5xx: dict[str, list[float]] = {}
    gave_up = {"binds": 0, "other": 0}
    bind_409_after_lost = 0
    for rs in by_key.values():
        chain = 0
        for i, r in enumerate(rs):
            if not r.get("injected"):
                chain = 0
                continue
            kind = _kind(r)
            nxt = rs[i + 1] if i + 1 < len(rs) else None
            if nxt is None or nxt["t"] - r["t"] > 15:
                if kind != "watches":
                    gave_up["binds" if kind == "binds" else "other"] += 1
                continue
            gap = nxt["t"] - r["t"]
            chain += 1
            if r["status"] == 429:
                gaps_429.setdefault(kind, []).append(gap)
                early_429 += gap < 2 - 0.05
            else:
                key = kind if kind == "watches" else f"retry {min(chain, 4)}{'+' if chain >= 4 else ''}"
                gaps_5xx.setdefault(key, []).append(gap)
            if kind == "binds" and r.get("injected") == "after" and nxt.get("status") == 409:
                bind_409_after_lost += 1
    out: dict[str, Any] = {"requests": len(reqs), "injected": sum(1 for r in reqs if r.get("injected"))}
    for kind, g in sorted(gaps_429.items()):
        out[f"429 (Retry-After 2s) -> next attempt, {kind}"] = _quantiles(g)
    if gaps_429:
        out["retried before Retry-After"] = early_429
    for key, g in sorted(gaps_5xx.items()):
        out[f"5xx -> {'next request to that collection, watches' if key == 'watches' else key}"] = _quantiles(
            g
        )
    if bind_409_after_lost:
        out["binds retried after a lost answer, answered 409"] = bind_409_after_lost
    out["failed for good (last attempt failed)"] = gave_up
    out.update(_held_back_figures(reqs, by_key))
    out.update(watch_figures(reqs, ended))
    return out


def watch_figures(reqs: list[dict[str, Any]], ended: list[dict[str, Any]]) -> dict[str, Any]:
    """Watches ended by the proxy (``end-watches``): per ended watch, how long until a watch of the same
    collection was open again (answered 200), how many of its re-connections were refused on the way,
    and whether the client relisted (a plain GET of that collection) instead of re-watching from its
    resourceVersion."""
    if not ended:
        return {}
    by_path: dict[str, list[dict[str, Any]]] = {}
    for r in reqs:
        if r["m"] == "GET":
            by_path.setdefault(r["p"], []).append(r)
    back: list[float] = []
    refused: list[int] = []
    relists = 0
    never = 0
    for e in ended:
        rs = [r for r in by_path.get(e["ended_watch"], []) if r["t"] >= e["t"]]
        ok = next((r for r in rs if r.get("watch") and r["status"] == 200), None)
        if ok is None:
            never += 1
            continue
        back.append(ok["t"] - e["t"])
        before = [r for r in rs if r["t"] <= ok["t"]]
        refused.append(sum(1 for r in before if r.get("watch") and r["status"] != 200))
        relists += sum(1 for r in before if not r.get("watch"))
    return {
        "watches ended by the proxy": len(ended),
        "ended watch -> open again": _quantiles(back),
        "re-connections refused before it opened (per ended watch)": _quantiles([float(n) for n in refused]),
        "relists instead of a re-watch": relists,
        "never re-opened": never,
    }


def _held_back_figures(
    reqs: list[dict[str, Any]], by_key: dict[tuple[str, str, int], list[dict[str, Any]]]
) -> dict[str, Any]:
    """Answers held back past the client's read timeout: the same request sent again meanwhile."""
    delayed = [r for r in reqs if r.get("delay")]
    if not delayed:
        return {}
    out: dict[str, Any] = {"delayed": len(delayed)}
    again = []
    for r in delayed:
        rs = by_key[(r["m"], r["p"], r.get("b", 0))]
        nxt = next((x for x in rs if r["t"] < x["t"] <= r["t"] + r["delay"]), None)
        if nxt is not None:
            again.append((nxt["t"] - r["t"], nxt.get("status")))
    if again:
        out["sent again while the answer was held back"] = (
            f"{len(again)} (after {_quantiles([g for g, _ in again])}; "
            f"answered {sorted({str(st) for _, st in again})})"
        )
    return out


def proc_stats(pid: int) -> dict[str, int]:
    """RSS (KiB), threads, fds and CPU (clock ticks) of a process and its children (the HTTP worker)."""
    pids = [pid]
    with contextlib.suppress(OSError):
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            pids.append(int(child))
    out = {"rss_kib": 0, "threads": 0, "fds": 0, "cpu_ticks": 0}
    for p in pids:
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            out["cpu_ticks"] += int(stat[11]) + int(stat[12])  # utime + stime
            status = Path(f"/proc/{p}/status").read_text()
            out["rss_kib"] += int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
            out["threads"] += int(re.search(r"Threads:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
            out["fds"] += len(os.listdir(f"/proc/{p}/fd"))
    return out


def scheduler_gauges(s: SchedulerProcess) -> dict[str, int]:
    """The daemon's queue sizes (scheduler_pending_pods by queue) and cache sizes, from /metrics."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for m in re.finditer(
            r'^scheduler_(pending_pods|cache_size)\{(?:queue|type)="(\w+)"\} ([0-9.e+]+)$', s.metrics(), re.M
        ):
            out[f"{'queue' if m.group(1) == 'pending_pods' else 'cache'}_{m.group(2)}"] = int(
                float(m.group(3))
            )
    return out
