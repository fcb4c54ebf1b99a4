"""manifests/monitoring/: the Grafana dashboard and the PrometheusRule read only series pyscheduler exposes.

A dashboard panel or an alert built on a name that does not exist shows "No data" or never fires; nobody
notices until the day it matters. Every metric selector in them must be a series ``SchedulerMetrics``
registers (histograms as ``_bucket``/``_count``/``_sum``, counters as ``_total``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pyscheduler.metrics import SchedulerMetrics

ROOT = Path(__file__).parents[2]
MONITORING = ROOT / "manifests" / "monitoring"
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{")
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless"}


def exposed_series() -> set[str]:
    out: set[str] = set()
    for fam in text_string_to_metric_families(generate_latest(SchedulerMetrics().registry).decode()):
        if fam.type == "histogram":
            out |= {f"{fam.name}_bucket", f"{fam.name}_count", f"{fam.name}_sum"}
        elif fam.type == "counter":
            out.add(f"{fam.name}_total")
        else:
            out.add(fam.name)
    return out


def metric_names(expr: str) -> set[str]:
    """The metric names an expression selects (every selector here has a label matcher in braces)."""
    expr = re.sub(r'"[^"]*"', '""', expr)  # label values may contain braces
    return {m for m in SELECTOR.findall(expr) if m not in PROMQL_WORDS}


def dashboard_exprs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr" and isinstance(v, str):
                yield v
            else:
                yield from dashboard_exprs(v)
    elif isinstance(node, list):
        for v in node:
            yield from dashboard_exprs(v)


def rule_exprs(path: Path) -> list[tuple[str, str]]:
    doc = yaml.safe_load(path.read_text())
    return [(r["alert"], r["expr"]) for g in doc["spec"]["groups"] for r in g["rules"]]


def test_dashboard_reads_only_exposed_series() -> None:
    dash = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    exprs = list(dashboard_exprs(dash["panels"]))
    assert len(exprs) >= 20
    names = set().union(*(metric_names(e) for e in exprs))
    assert not names - exposed_series(), (
        f"the dashboard reads series pyscheduler does not expose: {names - exposed_series()}"
    )
    # The headline figures are all on it.
    for must in (
        "scheduler_schedule_attempts_total",
        "scheduler_pending_pods",
        "scheduler_pod_scheduling_sli_duration_seconds_bucket",
        "leader_election_master_status",
        "rest_client_requests_total",
    ):
        assert must in names
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"


def test_alerts_read_only_exposed_series_and_cover_the_usual_failures() -> None:
    rules = rule_exprs(MONITORING / "prometheusrule.yaml")
    by_alert = {alert: metric_names(expr) for alert, expr in rules}
    used = set().union(*by_alert.values())
    assert not used - exposed_series(), (
        f"alerts on series pyscheduler does not expose: {used - exposed_series()}"
    )
    assert "leader_election_master_status" in by_alert["PySchedulerNoLeader"]
    assert "scheduler_pod_scheduling_sli_duration_seconds_bucket" in by_alert["PySchedulerPodsPendingTooLong"]
    assert "scheduler_schedule_attempts_total" in by_alert["PySchedulerSchedulingErrors"]


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        pytest.param(
            'sum(rate(a_total{job="x"}[5m])) / sum(b{c=~"5..|{weird}"})', {"a_total", "b"}, id="two"
        ),
        pytest.param('sum by (le) (rate(h_bucket{j="x"}[1m])) and on() c{}', {"h_bucket", "c"}, id="and-on"),
        pytest.param('max(not_a_metric_here{j="1"}) < 1', {"not_a_metric_here"}, id="unknown"),
    ],
)
def test_metric_names_finds_every_selector(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names
