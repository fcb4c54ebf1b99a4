"""make conformance's report: JUnit parsing, the per-spec table, the last line and the exit status."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyscheduler.testing import conformance
from pyscheduler.testing.conformance import RunResult, SpecResult

JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="5" disabled="3" errors="0" failures="1" time="61.2">
  <testsuite name="Kubernetes e2e suite" package="/x" tests="5" skipped="1" failures="1">
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="0.01"/>
    <testcase name="[It] [sig-scheduling] SchedulerPredicates [Serial] validates that NodeSelector is respected if matching [Conformance]" classname="Kubernetes e2e suite" status="passed" time="4.5"/>
    <testcase name="[It] [sig-scheduling] SchedulerPreemption [Serial] validates basic preemption works [Conformance]" classname="Kubernetes e2e suite" status="failed" time="55.0">
      <failure message="Timed out after 60s.&#10;more" type="failed">details</failure>
    </testcase>
    <testcase name="[It] [sig-scheduling] Workload CRUD Tests Workload API availability [FeatureGate:GenericWorkload] [Alpha]" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped"/>
    </testcase>
    <testcase name="[It] [sig-apps] Deployment works" classname="Kubernetes e2e suite" status="passed" time="1"/>
  </testsuite>
</testsuites>
"""

NODESELECTOR = (
    "[It] [sig-scheduling] SchedulerPredicates [Serial] validates that NodeSelector is respected if matching "
    "[Conformance]"
)
PREEMPTION = (
    "[It] [sig-scheduling] SchedulerPreemption [Serial] validates basic preemption works [Conformance]"
)


def run(scheduler: str, **statuses: str) -> RunResult:
    names = {"ns": NODESELECTOR, "pre": PREEMPTION}
    r = RunResult(scheduler)
    for key, status in statuses.items():
        r.specs[names[key]] = SpecResult(names[key], status, 1.0)
    return r


def test_junit_keeps_scheduling_specs_with_status_time_and_first_failure_line(tmp_path: Path) -> None:
    path = tmp_path / "junit_01.xml"
    path.write_text(JUNIT)
    specs = conformance.parse_junit(path)
    assert set(specs) == {
        NODESELECTOR,
        PREEMPTION,
        "[It] [sig-scheduling] Workload CRUD Tests Workload API availability [FeatureGate:GenericWorkload] [Alpha]",
    }
    assert specs[NODESELECTOR].status == "passed"
    assert specs[NODESELECTOR].seconds == 4.5
    assert specs[PREEMPTION].status == "failed"
    assert specs[PREEMPTION].message == "Timed out after 60s."
    skipped = [s for s in specs.values() if s.status == "skipped"]
    assert len(skipped) == 1


@pytest.mark.parametrize(
    ("full", "short"),
    [
        pytest.param(
            NODESELECTOR,
            "SchedulerPredicates validates that NodeSelector is respected if matching",
            id="junit",
        ),
        pytest.param(
            "[sig-scheduling] SchedulerPredicates [Serial] validates X [sig-scheduling, Serial]",
            "SchedulerPredicates validates X",
            id="ginkgo-v",
        ),
        pytest.param(
            "[It] [sig-scheduling] Workload CRUD Tests PodGroup API availability [FeatureGate:GenericWorkload] [Alpha]",
            "Workload CRUD Tests PodGroup API availability",
            id="feature-gate",
        ),
    ],
)
def test_short_name_drops_prefix_and_labels(full: str, short: str) -> None:
    assert conformance.short_name(full) == short


def test_summary_line_counts_specs_that_ran() -> None:
    runs = {
        "kube": run("kube-scheduler", ns="passed", pre="passed"),
        "py": run("pyscheduler", ns="passed", pre="failed"),
    }
    runs["kube"].specs["skipped one"] = SpecResult("skipped one", "skipped", 0.0)
    assert conformance.summary(runs) == "conformance: pyscheduler 1/2 passed, kube-scheduler 2/2 passed"


def test_regression_is_a_spec_kube_passes_and_we_do_not() -> None:
    runs = {
        "kube": run("kube-scheduler", ns="passed", pre="failed"),
        "py": run("pyscheduler", ns="failed", pre="passed"),
    }
    assert conformance.regressions(runs) == [NODESELECTOR]
    runs = {
        "kube": run("kube-scheduler", ns="failed", pre="failed"),
        "py": run("pyscheduler", ns="passed", pre="failed"),
    }
    assert conformance.regressions(runs) == []


def test_table_has_a_row_per_spec_with_both_statuses_and_seconds() -> None:
    runs = {
        "kube": run("kube-scheduler", ns="passed", pre="passed"),
        "py": run("pyscheduler", ns="passed", pre="failed"),
    }
    lines = conformance.table(runs).splitlines()
    assert lines[0].split()[:3] == ["spec", "kube", "py"]
    row = next(line for line in lines if "basic preemption" in line)
    assert row.split()[-5:] == ["passed", "failed", "1.0", "/", "1.0"]


def test_skip_regex_names_each_skip_literally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conformance, "SKIPS", {"a [b] (c)": "why"})
    assert conformance.skip_regex(None) == r"a\ \[b\]\ \(c\)"
    assert conformance.skip_regex("extra") == r"a\ \[b\]\ \(c\)|extra"
    monkeypatch.setattr(conformance, "SKIPS", {})
    assert conformance.skip_regex(None) is None


def test_rbac_refusals_ignore_events_in_terminating_namespaces() -> None:
    lines = [
        '{"event":"posting event failed","error":"HTTP 403 Forbidden: ... because it is being terminated"}',
        '{"event":"list failed","error":"HTTP 403 Forbidden: podgroups.scheduling.k8s.io is forbidden"}',
        '{"event":"scheduled","pod":"a/b"}',
    ]
    assert conformance.rbac_refusals("\n".join(lines)) == [lines[1]]
