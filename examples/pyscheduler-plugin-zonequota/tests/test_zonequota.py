"""ZoneQuota's unit tests: table tests on records built with pyscheduler.testing, no cluster needed."""

from __future__ import annotations

from typing import Any

import pytest
from pyscheduler.framework.events import QueueingHint
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.status import Code, Status, code_of
from pyscheduler.framework.types import PodInfo
from pyscheduler.testing import Snapshot, make_cycle_state, make_handle, make_node, make_pod

from pyscheduler_plugin_zonequota import ERR_NO_ZONE, ERR_ZONE_FULL, PLUGIN, ZoneQuota, ZoneQuotaArgs, new

ZONE = "topology.kubernetes.io/zone"


def cluster(*placements: tuple[str, str], label: str = ZONE) -> Snapshot:
    """Nodes a1 and a2 in zone a, b1 in zone b, bare without a zone; one pod per (namespace, node)."""
    nodes = [
        make_node("a1").label(label, "a").obj(),
        make_node("a2").label(label, "a").obj(),
        make_node("b1").label(label, "b").obj(),
        make_node("bare").obj(),
    ]
    pods = [make_pod(f"p{i}", namespace).node(node).obj() for i, (namespace, node) in enumerate(placements)]
    return Snapshot.from_nodes(nodes, pods)


def plugin(snapshot: Snapshot, **args: Any) -> ZoneQuota:
    return new(ZoneQuotaArgs(**args), make_handle(snapshot))


def run_filter(p: ZoneQuota, snapshot: Snapshot, namespace: str, node: str) -> Status | None:
    """PreFilter then Filter, as the framework runs them: a PreFilter Skip means Filter does not run."""
    pod = make_pod("new", namespace).obj()
    state = make_cycle_state()
    _, status = p.pre_filter(state, pod, snapshot.list())
    if status is not None:
        return status
    node_info = snapshot.get(node)
    assert node_info is not None
    return p.filter(state, pod, node_info)


OK, FULL, NO_ZONE, SKIP = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.SKIP
TEAM_A1, TEAM_A2, TEAM_B1 = ("team", "a1"), ("team", "a2"), ("team", "b1")

# (pods already placed: (namespace, node), maxPodsPerZone, namespaces limited, node tried, expected code)
FILTER_CASES = {
    "empty zone": ([], 2, (), "a1", OK),
    "under quota": ([TEAM_A1], 2, (), "a1", OK),
    "the quota counts the zone, not the node": ([TEAM_A1, TEAM_A2], 2, (), "a1", FULL),
    "other namespaces do not count": ([("other", "a1"), ("other", "a2")], 2, (), "a1", OK),
    "another zone being full does not matter": ([TEAM_B1, TEAM_B1], 2, (), "a2", OK),
    "pods on nodes without a zone do not count": ([("team", "bare")] * 3, 1, (), "a1", OK),
    "a node without a zone": ([], 2, (), "bare", NO_ZONE),
    "a namespace not limited: PreFilter skips": ([TEAM_A1], 1, ("limited",), "a1", SKIP),
    "a namespace limited": ([TEAM_A1], 1, ("team",), "a2", FULL),
}


@pytest.mark.parametrize(
    ("placements", "quota", "namespaces", "node", "code"), FILTER_CASES.values(), ids=FILTER_CASES.keys()
)
def test_filter(
    placements: list[tuple[str, str]], quota: int, namespaces: tuple[str, ...], node: str, code: Code
) -> None:
    snapshot = cluster(*placements)
    p = plugin(snapshot, max_pods_per_zone=quota, namespaces=namespaces)
    status = run_filter(p, snapshot, "team", node)
    assert code_of(status) == code
    if code == FULL:
        assert status is not None and status.reasons == (ERR_ZONE_FULL,) and status.plugin == "ZoneQuota"
    if code == NO_ZONE:
        assert status is not None and status.reasons == (ERR_NO_ZONE,)


def test_zone_label_is_configurable() -> None:
    snapshot = cluster(("team", "a1"), label="example.com/rack")
    p = plugin(snapshot, max_pods_per_zone=1, zone_label="example.com/rack")
    assert code_of(run_filter(p, snapshot, "team", "a2")) == Code.UNSCHEDULABLE
    assert code_of(run_filter(p, snapshot, "team", "b1")) == Code.SUCCESS


