"""The HTML report of ``simulate --html FILE``: one self-contained file (inline CSS and SVG, no script, no
network), to open in any browser or attach to a change request.

Sections: the summary; requested/allocatable per zone before and after; per node (one bar pair per node
up to ``NODE_BARS`` nodes, else how many nodes sit in each 10% band); the unschedulable reasons (per
reason, how many pods met it on some node) and the exact messages; preemption victims, displaced and lost
pods; the placements. A comparison (``--compare``) adds a chart of both runs side by side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from pyscheduler.whatif.simulate import Comparison, SimulationResult
from pyscheduler.whatif.usage import Usage

NODE_BARS = 60
PLACEMENT_ROWS = 500
BEFORE, AFTER = "#9aa5b1", "#2f6fde"
A_COLOR, B_COLOR = "#2f6fde", "#e8833a"
RED = "#d64545"

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;
color:#1f2933;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e4e7eb;
padding-bottom:4px}.muted{color:#616e7c}.cards{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0}
.card{border:1px solid #e4e7eb;border-radius:8px;padding:8px 14px;min-width:110px}
.card b{display:block;font-size:20px}.bad b{color:#d64545}table{border-collapse:collapse;width:100%;
font-size:13px}th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #f0f2f5;vertical-align:top}
th{background:#f5f7fa}code{font-size:12px;background:#f5f7fa;padding:1px 4px;border-radius:3px;
white-space:pre-wrap}.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px;
border-radius:2px}svg text{font:12px system-ui,sans-serif;fill:#1f2933}
"""


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _legend(series: Sequence[tuple[str, str]]) -> str:
    return (
        '<div class="legend muted">'
        + "".join(f'<span style="background:{c}"></span>{escape(n)}' for n, c in series)
        + "</div>"
    )


def hbars(
    rows: Sequence[tuple[str, Sequence[float]]],
    series: Sequence[tuple[str, str]],
    *,
    vmax: float | None = None,
    fmt: Callable[[float], str] = _pct,
    label_width: int = 220,
    width: int = 900,
) -> str:
    """Horizontal grouped bars: one group per row, one bar per series (an inline SVG)."""
    if not rows:
        return '<p class="muted">nothing to show</p>'
    n = len(series)
    bar_h, gap = 12, 10
    group_h = n * bar_h + gap
    top = max((max(v) for _, v in rows if v), default=0.0)
    scale_max = vmax if vmax is not None else (top or 1.0)
    plot_w = width - label_width - 70
    h = len(rows) * group_h + 10
    out = [f'<svg width="{width}" height="{h}" role="img" xmlns="http://www.w3.org/2000/svg">']
    for i, (label, values) in enumerate(rows):
        y0 = 5 + i * group_h
        short = label if len(label) <= 34 else label[:32] + "…"
        out.append(
            f'<text x="{label_width - 8}" y="{y0 + n * bar_h / 2 + 4}" text-anchor="end">'
            f"<title>{escape(label)}</title>{escape(short)}</text>"
        )
        for j, v in enumerate(values):
            w = max(0.0, min(1.0, v / scale_max)) * plot_w if scale_max else 0.0
            y = y0 + j * bar_h
            out.append(
                f'<rect x="{label_width}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" fill="{series[j][1]}">'
                f"<title>{escape(series[j][0])}: {escape(fmt(v))}</title></rect>"
                f'<text x="{label_width + w + 4:.1f}" y="{y + bar_h - 3}">{escape(fmt(v))}</text>'
            )
    out.append("</svg>")
    return _legend(series) + "".join(out)


def _usage_rows(before: Usage, after: Usage, zones: bool) -> list[tuple[str, list[float]]]:
    b = before.zones() if zones else before.nodes
    a = after.zones() if zones else after.nodes
    rows: list[tuple[str, list[float]]] = []
    for name in sorted(set(b) | set(a)):
        ub, ua = b.get(name), a.get(name)
        rows.append(
            (
                name,
                [
                    ub.cpu_fraction if ub else 0.0,
                    ua.cpu_fraction if ua else 0.0,
                    ub.memory_fraction if ub else 0.0,
                    ua.memory_fraction if ua else 0.0,
                ],
            )
        )
    return rows


