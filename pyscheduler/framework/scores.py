"""What the runtime makes of a Score plugin's answer: kube's int64 scores, normalized and weighted.

``plugin_scores`` runs one plugin over the nodes: ``score_nodes`` (one call for a whole ``NodeBatch``)
where the plugin offers it, else ``score`` per node; then NormalizeScore (``normalize_scores`` on the
array, or ``normalize_score`` on ``NodeScore``s, the kube-shaped API); then the [0, 100] range check and
the weight. Scores travel as int64 NumPy arrays from here to the pick. A value that is not a whole
number in int64's range, a wrong count or a failed status raises ``ScoreFailure`` carrying the Error
status, worded as kube-scheduler's runtime words it. ``Framework._score`` sums the plugins.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.interfaces import MAX_NODE_SCORE, MIN_NODE_SCORE, NodeScore, ScorePlugin
from pyscheduler.framework.status import Code, Status, wrapped_error
from pyscheduler.framework.types import NodeInfo, Pod

Scores = np.ndarray[Any, np.dtype[np.int64]]
"""One int64 score per node, in the order of the nodes scored."""


class ScoreFailure(Exception):
    """A Score or NormalizeScore failure, carrying the Error status the extension point returns."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


def score_array(raw: Any, plugin: str) -> Scores:
    """Scores as an int64 array (kube's int64): NumPy integer arrays as they are, lists converted once.
    A value that is not a whole number in int64's range is the plugin's error, as kube's could not be."""
    arr = raw if isinstance(raw, np.ndarray) else np.array(raw if isinstance(raw, list) else list(raw))
    if arr.ndim == 1:
        kind = arr.dtype.kind
        if kind in "ib" or (kind == "u" and (not len(arr) or arr.max() <= _INT64_MAX)):
            return arr.astype(np.int64, copy=False)
        if not len(arr):  # np.array([]) is float64
            return np.zeros(0, dtype=np.int64)
        if (
            kind == "f"
            and np.isfinite(arr).all()
            and (arr == np.floor(arr)).all()
            and abs(arr).max() < 2.0**63
        ):
            return arr.astype(np.int64)
    bad = next((v for v in np.ravel(arr).tolist() if not _is_int64(v)), arr)
    raise ScoreFailure(
        Status.as_error(f"plugin {plugin!r} returns a score that is not an int64: {bad!r}", plugin)
    )


_INT64_MAX = 2**63 - 1


def _is_int64(v: object) -> bool:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return isinstance(v, int) and -_INT64_MAX - 1 <= v <= _INT64_MAX


def plugin_scores(
    p: ScorePlugin, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], weight: int
) -> Scores:
    """One plugin's scores for ``nodes`` as an int64 array: Score (``score_nodes`` when the plugin
    offers it, else ``score`` node by node), NormalizeScore, the range check, times ``weight``. A
    failure raises ``ScoreFailure`` with the Error status kube's runtime would return."""
    ext = p.score_extensions()
    batch = getattr(p, "score_nodes", None)
    raw: Any
    if batch is not None:
        raw, s = batch(state, pod, nodes)
        if s is not None and s.code != Code.SUCCESS:
            raise ScoreFailure(wrapped_error("Score", p.name, s))
        if len(raw) != len(nodes):
            raise ScoreFailure(
                Status.as_error(f"score_nodes returned {len(raw)} scores for {len(nodes)} nodes", p.name)
            )
    else:
        score = p.score
        raw = []
        for ni in nodes:
            v, s = score(state, pod, ni)
            if s is not None and s.code != Code.SUCCESS:
                raise ScoreFailure(wrapped_error("Score", p.name, s))
            raw.append(v)
    values = score_array(raw, p.name)
    if ext is not None:
        values = score_array(normalize(p, ext, state, pod, nodes, values), p.name)
    if len(values) and (values.max() > MAX_NODE_SCORE or values.min() < MIN_NODE_SCORE):
        bad = values[(values > MAX_NODE_SCORE) | (values < MIN_NODE_SCORE)][0]
        raise ScoreFailure(
            Status.as_error(
                "applying score defaultWeights on Score plugins: "
                f'plugin "{p.name}" returns an invalid score {bad}, it should in the range of '
                f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                p.name,
            )
        )
    if weight != 1:
        values = values * weight
    return values


def normalize(
    p: ScorePlugin,
    ext: Any,
    state: CycleState,
    pod: Pod,
    nodes: Sequence[NodeInfo],
    values: Scores,
) -> Sequence[int]:
    """NormalizeScore: on the int64 array when the extension offers ``normalize_scores``, else on a
    NodeScore per node (the kube-shaped API plugins implement)."""
    batch = getattr(ext, "normalize_scores", None)
    out: Sequence[int]
    s: Status | None
    if batch is not None:
        out, s = batch(state, pod, values)
    else:
        node_scores = [NodeScore(ni.name, v) for ni, v in zip(nodes, values.tolist(), strict=True)]
        s = ext.normalize_score(state, pod, node_scores)
        out = [ns.score for ns in node_scores]
    if s is not None and not s.is_success():
        raise ScoreFailure(wrapped_error("NormalizeScore", p.name, s))
    if len(out) != len(values):
        raise ScoreFailure(
            Status.as_error(f"NormalizeScore returned {len(out)} scores for {len(values)} nodes", p.name)
        )
    return out
