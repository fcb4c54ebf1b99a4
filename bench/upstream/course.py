"""Finding and reading upstream's scheduler_perf test cases, and filling in a workload's parameters.

A test case (``- name: SchedulingPodAntiAffinity``) has a ``workloadTemplate`` (operations whose counts
and durations may name a parameter: ``countParam: $initNodes``) and ``workloads`` (``5Nodes``,
``5000Nodes_2000Pods``...) giving the parameters, labels (``integration-test``, ``performance``,
``short``), feature gates and sometimes a ``threshold`` on the average scheduling throughput. Template
paths in operations are relative to the config file's folder.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from pyscheduler.config import feature_gates

REPO = Path(__file__).resolve().parents[2]
GO_MOD = REPO / "e2e" / "controlplane" / "go.mod"


class CourseError(RuntimeError):
    pass


def pinned_version(go_mod: Path = GO_MOD) -> str:
    m = re.search(r"^\s*k8s\.io/kubernetes\s+(v\S+)", go_mod.read_text(), re.M)
    if not m:
        raise CourseError(f"{go_mod}: no k8s.io/kubernetes requirement")
    return m.group(1)


def module_cache() -> Path:
    env = os.environ.get("GOMODCACHE")
    if env:
        return Path(env)
    try:
        out = subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, timeout=30, check=True
        )
        if out.stdout.strip():
            return Path(out.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return Path.home() / "go" / "pkg" / "mod"


def course_dir(version: str | None = None) -> Path:
    """``test/integration/scheduler_perf`` of the pinned k8s.io/kubernetes in the module cache (downloaded
    there by ``make controlplane``)."""
    d = (
        module_cache()
        / "k8s.io"
        / f"kubernetes@{version or pinned_version()}"
        / "test"
        / "integration"
        / "scheduler_perf"
    )
    if not d.is_dir():
        raise CourseError(f"{d} not found: run `make controlplane` first (it downloads the pinned modules)")
    return d


@dataclass(frozen=True)
class Workload:
    name: str
    params: Mapping[str, Any]
    labels: frozenset[str] = frozenset()
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    threshold: float | Mapping[str, float] | None = None
    # parameters set by ``--param`` in place of upstream's (a scaled-down run, reported as such)
    overridden: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TestCase:
    name: str
    folder: Path  # where the config file is: template paths are relative to it
    workload_template: tuple[Mapping[str, Any], ...]
    workloads: tuple[Workload, ...]
    default_pod_template: str | None = None
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    labels: frozenset[str] = frozenset()

    def gates(self, wl: Workload) -> dict[str, bool]:
        return {**self.feature_gates, **wl.feature_gates}

    def gate_flag(self, wl: Workload) -> str:
        """The workload's gates as a ``--feature-gates`` value (both schedulers get it), "" for none."""
        return ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(self.gates(wl).items()))

    def skip_reason(self, wl: Workload) -> str | None:
        """Why this workload cannot run on our 1.36 control plane, or None: its feature gates are checked
        as both schedulers' ``--feature-gates`` would check them (pyscheduler's table of kube 1.36's gates:
        unknown gates, gates locked to the other value, unmet dependencies)."""
        flag = self.gate_flag(wl)
        try:
            feature_gates.parse(flag)
        except feature_gates.FeatureGateError as e:
            return f"feature gates {flag}: {e}"
        return None

    def gates_not_acted_on(self, wl: Workload) -> list[str]:
        """The workload's gates set off 1.36's default that pyscheduler accepts but whose value changes
        nothing in it (kube-scheduler may act on them): said beside the figures, not a reason to skip."""
        return [
            f"{k}={'true' if v else 'false'}"
            for k, v in sorted(self.gates(wl).items())
            if k in feature_gates.KNOWN
            and v != feature_gates.KNOWN[k].default
            and k not in feature_gates.ACTED_ON
        ]


def _workload(raw: Mapping[str, Any]) -> Workload:
    return Workload(
        name=str(raw["name"]),
        params=dict(raw.get("params") or {}),
        labels=frozenset(raw.get("labels") or ()),
        feature_gates={str(k): bool(v) for k, v in (raw.get("featureGates") or {}).items()},
        threshold=raw.get("threshold"),
    )


