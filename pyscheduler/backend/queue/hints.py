"""Queueing hints: may a cluster event help a parked pod, and how soon should it be retried?

kube's isPodWorthRequeuing and its precedence of strategies, as functions of the ``events_map`` (plugin
name -> the events it registered, each with an optional hint). The queue calls them with its lock held;
a hint that raises counts as QUEUE, so a plugin bug never strands a pod.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pyscheduler.backend.queue.records import QueuedPodInfo, event_label
from pyscheduler.framework.events import Action, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from pyscheduler.framework.types import Pod

log = logging.getLogger("pyscheduler.backend.queue")

EventsMap = Mapping[str, Sequence[ClusterEventWithHint]]


class Strategy(enum.IntEnum):
    """kube's queueingStrategy, ordered by precedence."""

    SKIP = 0  # stay in the unschedulable pool
    AFTER_BACKOFF = 1  # backoffQ if still backing off, else activeQ
    IMMEDIATELY = 2  # activeQ


class RecordedEvent:
    """A cluster event recorded while pods were in flight. ``target`` set: it concerns that pod only."""

    __slots__ = ("event", "new", "old", "self_update", "target")

    def __init__(
        self, event: ClusterEvent, old: Any, new: Any, target: str | None = None, self_update: bool = False
    ) -> None:
        self.event = event
        self.old = old
        self.new = new
        self.target = target
        self.self_update = self_update


class InFlight:
    """A popped pod whose cycle is running, and where its view of the event log starts."""

    __slots__ = ("latest", "qpi", "start")

    def __init__(self, qpi: QueuedPodInfo, start: int) -> None:
        self.qpi = qpi
        self.start = start  # absolute index in the event log of the first event it must see
        self.latest: Pod | None = None  # newest version seen by update() while in flight


def is_wildcard(event: ClusterEvent) -> bool:
    return event.resource == Resource.WILDCARD and event.action == Action.ALL


def matching_registrations(events_map: EventsMap, event: ClusterEvent) -> EventsMap:
    """Each plugin's registrations this event matches, in registration order."""
    return {p: tuple(r for r in regs if event.matches(r.event)) for p, regs in events_map.items()}


class EventMatcher:
    """``matching_registrations`` and the plugins it names, worked out once per distinct event.

    The informers build a new ``ClusterEvent`` for every change, but there are few distinct ones (a
    resource, an action, a label); matching one against every registration (enum flag arithmetic per
    registration) on every bind and delete cost more than the move itself. The events map is fixed for
    the queue's life, so the answer for an event never changes.
    """

    MAX_EVENTS = 4096  # distinct events remembered (a node update's action is a combination of flags)

    __slots__ = ("_cache", "_events_map")

    def __init__(self, events_map: EventsMap) -> None:
        self._events_map = events_map
        self._cache: dict[ClusterEvent, tuple[EventsMap, frozenset[str]]] = {}

    def match(self, event: ClusterEvent) -> tuple[EventsMap, frozenset[str]]:
        """(each plugin's registrations ``event`` matches, the plugins with at least one). For a
        wildcard event those are the plugins that registered a wildcard: the only gating plugins such an
        event may move a gated pod for."""
        hit = self._cache.get(event)
        if hit is None:
            matching = matching_registrations(self._events_map, event)
            hit = (matching, frozenset(p for p, regs in matching.items() if regs))
            if len(self._cache) >= self.MAX_EVENTS:
                self._cache.clear()
            self._cache[event] = hit
        return hit


HintObserver = Callable[[str, str, str, float], None]
"""(plugin, event label, hint "Queue"/"QueueSkip"/"Error", seconds): scheduler_queueing_hint_execution_duration_seconds."""


def worth_requeuing(
    events_map: EventsMap,
    qpi: QueuedPodInfo,
    event: ClusterEvent,
    old: Any,
    new: Any,
    observe: HintObserver | None = None,
    matching: EventsMap | None = None,
) -> Strategy:
    """kube's isPodWorthRequeuing. ``matching``: ``matching_registrations`` of this event, if known."""
    rejectors = qpi.rejector_plugins()
    if not rejectors:
        return Strategy.AFTER_BACKOFF
    if is_wildcard(event):
        if isinstance(new, Pod) and new.uid != qpi.uid:
            return Strategy.SKIP  # a wildcard event aimed at another pod
        return Strategy.AFTER_BACKOFF
    strategy = Strategy.SKIP
    for plugin in sorted(rejectors):
        for reg in (matching if matching is not None else events_map).get(plugin, ()):
            if matching is None and not event.matches(reg.event):
                continue
            if reg.hint is not None:
                began = time.perf_counter()
                result = "Queue"
                try:
                    hint = reg.hint(qpi.pod, old, new)
                    if hint != QueueingHint.QUEUE:
                        result = "QueueSkip"
                except Exception:  # kube: an error counts as Queue so the pod is not stuck
                    log.exception("queueing hint of %s failed for pod %s", plugin, qpi.pod.key)
                    hint = QueueingHint.QUEUE
                    result = "Error"
                if observe is not None:
                    observe(plugin, event_label(event), result, time.perf_counter() - began)
                if hint != QueueingHint.QUEUE:
                    continue
            if plugin in qpi.pending_plugins:
                return Strategy.IMMEDIATELY
            if not qpi.pending_plugins:
                return Strategy.AFTER_BACKOFF
            strategy = Strategy.AFTER_BACKOFF
    return strategy


def strategy_for_in_flight(
    events_map: EventsMap,
    qpi: QueuedPodInfo,
    events: Iterable[RecordedEvent],
    observe: HintObserver | None = None,
) -> Strategy:
    """The loop of kube's determineSchedulingHintForInFlightPod: what ``events``, those recorded while
    the pod was in flight, say about requeuing a pod some plugin rejected, now that its attempt failed."""
    strategy = Strategy.SKIP
    uid = qpi.uid
    for ev in events:
        if ev.target is not None and ev.target != uid:
            continue
        if ev.self_update:
            s = Strategy.AFTER_BACKOFF  # the pod's own spec changed (the queue's update())
        else:
            s = worth_requeuing(events_map, qpi, ev.event, ev.old, ev.new, observe)
        if s == Strategy.IMMEDIATELY:
            return s
        if s == Strategy.AFTER_BACKOFF:
            strategy = s
            if not qpi.pending_plugins:
                return s
    return strategy
