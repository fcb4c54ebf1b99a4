"""capacity: how many more copies fit (cluster-capacity's question), and what stops the next one."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.testing import make_node, make_pod
from pyscheduler.whatif.capacity import capacity, template_pod
from pyscheduler.whatif.changes import Changes
from pyscheduler.whatif.snapshot import ClusterSnapshot
from pyscheduler.whatif.workloads import WorkloadError

ZONE = "topology.kubernetes.io/zone"


def snap() -> ClusterSnapshot:
    nodes = [
        make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=110).label(ZONE, f"z{i % 2}").json()
        for i in range(3)
    ]
    tainted = make_node("gpu").capacity(cpu="64", memory="256Gi", pods=110).taint("gpu", "true").json()
    busy = make_pod("busy").req(cpu="3").node("n0").priority(-5).json()
    waiting = make_pod("waiting").req(cpu="4").json()
    return ClusterSnapshot.from_objects([*nodes, tainted, busy, waiting])


def probe(cpu: str = "1") -> dict[str, Any]:
    return template_pod(make_pod("probe").req(cpu=cpu).json(), snap())


def test_counts_copies_beside_running_pods_without_preempting() -> None:
    r = capacity(snap(), probe())
    # n0 has 1 CPU left (the low-priority pod is not evicted), n1 and n2 have 4 each; the tainted node none
    assert r.replicas == 9
    assert r.per_node == {"n0": 1, "n1": 4, "n2": 4}
    assert r.per_zone == {"z0": 5, "z1": 4}
    assert r.stopped_by == {"Insufficient cpu": 3, "node(s) had untolerated taint(s)": 1}
    assert r.message is not None and r.message.endswith(
        "preemption: not eligible due to preemptionPolicy=Never."
    )
    assert not r.limit_reached


def test_json_shape() -> None:
    d = capacity(snap(), probe("2")).to_dict()
    assert d["replicas"] == 4 and d["stopped_by"]["Insufficient cpu"] == 3
    assert set(d) >= {"replicas", "stopped_by", "message", "per_node", "per_zone", "limit_reached"}


def test_changes_apply_first() -> None:
    assert capacity(snap(), probe(), changes=Changes(add_nodes=2, like="n1")).replicas == 17
    assert capacity(snap(), probe(), changes=Changes(cordon=["n1", "n2"])).replicas == 1


def test_the_limit_stops_counting() -> None:
    r = capacity(snap(), probe("10m"), max_replicas=50)
    assert r.replicas == 50 and r.limit_reached and r.stopped_by == {}
    assert "stopped at the --max-replicas limit" in r.to_text()


def test_a_workload_template_is_used_as_the_pod() -> None:
    deploy = {
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 30,
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "4"}}}]}},
        },
    }
    assert capacity(snap(), template_pod(deploy, snap())).replicas == 2


def test_not_a_pod() -> None:
    with pytest.raises(WorkloadError, match="cannot expand a Service"):
        template_pod({"kind": "Service", "metadata": {"name": "s"}, "spec": {}}, snap())
