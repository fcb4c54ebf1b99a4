"""TaintToleration over many nodes at once: per-node answers cached per snapshot table and node epoch.

Filter and Score depend only on a node's taints and the pod's tolerations. Most nodes have no taints,
and tainted ones share a few taint lists, so for each NodeTable epoch (``node_epoch`` changes whenever
a row's Node object does) this keeps:

- the rows of the tainted nodes with their taint tuples (computed once per epoch), and
- per toleration set seen: Filter's answer for every row (a list of None / the reject Status), and per
  PreferNoSchedule toleration set: Score's count for every row (an int64 array).

A pod whose toleration set was seen before is answered by indexing those with the batch's rows. The
caches hold one table and epoch at a time and at most ``MAX_ENTRIES`` toleration sets each.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from pyscheduler.framework.node_table import NodeEpochCache, NodeTable, tainted_rows
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Taint

I64 = npt.NDArray[np.int64]
K = TypeVar("K")
V = TypeVar("V")

MAX_ENTRIES = 256


class TaintCache(NodeEpochCache):
    """Derived per-row values for one (table, node_epoch); reset when either changes."""

    __slots__ = ("filters", "scores", "tainted")

    def __init__(self) -> None:
        super().__init__()
        # (row, taints) of every row whose node has taints
        self.tainted: list[tuple[int, tuple[Taint, ...]]] = []
        self.filters: dict[Hashable, list[Status | None]] = {}
        self.scores: dict[Hashable, I64] = {}

    def sync(self, table: NodeTable) -> None:
        if self.moved(table):
            self.tainted = tainted_rows(table)
            self.filters = {}
            self.scores = {}

    def filter_statuses(
        self,
        key: Hashable,
        rejects: Callable[[tuple[Taint, ...]], Status | None],
    ) -> list[Status | None]:
        """Filter's answer for every row of the synced table, for the toleration set ``key``."""
        out = self.filters.get(key)
        if out is None:
            assert self.table is not None
            out = [None] * self.table.size
            memo: dict[tuple[Taint, ...], Status | None] = {}
            for i, taints in self.tainted:
                if taints in memo:
                    s = memo[taints]
                else:
                    s = memo[taints] = rejects(taints)
                out[i] = s
            _bounded_put(self.filters, key, out)
        return out

    def score_counts(self, key: Hashable, count: Callable[[tuple[Taint, ...]], int]) -> I64:
        """Score's count for every row of the synced table, for the toleration set ``key``."""
        out = self.scores.get(key)
        if out is None:
            assert self.table is not None
            out = np.zeros(self.table.size, np.int64)
            memo: dict[tuple[Taint, ...], int] = {}
            for i, taints in self.tainted:
                c = memo.get(taints)
                if c is None:
                    c = memo[taints] = count(taints)
                out[i] = c
            _bounded_put(self.scores, key, out)
        return out


def _bounded_put(d: dict[K, V], key: K, value: V) -> None:
    if len(d) >= MAX_ENTRIES:
        del d[next(iter(d))]  # the oldest entry
    d[key] = value


def pick(values: Sequence[Status | None], rows: I64) -> list[Status | None]:
    return [values[r] for r in rows.tolist()]