@pytest.mark.parametrize(
    ("placements", "node", "score"),
    [
        pytest.param([], "a1", 100, id="empty zone"),
        pytest.param([("team", "a1")], "a2", 75, id="one of four"),
        pytest.param([("team", "b1")] * 4, "b1", 0, id="full zone"),
        pytest.param([("team", "b1")] * 6, "b1", 0, id="over quota (Filter not enabled)"),
        pytest.param([("other", "a1")] * 4, "a1", 100, id="other namespace"),
        pytest.param([], "bare", 0, id="no zone"),
    ],
)
def test_score(placements: list[tuple[str, str]], node: str, score: int) -> None:
    snapshot = cluster(*placements)
    p = plugin(snapshot, max_pods_per_zone=4)
    pod = make_pod("new", "team").obj()
    state = make_cycle_state()
    assert p.pre_score(state, pod, snapshot.list()) is None
    node_info = snapshot.get(node)
    assert node_info is not None
    assert p.score(state, pod, node_info) == (score, None)


def test_pre_score_skips_namespaces_left_out() -> None:
    p = plugin(cluster(), namespaces=("limited",))
    assert code_of(p.pre_score(make_cycle_state(), make_pod("new", "team").obj(), [])) == Code.SKIP


def test_filter_alone_counts_from_the_snapshot() -> None:
    """A profile may enable ZoneQuota at filter without preFilter: it then counts on its own."""
    snapshot = cluster(("team", "a1"))
    p = plugin(snapshot, max_pods_per_zone=1)
    node_info = snapshot.get("a2")
    assert node_info is not None
    status = p.filter(make_cycle_state(), make_pod("new", "team").obj(), node_info)
    assert code_of(status) == Code.UNSCHEDULABLE


def test_preemption_sees_a_removed_victim_on_a_copy_of_the_state() -> None:
    snapshot = cluster(("team", "a1"), ("team", "a2"))
    p = plugin(snapshot, max_pods_per_zone=2)
    pod = make_pod("new", "team").obj()
    state = make_cycle_state()
    p.pre_filter(state, pod, snapshot.list())
    a1 = snapshot.get("a1")
    assert a1 is not None
    victim = a1.pods[0]

    trial = state.clone()
    assert p.remove_pod(trial, pod, victim, a1) is None
    assert code_of(p.filter(trial, pod, a1)) == Code.SUCCESS  # room once the victim is gone
    assert code_of(p.filter(state, pod, a1)) == Code.UNSCHEDULABLE  # the real cycle is untouched

    assert p.add_pod(trial, pod, PodInfo(make_pod("nominated", "team").obj()), a1) is None
    assert code_of(p.filter(trial, pod, a1)) == Code.UNSCHEDULABLE


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ({"maxPodsPerZone": 0}, "args.maxPodsPerZone: must be at least 1, got 0"),
        ({"maxPodsPerZone": "3"}, "args.maxPodsPerZone: must be an integer, got '3'"),
        ({"zoneLabel": ""}, "args.zoneLabel: must not be empty"),
        ({"namespaces": ["a", ""]}, "args.namespaces[1]: must not be empty"),
        ({"maxPods": 3}, "args.maxPods: unknown field; known fields: maxPodsPerZone, namespaces, zoneLabel"),
    ],
)
def test_bad_args_name_the_field(raw: dict[str, Any], error: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert str(e.value) == error


def test_args_decode_from_camel_case_with_defaults() -> None:
    assert PLUGIN.decode(None, "args") == ZoneQuotaArgs()
    assert PLUGIN.decode({"maxPodsPerZone": 3, "namespaces": ["a"]}, "args") == ZoneQuotaArgs(
        max_pods_per_zone=3, namespaces=("a",)
    )


@pytest.mark.parametrize(
    ("deleted", "hint"),
    [
        pytest.param(make_pod("gone", "team").node("a1").obj(), QueueingHint.QUEUE, id="same namespace"),
        pytest.param(make_pod("gone", "other").node("a1").obj(), QueueingHint.SKIP, id="other namespace"),
        pytest.param(make_pod("gone", "team").obj(), QueueingHint.SKIP, id="never had a node"),
    ],
)
def test_pod_deleted_hint(deleted: Any, hint: QueueingHint) -> None:
    p = plugin(cluster())
    assert p.after_pod_deleted(make_pod("new", "team").obj(), deleted, None) == hint


@pytest.mark.parametrize(
    ("old", "new_node", "hint"),
    [
        pytest.param(None, make_node("n").label(ZONE, "c").obj(), QueueingHint.QUEUE, id="new node, zoned"),
        pytest.param(None, make_node("n").obj(), QueueingHint.SKIP, id="new node without a zone"),
        pytest.param(
            make_node("n").obj(), make_node("n").label(ZONE, "c").obj(), QueueingHint.QUEUE, id="zone added"
        ),
        pytest.param(
            make_node("n").label(ZONE, "c").obj(),
            make_node("n").label(ZONE, "c").label("x", "y").obj(),
            QueueingHint.SKIP,
            id="another label changed",
        ),
    ],
)
def test_node_change_hint(old: Any, new_node: Any, hint: QueueingHint) -> None:
    p = plugin(cluster())
    assert p.after_node_change(make_pod("new", "team").obj(), old, new_node) == hint
