"""The upstream scheduler_perf course runner: what it reads from the pinned module and how it fills in a
workload, without a cluster (the cluster smoke is tests/integration/test_upstream_course_run.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from bench.upstream import course
from bench.upstream.__main__ import results_path
from bench.upstream.gotemplate import TemplateError, render
from bench.upstream.ops import _served_version, unsupported


@pytest.mark.parametrize(
    ("text", "index", "count", "want"),
    [
        pytest.param("name: pod-{{.Index}}", 7, 10, "name: pod-7", id="index"),
        pytest.param("n: {{ .Count }}", 0, 12, "n: 12", id="count-spaced"),
        pytest.param("zone: z{{Mod .Index 25}}", 27, 30, "zone: z2", id="mod"),
        pytest.param("g: {{ DivideInt .Index 10 }}", 35, 40, "g: 3", id="divide"),
        pytest.param("q: {{ DivideInt 30000 .Count }}", 0, 7, "q: 4285", id="divide-count"),
    ],
)
def test_templates_render_as_go_would(text: str, index: int, count: int, want: str) -> None:
    assert render(text, {"Index": index, "Count": count}) == want


@pytest.mark.parametrize(
    "text", ["{{ .Name }}", "{{ Upper .Index }}", "{{ Mod .Index 0 }}", "{{ Mod .Index }}"]
)
def test_template_forms_we_do_not_know_fail_loudly(text: str) -> None:
    with pytest.raises(TemplateError):
        render(text, {"Index": 1, "Count": 2})


def _case(tmp_path: Path) -> course.TestCase:
    d = tmp_path / "misc"
    d.mkdir()
    (d / "performance-config.yaml").write_text(
        """
- name: Basic
  defaultPodTemplatePath: ../templates/pod.yaml
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
  - opcode: createPods
    countParam: $measurePods
    collectMetrics: true
  workloads:
  - name: 5Nodes
    labels: [integration-test, short]
    params: {initNodes: 5, measurePods: 10}
  - name: 5000Nodes
    labels: [performance]
    threshold: 270
    featureGates: {SchedulerQueueingHints: false}
    params: {initNodes: 5000, measurePods: 10000}
  - name: Async
    labels: [performance]
    featureGates: {SchedulerAsyncAPICalls: true}
    params: {initNodes: 5, measurePods: 10}
"""
    )
    (cases,) = [course.load(tmp_path)]
    assert len(cases) == 1
    return cases[0]


def test_parameters_are_filled_in_per_workload(tmp_path: Path) -> None:
    tc = _case(tmp_path)
    ops = course.operations(tc, tc.workloads[0])
    assert ops == [
        {"opcode": "createNodes", "count": 5},
        {"opcode": "createPods", "count": 10, "collectMetrics": True},
    ]
    assert tc.folder == tmp_path / "misc"


def test_selection_by_label_filter_and_name(tmp_path: Path) -> None:
    tc = _case(tmp_path)
    names = lambda sel: [w.name for _, w in sel]  # noqa: E731
    assert names(course.select([tc], labels=["performance"])) == ["5000Nodes", "Async"]
    assert names(course.select([tc], labels=["integration-test", "-short"])) == []
    assert names(course.select([tc], workloads=["5Nodes"])) == ["5Nodes"]
    assert names(course.select([tc], names=["Other"])) == []


def test_workloads_1_36_cannot_run_say_why(tmp_path: Path) -> None:
    tc = _case(tmp_path)
    basic, locked, _async_calls = tc.workloads
    assert tc.skip_reason(basic) is None
    assert tc.skip_reason(locked) == (
        "feature gates SchedulerQueueingHints=false: "
        "cannot set feature gate SchedulerQueueingHints to false, feature is locked to true"
    )
    assert basic.threshold is None and locked.threshold == 270


def test_a_gate_off_its_default_runs_with_the_gate_passed_to_both_schedulers(tmp_path: Path) -> None:
    tc = _case(tmp_path)
    basic, _locked, async_calls = tc.workloads
    assert tc.skip_reason(async_calls) is None
    assert tc.gate_flag(async_calls) == "SchedulerAsyncAPICalls=true"
    assert tc.gate_flag(basic) == ""
    # pyscheduler accepts it, but the runner says its value changes nothing there
    assert tc.gates_not_acted_on(async_calls) == ["SchedulerAsyncAPICalls=true"]


def test_unknown_gates_and_unmet_dependencies_are_skipped_with_kubes_message(tmp_path: Path) -> None:
    tc = _case(tmp_path)
    wl = course.Workload("x", {}, feature_gates={"NoSuchGate": True})
    assert tc.skip_reason(wl) == "feature gates NoSuchGate=true: unrecognized feature gate: NoSuchGate"
    wl = course.Workload("y", {}, feature_gates={"GangScheduling": True})
    assert "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]" in (
        tc.skip_reason(wl) or ""
    )


def test_operations_not_translated_are_named() -> None:
    assert unsupported([{"opcode": "createPods", "count": 1}]) == []
    assert unsupported([{"opcode": "createPodsInBulk"}, {"opcode": "createPods", "steadyState": True}]) == [
        "op 0: opcode createPodsInBulk not translated yet",
    ]


def test_create_pod_sets_unrolls_into_one_create_pods_per_namespace(tmp_path: Path) -> None:
    d = tmp_path / "affinity"
    d.mkdir()
    (d / "performance-config.yaml").write_text(
        """