def load(root: Path | None = None) -> list[TestCase]:
    """Every test case of every ``performance-config.yaml`` under ``root`` (any depth: the DRA ones live in
    ``dra/<feature>/``), by path, then in file order."""
    root = root or course_dir()
    cases: list[TestCase] = []
    for path in sorted(root.glob("**/performance-config.yaml")):
        for raw in yaml.safe_load(path.read_text()) or ():
            cases.append(
                TestCase(
                    name=str(raw["name"]),
                    folder=path.parent,
                    workload_template=tuple(raw.get("workloadTemplate") or ()),
                    workloads=tuple(_workload(w) for w in raw.get("workloads") or ()),
                    default_pod_template=raw.get("defaultPodTemplatePath"),
                    feature_gates={str(k): bool(v) for k, v in (raw.get("featureGates") or {}).items()},
                    labels=frozenset(raw.get("labels") or ()),
                )
            )
    return cases


def parse_params(specs: Sequence[str]) -> dict[str, int]:
    """``["nodes=500", "measurePods=1000"]`` (``--param``) as {name: int}; upstream's counts are integers."""
    out: dict[str, int] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name.strip():
            raise CourseError(f"--param {spec!r}: want NAME=INTEGER")
        try:
            out[name.strip()] = int(value)
        except ValueError:
            raise CourseError(f"--param {spec!r}: {value!r} is not an integer") from None
    return out


def override(
    chosen: Sequence[tuple[TestCase, Workload]], params: Mapping[str, int]
) -> list[tuple[TestCase, Workload]]:
    """The chosen workloads with ``params`` in place of upstream's values (``--param``: a workload that
    only exists at a size this machine cannot run, run smaller with the same operations and templates).
    Each workload keeps its name and records what was changed (``overridden``), so a report can say the
    run was scaled; a name no chosen workload has is an error, not silently ignored."""
    if not params:
        return list(chosen)
    unknown = [n for n in params if not any(n in wl.params for _, wl in chosen)]
    if unknown:
        raise CourseError(f"--param {', '.join(unknown)}: not a parameter of the selected workloads")
    out = []
    for tc, wl in chosen:
        mine = {n: v for n, v in params.items() if n in wl.params and wl.params[n] != v}
        if mine:
            wl = replace(wl, params={**wl.params, **mine}, overridden=mine)
        out.append((tc, wl))
    return out


def _fill(value: Any, params: Mapping[str, Any], where: str) -> Any:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k.endswith("Param") and isinstance(v, str) and v.startswith("$"):
                name = v[1:]
                if name not in params:
                    raise CourseError(f"{where}.{k}: parameter {v} is not set by the workload")
                out[k[: -len("Param")]] = params[name]
            else:
                out[k] = _fill(v, params, f"{where}.{k}")
        return out
    if isinstance(value, list):
        return [_fill(v, params, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def operations(tc: TestCase, wl: Workload) -> list[dict[str, Any]]:
    """The test case's operations with the workload's parameters filled in (``countParam: $n`` becomes
    ``count: <n>``, likewise every ``*Param``)."""
    filled = [
        _fill(op, wl.params, f"{tc.name}/{wl.name}.workloadTemplate[{i}]")
        for i, op in enumerate(tc.workload_template)
    ]
    return unroll(filled)


def unroll(ops: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``createPodSets`` as upstream runs it: ``count`` copies of its ``createPodsOp``, the i-th in
    namespace ``<namespacePrefix>-<i>``, in place of the op (so later indices shift, as upstream's do)."""
    out: list[dict[str, Any]] = []
    for op in ops:
        if op.get("opcode") != "createPodSets":
            out.append(dict(op))
            continue
        inner = op.get("createPodsOp") or {}
        if inner.get("opcode", "createPods") != "createPods":
            raise CourseError(f"createPodSets: createPodsOp has opcode {inner.get('opcode')!r}")
        prefix = op.get("namespacePrefix") or ""
        for k in range(int(op.get("count") or 0)):
            out.append({**inner, "opcode": "createPods", "namespace": f"{prefix}-{k}"})
    return out


def label_matches(labels: Iterable[str], wanted: Sequence[str]) -> bool:
    """Upstream's label filter: every ``x`` must be present, every ``-x`` absent."""
    have = set(labels)
    return all((w[1:] not in have) if w.startswith("-") else (w in have) for w in wanted if w)


def select(
    cases: Sequence[TestCase],
    names: Sequence[str] = (),
    workloads: Sequence[str] = (),
    labels: Sequence[str] = (),
) -> list[tuple[TestCase, Workload]]:
    """(test case, workload) pairs by test-case name, workload name and label filter (empty: all)."""
    out = []
    for tc in cases:
        if names and tc.name not in names:
            continue
        for wl in tc.workloads:
            if workloads and wl.name not in workloads:
                continue
            if labels and not label_matches(tc.labels | wl.labels, labels):
                continue
            out.append((tc, wl))
    return out
