"""Opportunistic batching (kube-scheduler 1.36's ``OpportunisticBatching`` gate, beta, on by default;
KEP-5598): a pod with the same signature as the pod scheduled just before it takes the next node of that
pod's sorted scores instead of filtering and scoring every node again.

Design
------
One ``OpportunisticBatch`` per profile (``Framework.batch``), used by the scheduling cycle
(``Scheduler.schedule_pod``) in two calls, as kube's ``GetNodeHint`` and ``StoreScheduleResults``:

    node_hint(signature, cycle, rejects)       after PreFilter: a node name, or "" (no hint)
    store(signature, hinted, chosen, rest, cycle)   after the pick: remember the other scored nodes

The hint is given only when all of these hold, else the state is flushed with the reason kube counts
(``scheduler_batch_cache_flushed_total{reason}``):

- there is a stored state with nodes left (else no hint, nothing flushed);
- this cycle is the one right after the cycle that stored it (``pod_skipped``: another pod was popped in
  between, by this profile or another, or the last one failed; kube's ``pod_failed`` is never reached,
  since only a cycle that picked a node stores anything);
- the pod's signature is not None and equal to the stored one (``pod_incompatible``);
- the state is at most ``MAX_BATCH_AGE`` old on the handle's clock (``expired``);
- the node the last cycle chose is still in the snapshot (``node_missing``) and now *rejects* this pod at
  Filter (``node_not_full``): the state is only valid one pod per node, since the last node's score
  changed by the pod placed there and cannot be reused.

The hinted node then goes through the path a nominated node takes (Filter with nominated pods, then
extenders); if it passes it is the only feasible node and the pod goes there without scoring. ``store``
counts ``hint_used`` when the chosen node is the hint (the state is kept, its head popped), else
``hint_not_used`` (when a hint was given) and replaces the state with this cycle's other scored nodes in
order, or flushes it (``pod_not_batchable``: no signature; ``empty_list``: no other node).
``scheduler_batch_attempts_total{result}`` counts ``no_hint`` at every hint asked for and not given.

The sorted nodes are those of the last full cycle's pick: the feasible nodes it scored (the
percentageOfNodesToScore sample), by total score, ties in a random order (kube's heap with a random
tie-breaker per node), the chosen node left out. Pure: the clock is the handle's, and the Filter run on
the last chosen node is the caller's ``rejects`` callback.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

from pyscheduler.framework.clock import Clock

MAX_BATCH_AGE = 0.5
"""Seconds a stored state may be used (kube's maxBatchAge, 500 ms)."""

# scheduler_batch_attempts_total{result}
NO_HINT = "no_hint"
HINT_USED = "hint_used"
HINT_NOT_USED = "hint_not_used"
# scheduler_batch_cache_flushed_total{reason}
FLUSH_POD_FAILED = "pod_failed"
FLUSH_POD_SKIPPED = "pod_skipped"
FLUSH_NODE_MISSING = "node_missing"
FLUSH_NODE_NOT_FULL = "node_not_full"
FLUSH_EMPTY_LIST = "empty_list"
FLUSH_EXPIRED = "expired"
FLUSH_POD_INCOMPATIBLE = "pod_incompatible"
FLUSH_POD_NOT_BATCHABLE = "pod_not_batchable"


class BatchObserver(Protocol):
    """What batching reports (``pyscheduler.metrics.SchedulerMetrics`` implements it)."""

    def batch_attempt(self, profile: str, result: str) -> None: ...

    def batch_flushed(self, profile: str, reason: str) -> None: ...

    def node_hint_duration(self, hinted: str, profile: str, seconds: float) -> None: ...

    def store_results_duration(self, profile: str, seconds: float) -> None: ...


@dataclass
class _State:
    signature: Hashable
    # the other scored nodes, best first; ``taken`` of them handed out. A lazy sequence is fine: it is
    # only read when a hint is given, and most states never are (pods that fit many per node).
    nodes: Sequence[str]
    created: float
    taken: int = 0

    @property
    def left(self) -> int:
        return len(self.nodes) - self.taken


@dataclass
class _LastCycle:
    cycle: int = -1
    chosen: str = ""
    succeeded: bool = False


class OpportunisticBatch:
    def __init__(self, profile: str, clock: Clock, observer: BatchObserver | None = None) -> None:
        self.profile = profile
        self.clock = clock
        self.observer = observer
        self._state: _State | None = None
        self._last = _LastCycle()
        self.batched_pods = 0  # pods that went to their hint (kube's TotalBatchedPods)

    # ------------------------------------------------------------------------------------ hint
    def node_hint(self, signature: Hashable | None, cycle: int, rejects: Callable[[str], bool | None]) -> str:
        """The node to try first for a pod of ``signature`` in scheduling cycle ``cycle``, or "".
        ``rejects(name)``: whether Filter now rejects the pod on that node (None: no such node)."""
        began = time.perf_counter()
        hint = ""
        if self._compatible(signature, cycle, rejects):
            state = self._state
            assert state is not None
            hint = state.nodes[state.taken]
            state.taken += 1
        elif self.observer is not None:
            self.observer.batch_attempt(self.profile, NO_HINT)
        if self.observer is not None:
            self.observer.node_hint_duration(
                "hint" if hint else "no_hint", self.profile, time.perf_counter() - began
            )
        return hint

    def _compatible(
        self, signature: Hashable | None, cycle: int, rejects: Callable[[str], bool | None]
    ) -> bool:
        state = self._state
        if state is None or not state.left:
            return False
        if cycle != self._last.cycle + 1:
            return self._flush(FLUSH_POD_SKIPPED)
        if not self._last.succeeded:
            return self._flush(FLUSH_POD_FAILED)
        if signature is None or signature != state.signature:
            return self._flush(FLUSH_POD_INCOMPATIBLE)
        if self.clock.now() > state.created + MAX_BATCH_AGE:
            return self._flush(FLUSH_EXPIRED)
        rejected = rejects(self._last.chosen)
        if rejected is None:
            return self._flush(FLUSH_NODE_MISSING)
        if not rejected:
            return self._flush(FLUSH_NODE_NOT_FULL)
        return True

    def _flush(self, reason: str) -> bool:
        """Count a flush (kube's logUnusableState). As in kube, the state itself stays until the next
        ``store`` replaces it: a later pod may still find it compatible."""
        if self.observer is not None:
            self.observer.batch_flushed(self.profile, reason)
        return False

    # ------------------------------------------------------------------------------------ store
    def store(
        self,
        signature: Hashable | None,
        hinted: str,
        chosen: str,
        others: Sequence[str] | None,
        cycle: int,
    ) -> None:
        """A cycle that picked ``chosen``: remember it and, unless it took its hint, ``others`` (the
        other scored nodes, best first; only its length is read here) for the next pod of the same
        signature."""
        began = time.perf_counter()
        self._last = _LastCycle(cycle, chosen, True)
        if hinted and hinted == chosen:
            self.batched_pods += 1
            if self.observer is not None:
                self.observer.batch_attempt(self.profile, HINT_USED)
        else:
            if hinted and self.observer is not None:
                self.observer.batch_attempt(self.profile, HINT_NOT_USED)
            if signature is not None and others:
                self._state = _State(signature, others, self.clock.now())
            else:
                self._flush(FLUSH_EMPTY_LIST if not others else FLUSH_POD_NOT_BATCHABLE)
                self._state = None
        if self.observer is not None:
            self.observer.store_results_duration(self.profile, time.perf_counter() - began)

    @property
    def nodes_left(self) -> int:
        """How many hints the stored state still holds (0: none stored)."""
        return self._state.left if self._state is not None else 0
