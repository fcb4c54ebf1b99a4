"""An out-of-tree plugin, installed as a package, schedules pods in the real daemon: "pip install
my-plugin, add its name to a profile, done".

The example package (examples/pyscheduler-plugin-zonequota) is built from a copy of its source tree
into what pip would put in site-packages: its wheel, unpacked, when this environment can build wheels
(setuptools >= 70.1 or the ``wheel`` package); otherwise a copy of the package next to the metadata that
setuptools' ``egg_info`` writes from the same pyproject.toml (entry_points.txt included). The daemon and
``pyscheduler plugins`` see that directory only through PYTHONPATH, so the shared .venv is never touched,
and importlib.metadata finds the ``pyscheduler.plugins`` entry point there exactly as it would after
``pip install``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.cluster import LocalCluster
from pyscheduler.testing.daemon import SchedulerProcess
from pyscheduler.testing.kube import create, events_for, eventually, get_pod, list_pods, scheduled_condition

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pyscheduler-plugin-zonequota"
PACKAGE = "pyscheduler_plugin_zonequota"
SCHEDULER = "py-scheduler-zonequota"
# The plugin's Filter reason (pyscheduler_plugin_zonequota.ERR_ZONE_FULL), as users read it in events.
ERR_ZONE_FULL = "node(s) were in a zone that already runs maxPodsPerZone pods of the namespace"


def _can_build_wheels() -> bool:
    if importlib.util.find_spec("wheel") is not None:
        return True
    try:
        major, minor = (int(x) for x in importlib.metadata.version("setuptools").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (70, 1)  # bdist_wheel moved into setuptools


def _run(argv: list[str], cwd: Path | None = None) -> None:
    out = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, f"{' '.join(argv)} failed:\n{out.stdout}\n{out.stderr}"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the installed example package: its code and its .dist-info/.egg-info."""
    work = tmp_path_factory.mktemp("zonequota")
    src = work / "src"  # building writes into the source tree: build from a copy
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", ".*"))
    target = work / "site"
    target.mkdir()
    if _can_build_wheels():
        wheels = work / "wheels"
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "-q",
                "-w",
                str(wheels),
                str(src),
            ]
        )
        (wheel,) = wheels.glob("*.whl")
        with zipfile.ZipFile(wheel) as z:
            z.extractall(target)
    else:
        _run(
            [
                sys.executable,
                "-c",
                "import setuptools; setuptools.setup()",
                "-q",
                "egg_info",
                "--egg-base",
                str(target),
            ],
            cwd=src,
        )
        shutil.copytree(src / PACKAGE, target / PACKAGE)
    assert list(target.glob("*-info/entry_points.txt")), sorted(p.name for p in target.iterdir())
    return target


def _env(site: Path) -> dict[str, str]:
    path = [str(site), *filter(None, [os.environ.get("PYTHONPATH", "")])]
    return {"PYTHONPATH": os.pathsep.join(path)}


def _config(args: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": SCHEDULER,
                "plugins": {"multiPoint": {"enabled": [{"name": "ZoneQuota"}]}},
                "pluginConfig": [{"name": "ZoneQuota", "args": args}],
            }
        ],
    }


def _installed_here() -> bool:
    return any(ep.name == "ZoneQuota" for ep in importlib.metadata.entry_points(group="pyscheduler.plugins"))


def _exit_at_start(config: dict[str, Any], env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``pyscheduler run`` with a config that must not start; its exit code and output."""
    daemon = SchedulerProcess(None, config, env=env, name="pyscheduler-bad-config")
    try:
        daemon.start(wait_ready=0)
        assert daemon.proc is not None
        code = daemon.proc.wait(60)
        return code, daemon.log_text()
    finally:
        daemon.kill()
        shutil.rmtree(daemon.dir, ignore_errors=True)


def test_pyscheduler_plugins_lists_the_installed_plugin(site: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pyscheduler.cli", "plugins"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **_env(site)},
    )
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line.split(None, 1)[1] for line in out.stdout.splitlines() if line.strip()}
    assert rows["ZoneQuota"] == "filter, preFilter, preScore, score"


def test_a_profile_naming_a_plugin_that_is_not_installed_stops_the_daemon_at_start() -> None:
    if _installed_here():
        pytest.skip("pyscheduler-plugin-zonequota is installed in this environment")
    code, log = _exit_at_start(_config({"maxPodsPerZone": 2}))
    assert code == 2, log
    assert 'profiles[0].plugins.multiPoint.enabled[0].name: unknown plugin "ZoneQuota"' in log


def test_bad_plugin_args_stop_the_daemon_at_start(site: Path) -> None:
    code, log = _exit_at_start(_config({"maxPodsPerZone": 0}), env=_env(site))
    assert code == 2, log
    assert "profiles[0].pluginConfig[0].args.maxPodsPerZone: must be at least 1, got 0" in log


def test_installed_plugin_keeps_pods_beyond_the_zone_quota_pending(
    cluster: LocalCluster, ns: str, site: Path
) -> None:
    zones = [f"{ns}-a", f"{ns}-b"]
    nodes = cluster.create_nodes(4, prefix=f"{ns}-n", labels={"pool": ns}, zones=zones)
    zone_of = {name: zones[i % len(zones)] for i, name in enumerate(nodes)}
    config = _config({"maxPodsPerZone": 2, "namespaces": [ns]})

    def placement() -> dict[str, str]:
        return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in list_pods(cluster, ns)}

    def per_zone() -> Counter[str]:
        return Counter(zone_of[node] for node in placement().values() if node)

    def pending_with_reason() -> list[str]:
        waiting = [name for name, node in placement().items() if not node]
        return [name for name in waiting if events_for(cluster, ns, name, "FailedScheduling")]

    with SchedulerProcess(cluster.kubeconfig, config, env=_env(site)) as daemon:
        for i in range(6):
            create(cluster, make_pod(f"p{i}", ns).scheduler(SCHEDULER).node_selector({"pool": ns}).json())

        eventually(
            lambda: len(pending_with_reason()) == 2 and sum(per_zone().values()) == 4,
            timeout=60,
            what="4 pods bound and 2 pending with FailedScheduling",
        )
        assert per_zone() == {zones[0]: 2, zones[1]: 2}
        for name in pending_with_reason():
            note = str(events_for(cluster, ns, name, "FailedScheduling")[0]["note"])
            assert f"4 {ERR_ZONE_FULL}" in note, note
            cond = scheduled_condition(get_pod(cluster, ns, name))
            assert cond is not None and cond["reason"] == "Unschedulable" and ERR_ZONE_FULL in cond["message"]

        # A pod of the namespace leaving a zone frees quota there: the plugin's queueing hint wakes a
        # pending pod, which lands in that zone.
        victim, node = next((name, node) for name, node in sorted(placement().items()) if node)
        cluster.api("DELETE", f"/api/v1/namespaces/{ns}/pods/{victim}?gracePeriodSeconds=0")
        eventually(
            lambda: victim not in placement() and sum(per_zone().values()) == 4,
            timeout=30,
            what="a pending pod bound after a pod of the namespace was deleted",
        )
        assert per_zone() == {zones[0]: 2, zones[1]: 2}, f"{victim} left {zone_of[node]}"
        assert daemon.alive(), daemon.log_tail()
