"""Helpers plugins share (kube-scheduler's pkg/scheduler/framework/plugins/helper)."""

from __future__ import annotations

from pyscheduler.framework.interfaces import MAX_NODE_SCORE, NodeScore


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """Scale scores in place to 0..max_priority by the highest score (integer division, as Go does);
    ``reverse`` flips them (max_priority - score). All zero: every node gets max_priority if reversed,
    else stays 0."""
    max_count = max((s.score for s in scores), default=0)
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return
    for s in scores:
        v = max_priority * s.score // max_count
        s.score = max_priority - v if reverse else v


__all__ = ["MAX_NODE_SCORE", "default_normalize_score"]
