"""PreScore (soft constraints: domains and weights), Score node by node and over a NodeBatch, and
NormalizeScore (the emptiest domain scores highest)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.helpers.gomath import go_round, go_round_array
from pyscheduler.framework.helpers.node_affinity import RequiredNodeAffinity
from pyscheduler.framework.interfaces import (
    MAX_NODE_SCORE,
    NodeScoreList,
    ScoreValues,
)
from pyscheduler.framework.node_rows import (
    I64,
    Mask,
    TableLabels,
    rows_of,
    snapshot_table,
    sum_by_value,
    table_rows,
)
from pyscheduler.framework.node_table import NodeTable
from pyscheduler.framework.selectors import (
    SelectorError,
)
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod
from pyscheduler.plugins.pod_topology_spread.args import (
    HONOR,
    LABEL_HOSTNAME,
    SCHEDULE_ANYWAY,
)
from pyscheduler.plugins.pod_topology_spread.common import (
    NAME,
    PRE_SCORE_STATE_KEY,
    Constraint,
    NodeChecks,
    PluginBase,
    count_pods_matching,
    node_has_all_keys,
)

_INVALID_SCORE = -1  # marks an ignored node between Score and NormalizeScore


class PreScoreState:
    __slots__ = ("constraints", "ignored_nodes", "namespace", "topology_counts", "weights")

    def __init__(self, constraints: list[Constraint], namespace: str) -> None:
        self.constraints = constraints
        self.namespace = namespace
        self.ignored_nodes: set[str] = set()
        self.topology_counts: list[dict[str, int]] = [{} for _ in constraints]
        self.weights: list[float] = [0.0] * len(constraints)

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore


class Scoring(PluginBase):
    # -- Score ---------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        all_nodes = self._all_nodes(nodes)
        if not all_nodes:
            return Status.skip(plugin=NAME)
        # Only require every topology label with non-system-default rules, so that nodes without a
        # zone label still get hostname spreading.
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        try:
            constraints = self.get_constraints(pod, SCHEDULE_ANYWAY)
        except (SelectorError, ValueError, TypeError) as e:
            return Status.as_error(f"calculating preScoreState: {e}", plugin=NAME)
        if not constraints:
            return Status.skip(plugin=NAME)

        s = PreScoreState(constraints, pod.namespace)
        if not self._fast_pre_score(s, pod, nodes, all_nodes, require_all):
            _domains_node_by_node(s, nodes, require_all)
            _count_node_by_node(s, pod, all_nodes, require_all)
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    def _fast_pre_score(
        self,
        s: PreScoreState,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        all_nodes: Sequence[NodeInfo],
        require_all: bool,
    ) -> bool:
        """pre_score's two passes over the NodeTable; False (``s`` untouched) when the nodes are not
        its rows."""
        snapshot = self._snapshot()
        table = snapshot_table(snapshot)
        if table is None:
            return False
        rows = rows_of(table, nodes, snapshot)
        if rows is None:
            return False
        all_rows = rows if all_nodes is nodes else rows_of(table, all_nodes, snapshot)
        if all_rows is None:
            return False
        cols = _Columns(table, self._labels, s.constraints, require_all)
        # pass 1, over the candidate nodes: ignored nodes, domains per soft constraint
        live, codes = cols.live(rows)
        if require_all:
            for k in np.flatnonzero(~cols.no_node[rows] & ~live).tolist():
                s.ignored_nodes.add(nodes[k].name)
        non_host: list[int] = []
        for i, c in enumerate(s.constraints):
            if c.topology_key == LABEL_HOSTNAME:
                s.weights[i] = math.log(len(nodes) - len(s.ignored_nodes) + 2)
                continue
            non_host.append(i)
            vals = cols.ext_values[i]
            present = np.unique(cols.ecodes(i, codes[i])[live])
            s.topology_counts[i] = {vals[k]: 0 for k in present.tolist()}
            s.weights[i] = math.log(len(present) + 2)
        if non_host:
            self._fast_counts(s, pod, cols, all_rows, all_nodes, non_host)
        return True

    def _fast_counts(
        self,
        s: PreScoreState,
        pod: Pod,
        cols: _Columns,
        all_rows: I64,
        all_nodes: Sequence[NodeInfo],
        non_host: list[int],
    ) -> None:
        """pass 2 of _fast_pre_score, over all nodes: matching pods per domain of each constraint in
        ``non_host``, on the nodes its inclusion policies admit."""
        live, codes = cols.live(all_rows)
        checks = NodeChecks(pod, s.constraints, RequiredNodeAffinity.of(pod))
        aff, taints = self._eligibility(checks, cols.table, all_rows)
        for i in non_host:
            c = s.constraints[i]
            incl = live
            if aff is not None and c.node_affinity_policy == HONOR:
                incl = incl & aff
            if taints is not None and c.node_taints_policy == HONOR:
                incl = incl & taints
            cnt = self._pod_counts(cols.table, all_rows, all_nodes, c.selector, c.matcher, pod.namespace)
            counts = s.topology_counts[i]
            for value, n in sum_by_value(cols.ext_values[i], cols.ecodes(i, codes[i]), cnt, incl).items():
                if value in counts:
                    counts[value] += n

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        node = node_info.node
        if not isinstance(s, PreScoreState) or node is None:
            return 0, None
        if node.name in s.ignored_nodes:
            return 0, None
        labels = node.labels
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                cnt = count_pods_matching(node_info.pods, c.selector, s.namespace, c.matcher)
            else:
                cnt = s.topology_counts[i].get(value, 0)
            total += cnt * s.weights[i] + float(c.max_skew - 1)
        return go_round(total), None

    def score_nodes(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[ScoreValues, Status | None]:
        """``score`` for every node: the float sum built column-wise in the same order, rounded per node."""
        s = state.get(PRE_SCORE_STATE_KEY)
        br = table_rows(nodes, self._snapshot())
        if br is None or not isinstance(s, PreScoreState):
            return [self.score(state, pod, ni)[0] for ni in nodes], None
        table, rows = br
        total = np.zeros(len(rows), dtype=np.float64)
        for i, c in enumerate(s.constraints):
            col = self._labels.column(table, c.topology_key)
            codes = col.codes[rows]
            if c.topology_key == LABEL_HOSTNAME:
                cnt = self._pod_counts(table, rows, nodes, c.selector, c.matcher, s.namespace)
            else:
                cnt = col.per_code(s.topology_counts[i])[codes]
            total = total + np.where(codes >= 0, cnt * s.weights[i] + float(c.max_skew - 1), 0.0)
        out = go_round_array(total)
        ignored = s.ignored_nodes
        if ignored:
            for k, ni in enumerate(nodes):
                if ni.node is not None and ni.node.name in ignored:
                    out[k] = 0
        return out, None

    def score_extensions(self) -> Scoring:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: NodeScoreList) -> Status | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return None
        min_score = 2**63 - 1
        max_score = 0
        for ns in scores:
            if ns.name in s.ignored_nodes:
                ns.score = _INVALID_SCORE
                continue
            if ns.score < min_score:
                min_score = ns.score
            if ns.score > max_score:
                max_score = ns.score
        for ns in scores:
            if ns.score == _INVALID_SCORE:
                ns.score = 0
                continue
            if max_score == 0:
                ns.score = MAX_NODE_SCORE
                continue
            ns.score = MAX_NODE_SCORE * (max_score + min_score - ns.score) // max_score
        return None


def _domains_node_by_node(s: PreScoreState, nodes: Sequence[NodeInfo], require_all: bool) -> None:
    """Over the candidate nodes: the ignored ones (missing a key when every key is required), the
    domains of each soft constraint, and each constraint's weight, log(domains + 2)."""
    constraints = s.constraints
    topo_size = [0] * len(constraints)
    for ni in nodes:
        node = ni.node
        if node is None:
            continue
        labels = node.labels
        if require_all and not node_has_all_keys(labels, constraints):
            s.ignored_nodes.add(node.name)
            continue
        for i, c in enumerate(constraints):
            if c.topology_key == LABEL_HOSTNAME:
                continue  # counted per node in Score
            value = labels.get(c.topology_key, "")
            counts = s.topology_counts[i]
            if value not in counts:
                counts[value] = 0
                topo_size[i] += 1
    for i, c in enumerate(constraints):
        size = len(nodes) - len(s.ignored_nodes) if c.topology_key == LABEL_HOSTNAME else topo_size[i]
        s.weights[i] = math.log(size + 2)


