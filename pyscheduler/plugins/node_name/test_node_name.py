import random

import pytest

from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.node_table import NodeBatch
from pyscheduler.framework.status import Code
from pyscheduler.framework.types import NodeInfo
from pyscheduler.plugins.node_name import ERR_REASON, NodeName
from pyscheduler.testing.builders import make_cycle_state, make_node, make_node_info, make_pod


@pytest.mark.parametrize(
    ("pod_node", "node", "code"),
    [
        ("", "n1", Code.SUCCESS),  # no name asked: any node
        ("n1", "n1", Code.SUCCESS),
        ("n2", "n1", Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
    ],
)
def test_filter(pod_node: str, node: str, code: Code) -> None:
    b = make_pod("p")
    if pod_node:
        b.node(pod_node)
    status = NodeName().filter(make_cycle_state(), b.obj(), make_node_info(make_node(node)))
    assert (status.code if status else Code.SUCCESS) == code
    if status:
        assert status.reasons == (ERR_REASON,)


@pytest.mark.parametrize("seed", range(300))
def test_batch_equals_node_by_node(seed: int) -> None:
    rng = random.Random(seed)
    snap = Snapshot.from_nodes([make_node(f"n{i}").obj() for i in range(rng.randint(1, 20))])
    infos = list(snap.list())
    sub = rng.sample(infos, rng.randint(0, len(infos)))
    pl = NodeName()
    b = make_pod("p")
    if rng.random() < 0.8:
        b.node(rng.choice([*(ni.name for ni in infos), "elsewhere"]))
    pod = b.obj()
    state = make_cycle_state()
    for nodes in (
        NodeBatch(infos, snap.node_table()),
        NodeBatch(sub, snap.node_table()),
        infos,
        [NodeInfo()],
    ):
        assert list(pl.filter_nodes(state, pod, nodes)) == [pl.filter(state, pod, ni) for ni in nodes]


def test_batch_known_answer() -> None:
    infos = [make_node_info(make_node(f"n{i}")) for i in range(4)]
    got = NodeName().filter_nodes(make_cycle_state(), make_pod("p").node("n2").obj(), infos)
    assert [s is None for s in got] == [False, False, True, False]
    assert all(s is None or s.reasons == (ERR_REASON,) for s in got)
