"""The scoring extension points of ``Framework``: PreScore and Score (with NormalizeScore and weights).

Score runs per plugin over all feasible nodes (0..100 each, ``scores.plugin_scores``), then
NormalizeScore, then times the plugin's weight; a Skip in PreScore excludes the plugin's Score. The
scheduling loop reads the weighted totals (``run_score_plugins_totals``, an int64 array); the per-node,
per-plugin breakdown (``run_score_plugins``) is for explanations and tests.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.runtime_base import RuntimeBase
from pyscheduler.framework.scores import ScoreFailure, Scores, plugin_scores
from pyscheduler.framework.status import Code, Status, wrapped_error
from pyscheduler.framework.types import NodeInfo, Pod


class ScorePoints(RuntimeBase):
    """PreScore and Score of ``Framework``."""

    def run_pre_score_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        start = t = time.perf_counter()
        status: Status | None = None
        ev = self.evaluations
        for p in self.pre_score_plugins:
            try:
                s = p.pre_score(state, pod, nodes)
            except Exception as e:
                t = self._took(p.name, "PreScore", t, state, Code.ERROR)
                ev[(p.name, "PreScore")] += 1
                status = self._error(p.name, "PreScore", e)
                break
            t = self._took(p.name, "PreScore", t, state, s)
            if s is not None and s.is_skip():
                state.skip_score_plugins.add(p.name)
                continue
            ev[(p.name, "PreScore")] += 1
            if s is not None and not s.is_success():
                status = wrapped_error("PreScore", p.name, s)
                break
        self._observe("PreScore", status, start, t)
        return status

    def run_score_plugins(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[list[tuple[str, int, dict[str, int]]], Status | None]:
        """Per node: (name, weighted total, weighted score per plugin). For explanations and tests; the
        scheduling loop uses ``run_score_plugins_totals``, which skips the per-node breakdown."""
        per_plugin, st = self._score(state, pod, nodes)
        if st is not None:
            return [], st
        columns = {name: scores.tolist() for name, scores in per_plugin.items()}
        out: list[tuple[str, int, dict[str, int]]] = []
        for i, ni in enumerate(nodes):
            detail = {name: scores[i] for name, scores in columns.items()}
            out.append((ni.name, sum(detail.values()), detail))
        return out, None

    def run_score_plugins_totals(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[Scores, Status | None]:
        """The weighted total score of each node, in the order of ``nodes`` (an int64 array)."""
        per_plugin, st = self._score(state, pod, nodes)
        if st is not None:
            return np.zeros(0, dtype=np.int64), st
        total: Scores | None = None
        for scores in per_plugin.values():
            if total is None:
                total = scores.copy()
            else:
                total += scores
        return (total if total is not None else np.zeros(len(nodes), dtype=np.int64)), None

    def _score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[dict[str, Scores], Status | None]:
        start = t = time.perf_counter()
        per_plugin: dict[str, Scores] = {}
        skip = state.skip_score_plugins
        ev = self.evaluations
        n = len(nodes)
        for p in self.score_plugins:
            if p.name in skip:
                continue
            ev[(p.name, "Score")] += n
            try:
                scores = plugin_scores(p, state, pod, nodes, self.weights.get(p.name, 1))
            except ScoreFailure as f:
                t = self._took(p.name, "Score", t, state, f.status)
                self._observe("Score", f.status, start, t)
                return {}, f.status
            except Exception as e:
                t = self._took(p.name, "Score", t, state, Code.ERROR)
                st = self._error(p.name, "Score", e)
                self._observe("Score", st, start, t)
                return {}, st
            t = self._took(p.name, "Score", t, state)
            per_plugin[p.name] = scores
        self._observe("Score", None, start, t)
        return per_plugin, None