- name: Sets
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
  - opcode: createPodSets
    countParam: $initNamespaces
    namespacePrefix: init-ns
    createPodsOp:
      opcode: createPods
      countParam: $initPodsPerNamespace
  - opcode: createPods
    count: 1
    namespace: measure-ns-0
  workloads:
  - name: w
    params: {initNodes: 2, initNamespaces: 3, initPodsPerNamespace: 4}
"""
    )
    (tc,) = course.load(tmp_path)
    ops = course.operations(tc, tc.workloads[0])
    assert ops == [
        {"opcode": "createNodes", "count": 2},
        {"opcode": "createPods", "count": 4, "namespace": "init-ns-0"},
        {"opcode": "createPods", "count": 4, "namespace": "init-ns-1"},
        {"opcode": "createPods", "count": 4, "namespace": "init-ns-2"},
        {"opcode": "createPods", "count": 1, "namespace": "measure-ns-0"},
    ]
    assert unsupported(ops) == []


def test_the_pinned_course_is_read_from_the_module_cache() -> None:
    try:
        cases = course.load()
    except course.CourseError as e:
        pytest.skip(str(e))  # no module cache here: make controlplane downloads it (CI has it)
    names = {c.name for c in cases}
    assert {"SchedulingBasic", "SchedulingPodAntiAffinity", "TopologySpreading", "PreemptionBasic"} <= names
    runnable = [
        (tc, wl)
        for tc, wl in course.select(cases, labels=["performance"])
        if tc.skip_reason(wl) is None and not unsupported(course.operations(tc, wl))
    ]
    assert len(runnable) >= 20


def test_runs_ending_in_the_same_minute_keep_both_results_files(tmp_path: Path) -> None:
    # one invocation per test case: short workloads end within a minute of each other, and the second
    # results file once replaced the first
    now = dt.datetime(2026, 11, 26, 23, 18, 5, tzinfo=dt.UTC)
    first = results_path(tmp_path, now)
    first.write_text("{}")
    second = results_path(tmp_path, now)
    second.write_text("{}")
    assert first.name == "upstream-2026-11-26-2318.json"
    assert second.name == "upstream-2026-11-26-2318-2.json"
    assert results_path(tmp_path, now).name == "upstream-2026-11-26-2318-3.json"


def test_objects_of_an_older_version_of_a_served_group_are_posted_as_the_served_version() -> None:
    # upstream's DRA templates write DeviceClasses as resource.k8s.io/v1beta2; posted to the v1 path with
    # that apiVersion the API server refused them (HTTP 400), and ExtendedResourceScoring never started
    dc: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1beta2", "kind": "DeviceClass", "spec": {}}
    _served_version(dc)
    assert dc["apiVersion"] == "resource.k8s.io/v1"
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod"}
    _served_version(pod)
    assert pod["apiVersion"] == "v1"


def test_param_overrides_scale_a_workload_and_record_what_changed(tmp_path: Path) -> None:
    tc = _case(tmp_path)
    chosen = course.select([tc], workloads=["5000Nodes"])
    ((_, wl),) = course.override(chosen, course.parse_params(["initNodes=500", "measurePods=1000"]))
    assert wl.name == "5000Nodes" and wl.threshold == 270
    assert wl.overridden == {"initNodes": 500, "measurePods": 1000}
    assert course.operations(tc, wl) == [
        {"opcode": "createNodes", "count": 500},
        {"opcode": "createPods", "count": 1000, "collectMetrics": True},
    ]
    # a value equal to upstream's changes nothing and is not reported as a change
    ((_, same),) = course.override(chosen, {"initNodes": 5000})
    assert same.overridden == {}
    with pytest.raises(course.CourseError, match="nodes: not a parameter"):
        course.override(chosen, {"nodes": 5})
    for bad in (["initNodes"], ["initNodes=many"], ["=5"]):
        with pytest.raises(course.CourseError):
            course.parse_params(bad)
