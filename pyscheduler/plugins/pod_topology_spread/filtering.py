"""PreFilter (hard constraints counted per domain over all nodes), its add/remove extensions for
preemption, and Filter node by node and over a NodeBatch."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.helpers.node_affinity import RequiredNodeAffinity
from pyscheduler.framework.interfaces import (
    PreFilterResult,
)
from pyscheduler.framework.node_rows import (
    I64,
    LabelColumn,
    Mask,
    rows_of,
    snapshot_table,
    sum_by_code,
)
from pyscheduler.framework.node_table import batch_rows
from pyscheduler.framework.selectors import (
    SelectorError,
)
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Node, NodeInfo, Pod, PodInfo
from pyscheduler.plugins.pod_topology_spread.args import (
    DO_NOT_SCHEDULE,
    HONOR,
)
from pyscheduler.plugins.pod_topology_spread.common import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
    PRE_FILTER_STATE_KEY,
    Constraint,
    NodeChecks,
    PluginBase,
    count_pods_matching,
    node_has_all_keys,
)

_MAX_INT32 = 2**31 - 1
_NO_AFFINITY = RequiredNodeAffinity((), None)  # stands in where no constraint is there to honour it


class PreFilterState:
    """Per hard constraint: matching pods per domain value, the minimum over domains, and how many
    domains hold each count (to keep the minimum exact under add/remove).

    Counted from the NodeTable, a constraint's counts are first kept as arrays over its label column's
    codes (``_coded``: the column, the sums with a trailing 0 for a missing label, which codes are
    domains); the minimum and the number of domains are read off them in NumPy, and Filter's batch path
    uses the sums as they are. The value -> count dict and the histogram are made from them only when
    something reads ``counts``/``domains_at_count`` or updates the state (preemption's add/remove): a
    hostname key has a domain per node, and building those per pod was most of PreFilter."""

    __slots__ = (
        "_coded",
        "_counts",
        "_domains_at_count",
        "_per_code",
        "constraints",
        "min_match",
        "n_domains",
        "node_checks",
        "self_match",
    )

    def __init__(self, constraints: list[Constraint], self_match: list[int], node_checks: NodeChecks) -> None:
        self.constraints = constraints
        self.self_match = self_match
        self.node_checks = node_checks
        self._counts: list[dict[str, int] | None] = [{} for _ in constraints]
        self.min_match: list[int] = [_MAX_INT32] * len(constraints)
        self.n_domains: list[int] = [0] * len(constraints)
        self._domains_at_count: list[dict[int, int] | None] = [{} for _ in constraints]
        # per constraint, while counted from the table and not updated since: (column, sums, domains)
        self._coded: dict[int, tuple[LabelColumn, I64, Mask]] = {}
        # per constraint: (label column, counts as an array over its codes), for filter_nodes
        self._per_code: dict[int, tuple[LabelColumn, I64]] = {}

    def set_coded(self, i: int, col: LabelColumn, sums: I64, domains: Mask) -> None:
        """Constraint ``i``'s counts as sums over ``col``'s codes (trailing 0) where ``domains`` holds."""
        self._coded[i] = (col, sums, domains)
        self._counts[i] = None
        self._domains_at_count[i] = None
        n = int(np.count_nonzero(domains))
        self.n_domains[i] = n
        self.min_match[i] = int(sums[:-1][domains].min()) if n else _MAX_INT32

    @property
    def counts(self) -> list[dict[str, int]]:
        """Per constraint: domain value -> matching pods."""
        return [self._counts_of(i) for i in range(len(self.constraints))]

    @property
    def domains_at_count(self) -> list[dict[int, int]]:
        """Per constraint: count -> how many domains hold it."""
        return [self._hist_of(i) for i in range(len(self.constraints))]

    def _counts_of(self, i: int) -> dict[str, int]:
        c = self._counts[i]
        if c is None:
            col, sums, domains = self._coded[i]
            ks = np.flatnonzero(domains)
            values = col.values
            c = self._counts[i] = dict(zip([values[k] for k in ks.tolist()], sums[ks].tolist(), strict=True))
        return c

    def _hist_of(self, i: int) -> dict[int, int]:
        h = self._domains_at_count[i]
        if h is None:
            h = self._domains_at_count[i] = dict(Counter(self._counts_of(i).values()))
        return h

    def per_code(self, i: int, col: LabelColumn) -> I64:
        """``counts[i]`` over ``col``'s codes (trailing 0 for a missing label); cached until update()."""
        coded = self._coded.get(i)
        if coded is not None and coded[0] is col:
            return coded[1]
        hit = self._per_code.get(i)
        if hit is not None and hit[0] is col:
            return hit[1]
        arr = col.per_code(self._counts_of(i))
        self._per_code[i] = (col, arr)
        return arr

    def finish(self) -> None:
        """The minimum and the number of domains of the constraints counted into ``counts`` dicts."""
        for i, values in enumerate(self._counts):
            if values is None:
                continue  # coded: set by set_coded
            hist = dict(Counter(values.values()))  # counted in C
            self._domains_at_count[i] = hist
            self.n_domains[i] = len(values)
            self.min_match[i] = min(hist) if hist else _MAX_INT32

    def min_match_num(self, i: int) -> int:
        if self.n_domains[i] < self.constraints[i].min_domains:
            return 0
        return self.min_match[i]

    def count(self, i: int, value: str) -> int:
        """Matching pods in domain ``value`` of constraint ``i`` (0 when it is not a domain)."""
        coded = self._coded.get(i)
        if coded is not None:
            col, sums, domains = coded
            k = col.index.get(value)
            return int(sums[k]) if k is not None and domains[k] else 0
        return self._counts_of(i).get(value, 0)

    def update(self, i: int, value: str, delta: int) -> None:
        values = self._counts_of(i)
        hist = self._hist_of(i)
        self._coded.pop(i, None)
        self._per_code = {}
        old = values.get(value, 0)
        cur = old + delta
        if value not in values:
            self.n_domains[i] += 1
        values[value] = cur
        hist[old] = hist.get(old, 0) - 1
        if hist[old] <= 0:
            del hist[old]
        hist[cur] = hist.get(cur, 0) + 1
        if cur < self.min_match[i] or (old == self.min_match[i] and hist.get(old, 0) == 0):
            self.min_match[i] = cur

    def clone(self) -> PreFilterState:
        c = PreFilterState.__new__(PreFilterState)
        c.constraints = self.constraints
        c.self_match = self.self_match
        c.node_checks = self.node_checks
        c._counts = [None if m is None else dict(m) for m in self._counts]
        c._domains_at_count = [None if h is None else dict(h) for h in self._domains_at_count]
        c._coded = dict(self._coded)  # never written in place: update() drops an entry
        c.min_match = list(self.min_match)
        c.n_domains = list(self.n_domains)
        c._per_code = {}
        return c


class Filtering(PluginBase):
    def _fast_pre_filter_counts(self, s: PreFilterState, pod: Pod, nodes: Sequence[NodeInfo]) -> bool:
        """Fill ``s.counts`` from the NodeTable; False (nothing done) when ``nodes`` are not its rows."""
        snapshot = self._snapshot()
        table = snapshot_table(snapshot)
        if table is None:
            return False
        rows = rows_of(table, nodes, snapshot)
        if rows is None:
            return False
        constraints = s.constraints
        cols = [self._labels.column(table, c.topology_key) for c in constraints]
        codes = [col.codes[rows] for col in cols]
        has_all = np.ones(len(rows), dtype=np.bool_)
        for cd in codes:
            has_all &= cd >= 0
        aff, taints = self._eligibility(s.node_checks, table, rows)
        ns = pod.namespace
        for i, c in enumerate(constraints):
            incl = has_all
            if aff is not None and c.node_affinity_policy == HONOR:
                incl = incl & aff
            if taints is not None and c.node_taints_policy == HONOR:
                incl = incl & taints
            cnt = self._pod_counts(table, rows, nodes, c.selector, c.matcher, ns)
            summed = sum_by_code(len(cols[i].values), codes[i], cnt, incl)
            if summed is None:
                n = len(cols[i].values)
                s.set_coded(i, cols[i], np.zeros(n + 1, dtype=np.int64), np.zeros(n, dtype=np.bool_))
            else:
                s.set_coded(i, cols[i], *summed)
        return True

    # -- PreFilter -----------------------------------------------------------------------------------

    def calc_pre_filter_state(self, pod: Pod, nodes: Sequence[NodeInfo]) -> PreFilterState:
        constraints = self.get_constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:  # PreFilter skips the plugin: the pod's node affinity is not needed
            return PreFilterState(constraints, [], NodeChecks(pod, constraints, _NO_AFFINITY))
        req = RequiredNodeAffinity.of(pod)
        checks = NodeChecks(pod, constraints, req)
        s = PreFilterState(constraints, [1 if c.matches(pod.labels) else 0 for c in constraints], checks)
        if self._fast_pre_filter_counts(s, pod, nodes):
            s.finish()
            return s
        ns = pod.namespace
        indexed = list(enumerate(constraints))
        per_constraint = s.counts  # the live dicts (nothing is coded on this path): read once, not per node
        for ni in nodes:
            node = ni.node
            if node is None:
                continue
            labels = node.labels
            if not node_has_all_keys(labels, constraints):
                continue
            aff, taints = checks.eligible(node)
            for i, c in indexed:
                if not NodeChecks.included(c, aff, taints):
                    continue
                value = labels[c.topology_key]
                counts = per_constraint[i]
                counts[value] = counts.get(value, 0) + count_pods_matching(ni.pods, c.selector, ns, c.matcher)
        s.finish()
        return s

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            s = self.calc_pre_filter_state(pod, nodes)
        except (SelectorError, ValueError, TypeError) as e:
            return None, Status.as_error(f"get constraints from pod: {e}", plugin=NAME)
        if not s.constraints:
            return None, Status.skip(plugin=NAME)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> Filtering:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(s, PreFilterState):
            self._update_with_pod(s, pod_to_add.pod, pod_to_schedule, node_info.node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(s, PreFilterState):
            self._update_with_pod(s, pod_to_remove.pod, pod_to_schedule, node_info.node, -1)
        return None

    @staticmethod
    def _update_with_pod(
        s: PreFilterState, updated: Pod, preemptor: Pod, node: Node | None, delta: int
    ) -> None:
        if node is None or updated.namespace != preemptor.namespace:
            return
        if not node_has_all_keys(node.labels, s.constraints):
            return
        aff, taints = s.node_checks.eligible(node)
        for i, c in enumerate(s.constraints):
            if not c.matches(updated.labels):
                continue
            if not NodeChecks.included(c, aff, taints):
                continue
            s.update(i, node.labels[c.topology_key], delta)

    # -- Filter --------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.as_error("node not found", plugin=NAME)
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            try:
                s = self.calc_pre_filter_state(pod, self._all_nodes([node_info]))
            except (SelectorError, ValueError, TypeError) as e:
                return Status.as_error(f"get constraints from pod: {e}", plugin=NAME)
            state.write(PRE_FILTER_STATE_KEY, s)
        if not s.constraints:
            return None
        labels = node.labels
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH, plugin=NAME)
            skew = s.count(i, value) + s.self_match[i] - s.min_match_num(i)
            if skew > c.max_skew:
                return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """``filter`` for every node, from the PreFilter counts as arrays over label codes."""
        s = state.get(PRE_FILTER_STATE_KEY)
        br = batch_rows(nodes)
        if br is None or not isinstance(s, PreFilterState):
            return [self.filter(state, pod, ni) for ni in nodes]
        table, rows = br
        if self._labels.no_node(table)[rows].any():
            return [self.filter(state, pod, ni) for ni in nodes]
        if not s.constraints:
            return [None] * len(nodes)
        verdict = np.zeros(len(rows), dtype=np.int8)  # 0 pass, 1 missing label, 2 skew too large
        for i, c in enumerate(s.constraints):
            col = self._labels.column(table, c.topology_key)
            codes = col.codes[rows]
            skew = s.per_code(i, col)[codes] + (s.self_match[i] - s.min_match_num(i))
            open_ = verdict == 0
            missing = codes < 0
            verdict[open_ & missing] = 1
            verdict[open_ & ~missing & (skew > c.max_skew)] = 2
        if not verdict.any():
            return [None] * len(nodes)
        answers = (
            None,
            Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH, plugin=NAME),
            Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME),
        )
        return list(map(answers.__getitem__, verdict.tolist()))
