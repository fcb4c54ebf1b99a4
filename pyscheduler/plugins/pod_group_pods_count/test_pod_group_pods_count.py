"""PodGroupPodsCount: scheduled + proposed pods, normalized by the best placement (kube's test)."""

from __future__ import annotations

import pytest

from pyscheduler.framework.podgroup import (
    Placement,
    PlacementScore,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupState,
)
from pyscheduler.framework.status import Code
from pyscheduler.plugins.pod_group_pods_count import MSG_NOTHING_PLACED, new
from pyscheduler.testing import make_cycle_state, make_handle, make_pod

GROUP = PodGroupInfo("default", "pg")


class _States:
    def __init__(self, state: PodGroupState) -> None:
        self.state = state

    def get(self, namespace: str, name: str) -> PodGroupState:
        return self.state


def _plugin(scheduled: int) -> object:
    state = PodGroupState()
    for i in range(scheduled):
        state.add_pod(make_pod(f"s{i}").uid(f"s{i}").group("pg").node("n1").obj())
    handle = make_handle()
    handle.extra["pod_group_states"] = _States(state)
    return new(None, handle)


@pytest.mark.parametrize(
    ("scheduled", "proposed", "raw", "normalized"),
    [
        pytest.param(0, [3, 2, 1], [3, 2, 1], [100, 66, 33], id="proposed-only"),
        pytest.param(2, [3, 2, 0], [5, 4, 2], [100, 80, 40], id="scheduled-pods-shrink-the-gaps"),
        pytest.param(0, [2, 2], [2, 2], [100, 100], id="tie"),
    ],
)
def test_score_and_normalize(
    scheduled: int, proposed: list[int], raw: list[int], normalized: list[int]
) -> None:
    pl = _plugin(scheduled)
    state = make_cycle_state()
    scores = []
    for i, n in enumerate(proposed):
        pods = [(make_pod(f"p{i}-{j}").obj(), "n1") for j in range(n)]
        a = PodGroupAssignments(Placement(f"p{i}", []), pods)
        v, st = pl.score_placement(state, GROUP, a)  # type: ignore[attr-defined]
        assert st is None
        scores.append(PlacementScore(a.placement, v))
    assert [s.score for s in scores] == raw
    assert pl.placement_score_extensions().normalize_placement_score(state, GROUP, scores) is None  # type: ignore[attr-defined]
    assert [s.score for s in scores] == normalized


def test_nothing_placed_anywhere_is_an_error() -> None:
    pl = _plugin(0)
    scores = [PlacementScore(Placement("a", []), 0), PlacementScore(Placement("b", []), 0)]
    st = pl.placement_score_extensions().normalize_placement_score(make_cycle_state(), GROUP, scores)  # type: ignore[attr-defined]
    assert st is not None and st.code == Code.ERROR and st.message() == MSG_NOTHING_PLACED
