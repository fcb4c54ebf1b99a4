"""The two heaps of the queue: activeQ (QueueSort order) and backoffQ (backoff expiry), entries
addressable by pod uid."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pyscheduler.backend.queue.records import QueuedPodInfo

LessFn = Callable[[QueuedPodInfo, QueuedPodInfo], bool]


class Entry:
    __slots__ = ("index", "key", "order", "qpi", "seq")

    def __init__(self, qpi: QueuedPodInfo, seq: int, key: float = 0.0) -> None:
        self.qpi = qpi
        self.seq = seq
        self.key = key  # backoffQ: the backoff expiry
        self.order: Any = None  # the heap's comparison key, set by the heap
        self.index = -1


class Heap:
    """A binary heap of entries addressable by pod uid (kube's heap.Heap): O(log n) push, pop,
    remove and re-sort of any entry, so nothing stale is ever left inside. Entries compare by
    ``order(entry)``, computed on push and on ``fix`` (a tuple compares in C; a custom QueueSort
    ``less`` comes wrapped in ``LessOrder``)."""

    __slots__ = ("_by_uid", "_items", "_order")

    def __init__(self, order: Callable[[Entry], Any]) -> None:
        self._items: list[Entry] = []
        self._by_uid: dict[str, Entry] = {}
        self._order = order

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, uid: object) -> bool:
        return uid in self._by_uid

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._items)

    def get(self, uid: str) -> Entry | None:
        return self._by_uid.get(uid)

    def peek(self) -> Entry | None:
        return self._items[0] if self._items else None

    def push(self, entry: Entry) -> None:
        uid = entry.qpi.uid
        old = self._by_uid.get(uid)
        if old is not None:
            self._remove_at(old.index)
        entry.order = self._order(entry)
        entry.index = len(self._items)
        self._items.append(entry)
        self._by_uid[uid] = entry
        self._up(entry.index)

    def pop(self) -> Entry:
        entry = self._items[0]
        self._remove_at(0)
        return entry

    def remove(self, uid: str) -> Entry | None:
        entry = self._by_uid.get(uid)
        if entry is not None:
            self._remove_at(entry.index)
        return entry

    def fix(self, uid: str) -> None:
        """Restore the order after the entry's sort key changed."""
        entry = self._by_uid[uid]
        entry.order = self._order(entry)
        if not self._up(entry.index):
            self._down(entry.index)

    def _remove_at(self, i: int) -> None:
        items = self._items
        entry = items[i]
        last = items.pop()
        del self._by_uid[entry.qpi.uid]
        entry.index = -1
        if i < len(items):
            items[i] = last
            last.index = i
            if not self._up(i):
                self._down(i)

    def _up(self, i: int) -> bool:
        """Sift the entry at ``i`` toward the root (moving parents down into the hole)."""
        items = self._items
        entry = items[i]
        order = entry.order
        start = i
        while i > 0:
            parent = (i - 1) >> 1
            above = items[parent]
            if not order < above.order:
                break
            items[i] = above
            above.index = i
            i = parent
        items[i] = entry
        entry.index = i
        return i != start

    def _down(self, i: int) -> None:
        items = self._items
        n = len(items)
        entry = items[i]
        order = entry.order
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            below = items[child]
            right = child + 1
            if right < n and items[right].order < below.order:
                child = right
                below = items[right]
            if not below.order < order:
                break
            items[i] = below
            below.index = i
            i = child
        items[i] = entry
        entry.index = i


class LessOrder:
    """activeQ order from a QueueSort plugin's ``less`` (first in, first out among equals), for plugins
    without ``sort_key``."""

    __slots__ = ("entry", "less")

    def __init__(self, entry: Entry, less: LessFn) -> None:
        self.entry = entry
        self.less = less

    def __lt__(self, other: LessOrder) -> bool:
        a, b = self.entry, other.entry
        if self.less(a.qpi, b.qpi):
            return True
        if self.less(b.qpi, a.qpi):
            return False
        return a.seq < b.seq


def backoff_order(e: Entry) -> tuple[float, int]:
    """backoffQ's order: the backoff expiry, then arrival."""
    return (e.key, e.seq)
