"""``pyscheduler explain`` in-process (the cluster tests in tests/integration/test_explain.py drive the
command itself): which config it says it used, a raising plugin at PreFilter, Filter or Score reported with
its traceback, a gated pod named as gated, a bound pod replayed without its nodeName and its own usage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pyscheduler.cli import _duration, build_parser, config_path
from pyscheduler.config.load import API_VERSION, KIND, parse_config
from pyscheduler.explain import Explanation, explain
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod
from pyscheduler.plugins.registry import full_registry, plugin_extension_points
from pyscheduler.testing.builders import make_node, make_pod


class Tier:
    """Score = the node's ``tier`` label; ``fail_at`` makes one extension point raise instead."""

    name = "Tier"
    fail_at = ""

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[None, None]:
        if self.fail_at == "PreFilter":
            raise RuntimeError("pre-filter broke")
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if self.fail_at == "Filter":
            raise ValueError("filter broke")
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, None]:
        assert node_info.node is not None
        return int(node_info.node.labels["tier"]), None

    def score_extensions(self) -> None:
        return None


BUILT_IN = full_registry()


def registry(fail_at: str = "") -> dict[str, PluginSpec]:
    # a class, not a closure: the registry reads a plugin's extension points from its methods
    return {**BUILT_IN, "Tier": PluginSpec("Tier", type("Tier", (Tier,), {"fail_at": fail_at}))}


REGISTRY = registry()


def eps(name: str) -> set[str]:
    return plugin_extension_points(REGISTRY[name]) if name in REGISTRY else set()


def cfg(with_tier: bool = True) -> Any:
    data: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
    if with_tier:
        data["profiles"] = [
            {
                "schedulerName": "py-scheduler",
                "plugins": {"multiPoint": {"enabled": [{"name": "Tier", "weight": 10}]}},
            }
        ]
    return parse_config(data, REGISTRY, eps)


NODES = [
    make_node("a").capacity(cpu="4", pods=110).label("tier", "1").json(),
    make_node("b").capacity(cpu="4", pods=110).label("tier", "9").json(),
]


def run(
    pod: dict[str, Any], pods: Sequence[dict[str, Any]] = (), fail_at: str = "", **kw: Any
) -> Explanation:
    return explain(pod, NODES, list(pods), {}, cfg(), registry(fail_at), **kw)


def pod(name: str) -> Any:
    return make_pod(name).scheduler("py-scheduler")


def test_a_pending_pod_gets_scores_the_best_node_and_times_per_plugin() -> None:
    ex = run(pod("p").uid("p").req(cpu="1").json(), config_file="/etc/s.yaml", config_from="--config")
    text = ex.render()
    assert not ex.failed and ex.fits == ["a", "b"]
    assert "config: /etc/s.yaml (from --config)" in text
    assert "it would go to b now." in text
    assert "Tier 90" in text
    assert any(plugin == "Tier" and point == "Score" for point, plugin in ex.timings)


def test_the_default_profile_is_said_out_loud() -> None:
    ex = explain(pod("p").json(), NODES, [], {}, cfg(with_tier=False), REGISTRY)
    assert "warning: no --config and no $PYSCHEDULER_CONFIG" in ex.render()


@pytest.mark.parametrize(
    ("point", "message", "raised_in"),
    [
        ("PreFilter", 'running PreFilter plugin "Tier": RuntimeError: pre-filter broke', "in pre_filter"),
        ("Filter", 'running "Tier" filter plugin: ValueError: filter broke', "in filter"),
    ],
)
def test_a_raising_plugin_is_reported_with_its_traceback(point: str, message: str, raised_in: str) -> None:
    ex = run(pod("p").json(), fail_at=point)
    assert ex.failed and [e.message() for e in ex.errors] == [message]
    text = ex.render()
    assert f"ERROR: {message}" in text
    assert f'{__file__}", line' in text and raised_in in text
    assert "node(s) fit" not in text and "no node fits" not in text


def test_a_score_error_is_reported_not_swallowed() -> None:
    nodes = [make_node("c").capacity(cpu="4", pods=110).json()]  # no tier label
    ex = explain(pod("p").json(), nodes, [], {}, cfg(), REGISTRY)
    assert ex.failed
    assert "ERROR: running Score plugins: plugin \"Tier\" failed with: KeyError: 'tier'" in ex.render()


def test_a_gated_pod_is_reported_with_its_gates() -> None:
    ex = run(pod("p").gate("example.com/a").json())
    assert ex.gated is not None and ex.gated.plugin == "SchedulingGates"
    assert "scheduling gates: example.com/a;" in ex.render()


def test_a_bound_pod_is_replayed_without_its_node_name_and_its_own_usage() -> None:
    web = pod("web").uid("web").req(cpu="3").node("b").json()
    ex = run(web, pods=[web])
    assert ex.bound_to == "b" and ex.fits == ["a", "b"]  # its 3 CPUs are not counted against b
    assert "b still fits: rank 1 of 2" in ex.render()
    other = pod("other").uid("other").req(cpu="2").node("b").json()
    ex = run(web, pods=[web, other])
    assert "warning: b would no longer accept the pod: NodeResourcesFit: Insufficient cpu" in ex.render()
    assert "it would go to a now." in ex.render()