def _count_node_by_node(s: PreScoreState, pod: Pod, all_nodes: Sequence[NodeInfo], require_all: bool) -> None:
    """Over all nodes: the matching pods of each non-hostname domain found by _domains_node_by_node,
    on the nodes the constraint's inclusion policies admit."""
    constraints = s.constraints
    non_host = [(i, c) for i, c in enumerate(constraints) if c.topology_key != LABEL_HOSTNAME]
    if not non_host:
        return
    checks = NodeChecks(pod, constraints, RequiredNodeAffinity.of(pod))
    for ni in all_nodes:
        node = ni.node
        if node is None:
            continue
        labels = node.labels
        if require_all and not node_has_all_keys(labels, constraints):
            continue
        aff, taints = checks.eligible(node)
        for i, c in non_host:
            if not NodeChecks.included(c, aff, taints):
                continue
            counts = s.topology_counts[i]
            value = labels.get(c.topology_key, "")
            if value in counts:
                counts[value] += count_pods_matching(ni.pods, c.selector, s.namespace, c.matcher)


class _Columns:
    """The label columns of a PreScore's constraints over one table, with a missing label read as ""
    (the code of a real "" value, or one past the last), as the node-by-node pass reads it."""

    __slots__ = ("cols", "empty_code", "ext_values", "no_node", "require_all", "table")

    def __init__(
        self, table: NodeTable, labels: TableLabels, constraints: Sequence[Constraint], require_all: bool
    ) -> None:
        self.table = table
        self.require_all = require_all
        self.no_node = labels.no_node(table)
        self.cols = [labels.column(table, c.topology_key) for c in constraints]
        self.ext_values: list[list[str]] = []
        self.empty_code: list[int] = []
        for col in self.cols:
            e = col.index.get("")
            self.ext_values.append(col.values if e is not None else [*col.values, ""])
            self.empty_code.append(len(col.values) if e is None else e)

    def live(self, rows: I64) -> tuple[Mask, list[I64]]:
        """The rows that count (a Node, and every key when all are required) and each column's codes."""
        codes = [col.codes[rows] for col in self.cols]
        live = ~self.no_node[rows]
        if self.require_all:
            for cd in codes:
                live &= cd >= 0
        return live, codes

    def ecodes(self, i: int, codes: I64) -> I64:
        """Column ``i``'s codes with a missing label as the code of ""."""
        return np.where(codes >= 0, codes, self.empty_code[i])