USAGE_SERIES = (
    ("cpu before", BEFORE),
    ("cpu after", AFTER),
    ("memory before", "#c3c9d1"),
    ("memory after", "#7fa6ee"),
)


def _histogram(before: Usage, after: Usage) -> str:
    def bands(u: Usage, attr: str) -> list[int]:
        counts = [0] * 10
        for n in u.nodes.values():
            counts[min(9, int(getattr(n, attr) * 10))] += 1
        return counts

    rows = []
    cb, ca = bands(before, "cpu_fraction"), bands(after, "cpu_fraction")
    mb, ma = bands(before, "memory_fraction"), bands(after, "memory_fraction")
    for i in range(10):
        rows.append(
            (f"{i * 10}-{i * 10 + 10}% requested", [float(cb[i]), float(ca[i]), float(mb[i]), float(ma[i])])
        )
    return "<p class='muted'>nodes per band of requested/allocatable</p>" + hbars(
        rows, USAGE_SERIES, fmt=lambda v: f"{v:.0f} nodes"
    )


def _cards(result: SimulationResult) -> str:
    s = result.summary()
    items = [
        ("placed", f"{s['scheduled']}/{s['pods_to_place']}", False),
        ("unschedulable", str(s["unschedulable"]), s["unschedulable"] > 0),
        ("preempted", str(s["preempted"]), s["preempted"] > 0),
        ("lost", str(s["lost"]), s["lost"] > 0),
        ("nodes in use", f"{s['nodes_in_use_before']} → {s['nodes_in_use_after']}", False),
        ("cpu requested", f"{_pct(s['cpu_requested_before'])} → {_pct(s['cpu_requested_after'])}", False),
        (
            "memory requested",
            f"{_pct(s['memory_requested_before'])} → {_pct(s['memory_requested_after'])}",
            False,
        ),
        (
            "fragmentation cpu / mem",
            f"{_pct(s['fragmentation_cpu_after'])} / {_pct(s['fragmentation_memory_after'])}",
            False,
        ),
    ]
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card{" bad" if bad else ""}"><b>{escape(v)}</b><span class="muted">{escape(k)}</span></div>'
            for k, v, bad in items
        )
        + "</div>"
    )


