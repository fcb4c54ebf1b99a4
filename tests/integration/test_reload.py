"""``pyscheduler run --reload`` restarts the scheduler when an installed plugin's source changes.

A plugin is "installed" into a temporary site directory (its package next to a .dist-info carrying the
``pyscheduler.plugins`` entry point, found through PYTHONPATH, as after ``pip install``). The scheduler it
starts cannot reach a cluster (the kubeconfig does not exist), so each start ends with one error line:
counting those lines counts the starts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyscheduler.reload import plugin_source_dirs

pytest.importorskip("watchfiles")
pytestmark = pytest.mark.slow

MARK = "nope: no such file"  # the error line names the missing kubeconfig


def _install_plugin(site: Path) -> Path:
    pkg = site / "reloadme_plugin"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from pyscheduler.framework.registry import PluginSpec\n\n"
        "class ReloadMe:\n    name = 'ReloadMe'\n\n"
        "    def __init__(self, args, handle):\n        pass\n\n"
        "PLUGIN = PluginSpec('ReloadMe', ReloadMe, None, 'test plugin')\n"
    )
    dist = site / "reloadme_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: reloadme-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[pyscheduler.plugins]\nReloadMe = reloadme_plugin:PLUGIN\n")
    return pkg


def _wait_for(path: Path, count: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = path.read_text(errors="replace").count(MARK)
        if n >= count:
            return n
        time.sleep(0.2)
    return path.read_text(errors="replace").count(MARK)


def test_plugin_source_dirs_finds_the_installed_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = _install_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert pkg in plugin_source_dirs()


def test_reload_restarts_the_scheduler_when_plugin_source_changes(tmp_path: Path) -> None:
    pkg = _install_plugin(tmp_path / "site")
    out = tmp_path / "out.log"
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    argv = [
        sys.executable,
        "-m",
        "pyscheduler.cli",
        "run",
        "--reload",
        "--kubeconfig",
        str(tmp_path / "nope"),
    ]
    with out.open("w") as f:
        proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    try:
        assert _wait_for(out, 1, 60) == 1, out.read_text()
        time.sleep(1.0)  # the watcher is up before the first start; let the first child's exit settle
        (pkg / "__init__.py").write_text((pkg / "__init__.py").read_text() + "\n# edited\n")
        assert _wait_for(out, 2, 60) >= 2, out.read_text()
        (tmp_path / "site" / "unrelated.txt").write_text("not python")
        time.sleep(2.0)
        assert out.read_text(errors="replace").count(MARK) == 2, "a non-.py change must not restart"
        assert proc.poll() is None, "the watcher stays up while the child fails"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