def test_config_is_found_as_run_finds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSCHEDULER_CONFIG", raising=False)
    assert config_path(None) == (None, "")
    assert config_path("x.yaml") == ("x.yaml", "--config")
    monkeypatch.setenv("PYSCHEDULER_CONFIG", "/etc/env.yaml")
    assert config_path(None) == ("/etc/env.yaml", "$PYSCHEDULER_CONFIG")
    assert config_path("x.yaml") == ("x.yaml", "--config")  # the flag wins


def test_slow_plugin_threshold_flag() -> None:
    assert _duration("100ms") == pytest.approx(0.1) and _duration("2s") == 2.0 and _duration("0") == 0.0
    args = build_parser().parse_args(["run"])
    assert args.slow_plugin_threshold == pytest.approx(0.1)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--slow-plugin-threshold", "100"])  # no unit: ambiguous


def test_dra_verdicts_per_node() -> None:
    """A pod with a claim: the node publishing a free device fits, the other says kube's DRA reason."""
    from pyscheduler.testing.dra import device, device_class, exactly, resource_claim, resource_slice

    objects = {
        "DeviceClass": [device_class("gpu", driver="gpu.example.com")],
        "ResourceSlice": [resource_slice("b-gpus", "gpu.example.com", [device("gpu-0")], node="b")],
        "ResourceClaim": [resource_claim("c", exactly("r", "gpu"))],
    }
    ex = explain(pod("p").resource_claim("gpu", claim="c").json(), NODES, [], objects, cfg(), REGISTRY)
    assert ex.fits == ["b"]
    st = ex.rejected["a"]
    assert (st.plugin, st.message()) == ("DynamicResources", "cannot allocate all claims")
    assert "DynamicResources: cannot allocate all claims   [a]" in ex.render()
    # the claim allocated elsewhere by the time explain runs: both nodes say so
    taken = resource_claim("other", exactly("r", "gpu"))
    taken["status"] = {
        "allocation": {
            "devices": {
                "results": [{"request": "r", "driver": "gpu.example.com", "pool": "b", "device": "gpu-0"}]
            }
        }
    }
    objects["ResourceClaim"].append(taken)
    ex = explain(pod("p").resource_claim("gpu", claim="c").json(), NODES, [], objects, cfg(), REGISTRY)
    assert ex.fits == []
    assert ex.summary == "0/2 nodes are available: 2 cannot allocate all claims."


GANG_GATES = "GenericWorkload=true,GangScheduling=true"


def test_feature_gates_choose_the_default_profile_and_what_gang_scheduling_sees() -> None:
    """``explain --feature-gates`` runs what ``run --feature-gates`` runs: with the gang gates the default
    profile has GangScheduling, whose PreEnqueue counts the group's pending members."""
    from pyscheduler.config import feature_gates
    from pyscheduler.testing import make_pod_group

    default = {"apiVersion": API_VERSION, "kind": KIND}
    groups = {"PodGroup": [make_pod_group("pg", min_count=2)]}
    alone = pod("p1").uid("p1").req(cpu="1").group("pg").json()
    sibling = pod("p2").uid("p2").req(cpu="1").group("pg").json()

    gates = feature_gates.parse(GANG_GATES)
    with feature_gates.overridden(gates):  # as cmd_explain sets them, before the configuration loads
        config = parse_config(default, BUILT_IN, lambda n: plugin_extension_points(BUILT_IN[n]))
    ex = explain(alone, NODES, [alone], groups, config, BUILT_IN, gates=gates)
    assert ex.gated is not None and ex.gated.plugin == "GangScheduling"
    assert ex.gated.message() == "waiting for minCount pods from a gang to appear in scheduling queue"
    text = ex.render()
    assert "feature gates: " in text and "GangScheduling=true" in text
    ex = explain(alone, NODES, [alone, sibling], groups, config, BUILT_IN, gates=gates)
    assert ex.gated is None and ex.fits == ["a", "b"]

    # kube's defaults (the gang gates off): no GangScheduling in the profile, nothing holds the pod
    config = parse_config(default, BUILT_IN, lambda n: plugin_extension_points(BUILT_IN[n]))
    ex = explain(alone, NODES, [alone], groups, config, BUILT_IN, gates=feature_gates.parse(""))
    assert ex.gated is None and ex.fits == ["a", "b"] and "feature gates" not in ex.render()


@pytest.mark.parametrize(
    "command",
    [["explain", "ns/p"], ["simulate", "--snapshot", "s"], ["capacity", "p.yaml", "--snapshot", "s"]],
)
def test_explain_and_the_what_if_commands_take_the_daemons_feature_gates(command: list[str]) -> None:
    args = build_parser().parse_args([*command, "--feature-gates", GANG_GATES])
    assert args.feature_gates == GANG_GATES
    assert build_parser().parse_args(command).feature_gates == ""


def test_an_invalid_feature_gate_stops_explain_before_it_reads_the_cluster(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = build_parser().parse_args(["explain", "ns/p", "--feature-gates", "NoSuchGate=true"])
    with pytest.raises(SystemExit) as e:
        args.fn(args)
    assert e.value.code == 2
    assert "invalid --feature-gates 'NoSuchGate=true'" in capsys.readouterr().err
