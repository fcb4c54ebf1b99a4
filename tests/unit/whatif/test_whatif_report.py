"""The HTML report: one self-contained file with the charts and the exact messages."""

from __future__ import annotations

import re

from pyscheduler.testing import make_node, make_pod
from pyscheduler.whatif.changes import Changes
from pyscheduler.whatif.report import NODE_BARS, comparison_html, simulation_html
from pyscheduler.whatif.simulate import SimulationResult, compare, simulate
from pyscheduler.whatif.snapshot import ClusterSnapshot
from pyscheduler.whatif.workloads import expand

ZONE = "topology.kubernetes.io/zone"


def run(nodes: int, **kw: object) -> SimulationResult:
    objs = [
        make_node(f"n{i}").capacity(cpu="2", memory="4Gi", pods=110).label(ZONE, f"z{i % 3}").json()
        for i in range(nodes)
    ]
    objs.append(make_pod("old").req(cpu="2").priority(0).node("n0").owner("ReplicaSet", "old").json())
    spec = {
        "priority": 10,
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}],
    }
    pods = [
        ("p.yaml", {"kind": "Pod", "metadata": {"name": f"big-<{i}>"}, "spec": spec})
        for i in range(nodes + 1)
    ]
    return simulate(ClusterSnapshot.from_objects(objs, "test"), workloads=expand(pods), **kw)  # type: ignore[arg-type]


def self_contained(html: str) -> None:
    assert "<script" not in html
    assert not re.search(r"""(src|href)=["']?https?:""", html)
    assert html.startswith("<!doctype html>") and html.rstrip().endswith("</html>")


def test_report_shows_nodes_zones_reasons_and_victims() -> None:
    r = run(4, changes=Changes(cordon=["n3"]))
    html = simulation_html(r)
    self_contained(html)
    assert html.count("<svg") == 3  # zones, nodes, reasons
    for name in ("n0", "n1", "n2", "z0", "z1", "z2", "default/old", "cordon n3"):
        assert name in html
    (text,) = r.unschedulable_groups()
    assert text.replace("'", "&#x27;") in html or text in html
    assert "big-&lt;0&gt;" in html and "big-<0>" not in html  # names are escaped


def test_many_nodes_are_shown_as_a_histogram() -> None:
    html = simulation_html(run(NODE_BARS + 5))
    assert "nodes per band of requested/allocatable" in html
    assert "90-100% requested" in html


def test_comparison_chart_names_both_configs() -> None:
    objs = [make_node(f"n{i}").capacity(cpu="4", memory="4Gi", pods=110).json() for i in range(2)]
    spec = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}
    pods = expand(
        [("p.yaml", {"kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": spec}) for i in range(2)]
    )
    c = compare(
        None, None, names=("first", "second"), snapshot=ClusterSnapshot.from_objects(objs), workloads=pods
    )
    html = comparison_html(c)
    self_contained(html)
    assert "Side by side" in html and "first" in html and "second" in html
    assert "fragmentation cpu after" in html
