"""Fuzz the path from API JSON to a scheduling decision: valid, nearly valid and garbage pods and nodes.

Whatever the shape, parsing either gives a record or raises MalformedObject (reported as
FailedScheduling for our pods), and a whole scheduling cycle never raises. The default run uses
1,000 examples; PYSCHEDULER_FUZZ_EXAMPLES=10000 (the long/chaos run) uses ten thousand.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyscheduler.app import App, build_app
from pyscheduler.config.load import parse_config
from pyscheduler.event_handlers import NodeHandler, PodHandler
from pyscheduler.framework.types import MalformedObject, Node, Pod
from pyscheduler.plugins.registry import full_registry, plugin_extension_points
from pyscheduler.testing.builders import make_node, make_pod

CYCLES = [0]
EXAMPLES = int(os.environ.get("PYSCHEDULER_FUZZ_EXAMPLES", "1000"))

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(["1e10000000", "-1", "9e18Ei", "8Ei", "1" * 300, " 1", "\u0661", "100m", "1Gi", "-m"]),
)
garbage = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    target = obj
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = value
    return obj


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    obj = copy.deepcopy(base)
    kind = draw(st.sampled_from(["valid", "nearly", "nearly", "garbage"]))
    if kind == "garbage":
        return draw(garbage)
    if kind == "nearly":
        for _ in range(draw(st.integers(1, 3))):
            paths = _paths(obj)
            obj = _set(obj, draw(st.sampled_from(paths)), draw(garbage))
    return obj


POD = (
    make_pod("p", "ns")
    .scheduler("py-scheduler")
    .req(cpu="500m", memory="1Gi")
    .label("app", "a")
    .priority(10)
    .json()
)
NODE = make_node("n1").capacity(cpu="4", memory="8Gi", pods=10).label("zone", "a").json()


@pytest.fixture(scope="module")
def app() -> App:
    reg = full_registry()
    cfg = parse_config(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"},
        reg,
        lambda n: plugin_extension_points(reg[n]),
    )

    class Quiet:
        def __getattr__(self, name: str) -> Any:
            return lambda *a, **k: True

    return build_app(cfg, reg, Quiet(), recorder=Quiet(), writer=Quiet())


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(node=mutated(NODE), pod=mutated(POD))
def test_any_pod_and_node_json_never_breaks_a_cycle(app: App, node: Any, pod: Any) -> None:
    try:
        n = Node.from_dict(node) if isinstance(node, dict) else None
    except MalformedObject:
        n = None
    if n is not None:
        NodeHandler(app).on_add(n)
    try:
        p = Pod.from_dict(pod) if isinstance(pod, dict) else None
    except MalformedObject as e:
        p = None
        app._on_malformed_pod(pod, e)  # reported, not fatal
    if p is not None:
        PodHandler(app).on_add(p)
    while app.scheduler.schedule_one(pop_timeout=0):
        CYCLES[0] += 1
    # Clean up so examples stay independent.
    if p is not None:
        PodHandler(app).on_delete(p)
    if n is not None:
        NodeHandler(app).on_delete(n)


def test_the_fuzz_ran_real_cycles() -> None:
    # Runs after the fuzz test (file order): the generated pods did reach the scheduling cycle.
    assert CYCLES[0] > EXAMPLES // 10, CYCLES
