"""Helpers plugins share (kube-scheduler's pkg/scheduler/framework/plugins/helper)."""

from __future__ import annotations

from pyscheduler.framework.interfaces import NodeScore


def go_div(a: int, b: int) -> int:
    """Go's int64 division: truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


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


def default_normalize_values(max_priority: int, reverse: bool, values: list[int]) -> list[int]:
    """``default_normalize_score`` on plain values (for ``normalize_scores``), returning new values."""
    max_count = max(values, default=0)
    if max_count <= 0:
        return [max_priority] * len(values) if reverse else list(values)
    if min(values) >= 0:  # non-negative: Go's division is Python's floor division
        if reverse:
            return [max_priority - max_priority * v // max_count for v in values]
        return [max_priority * v // max_count for v in values]
    out = [go_div(max_priority * v, max_count) for v in values]
    return [max_priority - v for v in out] if reverse else out
