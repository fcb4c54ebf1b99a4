"""DefaultPreemption: how many candidate nodes are dry-run and from where, which one is picked, PDBs, the
resource precheck, args and the plugin spec."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pyscheduler.framework.interfaces import PostFilterPlugin, PreEnqueuePlugin
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, PodInfo
from pyscheduler.plugins.default_preemption import (
    NAME,
    PDB,
    PLUGIN,
    Candidate,
    DefaultPreemptionArgs,
    filter_pods_with_pdb_violation,
    pick_one_node_for_preemption,
)
from pyscheduler.plugins.default_preemption.test_default_preemption import (
    Env,
    code,
    node,
    pdb,
    vpod,
)
from pyscheduler.testing import make_pod

# ------------------------------------------------------------------------------------------ candidates


def test_dry_run_stops_once_enough_candidates_are_found() -> None:
    nodes = [node(f"n{i}", "2", vpod(f"v{i}", 1, "2")) for i in range(5)]
    env = Env(nodes, args=DefaultPreemptionArgs(0, 2))
    p = vpod("p", 10, "2").obj()
    state, _ = env.statuses(p)
    cands, statuses, errors = env.plugin.dry_run_preemption(state, p, nodes, [], offset=3, num_candidates=2)
    assert [c.name for c in cands] == ["n3", "n4"] and statuses == {} and errors == []
    cands, _, _ = env.plugin.dry_run_preemption(state, p, nodes, [], offset=4, num_candidates=2)
    assert [c.name for c in cands] == ["n4", "n0"]


def test_dry_run_goes_on_until_a_non_violating_candidate() -> None:
    nodes = [
        node("n0", "2", vpod("a", 1, "2", app="db")),
        node("n1", "2", vpod("b", 1, "2", app="db")),
        node("n2", "2", vpod("c", 1, "2")),
        node("n3", "2", vpod("d", 1, "2")),
    ]
    env = Env(nodes)
    p = vpod("p", 10, "2").obj()
    state, _ = env.statuses(p)
    pdbs = [PDB.from_dict(pdb("db", {"app": "db"}, 0))]
    cands, _, _ = env.plugin.dry_run_preemption(state, p, nodes, pdbs, offset=0, num_candidates=1)
    # two violating nodes were tried (only one kept), then the first non-violating one ends the search
    assert [(c.name, c.num_pdb_violations) for c in cands] == [("n2", 0), ("n0", 1)]


def test_random_offset_is_seeded() -> None:
    nodes = [node(f"n{i}", "2", vpod(f"v{i}", 1, "2")) for i in range(6)]
    picks = set()
    for seed in range(20):
        env = Env(nodes, args=DefaultPreemptionArgs(0, 1), seed=seed)
        offset = random.Random(seed).randrange(len(nodes))
        result, _ = env.post_filter(vpod("p", 10, "2").obj())
        assert result.nominated_node_name == f"n{offset}"
        picks.add(offset)
    assert len(picks) > 1


@pytest.mark.parametrize(
    ("nodes", "pct", "absolute", "want"),
    [
        pytest.param(50, 10, 100, 50, id="never more than the nodes"),  # never more than the nodes
        pytest.param(5000, 10, 100, 500, id="percentage of many nodes"),
        pytest.param(500, 10, 100, 100, id="absolute minimum"),
        pytest.param(1000, 0, 1, 1, id="zero percent one absolute"),
        pytest.param(1000, 100, 0, 1000, id="hundred percent"),
        pytest.param(999, 1, 0, 9, id="integer division"),  # integer division
    ],
)
def test_num_candidates(nodes: int, pct: int, absolute: int, want: int) -> None:
    assert DefaultPreemptionArgs(pct, absolute).num_candidates(nodes) == want


def _cand(name: str, prios_starts: list[tuple[int, float]], pdb_violations: int = 0) -> Candidate:
    victims = tuple(
        vpod(f"{name}-{i}", prio, created=start).obj() for i, (prio, start) in enumerate(prios_starts)
    )
    return Candidate(name, victims, pdb_violations)


@pytest.mark.parametrize(
    ("cands", "want"),
    [
        pytest.param([], None, id="no candidates"),
        pytest.param([_cand("a", [(5, 0)])], "a", id="one candidate"),
        pytest.param(
            [_cand("a", [(1, 0)], 1), _cand("b", [(9, 0)], 0)], "b", id="fewest PDB violations first"
        ),  # PDB violations first
        pytest.param(
            [_cand("a", [(5, 0)]), _cand("b", [(3, 0), (3, 0)])], "b", id="lower highest priority"
        ),  # lower highest priority
        pytest.param(
            [_cand("a", [(5, 0), (1, 0)]), _cand("b", [(5, 0), (2, 0)])], "a", id="smaller priority sum"
        ),  # smaller sum
        # negative priorities: the MaxInt32+1 offset keeps more victims from looking cheaper
        pytest.param(
            [_cand("a", [(-5, 0), (-5, 0)]), _cand("b", [(-5, 0)])], "b", id="negative priorities offset"
        ),
        pytest.param(
            [_cand("a", [(5, 0), (-(2**31), 0)]), _cand("b", [(5, 0)])], "b", id="same sum fewer victims"
        ),  # same sum: fewer victims
        pytest.param(
            [_cand("a", [(5, 100)]), _cand("b", [(5, 200)])], "b", id="latest start of top victims"
        ),  # latest start of top victims
        pytest.param(
            [_cand("a", [(5, 300), (1, 900)]), _cand("b", [(5, 200), (1, 999)])],
            "a",
            id="only top victims' start counts",
        ),  # only top ones count
        pytest.param(
            [_cand("a", [(5, 100)]), _cand("b", [(5, 100)])], "a", id="full tie the first"
        ),  # full tie: the first
    ],
)
def test_pick_one_node(cands: list[Candidate], want: str | None) -> None:
    got = pick_one_node_for_preemption(cands)
    assert (got.name if got else None) == want


# ------------------------------------------------------------------------------------------ PDBs


@pytest.mark.parametrize(
    ("pods", "pdbs", "violating"),
    [
        pytest.param(
            [("a", {"app": "db"})], [pdb("x", {"app": "db"}, 0)], ["a"], id="PDB with no disruptions left"
        ),
        pytest.param(
            [("a", {"app": "db"}), ("b", {"app": "db"})],
            [pdb("x", {"app": "db"}, 1)],
            ["b"],
            id="second pod over the budget",
        ),
        pytest.param(
            [("a", {"app": "db"})],
            [pdb("x", {"app": "db"}, 0, disrupted=("a",))],
            [],
            id="already disrupted pod",
        ),
        pytest.param([("a", {})], [pdb("x", {}, 0)], [], id="pod without labels"),  # no labels: no PDB
        pytest.param(
            [("a", {"app": "db"})], [pdb("x", {}, 0)], [], id="empty selector"
        ),  # empty selector matches nothing
        pytest.param(
            [("a", {"app": "db"})],
            [pdb("x", {"app": "db"}, 0, ns="other")],
            [],
            id="PDB in another namespace",
        ),
        pytest.param(
            [("a", {"app": "db", "t": "1"})],
            [pdb("x", {"app": "db"}, 5), pdb("y", {"t": "1"}, 0)],
            ["a"],
            id="one of two PDBs violated",
        ),
        pytest.param([("a", {"app": "web"})], [pdb("x", {"app": "db"}, 0)], [], id="PDB not matching"),
    ],
)
def test_filter_pods_with_pdb_violation(
    pods: list[tuple[str, dict[str, str]]], pdbs: list[dict[str, Any]], violating: list[str]
) -> None:
    infos = [PodInfo(make_pod(n).labels(lb).obj()) for n, lb in pods]
    v, nv = filter_pods_with_pdb_violation(infos, [PDB.from_dict(p) for p in pdbs])
    assert [pi.pod.name for pi in v] == violating
    assert [pi.pod.name for pi in nv] == [n for n, _ in pods if n not in violating]


def test_pdb_with_invalid_selector_matches_nothing() -> None:
    bad = pdb("x", {}, 0)
    bad["spec"]["selector"] = {"matchExpressions": [{"key": "app", "operator": "Bogus"}]}
    assert PDB.from_dict(bad).selector is None


def test_prefilter_extensions_see_removals_and_reprieves() -> None:
    env = Env([node("n1", "3", vpod("blk", 1, "1", blocker="true"), vpod("keep", 2, "1"))])
    env.post_filter(vpod("p", 10, "1").obj())
    assert env.blockers.calls == [
        ("remove", "blk"),
        ("remove", "keep"),
        ("add", "keep"),
        ("add", "blk"),
        ("remove", "blk"),
    ]


# ------------------------------------------------------------------------------------------ args & spec


def test_default_args() -> None:
    args = PLUGIN.decode(None, "args")
    assert args == DefaultPreemptionArgs(10, 100)
    assert PLUGIN.decode({"minCandidateNodesPercentage": 5, "minCandidateNodesAbsolute": 0}, "args") == (
        DefaultPreemptionArgs(5, 0)
    )


PCT, ABS = "minCandidateNodesPercentage", "minCandidateNodesAbsolute"


@pytest.mark.parametrize(
    ("raw", "path", "fragment"),
    [
        pytest.param(
            {PCT: -1},
            f"args.{PCT}",
            "Invalid value: -1: not in valid range [0, 100]",
            id="percentage below 0",
        ),
        pytest.param(
            {PCT: 101},
            f"args.{PCT}",
            "Invalid value: 101: not in valid range [0, 100]",
            id="percentage above 100",
        ),
        pytest.param(
            {ABS: -1}, f"args.{ABS}", "Invalid value: -1: not in valid range [0, inf)", id="absolute below 0"
        ),
        pytest.param(
            {PCT: 0, ABS: 0},
            f"args.{PCT}",
            "Invalid value: 0: cannot be zero at the same time as " + ABS,
            id="both zero",
        ),
        pytest.param({PCT: "10"}, f"args.{PCT}", "must be an integer", id="percentage as a string"),
        pytest.param({"minCandidateNodes": 1}, "args.minCandidateNodes", "unknown field", id="unknown field"),
    ],
)
def test_args_validation(raw: dict[str, Any], path: str, fragment: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert e.value.path == path and fragment in str(e.value)


def test_plugin_spec() -> None:
    assert PLUGIN.name == "DefaultPreemption" == NAME
    pl = PLUGIN.new(PLUGIN.decode(None, "args"), Env([node("n1")]).plugin.handle)
    assert isinstance(pl, PostFilterPlugin) and isinstance(pl, PreEnqueuePlugin)


@pytest.mark.parametrize(
    ("n1_status", "want"),
    [
        pytest.param(Status.unschedulable("Insufficient cpu"), "n1", id="unschedulable node is tried"),
        pytest.param(
            Status.unresolvable("node(s) didn't match Pod's node affinity/selector"),
            "n2",
            id="unresolvable node is not",
        ),
        pytest.param(
            None, "n2", id="node without a status is not"
        ),  # a node without a status (excluded by PreFilter) cannot help either
    ],
)
def test_only_unschedulable_nodes_are_tried(n1_status: Status | None, want: str) -> None:
    env = Env([node("n1", "2", vpod("a", 1, "2")), node("n2", "2", vpod("b", 5, "2"))])
    p = vpod("p", 10, "2").obj()
    state, statuses = env.statuses(p)
    if n1_status is None:
        del statuses["n1"]
    else:
        statuses["n1"] = n1_status
    result, status = env.plugin.post_filter(state, p, statuses)
    assert code(status) == Code.SUCCESS and result is not None and result.nominated_node_name == want


# ------------------------------------------------------------------------------------------ resource precheck


def _too_small() -> NodeInfo:
    # 1 of its 2 CPUs is held by a pod the preemptor cannot evict: it cannot fit a 2-CPU pod
    return node("small", "2", vpod("hi", 20, "1"), vpod("lo", 1, "1"))


def test_nodes_too_small_even_without_victims_are_not_dry_run() -> None:
    env = Env([_too_small(), node("ok", "2", vpod("v", 1, "2"))])
    p = vpod("p", 10, "2").obj()
    state, _ = env.statuses(p)
    before = sum(env.framework.evaluations.values())
    cands, _, errors = env.plugin.dry_run_preemption(state, p, env.nodes, [], offset=0, num_candidates=2)
    assert [(c.name, [v.name for v in c.victims]) for c in cands] == [("ok", ["v"])] and errors == []
    # only "ok" was dry-run: a Filter pass with its victim gone (Blocked, NodeResourcesFit, Blockers)
    # and one with it put back (rejected by NodeResourcesFit); "small" would have added 2 more
    assert sum(env.framework.evaluations.values()) - before == 5


def test_nodes_too_small_keep_their_reasons_when_no_node_can_help() -> None:
    env = Env([_too_small(), node("none", "2", vpod("hi2", 20, "2"))])
    p = vpod("p", 10, "2").obj()
    result, status = env.post_filter(p)
    assert result is not None and result.mode == "clear"
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.message() == (
        "preemption: 0/2 nodes are available: 1 Insufficient cpu, "
        "1 No preemption victims found for incoming pod."
    )


def test_nominated_pods_count_in_the_precheck_as_in_the_dry_run() -> None:
    # "nom" frees 2 CPUs, but a higher-priority pod nominated there takes 1: the preemptor cannot fit
    q = vpod("q", 20, "1").obj()
    env = Env(
        [node("nom", "2", vpod("lo", 1, "2")), node("ok", "2", vpod("v", 1, "2"))], nominated={"nom": [q]}
    )
    p = vpod("p", 10, "2").obj()
    result, status = env.post_filter(p)
    assert status is not None and status.is_success() and result is not None
    assert result.nominated_node_name == "ok"
    env = Env([node("nom", "2", vpod("lo", 1, "2"))], nominated={"nom": [q]})
    result, status = env.post_filter(p)
    assert (
        status is not None and status.message() == "preemption: 0/1 nodes are available: 1 Insufficient cpu."
    )


def test_lowest_priority_kept_across_cycles_follows_the_node_changing() -> None:
    """has_lower_priority_pods' memo (per node, by generation) answers as a walk of the pods would,
    before and after the node gains or loses a lower-priority pod."""
    from pyscheduler.plugins.default_preemption.victims import has_lower_priority_pods

    ni = node("n", "64", *(vpod(f"p{i}", 5, "100m") for i in range(50)))
    lowest: dict[str, tuple[int, int]] = {}
    p5, p6 = vpod("a", 5, "1").obj(), vpod("b", 6, "1").obj()
    assert not has_lower_priority_pods(ni, p5, lowest)
    assert has_lower_priority_pods(ni, p6, lowest)
    low = vpod("low", 1, "100m").obj()
    ni.add_pod(low)
    assert has_lower_priority_pods(ni, p5, lowest)  # the node changed: not the remembered answer
    ni.remove_pod(low)
    assert not has_lower_priority_pods(ni, p5, lowest)
    empty = node("e", "64")
    assert not has_lower_priority_pods(empty, p6, lowest)
    for n in (ni, empty):
        for p in (p5, p6):
            assert has_lower_priority_pods(n, p, lowest) == has_lower_priority_pods(n, p)