def _section(result: SimulationResult, title: str = "") -> str:
    out = [f"<h2>{escape(title)}</h2>" if title else "", _cards(result)]
    out.append("<h2>Requested / allocatable per zone</h2>")
    out.append(hbars(_usage_rows(result.before, result.after, True), USAGE_SERIES, vmax=1.0))
    out.append("<h2>Per node</h2>")
    if max(len(result.before.nodes), len(result.after.nodes)) <= NODE_BARS:
        out.append(hbars(_usage_rows(result.before, result.after, False), USAGE_SERIES, vmax=1.0))
    else:
        out.append(_histogram(result.before, result.after))
    fb, fa = result.fragmentation_before, result.fragmentation_after
    avg = fa["average_pod"]
    out.append(
        f"<p>Fragmentation (free capacity an average pod of {avg['cpu_m']}m CPU and "
        f"{avg['memory'] / 2**20:.0f}Mi cannot use): CPU {_pct(fb['fragmentation']['cpu'])} → "
        f"{_pct(fa['fragmentation']['cpu'])}, memory {_pct(fb['fragmentation']['memory'])} → "
        f"{_pct(fa['fragmentation']['memory'])}; room for {fb['average_pod_slots']} → "
        f"{fa['average_pod_slots']} average pods.</p>"
    )
    reasons = result.reason_counts()
    groups = result.unschedulable_groups()
    if groups:
        out.append("<h2>Why pods did not fit</h2>")
        out.append(
            hbars(
                [(r, [float(n)]) for r, n in reasons.items()],
                [("pods", RED)],
                fmt=lambda v: f"{v:.0f} pod(s)",
                label_width=330,
            )
        )
        out.append("<table><tr><th>pods</th><th>FailedScheduling message</th><th>examples</th></tr>")
        for text, pods in groups.items():
            out.append(
                f"<tr><td>{len(pods)}</td><td><code>{escape(text)}</code></td>"
                f"<td>{escape(', '.join(pods[:3]))}{' …' if len(pods) > 3 else ''}</td></tr>"
            )
        out.append("</table>")
    if result.victims:
        out.append("<h2>Preempted</h2><table><tr><th>pod</th><th>priority</th><th>node</th><th>by</th></tr>")
        out += [
            f"<tr><td>{escape(v.pod)}</td><td>{v.priority}</td><td>{escape(v.node)}</td>"
            f"<td>{escape(v.preempted_by or '?')}</td></tr>"
            for v in result.victims
        ]
        out.append("</table>")
    if result.lost:
        out.append("<h2>Lost (not re-created)</h2><table><tr><th>pod</th><th>node</th><th>why</th></tr>")
        out += [
            f"<tr><td>{escape(lp.pod)}</td><td>{escape(lp.node)}</td><td>{escape(lp.why)}</td></tr>"
            for lp in result.lost
        ]
        out.append("</table>")
    out.append(
        "<h2>Placements</h2><table><tr><th>pod</th><th>priority</th><th>from</th><th>node</th><th></th></tr>"
    )
    for p in result.pods[:PLACEMENT_ROWS]:
        origin = f"displaced from {p.previous_node}" if p.previous_node else p.origin
        note = "tied top score" if p.tied else (f"evicted {', '.join(p.victims)}" if p.victims else "")
        out.append(
            f"<tr><td>{escape(p.pod)}</td><td>{p.priority}</td><td>{escape(origin)}</td>"
            f"<td>{escape(p.node or '—')}</td><td>{escape(note)}</td></tr>"
        )
    out.append("</table>")
    if len(result.pods) > PLACEMENT_ROWS:
        out.append(f"<p class='muted'>… {len(result.pods) - PLACEMENT_ROWS} more: -o json lists all</p>")
    return "\n".join(out)


def _page(title: str, subtitle: str, body: str) -> str:
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{escape(title)}</h1>"
        f"<div class='muted'>{subtitle}</div>{body}</body></html>\n"
    )


def _subtitle(r: SimulationResult) -> str:
    return "<br>".join(
        [
            f"snapshot: {escape(r.snapshot)}",
            f"changes: {escape('; '.join(r.changes) or 'none')}",
            *(f"warning: {escape(w)}" for w in r.warnings),
        ]
    )


def simulation_html(result: SimulationResult) -> str:
    return _page(
        "pyscheduler simulate",
        f"config: {escape(result.config)}<br>{_subtitle(result)}",
        _section(result),
    )


COMPARE_METRICS = (
    ("cpu requested after", "cpu_requested_after"),
    ("memory requested after", "memory_requested_after"),
    ("fragmentation cpu after", "fragmentation_cpu_after"),
    ("fragmentation memory after", "fragmentation_memory_after"),
)


def comparison_html(c: Comparison) -> str:
    sa, sb = c.a.summary(), c.b.summary()
    series = [(c.a.config, A_COLOR), (c.b.config, B_COLOR)]
    fractions = hbars([(label, [sa[k], sb[k]]) for label, k in COMPARE_METRICS], series, vmax=1.0)
    counts = hbars(
        [
            (label, [float(sa[k]), float(sb[k])])
            for label, k in (
                ("scheduled", "scheduled"),
                ("unschedulable", "unschedulable"),
                ("preempted", "preempted"),
                ("nodes in use after", "nodes_in_use_after"),
            )
        ],
        series,
        fmt=lambda v: f"{v:.0f}",
    )
    moved = c.to_dict()["pods_placed_differently"]
    body = (
        "<h2>Side by side</h2>"
        + fractions
        + counts
        + f"<p>{moved} pod(s) placed differently.</p>"
        + _section(c.a, f"A: {c.a.config}")
        + _section(c.b, f"B: {c.b.config}")
    )
    return _page("pyscheduler simulate --compare", _subtitle(c.a), body)
