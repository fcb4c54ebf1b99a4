"""NodeAffinity over many nodes at once: per-row answers cached per snapshot table and node epoch.

Filter's answer for a node depends only on its labels (and, for ``matchFields``, its name), the pod's
nodeSelector and required node affinity, and the plugin's ``addedAffinity``; Score's likewise on the
preferred terms. Pods of one workload share these, so for each NodeTable epoch (``node_epoch`` changes
whenever a row's Node object does) this keeps, per requirement seen, the answer for every row: Filter's
Status (None or one of the shared reject Statuses) and Score's sum of weights. A pod whose requirement
was seen before is answered by indexing with the batch's rows.

Filling a row list evaluates the per-node code once per distinct projection of the node's labels onto
the keys the terms read (every node has its own hostname label, but a selector on ``group`` sees only a
few values), so a new requirement costs about a dict lookup per node. Terms with ``matchFields`` read
the node's name: those are not cached (the caller goes node by node; such pods are usually narrowed to
a few nodes by PreFilter anyway).

The cache holds one table and epoch at a time and at most ``MAX_ENTRIES`` requirements per kind; it
lives on the plugin instance, whose ``addedAffinity`` is fixed.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

from pyscheduler.framework.node_table import NodeTable
from pyscheduler.framework.selectors import NodeSelectorTerm
from pyscheduler.framework.types import Node

T = TypeVar("T")
V = TypeVar("V")

MAX_ENTRIES = 256
_ABSENT = object()  # a label the node does not have (distinct from any value)


def term_keys(terms: Iterable[NodeSelectorTerm]) -> tuple[set[str], bool]:
    """The label keys the terms read, and whether any reads the node's name (``matchFields``)."""
    keys: set[str] = set()
    uses_name = False
    for t in terms:
        keys.update(r.key for r in t.expressions)
        if t.fields:
            uses_name = True
    return keys, uses_name


def per_row(table: NodeTable, keys: Iterable[str], fn: Callable[[Node], T], missing: T) -> list[T]:
    """``fn(node)`` for every row of ``table`` (``missing`` where a row has no Node). ``fn`` must read
    only the labels in ``keys`` (not the name): it runs once per distinct projection onto them."""
    ks = tuple(sorted(keys))
    memo: dict[tuple[object, ...], T] = {}
    out: list[T] = []
    append = out.append
    for node in table.nodes:
        if node is None:
            append(missing)
            continue
        get = node.labels.get
        proj = tuple([get(k, _ABSENT) for k in ks])
        if proj in memo:
            append(memo[proj])
        else:
            v = memo[proj] = fn(node)
            append(v)
    return out


class RowCache(Generic[V]):
    """Per-row answers for one (table, node_epoch), keyed by what they depend on; reset when the table
    or its epoch changes. The table is held, not its id, so the id cannot be reused meanwhile."""

    __slots__ = ("entries", "epoch", "last", "table")

    def __init__(self) -> None:
        self.table: NodeTable | None = None
        self.epoch = -1
        self.entries: dict[Hashable, V] = {}
        # (the requirement object last asked about, its answer; None: not cached). Held, so compared
        # by identity: the same pod's next chunk of nodes skips hashing the requirement.
        self.last: tuple[object, V | None] | None = None

    def sync(self, table: NodeTable) -> None:
        if self.table is not table or self.epoch != table.node_epoch:
            self.table = table
            self.epoch = table.node_epoch
            self.entries = {}
            self.last = None

    def get(self, key: Hashable) -> V | None:
        return self.entries.get(key)

    def put(self, key: Hashable, value: V) -> None:
        entries = self.entries
        if len(entries) >= MAX_ENTRIES:
            del entries[next(iter(entries))]  # the oldest
        entries[key] = value
