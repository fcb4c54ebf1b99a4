"""NodeResourcesFit over many nodes at once: Filter and Score as NumPy integer arithmetic.

Each function answers, node by node, exactly what the per-node code in ``__init__`` answers, or returns
None: the caller then goes node by node. The columns come from the snapshot's NodeTable when ``nodes``
is a NodeBatch with current rows, else they are read off the NodeInfos themselves (the same attributes
the per-node code reads, so stale table rows never matter).

What is vectorised: Filter's pods / cpu / memory / ephemeral-storage and scalar (extended) resource
checks (the failing nodes are grouped by which checks they fail and how; each group's Status comes from
the per-node ``fits`` of its first node, reasons and all, and is shared by the group: a pod asking for
an extended resource one node in 5,000 has gets two Statuses, not 4,999); Score for all three strategies
over cpu, memory and ephemeral-storage. What is not (None): a pod requesting a scalar resource Score
weighs, more than 28 scalar requests, negative or huge quantities (beyond 2**52, where int64 products
could overflow), negative or huge weights.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import repeat
from operator import attrgetter

import numpy as np
import numpy.typing as npt

from pyscheduler.framework.interfaces import MAX_NODE_SCORE
from pyscheduler.framework.node_table import NodeEpochCache, NodeTable, batch_rows
from pyscheduler.framework.types import NodeInfo

from .args import MAX_UTILIZATION
from .scoring import KIND_CPU, KIND_EPHEMERAL, KIND_MEMORY, KIND_SCALAR

I64 = npt.NDArray[np.int64]

# Below this many nodes the per-node code is faster than the two dozen NumPy calls (~30 µs) of a
# batch; measured break-even: about 40 nodes for Filter (``fits`` is ~0.5 µs a node), 30 for Score.
FILTER_MIN_BATCH = 40
SCORE_MIN_BATCH = 30
# Every quantity a vectorised path reads is in [0, LIMIT): products by 100 and sums stay in int64.
LIMIT = 1 << 52
MAX_WEIGHT = 1 << 20

_GETTERS: dict[str, Callable[[NodeInfo], int]] = {
    "alloc_cpu": attrgetter("allocatable.milli_cpu"),
    "alloc_mem": attrgetter("allocatable.memory"),
    "alloc_eph": attrgetter("allocatable.ephemeral_storage"),
    "alloc_pods": attrgetter("allocatable.allowed_pod_number"),
    "req_cpu": attrgetter("requested.milli_cpu"),
    "req_mem": attrgetter("requested.memory"),
    "req_eph": attrgetter("requested.ephemeral_storage"),
    "nz_cpu": attrgetter("non_zero_requested.milli_cpu"),
    "nz_mem": attrgetter("non_zero_requested.memory"),
    "pod_count": lambda ni: len(ni.pods),
}
_ALLOC_SCALAR = attrgetter("allocatable.scalar")
_USED_SCALAR = attrgetter("requested.scalar")


class Columns:
    """Integer columns for ``nodes`` in order: table rows when current, else read off the NodeInfos."""

    __slots__ = ("nodes", "rows", "table")

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        self.nodes = nodes
        br = batch_rows(nodes)
        self.table: NodeTable | None = br[0] if br is not None else None
        self.rows: I64 | None = br[1] if br is not None else None

    def get(self, name: str) -> I64:
        """Raises OverflowError for a value beyond int64 (only when read off the NodeInfos)."""
        if self.table is not None and self.rows is not None:
            col: I64 = getattr(self.table, name)
            return col[self.rows]
        return np.fromiter(map(_GETTERS[name], self.nodes), np.int64, len(self.nodes))

    def many(self, *names: str) -> list[I64] | None:
        """The columns, or None if some value is negative or not below LIMIT."""
        try:
            cols = [self.get(n) for n in names]
        except OverflowError:
            return None
        if not in_range(cols):
            return None
        return cols


def in_range(cols: Sequence[I64]) -> bool:
    """Every value in [0, LIMIT): the bitwise or of non-negative values below a power of two is
    below it, and any negative value makes it negative."""
    acc = cols[0]
    for c in cols[1:]:
        acc = acc | c
    return not len(acc) or 0 <= int(np.bitwise_or.reduce(acc)) < LIMIT


def _in_range(*values: int) -> bool:
    return all(0 <= v < LIMIT for v in values)


def filter_failures(
    nodes: Sequence[NodeInfo],
    milli_cpu: int,
    memory: int,
    ephemeral: int,
    scalar: Sequence[tuple[str, int, str]] = (),
    dra: frozenset[str] = frozenset(),
    alloc_index: ScalarAllocations | None = None,
) -> tuple[list[int], list[int]] | None:
    """The nodes where a pod with these requests does not fit, or None (go node by node): their
    positions and, for each, a failure key. Two nodes with the same key fail the same checks (pods,
    cpu, memory, ephemeral-storage, then each scalar request in order), each the same way (short, or
    asking more than the whole allocatable), so ``fits`` gives them equal Statuses. Scalar columns are
    read off the NodeInfos (the table keeps none), with ``alloc_index`` only those of the nodes offering
    the resource; ``dra`` as in ``fits``: a DRA-backed extended
    resource the node does not list is not checked."""
    if not _in_range(milli_cpu, memory, ephemeral, *(q for _, q, _ in scalar)):
        return None
    if 1 + 2 * (3 + len(scalar)) > 62:  # the key would not fit an int64
        return None
    names = ["alloc_pods", "pod_count"]
    checks: list[int] = []
    for q, alloc, req in (
        (milli_cpu, "alloc_cpu", "req_cpu"),
        (memory, "alloc_mem", "req_mem"),
        (ephemeral, "alloc_eph", "req_eph"),
    ):
        if q > 0:
            names += [alloc, req]
            checks.append(q)
    columns = Columns(nodes)
    cols = columns.many(*names)
    if cols is None:
        return None
    n = len(nodes)
    key = (cols[1] >= cols[0]).astype(np.int64)  # num_pods + 1 > allowed
    bit = 1
    for i, q in enumerate(checks):
        alloc_col = cols[2 + 2 * i]
        short = q > alloc_col - cols[3 + 2 * i]
        key |= (short.astype(np.int64) << bit) | ((short & (q > alloc_col)).astype(np.int64) << (bit + 1))
        bit += 2
    # the offering-nodes index applies when the nodes are current table rows
    sparse = alloc_index if columns.table is not None and columns.rows is not None else None
    for rname, q, _reason in scalar:
        try:
            if sparse is not None and q > 0:
                # Where a node does not allocate it, a positive request is short whatever that node's
                # use (use is never negative), so only the offering nodes' use is read.
                alloc_col, used_col = _sparse_scalar_columns(nodes, columns, rname, sparse)
            else:  # map chains: the loop over thousands of nodes stays in C
                alloc_col = np.fromiter(
                    map(dict.get, map(_ALLOC_SCALAR, nodes), repeat(rname), repeat(0)), np.int64, n
                )
                used_col = np.fromiter(
                    map(dict.get, map(_USED_SCALAR, nodes), repeat(rname), repeat(0)), np.int64, n
                )
        except OverflowError:
            return None
        if not in_range([alloc_col, used_col]):
            return None
        short = q > alloc_col - used_col
        if rname in dra:
            short &= alloc_col > 0  # DynamicResources allocates devices for it on this node
        key |= (short.astype(np.int64) << bit) | ((short & (q > alloc_col)).astype(np.int64) << (bit + 1))
        bit += 2
    failed = key.nonzero()[0]
    return failed.tolist(), key[failed].tolist()


class ScalarAllocations(NodeEpochCache):
    """Per (NodeTable, node_epoch): for each scalar resource, the rows whose node allocates it and how
    much. A node's allocatable comes from its Node object alone, so this holds until ``node_epoch``
    moves. Filter then reads a scalar request's columns only on the nodes that offer the resource: where
    one node in 5,000 offers it (scheduler_perf's SchedulingWithExtendedResource), one NodeInfo instead
    of 5,000 per pod."""

    __slots__ = ("by_name",)

    def __init__(self) -> None:
        super().__init__()
        self.by_name: dict[str, tuple[I64, I64]] = {}

    def rows(self, table: NodeTable, rname: str) -> tuple[I64, I64]:
        """(rows, quantities) of the nodes of ``table`` allocating ``rname``, rows ascending."""
        if self.moved(table):
            found: dict[str, tuple[list[int], list[int]]] = {}
            for i, ni in enumerate(table.infos):
                for name, q in ni.allocatable.scalar.items():
                    rows, qs = found.setdefault(name, ([], []))
                    rows.append(i)
                    qs.append(q)
            self.by_name = {
                n: (np.array(r, dtype=np.int64), np.array(q, dtype=np.int64)) for n, (r, q) in found.items()
            }
        hit = self.by_name.get(rname)
        if hit is None:
            return _EMPTY, _EMPTY
        return hit


_EMPTY: I64 = np.zeros(0, dtype=np.int64)


def _sparse_scalar_columns(
    nodes: Sequence[NodeInfo], columns: Columns, rname: str, index: ScalarAllocations
) -> tuple[I64, I64]:
    """The allocatable and used columns of ``rname`` for ``nodes`` (whose ``columns`` have current table
    rows), with used read only where the node allocates the resource (0 elsewhere)."""
    table, rows = columns.table, columns.rows
    assert table is not None and rows is not None
    offer_rows, offer_q = index.rows(table, rname)
    full = np.zeros(table.size, dtype=np.int64)
    full[offer_rows] = offer_q
    alloc_col: I64 = full[rows]
    used_col = np.zeros(len(rows), dtype=np.int64)
    at = np.flatnonzero(alloc_col).tolist()
    if at:
        used_col[at] = [nodes[k].requested.scalar.get(rname, 0) for k in at]
    return alloc_col, used_col


def _safe(den: I64) -> I64:
    """The divisor (non-negative) with zeros replaced by 1 (those lanes are masked out afterwards)."""
    return np.maximum(den, 1)


def least_cpu_memory(nodes: Sequence[NodeInfo], pod_cpu: int, pod_mem: int) -> I64 | None:
    """The default strategy's direct path in ``Fit.score``."""
    if not _in_range(pod_cpu, pod_mem):
        return None
    cols = Columns(nodes).many("alloc_cpu", "alloc_mem", "nz_cpu", "nz_mem")
    if cols is None:
        return None
    ac, am, uc, um = cols
    # (cap - want) * 100 // cap where cap != 0 and want <= cap, else 0: with cap >= 0 and want >= 0,
    # clamping cap - want at 0 gives those zeros (cap == 0 means want >= cap).
    cpu = np.maximum(ac - (uc + pod_cpu), 0)
    cpu *= MAX_NODE_SCORE
    cpu //= _safe(ac)
    mem = np.maximum(am - (um + pod_mem), 0)
    mem *= MAX_NODE_SCORE
    mem //= _safe(am)
    cpu += mem
    # halved (>> 1, the sum is non-negative) only where the node has both resources
    cpu >>= np.minimum(ac, 1) & np.minimum(am, 1)
    return cpu  # type: ignore[no-any-return]


_COLUMNS = {
    KIND_CPU: ("alloc_cpu", "nz_cpu"),
    KIND_MEMORY: ("alloc_mem", "nz_mem"),
    KIND_EPHEMERAL: ("alloc_eph", "req_eph"),
}


def strategy_scores(
    nodes: Sequence[NodeInfo],
    resources: Sequence[tuple[int, str]],
    weights: Sequence[int],
    pod_requests: Sequence[int],
    strategy: str,
    shape: Sequence[int] | None,
) -> I64 | None:
    """The scorers of ``scoring`` for every node: ``strategy`` is "least", "most" or "ratio" (then
    ``shape`` is the score at each utilization 0..100, the broken linear function tabulated)."""
    used: list[tuple[int, int, int]] = []  # (position in names, weight, pod request) per resource
    names: list[str] = []
    for (kind, _), w, q in zip(resources, weights, pod_requests, strict=True):
        if kind == KIND_SCALAR:
            if q != 0:
                return None  # the node's scalar resources are not in the columns
            continue
        cols = _COLUMNS.get(kind)
        if cols is None:
            continue  # never scored
        if not _in_range(q) or not 0 <= w <= MAX_WEIGHT:
            return None
        used.append((len(names), w, q))
        names += cols
    n = len(nodes)
    if not used:
        return np.zeros(n, np.int64)
    got = Columns(nodes).many(*names)
    if got is None:
        return None
    node_score = np.zeros(n, np.int64)
    weight_sum = np.zeros(n, np.int64)
    lut = np.asarray(shape, dtype=np.int64) if shape is not None else None
    for pos, w, q in used:
        alloc = got[pos]
        req = got[pos + 1] + q
        present = alloc != 0
        den = _safe(alloc)
        if strategy == "least":
            s = np.where(present & (req <= alloc), (alloc - req) * MAX_NODE_SCORE // den, 0)
        elif strategy == "most":
            s = np.where(present, np.minimum(req, alloc) * MAX_NODE_SCORE // den, 0)
        else:
            assert lut is not None
            # requested > capacity scores as utilization 100, which clamping requested gives
            util = np.minimum(req, alloc) * MAX_UTILIZATION // den
            s = lut[util]
            present &= s > 0
            s = np.where(present, s, 0)
        node_score += s * w
        weight_sum += np.where(present, w, 0)
    has = weight_sum != 0
    if strategy == "ratio":
        # round half up: (2 * score + sum) // (2 * sum), both non-negative
        out = np.where(has, (2 * node_score + weight_sum) // (2 * _safe(weight_sum)), 0)
    else:
        out = np.where(has, node_score // _safe(weight_sum), 0)
    return out
