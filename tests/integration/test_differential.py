"""The differential test against the real kube-scheduler, on a few scenarios (the full run is
``make differential``; see docs/differential.md).

The run starts its own control plane: the session's shared cluster holds other tests' nodes, which
kube-scheduler would see and which would change every scenario's decisions.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from bench.differential import main, parse_kube_scores, run_differential, write_report
from bench.scenarios import SCENARIOS, by_name
from pyscheduler.plugins.registry import IN_TREE_MODULES

SUBSET = (
    "fit-cpu",
    "taint-noschedule",
    "ipa-required-anti-affinity",
    "preempt-basic",
    "gang-none-fit",
    "dra-deallocation",
)


def test_scenarios_cover_every_default_plugin(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == len(SCENARIOS) >= 40
    defaults = {importlib.import_module(f"pyscheduler.plugins.{m}").PLUGIN.name for m in IN_TREE_MODULES}
    defaults.discard("DefaultBinder")  # binds every placed pod
    covered = {p for s in SCENARIOS for p in s.plugins}
    assert defaults <= covered, f"no scenario exercises {sorted(defaults - covered)}"


@pytest.mark.slow
@pytest.mark.cluster
def test_kube_scheduler_and_pyscheduler_agree_on_feasibility(tmp_path: Path) -> None:
    lines: list[str] = []
    report = run_differential([by_name()[n] for n in SUBSET], out=lines.append)

    assert not report.errors, "\n".join(s.error for s in report.errors)
    assert [s.name for s in report.scenarios] == list(SUBSET)
    assert report.n == sum(by_name()[n].placements() for n in SUBSET)
    disagreeing = [
        f"{p.scenario}/{p.pod}: kube={p.kube.describe()} py={p.py.describe()}"
        for p in report.all_pods()
        if not p.feasibility
    ]
    assert report.feasibility == report.n, "\n".join(disagreeing + lines)
    # Both sides preempted in preempt-basic: the same victim, on the same node.
    p1 = next(p for p in report.all_pods() if p.scenario == "preempt-basic" and p.pod == "p1")
    assert p1.kube.victims == p1.py.victims == ["diff-preempt-basic/low"]
    assert p1.kube.node == p1.py.node == "n1"
    # DRA: the one device serves p1, then (p1 deleted, its claim released) p3, then p5; p2 and p4 wait.
    dra = {p.pod: p for p in report.all_pods() if p.scenario == "dra-deallocation"}
    one_gpu = {"gpu": ["gpu gpu.diff.example.com/n1/gpu-0"]}
    for name in ("p1", "p3", "p5"):
        assert dra[name].kube.devices == dra[name].py.devices == one_gpu, name
        assert dra[name].devices is True
    assert not dra["p2"].kube.bound and not dra["p4"].py.bound

    # A gang that cannot fit (alpha gates on for both schedulers): nothing bound on either side, and the
    # same words for each pod.
    gang = [p for p in report.all_pods() if p.scenario == "gang-none-fit"]
    assert len(gang) == 3 and not any(p.kube.bound or p.py.bound for p in gang)
    assert all(p.message for p in gang), "\n".join(
        f"{p.pod}: {p.kube.message} | {p.py.message}" for p in gang
    )

    summary = report.summary_lines()
    assert (
        summary[0] == f"agreement: feasibility {report.n}/{report.n}, placement {report.placement}/{report.n}"
    )
    assert summary[1].startswith("messages: ")
    out = json.loads(write_report(report, tmp_path / "r.json").read_text())
    assert out["summary"]["pods"] == report.n
    assert len(out["pods"]) == report.n


def test_kube_scheduler_scores_are_read_from_the_last_scoring_cycle_of_each_pod() -> None:
    def line(pod: str, plugin: str, node: str, score: int) -> str:
        return (
            f'I1122 05:00:00.000000 1 schedule_one.go:982] "Plugin scored node for pod" pod="{pod}" '
            f'plugin="{plugin}" node="{node}" score={score}'
        )

    def final(pod: str, node: str, score: int) -> str:
        return (
            f'I1122 05:00:00.000000 1 schedule_one.go:1050] "Calculated node\'s final score for pod" '
            f'pod="{pod}" node="{node}" score={score}'
        )

    log = "\n".join(
        [
            line("ns/a", "TaintToleration", "n1", 300),
            line("ns/a", "NodeResourcesFit", "n1", 10),
            line("ns/a", "TaintToleration", "n2", 0),
            final("ns/a", "n1", 310),
            final("ns/a", "n2", 0),
            line("ns/b", "ImageLocality", "n1", 7),
            # a second cycle for ns/a (retried after a failure) replaces the first
            line("ns/a", "TaintToleration", "n2", 300),
            final("ns/a", "n2", 300),
        ]
    )
    assert parse_kube_scores(log) == {
        "ns/a": {"n2": {"TaintToleration": 300}},
        "ns/b": {"n1": {"ImageLocality": 7}},
    }
