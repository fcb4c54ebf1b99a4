"""DynamicResources' batch Filter (``filter_nodes``, what the framework calls): for a pod whose claims
are all allocated it checks each node against where the claims are usable, worked out once in
PreFilter. Its verdicts must be Filter's, node by node, and PostFilter must still see which claims were
not available somewhere."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pyscheduler.framework.selectors import NodeSelector
from pyscheduler.framework.status import Code
from pyscheduler.plugins.dynamic_resources.common import node_names
from pyscheduler.plugins.dynamic_resources.test_dynamic_resources import (
    ALLOC_NODE1,
    CLASS_OBJ,
    JSON,
    World,
    gpu_claim,
    gpus,
    pod_with,
    reason,
)

NOT_AVAILABLE = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "resourceclaim not available on the node")
NODES = ("node-1", "node-2", "node-3")


def _fields(*names: str) -> JSON:
    return {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]} for n in names]}


def _hostname(op: str, *values: str) -> JSON:
    return {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": op, "values": list(values)}]}


def _alloc(*terms: JSON, device: str = "gpu-0") -> JSON:
    alloc: JSON = copy.deepcopy(ALLOC_NODE1)
    alloc["devices"]["results"][0]["device"] = device
    alloc["nodeSelector"] = {"nodeSelectorTerms": list(terms)}
    return alloc


@pytest.mark.parametrize(
    ("terms", "want"),
    [
        pytest.param([_fields("node-1")], {"node-1"}, id="one node by name"),
        pytest.param([_fields("node-1"), _fields("node-3")], {"node-1", "node-3"}, id="terms are ORed"),
        pytest.param([_fields("node-1", "node-2")], set(), id="fields in a term are ANDed"),
        pytest.param([{}, _fields("node-2")], {"node-2"}, id="an empty term matches no node"),
        pytest.param([], set(), id="no terms match no node"),
        pytest.param([_hostname("In", "node-1")], None, id="a label expression: not by name"),
        pytest.param(
            [{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}]}],
            None,
            id="NotIn: not a set of names",
        ),
    ],
)
def test_node_names_agree_with_the_selector(terms: list[JSON], want: set[str] | None) -> None:
    selector = NodeSelector.parse({"nodeSelectorTerms": terms})
    got = node_names(selector)
    assert got == (None if want is None else frozenset(want))
    if got is not None:
        assert {n for n in NODES if selector.matches({"kubernetes.io/hostname": n}, n)} == got


@pytest.mark.parametrize(
    "claims",
    [
        pytest.param([_alloc(_fields("node-2"))], id="by name"),
        pytest.param([_alloc(_fields("node-1"), _fields("node-2"))], id="two nodes by name"),
        pytest.param([_alloc(_hostname("In", "node-2", "node-3"))], id="by hostname label"),
        pytest.param([_alloc(_hostname("NotIn", "node-1"))], id="NotIn a label"),
        pytest.param([_alloc({}, _fields("node-3"))], id="an empty term"),
        pytest.param(
            [_alloc(_fields("node-2")), _alloc(_hostname("In", "node-2", "node-3"), device="gpu-1")],
            id="two claims, usable together on one node",
        ),
        pytest.param(
            [_alloc(_fields("node-1")), _alloc(_fields("node-3"), device="gpu-1")],
            id="two claims, never usable together",
        ),
    ],
)
def test_filter_nodes_gives_filters_verdicts(claims: list[JSON]) -> None:
    objects = [gpu_claim(f"c{i}", status={"allocation": a}) for i, a in enumerate(claims)]
    names = [f"c{i}" for i in range(len(claims))]
    one = World(CLASS_OBJ, *copy.deepcopy(objects), nodes=NODES)
    many = World(CLASS_OBJ, *copy.deepcopy(objects), nodes=NODES)
    s1, _, by_node = one.cycle(pod_with(*names).obj())
    s2, _, batched = many.cycle(pod_with(*names).obj(), batch=True)
    assert {n: reason(v) for n, v in batched.items()} == {n: reason(v) for n, v in by_node.items()}
    assert NOT_AVAILABLE in {reason(v) for v in batched.values()}
    # what PostFilter reads: the claims that were not available on some node
    assert s2.get("DynamicResources").unavailable == s1.get("DynamicResources").unavailable != set()


def test_filter_nodes_records_the_unavailable_claim_for_post_filter() -> None:
    """Two claims, the second usable nowhere among the nodes: PostFilter deallocates that one (no pod
    uses it) after a batch Filter, as it does after Filter node by node."""
    w = World(
        CLASS_OBJ,
        gpus("node-1", 2),
        gpu_claim("a", status={"allocation": _alloc(_fields("node-1"), _fields("node-2"))}),
        gpu_claim("b", status={"allocation": _alloc(_fields("node-3"), device="gpu-1")}),
        nodes=("node-1", "node-2"),
    )
    pod = pod_with("a", "b").obj()
    state, _, verdicts = w.cycle(pod, batch=True)
    assert {n: reason(v) for n, v in verdicts.items()} == {"node-1": NOT_AVAILABLE, "node-2": NOT_AVAILABLE}
    _, st = w.plugin.post_filter(state, pod, {n: v for n, v in verdicts.items() if v is not None})
    assert reason(st) == (Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
    (kind, body), *_ = w.api.writes
    assert kind == "deallocate" and body["metadata"]["name"] == "b"


def test_filter_nodes_with_a_claim_to_allocate_runs_the_allocator() -> None:
    """One claim allocated on node-1, one to allocate: only node-1 has both, and Reserve gets the
    allocation the batch Filter computed there."""
    w = World(
        CLASS_OBJ,
        gpus("node-1", 2),
        gpus("node-2", 2),
        gpu_claim("a", status={"allocation": _alloc(_fields("node-1"))}),
        gpu_claim("b"),
    )
    pod = pod_with("a", "b").obj()
    state, _, verdicts = w.cycle(pod, batch=True)
    assert {n: reason(v) for n, v in verdicts.items()} == {"node-1": None, "node-2": NOT_AVAILABLE}
    assert w.plugin.reserve(state, pod, "node-1") is None
    assert w.plugin.pre_bind(state, pod, "node-1") is None
    allocated: Any = w.claim("b").allocation
    assert allocated["devices"]["results"][0]["pool"] == "node-1"
