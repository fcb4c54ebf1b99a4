"""pyscheduler, run as ``pyscheduler run`` against the real control plane, does what kube-scheduler does.

Every test works on its own pool of KWOK nodes (label ``pool=<namespace>``) and pins its pods there with a
nodeSelector, so tests sharing the session's cluster and daemon do not see each other's capacity.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest

from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.cluster import LocalCluster
from pyscheduler.testing.daemon import SchedulerProcess
from pyscheduler.testing.kube import (
    create,
    events_for,
    eventually,
    get_pod,
    list_pods,
    node_of,
    node_usage,
    scheduled_condition,
)

SECOND_PROFILE = "py-scheduler-packed"

CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {"schedulerName": "py-scheduler"},
        {
            "schedulerName": SECOND_PROFILE,
            "pluginConfig": [
                {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
            ],
        },
    ],
}


@pytest.fixture(scope="module")
def daemon(cluster: LocalCluster) -> Iterator[SchedulerProcess]:
    with SchedulerProcess(cluster.kubeconfig, CONFIG) as d:
        yield d
        assert d.alive(), f"the daemon died during the tests:\n{d.log_tail()}"


def pool(cluster: LocalCluster, ns: str, count: int, **kw: object) -> list[str]:
    return cluster.create_nodes(count, prefix=f"{ns}-n", labels={"pool": ns}, **kw)  # type: ignore[arg-type]


def pod(ns: str, name: str, scheduler: str = "py-scheduler"):  # type: ignore[no-untyped-def]
    return make_pod(name, ns).scheduler(scheduler).node_selector({"pool": ns})


def bound(cluster: LocalCluster, ns: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in list_pods(cluster, ns)}


def test_200_mixed_pods_on_20_nodes_all_bound_and_no_node_overcommitted(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess
) -> None:
    nodes = pool(cluster, ns, 20, cpu="6", memory="24Gi", pods=30)
    rng = random.Random(7)
    sizes = [("100m", "128Mi"), ("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi")]
    total_cpu = 0
    for i in range(200):
        cpu, mem = sizes[rng.randrange(len(sizes))] if i % 10 else ("100m", "64Mi")
        total_cpu += int(float(cpu[:-1]) if cpu.endswith("m") else float(cpu) * 1000)
        create(cluster, pod(ns, f"p{i}").req(cpu=cpu, memory=mem).json())
    assert total_cpu <= 20 * 6000, "the workload must fit the pool"

    eventually(
        lambda: all(bound(cluster, ns).values()) and len(bound(cluster, ns)) == 200,
        timeout=120,
        what="all 200 pods bound",
    )
    for name, (cpu_used, cpu_alloc, mem_used, mem_alloc, n_pods, max_pods) in node_usage(
        cluster, nodes
    ).items():
        assert cpu_used <= cpu_alloc, f"{name} overcommitted on cpu: {cpu_used}m > {cpu_alloc}m"
        assert mem_used <= mem_alloc, f"{name} overcommitted on memory"
        assert n_pods <= max_pods, f"{name} has {n_pods} pods > {max_pods}"
    # Spread as LeastAllocated does: no node is left empty while others fill up.
    counts = [u[4] for u in node_usage(cluster, nodes).values()]
    assert min(counts) > 0
    ev = events_for(cluster, ns, "p0", "Scheduled")
    assert ev and ev[0]["note"] == f"Successfully assigned {ns}/p0 to {node_of(cluster, ns, 'p0')}"
    assert ev[0]["reportingController"] == "py-scheduler"


def test_pod_that_fits_nowhere_stays_pending_with_event_and_condition(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess
) -> None:
    pool(cluster, ns, 2, cpu="2", memory="4Gi")
    create(cluster, pod(ns, "huge").req(cpu="3").json())

    def failed() -> list[dict[str, object]]:
        return events_for(cluster, ns, "huge", "FailedScheduling")

    ev = eventually(failed, what="FailedScheduling event")[0]
    note = str(ev["note"])
    total = len(cluster.api("GET", "/api/v1/nodes")["items"])
    assert note.startswith(f"0/{total} nodes are available: ")
    assert "2 Insufficient cpu" in note
    assert "node(s) didn't match Pod's node affinity/selector" in note  # the other pools
    assert ev["type"] == "Warning"
    cond = eventually(lambda: scheduled_condition(get_pod(cluster, ns, "huge")))
    assert cond is not None
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    assert "Insufficient cpu" in cond["message"]
    assert node_of(cluster, ns, "huge") == ""


def test_deleting_a_pod_lets_a_waiting_one_in(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess
) -> None:
    (node,) = pool(cluster, ns, 1, cpu="1", memory="4Gi")
    create(cluster, pod(ns, "first").req(cpu="800m").json())
    eventually(lambda: node_of(cluster, ns, "first") == node)
    create(cluster, pod(ns, "second").req(cpu="800m").json())
    eventually(lambda: events_for(cluster, ns, "second", "FailedScheduling"))
    cluster.api("DELETE", f"/api/v1/namespaces/{ns}/pods/first")
    eventually(
        lambda: node_of(cluster, ns, "second") == node, timeout=10, what="waiting pod scheduled after delete"
    )


def test_higher_priority_pod_takes_the_only_slot(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess
) -> None:
    (node,) = pool(cluster, ns, 1, cpu="1", memory="4Gi")
    # Cordon the node so both pods wait; uncordoning wakes both and the queue orders them by priority.
    status, _ = cluster.request(
        "PATCH",
        f"/api/v1/nodes/{node}",
        b'{"spec":{"unschedulable":true}}',
        content_type="application/merge-patch+json",
    )
    assert status == 200
    for name, value in (("low", 1), ("high", 1000)):
        create(
            cluster,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"{ns}-{name}"},
                "value": value,
            },
        )
    create(cluster, pod(ns, "low").req(cpu="800m").priority_class(f"{ns}-low").json())
    create(cluster, pod(ns, "high").req(cpu="800m").priority_class(f"{ns}-high").json())
    eventually(
        lambda: (
            events_for(cluster, ns, "low", "FailedScheduling")
            and events_for(cluster, ns, "high", "FailedScheduling")
        )
    )
    note = events_for(cluster, ns, "low", "FailedScheduling")[0]["note"]
    assert "1 node(s) were unschedulable" in note
    # Let both first backoffs (1 s, ending at the end of their one-second window) run out, so that the
    # uncordon moves both pods to activeQ together and priority alone orders them. Uncordoned sooner, a
    # window boundary falling between the two failures sends "low" to activeQ while "high" is still
    # backing off (kube-scheduler's queue does the same), and "high" then preempts it.
    time.sleep(2.5)
    cluster.request(
        "PATCH",
        f"/api/v1/nodes/{node}",
        b'{"spec":{"unschedulable":false}}',
        content_type="application/merge-patch+json",
    )
    eventually(lambda: node_of(cluster, ns, "high") == node, timeout=20)
    assert node_of(cluster, ns, "low") == ""


def test_two_profiles_in_one_process_each_schedule_their_pods(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess
) -> None:
    pool(cluster, ns, 3, cpu="4", memory="8Gi")
    for i in range(3):
        create(cluster, pod(ns, f"spread{i}").req(cpu="500m").json())
    eventually(lambda: all(bound(cluster, ns).values()) and len(bound(cluster, ns)) == 3, what="3 pods bound")
    for i in range(3):
        create(cluster, pod(ns, f"packed{i}", SECOND_PROFILE).req(cpu="500m").json())
    eventually(lambda: all(bound(cluster, ns).values()) and len(bound(cluster, ns)) == 6, what="6 pods bound")
    b = bound(cluster, ns)
    # MostAllocated packs: once one node has a pod it scores highest for the next.
    assert len({b[f"packed{i}"] for i in range(3)}) == 1
    # LeastAllocated (default profile) spreads over the three nodes.
    assert len({b[f"spread{i}"] for i in range(3)}) == 3
    for i in range(3):
        assert events_for(cluster, ns, f"packed{i}", "Scheduled")


def test_pods_of_other_schedulers_are_untouched(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess
) -> None:
    pool(cluster, ns, 1)
    create(cluster, pod(ns, "foreign", "some-other-scheduler").json())
    create(cluster, pod(ns, "ours").json())
    eventually(lambda: node_of(cluster, ns, "ours"))
    p = get_pod(cluster, ns, "foreign")
    assert p["spec"].get("nodeName", "") == ""
    assert scheduled_condition(p) is None
    assert events_for(cluster, ns, "foreign") == []


def test_scheduling_gates_hold_a_pod_until_removed(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess
) -> None:
    (node,) = pool(cluster, ns, 1)
    create(cluster, pod(ns, "gated").gate("example.com/wait").json())
    create(cluster, pod(ns, "ungated").json())
    eventually(lambda: node_of(cluster, ns, "ungated") == node)
    assert node_of(cluster, ns, "gated") == ""
    status, _ = cluster.request(
        "PATCH",
        f"/api/v1/namespaces/{ns}/pods/gated",
        b'{"spec":{"schedulingGates":null}}',
        content_type="application/merge-patch+json",
    )
    assert status == 200
    eventually(lambda: node_of(cluster, ns, "gated") == node, timeout=10)


def test_daemon_exposes_kube_scheduler_metrics(
    cluster: LocalCluster, daemon: SchedulerProcess, ns: str
) -> None:
    pool(cluster, ns, 1)
    create(cluster, pod(ns, "m").json())
    eventually(lambda: node_of(cluster, ns, "m"))
    text = eventually(
        lambda: (
            'scheduler_schedule_attempts_total{profile="py-scheduler",result="scheduled"}' in daemon.metrics()
            and daemon.metrics()
        )
    )
    assert isinstance(text, str)
    for name in (
        "scheduler_pending_pods",
        "scheduler_framework_extension_point_duration_seconds",
        "scheduler_pod_scheduling_sli_duration_seconds",
        "scheduler_queue_incoming_pods_total",
    ):
        assert name in text


def _gauge(text: str, series: str) -> float:
    line = next((ln for ln in text.splitlines() if ln.startswith(series + " ")), None)
    return float(line.split()[-1]) if line else -1.0


def test_daemon_reports_its_cache_size(cluster: LocalCluster, daemon: SchedulerProcess, ns: str) -> None:
    # scheduler_cache_size was declared but never set (make chaos's soak read 0 nodes, 0 pods from it)
    pool(cluster, ns, 2)
    create(cluster, pod(ns, "c").json())
    eventually(lambda: node_of(cluster, ns, "c"))
    text = eventually(
        lambda: (t := daemon.metrics()) and _gauge(t, 'scheduler_cache_size{type="pods"}') >= 1 and t,
        timeout=10,
    )
    assert isinstance(text, str)
    assert _gauge(text, 'scheduler_cache_size{type="nodes"}') >= 2
    assert _gauge(text, 'scheduler_cache_size{type="assumed_pods"}') >= 0
