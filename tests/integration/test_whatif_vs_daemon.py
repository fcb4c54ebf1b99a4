"""Acceptance for issue #17: ``pyscheduler simulate`` decides what the daemon decides.

The snapshot is taken from the real control plane with ``pyscheduler snapshot --from-cluster`` (list only);
``pyscheduler simulate`` then places a workload file on it, in process. The same workload is then created
on the cluster, where ``pyscheduler run`` schedules it (a Deployment's pods made by the real ReplicaSet
controller). Compared: every pod the daemon placed is placed by simulate (feasibility), the nodes are the
same where simulate saw no tie at the top score (kube breaks ties at random), preemption evicts the same
victim, and an unschedulable pod gets the very FailedScheduling text the daemon posted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.cluster import LocalCluster
from pyscheduler.testing.daemon import SchedulerProcess
from pyscheduler.testing.kube import create, events_for, eventually, get_pod, list_pods, node_of
from pyscheduler.whatif.snapshot import ClusterSnapshot

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def daemon(cluster: LocalCluster) -> Iterator[SchedulerProcess]:
    with SchedulerProcess(cluster.kubeconfig, None) as d:
        yield d
        assert d.alive(), f"the daemon died during the tests:\n{d.log_tail()}"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pyscheduler.cli", *args], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return out


def take_snapshot(cluster: LocalCluster, ns: str, path: Path) -> None:
    """``pyscheduler snapshot --from-cluster``; pending pods other tests may have left elsewhere are
    dropped (the daemon retries them too, which this comparison is not about)."""
    cli("snapshot", "--from-cluster", "--kubeconfig", str(cluster.kubeconfig), "-o", str(path))
    snap = ClusterSnapshot.load(path)
    snap.pods = [p for p in snap.pods if p["spec"].get("nodeName") or p["metadata"]["namespace"] == ns]
    snap.save(path)


def simulate(snapshot: Path, workload: Path) -> dict[str, Any]:
    out = cli("simulate", "--snapshot", str(snapshot), "--add", str(workload), "-o", "json")
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def pod(ns: str, name: str) -> Any:
    return make_pod(name, ns).scheduler("py-scheduler").node_selector({"pool": ns})


def deployment(ns: str, name: str, replicas: int, cpu: str, memory: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "schedulerName": "py-scheduler",
                    "nodeSelector": {"pool": ns},
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}},
                        }
                    ],
                },
            },
        },
    }


def bare(p: Any) -> dict[str, Any]:
    """A pod as a user writes it in a workload file: no uid, no status."""
    d: dict[str, Any] = p.json()
    d["metadata"].pop("uid", None)
    d.pop("status", None)
    return d


def test_simulate_places_a_workload_as_the_daemon_does(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess, tmp_path: Path
) -> None:
    (a,) = cluster.create_nodes(1, prefix=f"{ns}-a", cpu="3", memory="8Gi", labels={"pool": ns})
    cluster.create_nodes(1, prefix=f"{ns}-b", cpu="5", memory="12Gi", labels={"pool": ns})
    cluster.create_nodes(1, prefix=f"{ns}-c", cpu="8", memory="6Gi", labels={"pool": ns})
    create(cluster, pod(ns, "base").req(cpu="1", memory="1Gi").node(a).json())
    eventually(lambda: get_pod(cluster, ns, "base")["status"].get("phase") == "Running", what="base running")

    snapshot = tmp_path / "snapshot.json.gz"
    take_snapshot(cluster, ns, snapshot)
    sizes = [("500m", "1Gi"), ("1", "512Mi"), ("700m", "2Gi"), ("300m", "3Gi"), ("1200m", "256Mi")]
    singles = [bare(pod(ns, f"p{i}").req(cpu=cpu, memory=mem)) for i, (cpu, mem) in enumerate(sizes)]
    huge = bare(pod(ns, "huge").req(cpu="64"))
    web = deployment(ns, "web", 4, "600m", "700Mi")
    workload = tmp_path / "workload.yaml"
    workload.write_text(yaml.safe_dump_all([*singles, huge, web]))
    sim = simulate(snapshot, workload)
    placed = {p["pod"]: p for p in sim["placements"]}

    # The daemon, in the same order: the single pods one by one, the huge one, then the Deployment.
    got: dict[str, str] = {}
    for d in singles:
        name = d["metadata"]["name"]
        create(cluster, d)

        def bound(name: str = name) -> str:
            return node_of(cluster, ns, name)

        got[name] = eventually(bound, timeout=30, what=f"{name} bound")
    create(cluster, huge)
    ev = eventually(lambda: events_for(cluster, ns, "huge", "FailedScheduling"), what="huge FailedScheduling")
    cluster.api("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", web)

    def web_bound() -> list[str]:
        nodes = [p["spec"].get("nodeName", "") for p in list_pods(cluster, ns, "app=web")]
        return nodes if len(nodes) == 4 and all(nodes) else []

    web_nodes = eventually(web_bound, timeout=60, what="the Deployment's 4 pods bound")

    # feasibility: every pod the daemon placed, simulate placed
    for name in got:
        assert placed[f"{ns}/{name}"]["node"], (
            f"{name}: the daemon placed it on {got[name]}, simulate did not"
        )
    sim_web = [p for k, p in placed.items() if k.startswith(f"{ns}/web-")]
    assert len(sim_web) == 4 and all(p["node"] for p in sim_web)
    # placements, where simulate saw no tie at the top
    for name, node in got.items():
        p = placed[f"{ns}/{name}"]
        if not p.get("tied"):
            assert p["node"] == node, f"{name}: simulate {p['node']}, daemon {node}"
    assert sum(1 for n in got if not placed[f"{ns}/{n}"].get("tied")) >= 3, "too many ties to compare"
    # identical replicas: the same nodes, in any order (the node sizes leave no tie at the top)
    assert not any(p.get("tied") for p in sim_web)
    assert Counter(p["node"] for p in sim_web) == Counter(web_nodes)
    # the message
    assert placed[f"{ns}/huge"]["node"] is None
    assert placed[f"{ns}/huge"]["message"] == ev[0]["note"]


def test_simulate_preempts_the_same_victim(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess, tmp_path: Path
) -> None:
    (x,) = cluster.create_nodes(1, prefix=f"{ns}-x", cpu="2", memory="4Gi", labels={"pool": ns})
    (y,) = cluster.create_nodes(1, prefix=f"{ns}-y", cpu="2", memory="4Gi", labels={"pool": ns})
    for name, value in (("low", 1), ("mid", 500), ("high", 1000)):
        create(
            cluster,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"{ns}-{name}"},
                "value": value,
            },
        )
    create(cluster, pod(ns, "low").req(cpu="2").priority_class(f"{ns}-low").node(x).json())
    create(cluster, pod(ns, "mid").req(cpu="2").priority_class(f"{ns}-mid").node(y).json())
    snapshot = tmp_path / "snapshot.json"
    take_snapshot(cluster, ns, snapshot)
    # the priority comes from the snapshot's PriorityClass, as admission gives it on the cluster
    high = bare(pod(ns, "high").req(cpu="1").priority_class(f"{ns}-high"))
    workload = tmp_path / "high.yaml"
    workload.write_text(yaml.safe_dump(high))
    sim = simulate(snapshot, workload)

    create(cluster, high)
    got = eventually(lambda: node_of(cluster, ns, "high"), timeout=60, what="the preemptor bound")
    eventually(lambda: events_for(cluster, ns, "low", "Preempted"), timeout=30, what="low preempted")
    (p,) = sim["placements"]
    assert p["priority"] == 1000
    assert p["node"] == got == x
    assert p["victims"] == [f"{ns}/low"]
    assert [(v["pod"], v["node"], v["preempted_by"]) for v in sim["victims"]] == [
        (f"{ns}/low", x, f"{ns}/high")
    ]
    assert get_pod(cluster, ns, "mid")["spec"]["nodeName"] == y
