"""The workload extension points of ``Framework`` (kube 1.36's TopologyAwareWorkloadScheduling): a
pod group's nodes split into placements (PlacementGenerate), and each placement's assignment of the
group scored (PlacementScore, NormalizePlacementScore, weights). ``scheduler_podgroup.py`` drives them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.podgroup import Placement, PlacementScore, PodGroupAssignments, PodGroupInfo
from pyscheduler.framework.runtime_base import RuntimeBase
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo


class PlacementPoints(RuntimeBase):
    """PlacementGenerate and PlacementScore of ``Framework``."""

    def run_placement_generate_plugins(
        self, state: CycleState, group: PodGroupInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[Placement], Status | None]:
        """kube's RunPlacementGeneratePlugins: the first PlacementGenerate plugin splits all nodes into
        placements; without one, all nodes are the one placement."""
        start = time.perf_counter()
        parent = Placement("", nodes)
        if not self.placement_generate_plugins:
            return [parent], None
        p = self.placement_generate_plugins[0]
        status: Status | None = None
        placements: list[Placement] = []
        try:
            got, s = p.generate_placements(state, group, parent)
        except Exception as e:
            status = self._error(p.name, "PlacementGenerate", e)
        else:
            if s is not None and not s.is_success():
                status = s.with_plugin(p.name)
            elif not got:
                status = Status.unschedulable("no feasible placements found", plugin=p.name)
            else:
                placements = list(got)
        self._took(p.name, "PlacementGenerate", start)
        self._observe("PlacementGenerate", status, start)
        return placements, status

    def run_placement_score_plugins(
        self, state: CycleState, group: PodGroupInfo, assignments: Sequence[PodGroupAssignments]
    ) -> tuple[list[int], Status | None]:
        """kube's RunPlacementScorePlugins: each plugin scores every placement, normalizes, and the
        weighted sums are the placements' totals (in ``assignments`` order)."""
        start = time.perf_counter()
        totals = [0] * len(assignments)
        for p in self.placement_score_plugins:
            scores: list[PlacementScore] = []
            try:
                for a in assignments:
                    v, s = p.score_placement(state, group, a)
                    if s is not None and not s.is_success():
                        msg = f'running PlacementScore plugins: plugin "{p.name}" failed with: {s.message()}'
                        return [], Status.as_error(msg)
                    scores.append(PlacementScore(a.placement, int(v)))
                ext = p.placement_score_extensions()
                if ext is not None:
                    s = ext.normalize_placement_score(state, group, scores)
                    if s is not None and not s.is_success():
                        msg = (
                            "running NormalizePlacementScore on PlacementScore plugins: "
                            f'plugin "{p.name}" failed with: {s.message()}'
                        )
                        return [], Status.as_error(msg)
            except Exception as e:
                return [], self._error(p.name, "PlacementScore", e)
            w = self.placement_weights.get(p.name, 1)
            for i, sc in enumerate(scores):
                totals[i] += sc.score * w
        self._observe("PlacementScore", None, start)
        return totals, None
