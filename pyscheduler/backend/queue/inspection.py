"""The queue's read-only views: counts for the metrics, the pods per pool for debugging and
``explain``, where one pod is. ``SchedulingQueue`` inherits them; they read its pools under its lock
and never move a pod (the moves and their state machine are in ``scheduling_queue.py``)."""

from __future__ import annotations

import threading

from pyscheduler.backend.queue.backoff import BackoffQueue
from pyscheduler.backend.queue.gated import GatedPool
from pyscheduler.backend.queue.heap import Heap
from pyscheduler.backend.queue.hints import InFlight, RecordedEvent
from pyscheduler.backend.queue.records import (
    ACTIVE,
    BACKOFF,
    GATED,
    IN_FLIGHT,
    UNSCHEDULABLE,
    QueuedPodInfo,
    event_label,
)
from pyscheduler.framework.types import Pod


class QueueInspection:
    """What the scheduling queue shows without changing anything. Every public method takes the lock;
    ``_where`` expects it held."""

    # The pools, owned and initialised by SchedulingQueue.
    _lock: threading.Lock
    _active: Heap
    _backoff: BackoffQueue
    _unschedulable: dict[str, QueuedPodInfo]
    _gated: GatedPool
    _in_flight: dict[str, InFlight]
    _events: list[RecordedEvent]

    def pending_pods(self) -> dict[str, int]:
        """Counts per queue, for scheduler_pending_pods{queue}."""
        with self._lock:
            return {
                ACTIVE: len(self._active),
                BACKOFF: len(self._backoff),
                UNSCHEDULABLE: len(self._unschedulable),
                GATED: len(self._gated),
            }

    def unschedulable_plugin_counts(self) -> dict[tuple[str, str], int]:
        """(plugin, profile) -> how many pods that plugin holds back: the parked and backing-off pods
        by the plugins that rejected them, the gated ones by their gate (scheduler_unschedulable_pods)."""
        out: dict[tuple[str, str], int] = {}
        with self._lock:
            parked = [*self._unschedulable.values(), *(e.qpi for e in self._backoff)]
            for qpi in parked:
                for plugin in qpi.rejector_plugins():
                    key = (plugin, qpi.pod.scheduler_name)
                    out[key] = out.get(key, 0) + 1
            for qpi in self._gated.values():
                if qpi.gating_plugin:
                    key = (qpi.gating_plugin, qpi.pod.scheduler_name)
                    out[key] = out.get(key, 0) + 1
        return out

    def in_flight_events(self) -> dict[str, int]:
        """Event label -> events recorded for the pods in flight, and ``PodPopped``: the pods in flight
        (scheduler_inflight_events)."""
        with self._lock:
            out: dict[str, int] = {"PodPopped": len(self._in_flight)}
            for ev in self._events:
                label = event_label(ev.event)
                out[label] = out.get(label, 0) + 1
        return out

    def pending_pod_list(self) -> dict[str, list[Pod]]:
        """The pods per queue, in-flight ones under ``in_flight`` (debugging)."""
        with self._lock:
            return {
                ACTIVE: [e.qpi.pod for e in self._active],
                BACKOFF: [e.qpi.pod for e in self._backoff],
                UNSCHEDULABLE: [q.pod for q in self._unschedulable.values()],
                GATED: [q.pod for q in self._gated.values()],
                IN_FLIGHT: [r.qpi.pod for r in self._in_flight.values()],
            }

    def where(self, uid: str) -> str | None:
        """Which queue holds the pod: ACTIVE, BACKOFF, UNSCHEDULABLE, GATED, IN_FLIGHT, or None."""
        with self._lock:
            return self._where(uid)

    def get(self, uid: str) -> QueuedPodInfo | None:
        with self._lock:
            parked = self._unschedulable.get(uid) or self._gated.get(uid)
            if parked is not None:
                return parked
            entry = self._active.get(uid) or self._backoff.get(uid)
            if entry is not None:
                return entry.qpi
            rec = self._in_flight.get(uid)
            return rec.qpi if rec is not None else None

    def in_flight_count(self) -> int:
        with self._lock:
            return len(self._in_flight)

    def in_flight_event_count(self) -> int:
        """Events kept for in-flight pods (bounded by what arrived since the oldest was popped)."""
        with self._lock:
            return len(self._events)

    def __len__(self) -> int:
        """Pending pods (in-flight ones excluded)."""
        with self._lock:
            return len(self._active) + len(self._backoff) + len(self._unschedulable) + len(self._gated)

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={v}" for k, v in self.pending_pods().items())
        return f"SchedulingQueue({counts}, in_flight={self.in_flight_count()})"

    # lock held

    def _where(self, uid: str) -> str | None:
        if uid in self._active:
            return ACTIVE
        if uid in self._backoff:
            return BACKOFF
        if uid in self._unschedulable:
            return UNSCHEDULABLE
        if uid in self._gated:
            return GATED
        if uid in self._in_flight:
            return IN_FLIGHT
        return None
