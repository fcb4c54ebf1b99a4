"""TaintToleration: a pod goes only where it tolerates the node's taints, and prefers fewer soft taints.

Filter: the node's ``NoSchedule`` and ``NoExecute`` taints must each be tolerated by one of the pod's
tolerations (``Toleration.tolerates``: an empty effect matches every effect, an empty key with
``Exists`` matches every key, ``Exists`` ignores the value, ``Equal`` compares it). Otherwise the node
is rejected with kube-scheduler 1.36's reason "node(s) had untolerated taint(s)", code
UnschedulableAndUnresolvable. (Up to 1.33 kube named the first untolerated taint, as
"node(s) had untolerated taint {key: value}"; 1.34.2+ and 1.35+ dropped the key and value because they
may be sensitive. ``untolerated_taint`` still finds that taint for logs and tools.)

Score: the number of the node's ``PreferNoSchedule`` taints that the pod does not tolerate, counting only
tolerations whose effect is empty or ``PreferNoSchedule`` (gathered once per pod in PreScore).
NormalizeScore is kube's DefaultNormalizeScore reversed: with ``max`` the highest count among the
nodes, a node scores ``100 - 100 * count // max``, so nodes with no intolerable soft taint score 100 and
the most-tainted score 0; when no node has one, every node scores 100.

Extension points: Filter, PreScore, Score (+ NormalizeScore), EnqueueExtensions. Args: none.

Batch: ``filter_nodes`` / ``score_nodes`` answer for a NodeBatch from per-row answers cached per
snapshot table epoch and toleration set (``batch.TaintCache``); other node lists go node by node.

Queueing hints (kube's, with queueing hints enabled):

- Node Add / UpdateNodeTaint: queue when the node's hard taints went from untolerated (or the node is
  new) to all tolerated.
- Pod UpdatePodTolerations: queue when the updated pod is the rejected pod itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    as_node,
    as_pod,
)
from pyscheduler.framework.helpers import default_normalize_score, default_normalize_values, signers
from pyscheduler.framework.interfaces import (
    MAX_NODE_SCORE,
    Handle,
    NodeScoreList,
    ScoreExtensions,
    ScoreValues,
)
from pyscheduler.framework.node_table import batch_rows
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod, Taint, Toleration
from pyscheduler.plugins.taint_toleration.batch import TaintCache, pick

NAME = "TaintToleration"
PRE_SCORE_STATE_KEY = f"PreScore{NAME}"
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"


def untolerated_taint(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint none of the tolerations tolerates (kube's
    FindMatchingUntoleratedTaint with DoNotScheduleTaintsFilterFunc), or None."""
    for taint in taints:
        if taint.effect != NO_SCHEDULE and taint.effect != NO_EXECUTE:
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


def prefer_no_schedule_tolerations(tolerations: Sequence[Toleration]) -> tuple[Toleration, ...]:
    """The tolerations that can tolerate a PreferNoSchedule taint (effect empty or PreferNoSchedule)."""
    return tuple(t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


def count_intolerable_prefer_no_schedule(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> int:
    n = 0
    for taint in taints:
        if taint.effect == PREFER_NO_SCHEDULE and not any(t.tolerates(taint) for t in tolerations):
            n += 1
    return n


_REJECT = Status.unresolvable(ERR_REASON_UNTOLERATED, plugin=NAME)  # immutable: shared by batch answers


class TaintToleration:
    # Filter never reads the node's pods (framework/pods_adjusted.py)
    filter_ignores_node_pods = True
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching: what this plugin's answers read of the pod (kube's SignPod)."""
        return [(signers.TOLERATIONS, signers.tolerations(pod))], None

    def __init__(self) -> None:
        self._cache = TaintCache()

    # ---------------------------------------------------------------------------------- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None or not node.taints:
            return None
        if untolerated_taint(node.taints, pod.tolerations) is None:
            return None
        return Status.unresolvable(ERR_REASON_UNTOLERATED, plugin=NAME)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Sequence[Status | None]:
        tr = batch_rows(nodes)
        if tr is None:
            f = self.filter
            return [f(state, pod, ni) for ni in nodes]
        table, rows = tr
        cache = self._cache
        cache.sync(table)
        if not cache.tainted:
            return [None] * len(nodes)
        tolerations = pod.tolerations

        def rejects(taints: tuple[Taint, ...]) -> Status | None:
            return None if untolerated_taint(taints, tolerations) is None else _REJECT

        return pick(cache.filter_statuses(tolerations, rejects), rows)

    # ----------------------------------------------------------------------------------- Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, prefer_no_schedule_tolerations(pod.tolerations))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        node = node_info.node
        if node is None or not node.taints:
            return 0, None
        tolerations = state.get(PRE_SCORE_STATE_KEY)
        if tolerations is None:
            tolerations = prefer_no_schedule_tolerations(pod.tolerations)
        return count_intolerable_prefer_no_schedule(node.taints, tolerations), None

    def score_nodes(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[ScoreValues, Status | None]:
        tolerations = state.get(PRE_SCORE_STATE_KEY)
        if tolerations is None:
            tolerations = prefer_no_schedule_tolerations(pod.tolerations)
        tr = batch_rows(nodes)
        if tr is None:  # node by node, as ``score`` (which never fails)
            count = count_intolerable_prefer_no_schedule
            return [
                0 if (n := ni.node) is None or not n.taints else count(n.taints, tolerations) for ni in nodes
            ], None
        table, rows = tr
        cache = self._cache
        cache.sync(table)
        if not cache.tainted:
            return np.zeros(len(nodes), dtype=np.int64), None
        tols = tuple(tolerations)

        def count_row(taints: tuple[Taint, ...]) -> int:
            return count_intolerable_prefer_no_schedule(taints, tols)

        return cache.score_counts(tols, count_row)[rows], None

    def score_extensions(self) -> ScoreExtensions | None:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: NodeScoreList) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return None

    def normalize_scores(
        self, state: CycleState, pod: Pod, values: ScoreValues
    ) -> tuple[ScoreValues, Status | None]:
        return default_normalize_values(MAX_NODE_SCORE, True, values), None

    # ------------------------------------------------------------------------------ Enqueueing
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, Action.UPDATE_POD_TOLERATIONS),
                self.is_schedulable_after_pod_toleration_change,
            ),
        ]

    @staticmethod
    def is_schedulable_after_node_change(pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        try:
            old, new = as_node(old_obj), as_node(new_obj)
        except ValueError:
            return QueueingHint.QUEUE
        if new is None:
            return QueueingHint.QUEUE
        was_untolerated = old is None or untolerated_taint(old.taints, pod.tolerations) is not None
        is_untolerated = untolerated_taint(new.taints, pod.tolerations) is not None
        if was_untolerated and not is_untolerated:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def is_schedulable_after_pod_toleration_change(pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        try:
            modified = as_pod(new_obj)
        except ValueError:
            return QueueingHint.QUEUE
        if modified is None or modified.uid == pod.uid:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP


def new(args: None, handle: Handle) -> TaintToleration:
    return TaintToleration()


PLUGIN = PluginSpec(
    NAME, new, None, "pods go only where they tolerate the taints; fewer soft taints score higher"
)
