"""PodGroupPodsCount: among the placements a pod group fits, prefer those that place more of its pods
(kube 1.36, alpha, behind ``TopologyAwareWorkloadScheduling``; weight 1 in the default profile).

Extension points
----------------
- PlacementScore: the group's pods already scheduled (assumed or bound) plus the pods the placement
  places. Counting the scheduled ones too keeps small differences small.
- NormalizePlacementScore: ``score * 100 / max`` over the candidate placements (not over minCount, so a
  near-equal count is a near-equal score); an all-zero list is an error (``no pods from pod group are
  assigned to any of the candidate placements``).

Args: none.
"""

from __future__ import annotations

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.interfaces import MAX_NODE_SCORE, MIN_NODE_SCORE, Handle
from pyscheduler.framework.podgroup import (
    PlacementScore,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupStateNotFound,
)
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status

NAME = "PodGroupPodsCount"
MSG_NOTHING_PLACED = "no pods from pod group are assigned to any of the candidate placements"


class PodGroupPodsCount:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def score_placement(
        self, state: CycleState, group: PodGroupInfo, assignments: PodGroupAssignments
    ) -> tuple[int, Status | None]:
        extra = getattr(self._handle, "extra", None) or {}
        states = extra.get("pod_group_states")
        if states is None:
            return 0, Status.as_error("the scheduler keeps no pod group states", plugin=NAME)
        try:
            gs = states.get(group.namespace, group.name)
        except PodGroupStateNotFound as e:
            return 0, Status.as_error(e, plugin=NAME)
        return gs.scheduled_pods_count() + len(assignments.proposed), None

    def placement_score_extensions(self) -> PodGroupPodsCount:
        return self

    def normalize_placement_score(
        self, state: CycleState, group: PodGroupInfo, scores: list[PlacementScore]
    ) -> Status | None:
        top = max((s.score for s in scores), default=0)
        if top == 0:
            return Status.as_error(MSG_NOTHING_PLACED, plugin=NAME)
        for s in scores:
            s.score = MIN_NODE_SCORE + s.score * (MAX_NODE_SCORE - MIN_NODE_SCORE) // top
        return None


def new(args: None, handle: Handle) -> PodGroupPodsCount:
    return PodGroupPodsCount(handle)


PLUGIN = PluginSpec(NAME, new, None, "prefer placements that fit more of a pod group's pods (alpha)")
