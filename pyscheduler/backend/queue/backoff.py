"""backoffQ: pods waiting out their backoff, as kube-scheduler 1.36 keeps them (SchedulerPopFromBackoffQ,
beta and on by default since 1.33).

Two heaps, like kube's backoffQueue:

    unschedulable  pods some plugin rejected (``unschedulable_plugins`` or ``pending_plugins`` set),
                   ordered by their backoff expiry *window*, then as activeQ orders them
    errors         pods whose attempt failed with an error (nobody rejected them), by expiry

Expiries are aligned down to a one-second ordering window (``WINDOW``): a pod whose backoff ends at
12.7 s belongs to window 12 and is still backing off while the clock is in window 12, so the flush
that runs at each window boundary moves whole windows at once, in priority order.

When activeQ is empty, ``pop_early`` hands out the head of the unschedulable heap before its backoff
ends (kube: an idle scheduler should not wait out a backoff); pods that failed with an error always
wait. PreEnqueue runs when a pod enters backoffQ, so a pod popped early skips it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from pyscheduler.backend.queue.heap import Entry, Heap, backoff_order

WINDOW = 1.0  # kube's backoffQOrderingWindowDuration
NO_BACKOFF = -math.inf  # the expiry of a pod never attempted (kube's zero time)


def align(t: float) -> float:
    """The start of the ordering window ``t`` falls in."""
    return t if t == NO_BACKOFF else math.floor(t / WINDOW) * WINDOW


class BackoffQueue:
    """The backoffQ pool of ``SchedulingQueue`` (lock held by the caller). Entries carry the aligned
    expiry in ``Entry.key``."""

    __slots__ = ("_errors", "_unschedulable")

    def __init__(self, active_order: Callable[[Entry], Any]) -> None:
        self._unschedulable = Heap(lambda e: (e.key, active_order(e)))
        self._errors = Heap(backoff_order)

    def __len__(self) -> int:
        return len(self._unschedulable) + len(self._errors)

    def __contains__(self, uid: object) -> bool:
        return uid in self._unschedulable or uid in self._errors

    def __iter__(self) -> Iterator[Entry]:
        yield from self._unschedulable
        yield from self._errors

    def get(self, uid: str) -> Entry | None:
        return self._unschedulable.get(uid) or self._errors.get(uid)

    def push(self, entry: Entry) -> None:
        """Add (or move) the entry to the heap its pod belongs in."""
        qpi = entry.qpi
        failed_with_error = not qpi.unschedulable_plugins and not qpi.pending_plugins
        (self._unschedulable if failed_with_error else self._errors).remove(qpi.uid)
        (self._errors if failed_with_error else self._unschedulable).push(entry)

    def remove(self, uid: str) -> Entry | None:
        return self._unschedulable.remove(uid) or self._errors.remove(uid)

    def pop_completed(self, now: float) -> list[Entry]:
        """Every entry whose backoff window ended before the window ``now`` is in."""
        window = align(now)
        out: list[Entry] = []
        for heap in (self._unschedulable, self._errors):
            while True:
                head = heap.peek()
                if head is None or head.key >= window:
                    break
                out.append(heap.pop())
        return out

    def can_pop_early(self) -> bool:
        return len(self._unschedulable) > 0

    def pop_early(self) -> Entry | None:
        """The head of the unschedulable heap, backing off or not (for an idle activeQ)."""
        return self._unschedulable.pop() if len(self._unschedulable) else None
