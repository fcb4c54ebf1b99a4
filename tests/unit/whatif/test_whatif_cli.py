"""``pyscheduler snapshot``, ``simulate`` and ``capacity`` as a user runs them (the example files)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from pyscheduler.whatif.progress import ProgressBar

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "whatif"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyscheduler.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_snapshot_then_simulate_json_and_html(tmp_path: Path) -> None:
    snap = tmp_path / "snap.json.gz"
    out = cli("snapshot", "--snapshot", str(EXAMPLES / "cluster.yaml"), "-o", str(snap))
    assert out.returncode == 0, out.stderr
    assert "6 nodes, 19 bound pods, 0 pending pods" in out.stderr
    html = tmp_path / "report.html"
    out = cli(
        "simulate",
        "--snapshot",
        str(snap),
        "--add",
        str(EXAMPLES / "checkout.yaml"),
        "--drain",
        "node-1",
        "-o",
        "json",
        "--html",
        str(html),
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""  # no progress bar when stderr is not a terminal, no scheduler log lines
    d = json.loads(out.stdout)
    assert d["changes"] == ["drain node-1"]
    assert d["summary"]["pods_to_place"] == 11  # 3 displaced from node-1, 6 checkout replicas, 2 migrate pods
    migrate = [p for p in d["placements"] if p["pod"].startswith("shop/migrate")]
    assert all(p["node"] and p["priority"] == 100000 for p in migrate)
    assert all(p["node"] != "node-1" for p in d["placements"])
    assert html.read_text().startswith("<!doctype html>")


def test_simulate_text_and_compare() -> None:
    out = cli(
        "simulate",
        "--snapshot",
        str(EXAMPLES / "cluster.yaml"),
        "--add",
        str(EXAMPLES / "checkout.yaml"),
        "--compare",
        str(EXAMPLES / "least-allocated.yaml"),
        str(EXAMPLES / "most-allocated.yaml"),
    )
    assert out.returncode == 0, out.stderr
    assert "A: " in out.stdout and "B: " in out.stdout and "pod(s) placed differently" in out.stdout


def test_capacity_json() -> None:
    out = cli(
        "capacity", "--snapshot", str(EXAMPLES / "cluster.yaml"), str(EXAMPLES / "probe.yaml"), "-o", "json"
    )
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["pod"] == "shop/worker" and d["replicas"] > 0
    assert sum(d["per_node"].values()) == d["replicas"]
    assert d["stopped_by"] and all(isinstance(n, int) for n in d["stopped_by"].values())


def test_an_invalid_config_exits_2_with_the_field(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: 0\n"
    )
    out = cli("simulate", "--snapshot", str(EXAMPLES / "cluster.yaml"), "--config", str(cfg))
    assert out.returncode == 2
    assert "parallelism" in out.stderr and "Traceback" not in out.stderr


def test_bad_inputs_are_one_line_and_exit_1(tmp_path: Path) -> None:
    out = cli("simulate", "--snapshot", str(tmp_path / "absent"))
    assert out.returncode == 1 and out.stderr.strip().count("\n") == 0
    assert "no such file or directory" in out.stderr
    out = cli("simulate", "--snapshot", str(EXAMPLES / "cluster.yaml"), "--drain", "node-99")
    assert out.returncode == 1 and "--drain: no node 'node-99' in the snapshot" in out.stderr
    wl = tmp_path / "ds.yaml"
    wl.write_text("kind: DaemonSet\nmetadata: {name: d}\nspec: {}\n")
    out = cli("simulate", "--snapshot", str(EXAMPLES / "cluster.yaml"), "--add", str(wl))
    assert (
        out.returncode == 1 and "DaemonSets are not expanded" in out.stderr and "Traceback" not in out.stderr
    )


def test_progress_bar_draws_only_on_a_terminal() -> None:
    quiet = io.StringIO()
    ProgressBar("x", quiet)(5, 10)
    assert quiet.getvalue() == ""
    shown = io.StringIO()
    bar = ProgressBar("simulating", shown, force=True)
    bar(10, 10)
    bar.close()
    assert shown.getvalue().startswith("\rsimulating [##############################] 10/10 100%")
    assert shown.getvalue().endswith("\n")
