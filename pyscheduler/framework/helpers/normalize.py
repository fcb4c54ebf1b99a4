"""kube's DefaultNormalizeScore: scale scores to [0, MaxNodeScore], optionally reversed."""

from __future__ import annotations

import numpy as np

from pyscheduler.framework.helpers.gomath import go_div
from pyscheduler.framework.interfaces import NodeScore, ScoreValues


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """kube's DefaultNormalizeScore, in place: scale [0, max(scores)] to [0, max_priority] with Go's
    integer division, then subtract from max_priority when ``reverse``. When every score is 0 (or less),
    scores stay as they are, or all become max_priority if ``reverse``."""
    max_count = max((s.score for s in scores), default=0)
    if max_count <= 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return
    for s in scores:
        v = go_div(max_priority * s.score, max_count)
        s.score = max_priority - v if reverse else v


def default_normalize_values(max_priority: int, reverse: bool, values: ScoreValues) -> ScoreValues:
    """``default_normalize_score`` on plain values (for ``normalize_scores``), returning new values: an
    int64 array for an int64 array (the runtime passes those), else a list."""
    if isinstance(values, np.ndarray):
        if not len(values):
            return values.copy()
        max_count = int(values.max())
        if max_count <= 0:
            return np.full(len(values), max_priority, dtype=np.int64) if reverse else values.copy()
        if values.min() >= 0 and max_count <= _EXACT_PRODUCT // max(max_priority, 1):
            out = values * max_priority
            out //= max_count  # non-negative: Go's division is floor division
            return max_priority - out if reverse else out
    ints: list[int] = values.tolist() if isinstance(values, np.ndarray) else list(values)
    max_count = max(ints, default=0)
    if max_count <= 0:
        return [max_priority] * len(ints) if reverse else ints
    if min(ints) >= 0:  # non-negative: Go's division is Python's floor division
        if reverse:
            return [max_priority - max_priority * v // max_count for v in ints]
        return [max_priority * v // max_count for v in ints]
    scaled = [go_div(max_priority * v, max_count) for v in ints]
    return [max_priority - v for v in scaled] if reverse else scaled


_EXACT_PRODUCT = 2**63 - 1  # int64 products below this do not wrap
