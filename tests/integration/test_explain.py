"""``pyscheduler explain`` on the real local control plane, as a plugin author uses it: it answers with the
configuration the scheduler runs with (``--config`` or ``$PYSCHEDULER_CONFIG``, and says which), reports
a gated pod as gated, shows a plugin's exception with its traceback and exits non-zero, and for a bound
pod says where it would go now and how its node ranks.

The out-of-tree plugin is a real installed distribution as far as ``importlib.metadata`` is concerned: a
``.dist-info`` with an entry point, on ``PYTHONPATH``, so the daemon and ``explain`` load it as a user's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.daemon import SchedulerProcess
from pyscheduler.testing.kube import create, events_for, eventually, get_pod, scheduled_condition

pytestmark = pytest.mark.cluster

PLUGIN_SOURCE = textwrap.dedent(
    '''
    """PreferTier: a node's score is its ``tier`` label (a number); a node without one is a bug."""
    from pyscheduler.framework.registry import PluginSpec


    class PreferTier:
        name = "PreferTier"

        def __init__(self, args, handle):
            pass

        def score(self, state, pod, node_info):
            return int(node_info.node.labels["tier"]), None

        def score_extensions(self):
            return None


    PLUGIN = PluginSpec("PreferTier", PreferTier)
    '''
)
RAISING_LINE = 'return int(node_info.node.labels["tier"]), None'


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("plugin")
    (d / "prefer_tier.py").write_text(PLUGIN_SOURCE)
    info = d / "prefer_tier-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: prefer-tier\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pyscheduler.plugins]\nPreferTier = prefer_tier:PLUGIN\n")
    return d


@pytest.fixture
def nodes(cluster: Any) -> Iterator[Callable[..., list[str]]]:
    """``cluster.create_nodes``, and the nodes deleted after the test: a tainted or relabelled node left
    in the shared cluster would change other tests' answers."""
    made: list[str] = []

    def create_nodes(*args: Any, **kwargs: Any) -> list[str]:
        names: list[str] = cluster.create_nodes(*args, **kwargs)
        made.extend(names)
        return names

    yield create_nodes
    for name in made:
        cluster.request("DELETE", f"/api/v1/nodes/{name}")


def config(scheduler_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": scheduler_name,
                "plugins": {"score": {"enabled": [{"name": "PreferTier", "weight": 10}]}},
            }
        ],
    }


def env_for(plugin_path: Path, config_file: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYSCHEDULER_CONFIG"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(plugin_path), env.get("PYTHONPATH", "")) if p)
    if config_file is not None:
        env["PYSCHEDULER_CONFIG"] = str(config_file)
    return env


def explain(cluster: Any, pod: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pyscheduler.cli",
            "explain",
            pod,
            "--kubeconfig",
            str(cluster.kubeconfig),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
    )


def patch_node(cluster: Any, name: str, patch: dict[str, Any]) -> None:
    status, out = cluster.request(
        "PATCH", f"/api/v1/nodes/{name}", patch, content_type="application/merge-patch+json"
    )
    assert status == 200, out


def write_config(tmp_path: Path, scheduler_name: str) -> Path:
    f = tmp_path / "scheduler.yaml"
    f.write_text(json.dumps(config(scheduler_name)))
    return f


def test_a_raising_plugin_is_shown_with_its_traceback_and_a_nonzero_exit(  # type: ignore[no-untyped-def]
    cluster, nodes, ns: str, plugin_path: Path, tmp_path: Path
) -> None:
    nodes(2, prefix=f"{ns}-n", labels={"pool": ns}, cpu="4")  # no tier label
    sched = f"{ns}-sched"
    create(cluster, make_pod("p1", ns).scheduler(sched).node_selector({"pool": ns}).req(cpu="1").json())
    cfg = write_config(tmp_path, sched)
    out = explain(cluster, f"{ns}/p1", env_for(plugin_path, None), "--config", str(cfg))
    assert out.returncode == 3, out.stdout + out.stderr
    text = out.stdout
    assert f"config: {cfg} (from --config)" in text
    assert "ERROR: running Score plugins: plugin \"PreferTier\" failed with: KeyError: 'tier'" in text
    assert "Traceback (most recent call last):" in text
    assert re.search(rf'File ".*prefer_tier\.py", line \d+, in score\n\s+{re.escape(RAISING_LINE)}', text), (
        text
    )
    assert "2 node(s) fit." in text  # Filter ran; Score is what failed
    assert re.search(r"\n    PreferTier +\d+\.\d{3}  \(Score \d+\.\d{3}\)\n", text), text  # its time


def test_the_daemon_logs_the_traceback_once_and_the_event_names_the_type(  # type: ignore[no-untyped-def]
    cluster, nodes, ns: str, plugin_path: Path, tmp_path: Path
) -> None:
    nodes(2, prefix=f"{ns}-n", labels={"pool": ns}, cpu="4")  # no tier label: PreferTier raises
    sched = f"{ns}-sched"
    cfg = write_config(tmp_path, sched)
    message = "running Score plugins: plugin \"PreferTier\" failed with: KeyError: 'tier'"
    with SchedulerProcess(cluster.kubeconfig, None, env=env_for(plugin_path, cfg), name=f"boom-{ns}") as d:
        for i in range(3):
            create(cluster, make_pod(f"p{i}", ns).scheduler(sched).node_selector({"pool": ns}).json())
        for i in range(3):
            name = f"p{i}"

            def condition(name: str = name) -> dict[str, Any] | None:
                return scheduled_condition(get_pod(cluster, ns, name))

            cond = eventually(condition, what=f"{name} condition")
            assert cond is not None and cond["status"] == "False" and cond["message"] == message, cond
        eventually(lambda: events_for(cluster, ns, "p0", "FailedScheduling"), what="FailedScheduling")
        assert events_for(cluster, ns, "p0", "FailedScheduling")[0]["note"] == message
        assert d.alive()
        lines = d.log_lines()
        errors = [r for r in lines if r.get("level") == "error" and r.get("plugin") == "PreferTier"]
    retried = [r for r in lines if r.get("event") == "scheduling error" and r.get("pod") == f"{ns}/p0"]
    assert retried and all(r["level"] == "error" and r["reason"] == message for r in retried), retried
    # three pods, one site: one error line within the minute, with the type, the place and the traceback
    assert len(errors) == 1, errors
    e = errors[0]
    assert (
        e["extension_point"] == "Score" and e["exc_type"] == "KeyError" and e["error"] == "KeyError: 'tier'"
    )
    assert e["file"].endswith("prefer_tier.py") and e["function"] == "score"
    assert re.search(
        rf'prefer_tier\.py", line {e["line"]}, in score\n\s+{re.escape(RAISING_LINE)}', e["exception"]
    )


def test_without_a_config_it_warns_and_a_gated_pod_is_reported_with_its_gates(  # type: ignore[no-untyped-def]
    cluster, nodes, ns: str, plugin_path: Path
) -> None:
    nodes(1, prefix=f"{ns}-n", labels={"pool": ns}, cpu="4")
    create(
        cluster,
        make_pod("gated", ns)
        .scheduler("py-scheduler")
        .gate("example.com/quota")
        .gate("example.com/review")
        .node_selector({"pool": ns})
        .json(),
    )
    out = explain(cluster, f"{ns}/gated", env_for(plugin_path, None))
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "warning: no --config and no $PYSCHEDULER_CONFIG: this is the built-in default profile" in text
    assert (
        "gated by PreEnqueue plugin SchedulingGates: waiting for scheduling gates: "
        "[example.com/quota example.com/review]" in text
    ), text
    assert "scheduling gates: example.com/quota, example.com/review; the pod is not scheduled until" in text


def test_a_bound_pod_is_replayed_with_the_config_the_daemon_runs(  # type: ignore[no-untyped-def]
    cluster, nodes, ns: str, plugin_path: Path, tmp_path: Path
) -> None:
    sched = f"{ns}-sched"
    cfg = write_config(tmp_path, sched)
    nodes(1, prefix=f"{ns}-low", labels={"pool": ns, "tier": "1"}, cpu="4")
    nodes(1, prefix=f"{ns}-high", labels={"pool": ns, "tier": "9"}, cpu="4")
    env = env_for(plugin_path, cfg)
    # the daemon finds its configuration (and the plugin) through $PYSCHEDULER_CONFIG, as explain does
    with SchedulerProcess(cluster.kubeconfig, None, env=env, name=f"explain-{ns}"):
        create(cluster, make_pod("web", ns).scheduler(sched).node_selector({"pool": ns}).req(cpu="3").json())
        node = eventually(lambda: get_pod(cluster, ns, "web")["spec"].get("nodeName"), what="web bound")
    high = f"{ns}-high-0"
    assert node == high  # PreferTier at weight 10 decided

    out = explain(cluster, f"{ns}/web", env)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert f"(profile {sched}," in text and f"config: {cfg} (from $PYSCHEDULER_CONFIG)" in text
    assert f"bound to {high}; replayed as if pending" in text
    assert "x NodeName:" not in text  # its own nodeName is not held against it
    assert "2 node(s) fit." in text  # its 3 CPUs do not count against its own node
    assert f"it would go to {high} now." in text
    assert re.search(rf"{high} still fits: rank 1 of 2, score \d+ \(.*PreferTier 90", text), text

    # the node changes under it: first it ranks lower, then it would not take the pod at all
    patch_node(cluster, high, {"metadata": {"labels": {"tier": "0"}}})
    text = explain(cluster, f"{ns}/web", env).stdout
    assert f"{high} still fits: rank 2 of 2" in text, text
    assert f"it would go to {ns}-low-0 now." in text
    patch_node(
        cluster, high, {"spec": {"taints": [{"key": "drain", "value": "yes", "effect": "NoSchedule"}]}}
    )
    out = explain(cluster, f"{ns}/web", env)
    assert out.returncode == 0
    assert (
        f"warning: {high} would no longer accept the pod: TaintToleration: "
        "node(s) had untolerated taint(s)" in out.stdout
    ), out.stdout


# ------------------------------------------------------------------------------ --feature-gates (alpha API)

GANG_GATES = "GenericWorkload=true,GangScheduling=true"


@pytest.fixture(scope="module")
def alpha_cluster(cluster: Any) -> Iterator[Any]:
    """A second, small control plane serving the alpha scheduling.k8s.io/v1alpha2 API (PodGroups and
    ``spec.schedulingGroup``), as a cluster running gangs does; no KWOK: explain only reads."""
    from pyscheduler.testing.cluster import LocalCluster

    c = LocalCluster(
        with_kwok=False,
        name="alpha",
        apiserver_args=[f"--feature-gates={GANG_GATES}", "--runtime-config=scheduling.k8s.io/v1alpha2=true"],
        bin_dir=cluster.bin_dir,
    )
    c.start()
    try:
        yield c
    finally:
        c.stop()


def test_explain_runs_with_the_daemons_feature_gates(alpha_cluster: Any, plugin_path: Path) -> None:
    """``explain --feature-gates`` as the daemon's ``run --feature-gates``: the default profile gains
    GangScheduling, which reads the PodGroup and counts the group's pending pods; without the flag the
    answer is kube's default profile's, where nothing holds the pod."""
    from pyscheduler.testing.builders import make_node, make_pod_group

    c = alpha_cluster
    c.api("POST", "/api/v1/nodes", make_node("alpha-n1").capacity(cpu="4", memory="8Gi", pods=110).json())
    c.api(
        "POST",
        "/apis/scheduling.k8s.io/v1alpha2/namespaces/default/podgroups",
        make_pod_group("pg", min_count=2),
    )
    c.api(
        "POST", "/api/v1/namespaces/default/pods", make_pod("m1").scheduler("py-scheduler").group("pg").json()
    )
    env = env_for(plugin_path, None)
    out = explain(c, "default/m1", env, "--feature-gates", GANG_GATES)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "feature gates: GangScheduling=true,GenericWorkload=true" in out.stdout, out.stdout
    assert (
        "gated by PreEnqueue plugin GangScheduling: waiting for minCount pods from a gang to appear in "
        "scheduling queue" in out.stdout
    ), out.stdout
    c.api(
        "POST", "/api/v1/namespaces/default/pods", make_pod("m2").scheduler("py-scheduler").group("pg").json()
    )
    out = explain(c, "default/m1", env, "--feature-gates", GANG_GATES)
    assert out.returncode == 0 and "gated" not in out.stdout, out.stdout
    out = explain(c, "default/m1", env)  # kube's default gates: no GangScheduling in the profile
    assert out.returncode == 0 and "GangScheduling" not in out.stdout and "feature gates" not in out.stdout, (
        out.stdout
    )
    bad = explain(c, "default/m1", env, "--feature-gates", "WorkloadAwarePreemption=true," + GANG_GATES)
    assert bad.returncode == 2 and "pyscheduler does not implement workload-aware preemption" in bad.stderr
