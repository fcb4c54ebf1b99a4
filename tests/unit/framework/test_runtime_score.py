"""framework.runtime Score + NormalizeScore: the runtime adds plugins' scores up as int64 arrays, whatever
shape a plugin returns them in (a list, an int64 array, per node), and a score kube could not hold (not a
whole int64, or outside [0, 100] after normalizing) fails the cycle with the plugin named."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.helpers import default_normalize_score
from pyscheduler.framework.interfaces import NodeScoreList
from pyscheduler.framework.runtime import Framework, ProfilePlugins
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod
from pyscheduler.scheduler import Scheduler
from pyscheduler.testing import make_handle
from pyscheduler.testing.builders import make_node, make_node_info, make_pod

NODES = [make_node_info(make_node(f"n{i}")) for i in range(5)]
RAW = {"n0": 3, "n1": 0, "n2": 7, "n3": 7, "n4": 1}


@dataclass
class PerNode:
    """Score node by node; optionally normalized through NodeScores (kube's API)."""

    name: str
    raw: dict[str, Any]
    normalize: bool = False

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[Any, Status | None]:
        return self.raw[node_info.name], None

    def score_extensions(self) -> Any:
        return self if self.normalize else None

    def normalize_score(self, state: CycleState, pod: Pod, scores: NodeScoreList) -> Status | None:
        default_normalize_score(100, False, scores)
        return None


@dataclass
class Batched(PerNode):
    """Score all nodes at once, as a list or as an array of ``dtype``; NormalizeScore on values."""

    dtype: Any = None
    normalized: Any = None  # what normalize_scores returns, when set

    def score_nodes(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[Any, Status | None]:
        values = [self.raw[ni.name] for ni in nodes]
        return (values if self.dtype is None else np.array(values, dtype=self.dtype)), None

    def normalize_scores(self, state: CycleState, pod: Pod, values: Any) -> tuple[Any, Status | None]:
        assert isinstance(values, np.ndarray) and values.dtype == np.int64
        if self.normalized is not None:
            return self.normalized, None
        return [v * 100 // max(int(values.max()), 1) for v in values.tolist()], None


def framework(*plugins: PerNode, weights: dict[str, int] | None = None) -> Framework:
    names = tuple(p.name for p in plugins)
    config = ProfilePlugins(points={"score": names}, weights=weights or {})
    return Framework("p", {p.name: p for p in plugins}, config, make_handle())


def totals(fwk: Framework) -> tuple[list[int], Status | None]:
    got, st = fwk.run_score_plugins_totals(CycleState(), make_pod("p").obj(), NODES)
    assert isinstance(got, np.ndarray) and got.dtype == np.int64
    return got.tolist(), st


NORMALIZED = [3 * 100 // 7, 0, 100, 100, 100 // 7]


@pytest.mark.parametrize(
    ("plugins", "weights", "want"),
    [
        ((PerNode("a", RAW),), None, [3, 0, 7, 7, 1]),
        ((PerNode("a", RAW, normalize=True),), None, NORMALIZED),
        ((Batched("a", RAW),), None, [3, 0, 7, 7, 1]),
        ((Batched("a", RAW, dtype=np.int32),), None, [3, 0, 7, 7, 1]),
        ((Batched("a", RAW, dtype=np.uint8),), None, [3, 0, 7, 7, 1]),
        ((Batched("a", RAW, dtype=np.float64),), None, [3, 0, 7, 7, 1]),  # whole numbers
        ((Batched("a", RAW, dtype=np.int64, normalize=True),), None, NORMALIZED),
        ((Batched("a", RAW, normalize=True),), {"a": 3}, [3 * v for v in NORMALIZED]),
        ((PerNode("a", RAW), Batched("b", RAW, dtype=np.int64)), {"b": 2}, [9, 0, 21, 21, 3]),
        ((), None, [0, 0, 0, 0, 0]),
    ],
)
def test_totals_are_weighted_sums_whatever_the_shape(
    plugins: tuple[PerNode, ...], weights: dict[str, int] | None, want: list[int]
) -> None:
    assert totals(framework(*plugins, weights=weights)) == (want, None)
    if plugins:  # the per-plugin breakdown agrees
        scored, st = framework(*plugins, weights=weights).run_score_plugins(
            CycleState(), make_pod("p").obj(), NODES
        )
        assert st is None
        assert [t for _, t, _ in scored] == want
        assert all(type(v) is int for _, _, d in scored for v in d.values())


@pytest.mark.parametrize(
    ("plugin", "message"),
    [
        (PerNode("a", {**RAW, "n2": 1.5}), "returns a score that is not an int64: 1.5"),
        (Batched("a", {**RAW, "n2": 2**70}), f"returns a score that is not an int64: {2**70}"),
        (Batched("a", {**RAW, "n2": float("nan")}, dtype=np.float64), "not an int64: nan"),
        (Batched("a", {**RAW, "n2": None}), "not an int64: None"),
        (
            PerNode("a", {**RAW, "n2": 101}),
            "returns an invalid score 101, it should in the range of [0, 100]",
        ),
        (Batched("a", RAW, normalize=True, normalized=[0, 0, -1, 0, 0]), "invalid score -1"),
        (
            Batched("a", RAW, normalize=True, normalized=[0, 0]),
            "NormalizeScore returned 2 scores for 5 nodes",
        ),
    ],
)
def test_a_score_kube_could_not_hold_fails_the_cycle(plugin: PerNode, message: str) -> None:
    got, st = totals(framework(PerNode("ok", RAW), plugin))
    assert got == [] and st is not None and st.code == Code.ERROR
    assert st.plugin == "a" and message in st.message()


def test_score_nodes_of_the_wrong_length_fails_the_cycle() -> None:
    class Short(Batched):
        def score_nodes(
            self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
        ) -> tuple[Any, Status | None]:
            return np.zeros(len(nodes) - 1, dtype=np.int64), None

    _, st = totals(framework(Short("a", RAW)))
    assert st is not None and "score_nodes returned 4 scores for 5 nodes" in st.message()


def scheduler(seed: int) -> Scheduler:
    s = Scheduler(
        profiles={},
        queue=None,  # type: ignore[arg-type]
        cache=None,  # type: ignore[arg-type]
        snapshot=None,  # type: ignore[arg-type]
        clock=None,  # type: ignore[arg-type]
        recorder=None,  # type: ignore[arg-type]
        status_writer=None,  # type: ignore[arg-type]
    )  # type: ignore[arg-type]
    s.rng = random.Random(seed)
    return s


def test_select_picks_the_best_and_spreads_ties_uniformly() -> None:
    s = scheduler(1)
    state = s.rng.getstate()
    assert s._select_index(np.array([5, 9, 2], dtype=np.int64)) == 1
    assert s.rng.getstate() == state  # no tie, no draw (as kube's reservoir sampling)
    picks = [s._select_index(np.array([5, 7, 7, 3, 7], dtype=np.int64)) for _ in range(3000)]
    counts = {i: picks.count(i) for i in set(picks)}
    assert set(counts) == {1, 2, 4}
    assert all(850 < c < 1150 for c in counts.values()), counts
    with pytest.raises(RuntimeError, match="empty priority list"):
        s._select_index(np.zeros(0, dtype=np.int64))
