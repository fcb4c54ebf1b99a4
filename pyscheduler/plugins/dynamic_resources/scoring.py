"""Score and NormalizeScore of DynamicResources: prefer the node where firstAvailable claims get their
earlier (preferred) subrequests (kube's computeScore: per allocated subrequest at index i of its request,
8 - i points), then kube's DefaultNormalizeScore to [0, 100]."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.framework.helpers.normalize import default_normalize_score, default_normalize_values
from pyscheduler.framework.interfaces import MAX_NODE_SCORE, NodeScoreList, ScoreValues
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod
from pyscheduler.plugins.dynamic_resources.common import (
    ERR_STATE_NOT_FOUND,
    FIRST_AVAILABLE_MAX_SIZE,
    NAME,
    STATE_KEY,
    State,
)
from pyscheduler.plugins.dynamic_resources.plugin_base import PluginBase


class ScoreError(Exception):
    pass


def compute_score(claims: Sequence[ResourceClaim], allocations: Sequence[dict[str, Any]]) -> int:
    score = 0
    k = 0
    for claim in claims:
        if claim.allocation is not None:
            allocation = claim.allocation
        else:
            if k >= len(allocations):
                raise ScoreError(
                    f"number of allocations {len(allocations)} is smaller than number of claims needing allocation"
                )
            k += 1
            if not any(req.first_available for req in claim.requests):
                continue  # scores nothing (and its allocation need not be built: see Allocations)
            allocation = allocations[k - 1]
        subs = {
            str(r.get("request", ""))
            for r in (allocation.get("devices") or {}).get("results") or ()
            if "/" in str(r.get("request", ""))
        }
        for req in claim.requests:
            for i, sub in enumerate(req.first_available):
                if sub.name in subs:  # sub.name is "<request>/<subrequest>"
                    score += FIRST_AVAILABLE_MAX_SIZE - i
    return score


class Scoring(PluginBase):
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(STATE_KEY)
        if not isinstance(s, State):
            return 0, Status.as_error(ERR_STATE_NOT_FOUND, plugin=NAME)
        if not s.claims:
            return 0, None
        allocations = s.node_allocations.get(node_info.name)
        if allocations is None:
            return 0, None
        try:
            return compute_score(s.claims, allocations), None
        except ScoreError as e:
            return 0, Status.as_error(str(e), plugin=NAME)

    def score_nodes(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[ScoreValues, Status | None]:
        s = state.get(STATE_KEY)
        if isinstance(s, State) and not any(req.first_available for c in s.claims for req in c.requests):
            # nearly every pod: no claims, or none with firstAvailable requests (only those score)
            return np.zeros(len(nodes), dtype=np.int64), None
        out: list[int] = []
        for ni in nodes:
            v, st = self.score(state, pod, ni)
            if st is not None and not st.is_success():
                return [], st
            out.append(v)
        return np.asarray(out, dtype=np.int64), None

    def score_extensions(self) -> Scoring:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: NodeScoreList) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    def normalize_scores(
        self, state: CycleState, pod: Pod, values: ScoreValues
    ) -> tuple[ScoreValues, Status | None]:
        return default_normalize_values(MAX_NODE_SCORE, False, values), None
