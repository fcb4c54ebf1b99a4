"""Text output of ``simulate`` (one run or a comparison) for a terminal; ``-o json`` is ``to_dict``."""

from __future__ import annotations

from typing import Any

from pyscheduler.whatif.simulate import Comparison, SimulationResult
from pyscheduler.whatif.usage import NodeUsage

DEFAULT_ROWS = 30


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _mem(b: float) -> str:
    for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if abs(b) >= size:
            return f"{b / size:.1f}{unit}"
    return f"{b:.0f}"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _origin(p: Any) -> str:
    if p.previous_node:
        return f"displaced from {p.previous_node}"
    return str(p.origin)


def render(result: SimulationResult, rows: int = DEFAULT_ROWS) -> str:
    s = result.summary()
    out = [
        f"snapshot: {result.snapshot}",
        f"config:   {result.config}",
        f"changes:  {'; '.join(result.changes) or 'none'}",
        f"placed {s['scheduled']} of {s['pods_to_place']} pods ({s['unschedulable']} unschedulable, "
        f"{s['preempted']} preempted, {s['lost']} lost) in {s['seconds']:.2f} s",
    ]
    if result.skipped:
        out.append(
            "skipped (no profile for their scheduler; --schedule-all places them): "
            + ", ".join(f"{n} for {name}" for name, n in sorted(result.skipped.items()))
        )
    if result.pods:
        out += ["", "PLACEMENTS"]
        table = [["POD", "PRIORITY", "FROM", "NODE", "NOTE"]]
        for p in result.pods[:rows]:
            note = "tied top score" if p.tied else (f"evicted {len(p.victims)}" if p.victims else "")
            table.append([p.pod, str(p.priority), _origin(p), p.node or "-", note])
        out += _table(table)
        if len(result.pods) > rows:
            out.append(f"... {len(result.pods) - rows} more (--rows N shows more; -o json lists all)")
    groups = result.unschedulable_groups()
    if groups:
        out += ["", "UNSCHEDULABLE (by the FailedScheduling text the scheduler posts)"]
        for text, pods in groups.items():
            shown = ", ".join(pods[:5]) + (f", ... ({len(pods) - 5} more)" if len(pods) > 5 else "")
            out += [f"  {len(pods)} pod(s): {text}", f"      {shown}"]
    if result.victims:
        out += ["", "PREEMPTED"]
        out += [
            f"  {v.pod} (priority {v.priority}) on {v.node} by {v.preempted_by or '?'}"
            for v in result.victims
        ]
    if result.lost:
        out += ["", "LOST (not re-created by a controller)"]
        out += [f"  {lp.pod} on {lp.node}: {lp.why}" for lp in result.lost]
    out += ["", *_usage_lines(result)]
    out += [f"warning: {w}" for w in result.warnings]
    return "\n".join(out)


def _usage_rows(label: str, b: NodeUsage, a: NodeUsage) -> list[list[str]]:
    return [
        [f"{label} cpu", _pct(b.cpu_fraction), _pct(a.cpu_fraction)],
        [f"{label} memory", _pct(b.memory_fraction), _pct(a.memory_fraction)],
    ]


def _usage_lines(result: SimulationResult) -> list[str]:
    table = [["REQUESTED / ALLOCATABLE", "BEFORE", "AFTER"]]
    table += _usage_rows("cluster", result.before.total(), result.after.total())
    zb, za = result.before.zones(), result.after.zones()
    if len(set(zb) | set(za)) > 1:
        empty = NodeUsage("", "", True, 0, 0, 0)
        for z in sorted(set(zb) | set(za)):
            table += _usage_rows(f"zone {z}", zb.get(z, empty), za.get(z, empty))
    table.append(["nodes in use", str(result.before.nodes_in_use()), str(result.after.nodes_in_use())])
    fb, fa = result.fragmentation_before, result.fragmentation_after
    avg = fa["average_pod"]
    table += [
        [
            f"fragmentation cpu (average pod {avg['cpu_m']}m, {_mem(avg['memory'])})",
            _pct(fb["fragmentation"]["cpu"]),
            _pct(fa["fragmentation"]["cpu"]),
        ],
        ["fragmentation memory", _pct(fb["fragmentation"]["memory"]), _pct(fa["fragmentation"]["memory"])],
        ["room for average pods", str(fb["average_pod_slots"]), str(fa["average_pod_slots"])],
    ]
    return _table(table)


SUMMARY_ROWS = (
    ("scheduled", "scheduled", str),
    ("unschedulable", "unschedulable", str),
    ("preempted", "preempted", str),
    ("nodes in use after", "nodes_in_use_after", str),
    ("cpu requested after", "cpu_requested_after", _pct),
    ("memory requested after", "memory_requested_after", _pct),
    ("fragmentation cpu after", "fragmentation_cpu_after", _pct),
    ("fragmentation memory after", "fragmentation_memory_after", _pct),
    ("seconds", "seconds", lambda x: f"{x:.2f}"),
)


def render_comparison(c: Comparison) -> str:
    sa, sb = c.a.summary(), c.b.summary()
    table = [["", f"A: {c.a.config}", f"B: {c.b.config}"]]
    for label, key, fmt in SUMMARY_ROWS:
        table.append([label, fmt(sa[key]), fmt(sb[key])])
    d = c.to_dict()
    out = [
        f"snapshot: {c.a.snapshot}",
        f"changes:  {'; '.join(c.a.changes) or 'none'}",
        "",
        *_table(table),
        "",
        f"{d['pods_placed_differently']} pod(s) placed differently",
    ]
    for name, r in (("A", c.a), ("B", c.b)):
        groups = r.unschedulable_groups()
        if groups:
            out += ["", f"UNSCHEDULABLE under {name}"]
            out += [f"  {len(pods)} pod(s): {text}" for text, pods in groups.items()]
    return "\n".join(out)
