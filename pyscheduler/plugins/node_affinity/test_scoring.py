"""NodeAffinity PreScore/Score/NormalizeScore over preferred terms (and addedAffinity's)."""

from typing import Any

import pytest

from pyscheduler.framework.interfaces import NodeScore
from pyscheduler.framework.status import Code
from pyscheduler.plugins.node_affinity import (
    NodeAffinity,
    NodeAffinityArgs,
)
from pyscheduler.plugins.node_affinity._fixtures import (
    PREF,
    expr,
    name_in,
    pref,
)
from pyscheduler.testing.builders import make_cycle_state, make_node, make_node_info, make_pod

# ------------------------------------------------------------------------------------------- Score


NODES = {
    "n1": {"zone": "a", "disk": "ssd"},
    "n2": {"zone": "a"},
    "n3": {"zone": "b", "disk": "ssd"},
    "n4": {},
}


@pytest.mark.parametrize(
    ("pod_pref", "added_pref", "expected"),
    [
        pytest.param(None, None, None, id="no preferences: Skip"),
        pytest.param([], None, {"n1": 0, "n2": 0, "n3": 0, "n4": 0}, id="empty list scores zero"),
        pytest.param(
            [pref(10, expr("zone", "In", "a"))], None, {"n1": 100, "n2": 100, "n3": 0, "n4": 0}, id="one term"
        ),
        pytest.param(
            [pref(30, expr("zone", "In", "a")), pref(70, expr("disk", "In", "ssd"))],
            None,
            {"n1": 100, "n2": 30, "n3": 70, "n4": 0},
            id="weights add up",
        ),
        pytest.param(
            [pref(2, expr("zone", "In", "a")), pref(1, expr("disk", "In", "ssd"))],
            None,
            {"n1": 100, "n2": 66, "n3": 33, "n4": 0},
            id="normalized with integer division",
        ),
        pytest.param(
            [pref(0, expr("zone", "In", "a")), pref(5, expr("disk", "Exists"))],
            None,
            {"n1": 100, "n2": 0, "n3": 100, "n4": 0},
            id="weight 0 ignored",
        ),
        pytest.param(
            [pref(5, expr("zone", "In", "a"), expr("disk", "Exists"))],
            None,
            {"n1": 100, "n2": 0, "n3": 0, "n4": 0},
            id="expressions ANDed",
        ),
        pytest.param(
            None,
            [pref(50, expr("disk", "In", "ssd"))],
            {"n1": 100, "n2": 0, "n3": 100, "n4": 0},
            id="added preferred alone",
        ),
        pytest.param(
            [pref(50, expr("zone", "In", "a"))],
            [pref(25, expr("disk", "In", "ssd"))],
            {"n1": 100, "n2": 66, "n3": 33, "n4": 0},
            id="added preferred adds to the pod's",
        ),
        pytest.param(
            [{"weight": 10, "preference": {"matchFields": [name_in("n4")]}}],
            None,
            {"n1": 0, "n2": 0, "n3": 0, "n4": 100},
            id="matchFields in preferences",
        ),
    ],
)
def test_score(
    pod_pref: list[dict[str, Any]] | None,
    added_pref: list[dict[str, Any]] | None,
    expected: dict[str, int] | None,
) -> None:
    added = {PREF: added_pref} if added_pref is not None else None
    pl = NodeAffinity(NodeAffinityArgs(added_affinity=added))
    b = make_pod("p")
    if pod_pref is not None:
        b.affinity({"nodeAffinity": {PREF: pod_pref}})
    pod = b.obj()
    infos = [make_node_info(make_node(n).labels(labels)) for n, labels in NODES.items()]
    state = make_cycle_state()
    status = pl.pre_score(state, pod, infos)
    if expected is None:
        assert status is not None and status.is_skip()
        return
    assert status is None
    scores = []
    for info in infos:
        s, st = pl.score(state, pod, info)
        assert st is None
        scores.append(NodeScore(info.name, s))
    ext = pl.score_extensions()
    assert ext is not None
    assert ext.normalize_score(state, pod, scores) is None
    assert {s.name: s.score for s in scores} == expected


def test_raw_score_and_score_without_pre_score() -> None:
    pod = (
        make_pod("p")
        .preferred_node_affinity(30, "zone", ["a"])
        .preferred_node_affinity(20, "disk", ["ssd"])
        .obj()
    )
    info = make_node_info(make_node("n1").labels(NODES["n1"]))
    assert NodeAffinity().score(make_cycle_state(), pod, info) == (50, None)


def test_pre_score_error_on_unparsable_preference() -> None:
    pod = make_pod("p").affinity({"nodeAffinity": {PREF: [pref(5, expr("cores", "Gt", "many"))]}}).obj()
    status = NodeAffinity().pre_score(make_cycle_state(), pod, [])
    assert status is not None and status.code == Code.ERROR
