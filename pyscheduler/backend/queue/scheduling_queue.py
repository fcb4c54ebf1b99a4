"""SchedulingQueue: the pending pods, modelled on kube-scheduler's PriorityQueue (queueing hints on).

Design
------
Every pending pod (unassigned, not deleted) the queue knows is in exactly one place::

    activeQ        heap ordered by the QueueSort ``less`` (ties: first in, first out); pop() takes the head
    backoffQ       heap ordered by backoff expiry: failed recently, waiting out its backoff
    unschedulable  uid -> QueuedPodInfo: failed, waiting for a cluster event that may help it
    gated          uid -> QueuedPodInfo: PreEnqueue said not yet (e.g. scheduling gates); indexed by
                   the gating plugin (``GatedPool``), so an event asks only the pods it may move
    in-flight      popped, its scheduling/binding cycle is running; the queue records the cluster
                   events that arrive meanwhile, so a failure they may have fixed is retried at once

State machine of one pod (edge labels in quotes are the ``event`` label given to
scheduler_queue_incoming_pods_total when the pod enters a queue)::

      add(pod) "UnschedulablePodAdd", update() of an unknown pod "UnschedulablePodUpdate"
                           |
                           v          rejects
                    ( PreEnqueue ) -------------------------------------------> [gated]
                           | passes                                              |   ^
                           v                                                     |   | PreEnqueue
       +------------> [activeQ] <----- PreEnqueue passes after: update(), -------+   | rejects again
       |                   |           an event the gating plugin registered,   ----+
       |                   | pop()     activate() "ForceActivate"
       |                   v           (attempts += 1, rejecting plugins cleared)
       |             [in-flight] ---- done(uid): bound ---------------------------> (gone)
       |                   +---- delete(pod): tombstoned; dropped when handed back
       |                   |
       |                   | add_unschedulable_if_not_present(qpi) "ScheduleAttemptFailure"
       |                   v
       |        ( error, or no rejecting plugin, or an event recorded while in flight that a
       |          rejecting plugin's hint QUEUEs? )  --no-->  [unschedulable]
       |                   | yes                                   |
       |                   v                                       | move_all_to_active_or_backoff(ev)
       |        ( still backing off? ) --yes--> [backoffQ]         | whose hint QUEUEs (label: the event),
       |                   | no                     |              | update() changing metadata/spec
       |                   |                        |              | "UnschedulablePodUpdate",
       |                   |   flush(): expired     |              | flush(): unschedulable longer than
       |                   |   "BackoffComplete"    |              | unschedulable_max_stay
       |                   v                        v              | "UnschedulableTimeout"
       +-------------------+------------------------+              v
                                                          ( still backing off? ) -> backoffQ / activeQ

    Every move into activeQ goes through PreEnqueue first (a pod it rejects goes to [gated]).
    activate(uids) moves pods from backoffQ, unschedulable or gated to activeQ ("ForceActivate"); for
    an in-flight pod it records ForceActivate, so that a failure is requeued at once.
    A rejection by a *pending* plugin (Status PENDING, in ``pending_plugins``) whose hint QUEUEs
    skips backoff (kube's queueImmediately).

Backoff: ``initial_backoff * 2**(attempts-1)`` capped at ``max_backoff``, counted from ``timestamp``
(set to now when the failed pod is requeued); a pod never attempted has no backoff.

Queueing hints: ``events_map`` maps a plugin name to the events it registered
(``EnqueueExtensions.events_to_register``). An event can move a pod only if one of the plugins that
rejected it (``unschedulable_plugins | pending_plugins``) registered a matching event and that
registration's hint (``None`` means always) returns QUEUE for (pod, old, new); a hint that raises
counts as QUEUE. A plugin absent from ``events_map`` registered nothing, so no event retries the pods
only it rejected (the caller should register "all events" for plugins without EnqueueExtensions, as
kube's framework does). Wildcard events (ForceActivate, UnschedulableTimeout, WildCardEvent) move
every pod, except gated ones whose gating plugin did not register them. Events nobody registered
are ignored (not even recorded for in-flight pods). A registration with a ``HintIndex`` lets an event
skip, without asking their hints, the parked pods it cannot concern (``keyed.py``; same moves, same
order as asking every pod).

Time: ``clock`` drives every timestamp and expiry (a FakeClock makes tests exact); ``pop(timeout)``
waits on the real clock (``threading.Condition.wait``), since a fake clock never moves by itself.

Order: activeQ compares ``(sort_key(qpi), seq)`` tuples when the QueueSort plugin offers ``sort_key``
(a C-speed comparison; the key must order exactly as ``less``), else calls ``less`` both ways.

Thread safety: one lock and one Condition guard all state. ``less``, ``sort_key``, ``pre_enqueue``, the hint
functions and ``on_incoming`` run under that lock and must not call back into the queue.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pyscheduler.backend.queue.backoff import NO_BACKOFF, WINDOW, BackoffQueue, align
from pyscheduler.backend.queue.gated import GatedPool
from pyscheduler.backend.queue.heap import Entry, Heap, LessFn, LessOrder
from pyscheduler.backend.queue.hints import (
    EventMatcher,
    HintObserver,
    InFlight,
    RecordedEvent,
    Strategy,
    is_wildcard,
    strategy_for_in_flight,
    worth_requeuing,
)
from pyscheduler.backend.queue.inspection import QueueInspection
from pyscheduler.backend.queue.keyed import ParkedKeys
from pyscheduler.backend.queue.nominator import Nominator
from pyscheduler.backend.queue.records import (
    ACTIVE,
    BACKOFF,
    BACKOFF_COMPLETE,
    EVENT_UNSCHEDULED_POD_UPDATE,
    FORCE_ACTIVATE_LABEL,
    GATED,
    IN_FLIGHT,
    POD_ADD_LABEL,
    POD_UPDATE_LABEL,
    POP_FROM_BACKOFF,
    SCHEDULE_ATTEMPT_FAILURE,
    UNSCHEDULABLE,
    QueuedPodInfo,
    event_label,
    is_pod_updated,
)
from pyscheduler.framework.clock import Clock
from pyscheduler.framework.events import (
    FORCE_ACTIVATE,
    UNSCHEDULABLE_TIMEOUT,
    ClusterEvent,
    ClusterEventWithHint,
)
from pyscheduler.framework.status import Status, is_success
from pyscheduler.framework.types import Pod, PodInfo

log = logging.getLogger("pyscheduler.backend.queue")

SortKeyFn = Callable[[QueuedPodInfo], Any]
PreEnqueueFn = Callable[[Pod], Status | None]
IncomingHook = Callable[[str, str], None]


class SchedulingQueue(QueueInspection):
    """kube-scheduler's PriorityQueue with its nominator. See the module docstring."""

    def __init__(
        self,
        less: LessFn,
        clock: Clock,
        *,
        pre_enqueue: PreEnqueueFn | None = None,
        events_map: Mapping[str, Sequence[ClusterEventWithHint]] | None = None,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        unschedulable_max_stay: float = 300.0,
        on_incoming: IncomingHook | None = None,
        sort_key: SortKeyFn | None = None,
        pop_from_backoff: bool = True,
        on_hint: HintObserver | None = None,
    ) -> None:
        if initial_backoff < 0 or max_backoff < 0 or unschedulable_max_stay < 0:
            raise ValueError("backoff and unschedulable durations must be >= 0")
        self._less = less
        self._sort_key = sort_key
        self._clock = clock
        self._pre_enqueue = pre_enqueue
        self._events_map: dict[str, tuple[ClusterEventWithHint, ...]] = {
            plugin: tuple(regs) for plugin, regs in (events_map or {}).items()
        }
        self._matcher = EventMatcher(self._events_map)
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._max_stay = unschedulable_max_stay
        self._on_incoming = on_incoming
        self._pop_from_backoff = pop_from_backoff  # kube's SchedulerPopFromBackoffQ (beta, on)
        self._on_hint = on_hint

        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._seq = itertools.count()
        self._active = Heap(self._active_order)
        self._backoff = BackoffQueue(self._active_order)
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._gated = GatedPool()  # indexed by gating plugin: an event asks only its plugins' pods
        # parked pods by the keys of the plugins' HintIndex: an event asks only the pods it can concern
        self._keys = ParkedKeys(self._events_map)
        # in flight: uid -> record, in pop order (so the first record has the smallest event index)
        self._in_flight: dict[str, InFlight] = {}
        self._events: list[RecordedEvent] = []  # events since the oldest in-flight pod was popped
        self._events_base = 0  # absolute index of _events[0]
        self._deleted_in_flight: set[str] = set()  # deleted while in flight: drop when they come back
        self._cycle = 0
        self._closed = False
        self._nominator = Nominator()

    # ----------------------------------------------------------------------------- heap orders

    def _active_order(self, e: Entry) -> Any:
        if self._sort_key is not None:
            return (self._sort_key(e.qpi), e.seq)
        return LessOrder(e, self._less)

    # ============================================================================ pod events

    def add(self, pod: Pod) -> None:
        """A new pending pod: to activeQ, or the gated pool if PreEnqueue rejects it. A pod the queue
        already knows is updated instead."""
        with self._lock:
            if self._where(pod.uid) is not None:
                self._update(None, pod)
                return
            qpi = QueuedPodInfo(PodInfo(pod), self._clock.now())
            if self._move_to_active(qpi, POD_ADD_LABEL):
                self._cond.notify_all()

    def update(self, old: Pod | None, new: Pod) -> None:
        """A pending pod changed. Updated in place wherever it is; a gated pod whose PreEnqueue now
        passes, or an unschedulable pod whose metadata/spec changed, is requeued (backoffQ if still
        backing off, else activeQ). An unknown pod is added."""
        with self._lock:
            self._update(old, new)

    def _update(self, old: Pod | None, new: Pod) -> None:
        uid = new.uid
        rec = self._in_flight.get(uid)
        if rec is not None:
            # it comes back through add_unschedulable_if_not_present (with this version) or is bound
            previous = rec.latest or rec.qpi.pod
            rec.latest = new
            before = old or previous
            if is_pod_updated(before, new):
                self._record(RecordedEvent(EVENT_UNSCHEDULED_POD_UPDATE, before, new, uid, self_update=True))
            return
        entry = self._active.get(uid)
        if entry is not None:
            previous = entry.qpi.pod
            entry.qpi.pod_info = PodInfo(new)
            self._active.fix(uid)
            self._nominator.update(previous, entry.qpi.pod_info)
            return
        entry = self._backoff.get(uid)
        if entry is not None:
            previous = entry.qpi.pod
            entry.qpi.pod_info = PodInfo(new)
            self._nominator.update(previous, entry.qpi.pod_info)
            return
        qpi = self._unschedulable.get(uid)
        if qpi is not None:
            previous = qpi.pod
            qpi.pod_info = PodInfo(new)
            self._nominator.update(previous, qpi.pod_info)
            self._keys.refile(qpi)
            if (
                is_pod_updated(old or previous, new)
                and self._requeue(qpi, Strategy.AFTER_BACKOFF, POD_UPDATE_LABEL) == ACTIVE
            ):
                self._cond.notify_all()
            return
        qpi = self._gated.get(uid)
        if qpi is not None:
            previous = qpi.pod
            qpi.pod_info = PodInfo(new)
            self._nominator.update(previous, qpi.pod_info)
            self._run_pre_enqueue(qpi)
            if qpi.gated:
                self._gated.refile(qpi)  # still gated, perhaps by another plugin now
                self._keys.refile(qpi)
            elif self._requeue(qpi, Strategy.AFTER_BACKOFF, POD_UPDATE_LABEL) == ACTIVE:
                self._cond.notify_all()
            return
        qpi = QueuedPodInfo(PodInfo(new), self._clock.now())
        if self._move_to_active(qpi, POD_UPDATE_LABEL):
            self._cond.notify_all()

    def delete(self, pod: Pod) -> None:
        """The pod is gone (deleted, or assigned by someone else): forget it wherever it is."""
        uid = pod.uid
        with self._lock:
            self._nominator.delete(uid)
            if self._active.remove(uid) or self._backoff.remove(uid):
                return
            if self._unschedulable.pop(uid, None) or self._gated.pop(uid):
                self._keys.drop(uid)
                return
            if uid in self._in_flight:
                self._deleted_in_flight.add(uid)
                self._forget_in_flight(uid)

    # ============================================================================ scheduling cycle

    def pop(self, timeout: float | None = None) -> QueuedPodInfo | None:
        """The head of activeQ, now in flight. Blocks until there is one, ``timeout`` real seconds
        pass (None: forever; 0: don't wait) or the queue is closed; then None."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                while not self._active and not (self._pop_from_backoff and self._backoff.can_pop_early()):
                    if self._closed:
                        return None
                    if deadline is None:
                        self._cond.wait()
                    else:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            return None
                        self._cond.wait(remaining)
                if self._active:
                    qpi = self._active.pop().qpi
                else:  # activeQ idle: the best pod still backing off goes now (kube's PopFromBackoffQ)
                    early = self._backoff.pop_early()
                    assert early is not None
                    qpi = early.qpi
                    self._incoming(ACTIVE, POP_FROM_BACKOFF)
                uid = qpi.uid
                if uid in self._in_flight:  # tracked twice: a bug; drop this copy (as kube does)
                    log.error("pod %s popped while already in flight; discarding it", qpi.pod.key)
                    continue
                self._start_in_flight(qpi)
                return qpi

    def _start_in_flight(self, qpi: QueuedPodInfo) -> None:
        qpi.attempts += 1
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self._clock.now()
        qpi.unschedulable_plugins.clear()
        qpi.pending_plugins.clear()
        qpi.gated = False
        qpi.gating_plugin = ""
        self._in_flight[qpi.uid] = InFlight(qpi, self._events_base + len(self._events))
        self._cycle += 1

    def pop_specific(self, uid: str) -> QueuedPodInfo | None:
        """kube's PopSpecificPod (a pod group's other pending members join its cycle): activate the pod
        (through PreEnqueue, except from backoffQ when popping from it is on: it ran on the way in),
        then take it out of activeQ, now in flight. None if it is unknown, in flight already, or
        PreEnqueue keeps it gated."""
        with self._lock:
            if uid in self._in_flight:
                return None
            if self._active.get(uid) is None:
                entry = self._backoff.remove(uid)
                qpi: QueuedPodInfo | None = entry.qpi if entry is not None else None
                if qpi is None:
                    qpi = self._unschedulable.get(uid) or self._gated.get(uid)
                pre_enqueue = entry is None or not self._pop_from_backoff
                if qpi is None or not self._move_to_active(
                    qpi, FORCE_ACTIVATE_LABEL, pre_enqueue=pre_enqueue
                ):
                    return None
            active = self._active.get(uid)
            if active is None:
                return None
            self._active.remove(uid)
            self._start_in_flight(active.qpi)
            return active.qpi

    def done(self, uid: str) -> None:
        """The pod's cycle is over (bound, or handed back): stop tracking events for it."""
        with self._lock:
            self._forget_in_flight(uid)
            self._deleted_in_flight.discard(uid)

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, *, error: bool = False) -> None:
        """Hand back a pod whose attempt failed (its ``unschedulable_plugins``/``pending_plugins`` say
        who rejected it; ``error``: something broke, nobody rejected it). Ends its in-flight tracking.

        - deleted meanwhile: dropped;
        - error or no rejecting plugin: backoffQ (activeQ once backoff expired);
        - an event recorded while in flight that a rejecting plugin's hint queues for: backoffQ or
          activeQ (activeQ at once if the plugin was a pending one);
        - otherwise: the unschedulable pool.
        A pod that was never popped (or already done) is treated as if an event arrived: it backs off.
        """
        uid = qpi.uid
        with self._lock:
            try:
                if uid in self._deleted_in_flight:
                    return
                where = self._where(uid)
                if where is not None and where != IN_FLIGHT:
                    log.warning("pod %s is already in %s; not requeued", qpi.pod.key, where)
                    return
                rec = self._in_flight.get(uid)
                if rec is not None and rec.latest is not None:
                    qpi.pod_info = PodInfo(rec.latest)
                if error:
                    qpi.unschedulable_plugins.clear()
                    qpi.pending_plugins.clear()
                qpi.timestamp = self._clock.now()
                strategy = self._strategy_for_in_flight(qpi, rec)
                if self._requeue(qpi, strategy, SCHEDULE_ATTEMPT_FAILURE) == ACTIVE:
                    self._cond.notify_all()
            finally:
                self._forget_in_flight(uid)
                self._deleted_in_flight.discard(uid)

    def scheduling_cycle(self) -> int:
        """How many pods were popped so far."""
        with self._lock:
            return self._cycle

    # ============================================================================ moves

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        pre_check: Callable[[Pod], bool] | None = None,
    ) -> None:
        """A cluster event happened: requeue the unschedulable (and gated) pods it may help (see the
        module docstring), and record it for in-flight pods. ``pre_check`` narrows the candidates."""
        with self._lock:
            matching, interested = self._matcher.match(event)
            wildcard = is_wildcard(event)
            if not interested and not wildcard:
                return  # no plugin registered it (kube's isEventOfInterest)
            # the pods the event can concern, if the interested plugins' HintIndex can say (keyed.py)
            hits = None if wildcard else self._keys.narrow(matching, old, new)
            if hits is None:
                # a gated pod moves only for an event its gating plugin registered: only those are asked
                pods: Iterable[QueuedPodInfo] = itertools.chain(
                    self._unschedulable.values(), self._gated.by_plugins(interested)
                )
            else:
                pods = self._concerned(hits, interested)
            candidates = [qpi for qpi in pods if pre_check is None or pre_check(qpi.pod)]
            self._move_pods(candidates, event, old, new)

    def _concerned(self, uids: set[str], interested: frozenset[str]) -> list[QueuedPodInfo]:
        """The parked pods among ``uids`` that the full walk would ask, in its order: the unschedulable
        ones, then the gated ones filed under an interested plugin, each in parking order."""
        if not uids:
            return []
        unschedulable = self._unschedulable
        gated = self._gated
        out = [unschedulable[u] for u in self._keys.in_order(u for u in uids if u in unschedulable)]
        for u in self._keys.in_order(u for u in uids if gated.filed_under(u) in interested):
            qpi = gated.get(u)
            assert qpi is not None
            out.append(qpi)
        return out

    def activate(self, uids: Iterable[str]) -> None:
        """Force these pods to activeQ (through PreEnqueue). In-flight pods get a ForceActivate event
        so that a failure requeues them at once; pods already in activeQ or unknown are ignored."""
        with self._lock:
            activated = False
            for uid in uids:
                entry = self._backoff.remove(uid)
                qpi: QueuedPodInfo | None = entry.qpi if entry is not None else None
                if qpi is None:
                    qpi = self._unschedulable.get(uid) or self._gated.get(uid)
                if qpi is not None:
                    activated |= self._move_to_active(qpi, FORCE_ACTIVATE_LABEL)
                    continue
                rec = self._in_flight.get(uid)
                if rec is not None:
                    pod = rec.latest or rec.qpi.pod
                    self._record(RecordedEvent(FORCE_ACTIVATE, None, pod, uid))
            if activated:
                self._cond.notify_all()

    def flush(self) -> None:
        """Both periodic moves (kube runs them every 1 s and 30 s; the scheduler calls this)."""
        self.flush_backoff_completed()
        self.flush_unschedulable_leftover()

    def flush_backoff_completed(self) -> None:
        """Move pods whose backoff expired from backoffQ to activeQ (BackoffComplete)."""
        with self._lock:
            activated = False
            for entry in self._backoff.pop_completed(self._clock.now()):
                # PreEnqueue ran when the pod entered backoffQ (when popping from it is on)
                activated |= self._move_to_active(
                    entry.qpi, BACKOFF_COMPLETE, pre_enqueue=not self._pop_from_backoff
                )
            if activated:
                self._cond.notify_all()

    def next_flush_in(self) -> float:
        """Seconds until the next backoff ordering window starts: the flusher runs at window boundaries,
        so that a whole window of pods leaves backoffQ at once, as kube's aligned ticker does."""
        now = self._clock.now()
        return max(0.001, align(now) + WINDOW - now)

    def flush_unschedulable_leftover(self) -> None:
        """Requeue pods that stayed unschedulable longer than ``unschedulable_max_stay``
        (UnschedulableTimeout; gated pods only if their gating plugin registered that event)."""
        with self._lock:
            now = self._clock.now()
            stale = [
                qpi
                for pool in (self._unschedulable, self._gated)
                for qpi in pool.values()
                if now - qpi.timestamp > self._max_stay
            ]
            if stale:
                for qpi in stale:
                    qpi.flushed = True
                self._move_pods(stale, UNSCHEDULABLE_TIMEOUT, None, None)

    def close(self) -> None:
        """Wake every pop(); once activeQ is empty they return None."""
        with self._lock:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    # ============================================================================ nominator

    def add_nominated_pod(self, pod_info: PodInfo, node_name: str = "", *, if_queued: bool = False) -> None:
        """Nominate the pod on ``node_name`` ("" = its ``status.nominatedNodeName``), replacing any
        earlier nomination; the pod's requests then count on that node for lower-priority pods.
        ``if_queued``: only if the queue still holds the pod (queued or in flight), as kube's nominator
        checks its pod lister: a pod deleted or bound meanwhile is never nominated, since no later event
        would take its nomination away again."""
        with self._lock:
            if if_queued and self._where(pod_info.pod.uid) is None:
                log.debug("pod %s is no longer queued; not nominated", pod_info.pod.key)
                return
            self._nominator.add(pod_info, node_name)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        with self._lock:
            self._nominator.delete(pod.uid)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        if not self._nominator.by_node:  # the common case, read without the lock (a dict read is atomic)
            return []
        with self._lock:
            return list(self._nominator.by_node.get(node_name, ()))

    def nominated_pods_by_node(self) -> dict[str, tuple[PodInfo, ...]]:
        """Every node some pod is nominated to, with those pods: one read under the lock for a whole
        Filter pass (only those nodes need the nominated-pods pass)."""
        with self._lock:
            return {node: tuple(pods) for node, pods in self._nominator.by_node.items()}

    def has_nominated_pods(self) -> bool:
        """Whether any pod is nominated anywhere: when not, Filter skips the nominated-pods pass."""
        return bool(self._nominator.by_node)

    def nominated_node_name(self, uid: str) -> str | None:
        with self._lock:
            return self._nominator.node_of.get(uid)

    # ============================================================================ backoff

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        """The ordering window in which the pod's backoff ends (``timestamp`` + its backoff duration,
        aligned down to the window); the pod backs off until that window is over. ``NO_BACKOFF`` for a
        pod never attempted or when backoff is off (max backoff 0)."""
        duration = self._backoff_duration(qpi)
        if duration <= 0:
            return NO_BACKOFF
        return align(qpi.timestamp + duration)

    # ============================================================================ internals (lock held)

    def _incoming(self, queue: str, label: str) -> None:
        if self._on_incoming is None:
            return
        try:
            self._on_incoming(queue, label)
        except Exception:  # a metrics hook must not break the queue
            log.exception("on_incoming hook failed")

    def _backoff_duration(self, qpi: QueuedPodInfo) -> float:
        if qpi.attempts <= 0 or self._initial_backoff <= 0:
            return 0.0
        duration = self._initial_backoff
        for _ in range(1, qpi.attempts):
            if duration >= self._max_backoff:
                break
            duration *= 2
        return min(duration, self._max_backoff)

    def _is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        return self.backoff_expiry(qpi) >= align(self._clock.now())

    def _run_pre_enqueue(self, qpi: QueuedPodInfo) -> bool:
        """Run PreEnqueue; a rejection gates the pod and adds the gating plugin to its rejectors.
        Returns whether the pod is gated."""
        if self._pre_enqueue is None:
            qpi.gated, qpi.gating_plugin = False, ""
            return False
        try:
            status = self._pre_enqueue(qpi.pod)
        except Exception as e:  # a plugin bug keeps the pod gated, it does not break the queue
            log.exception("PreEnqueue failed for pod %s", qpi.pod.key)
            status = Status.as_error(e)
        if is_success(status):
            qpi.gated, qpi.gating_plugin = False, ""
            return False
        assert status is not None
        qpi.gated = True
        qpi.gating_plugin = status.plugin
        if status.plugin:
            qpi.unschedulable_plugins.add(status.plugin)
        return True

    def _detach(self, uid: str) -> None:
        """Remove the pod from every waiting pool (not in-flight tracking)."""
        self._active.remove(uid)
        self._backoff.remove(uid)
        self._unschedulable.pop(uid, None)
        self._gated.pop(uid)
        self._keys.drop(uid)

    def _park(self, qpi: QueuedPodInfo, label: str) -> None:
        """Put the pod in the unschedulable pool, or the gated pool if it is gated."""
        uid = qpi.uid
        was_parked = uid in self._unschedulable or uid in self._gated
        self._detach(uid)
        if qpi.gated:
            self._gated.put(qpi)
        else:
            self._unschedulable[uid] = qpi
        self._keys.park(qpi)
        if not was_parked:  # kube counts gated pods as entering "unschedulable"
            self._incoming(UNSCHEDULABLE, label)

    def _move_to_active(self, qpi: QueuedPodInfo, label: str, *, pre_enqueue: bool = True) -> bool:
        """PreEnqueue, then activeQ (True) or the gated pool (False)."""
        if pre_enqueue:
            self._run_pre_enqueue(qpi)
        if qpi.gated:
            self._park(qpi, label)
            return False
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self._clock.now()
        uid = qpi.uid
        self._detach(uid)
        self._active.push(Entry(qpi, next(self._seq)))
        self._incoming(ACTIVE, label)
        if label in (POD_ADD_LABEL, POD_UPDATE_LABEL):
            self._nominator.add(qpi.pod_info)
        return True

    def _move_to_backoff(self, qpi: QueuedPodInfo, label: str, *, pre_enqueue: bool = True) -> bool:
        """backoffQ (True), or the gated pool (False) if PreEnqueue, which runs on the way in when
        popping from backoffQ is on, rejects the pod."""
        if self._pop_from_backoff and pre_enqueue:
            self._run_pre_enqueue(qpi)
            if qpi.gated:
                self._park(qpi, label)
                return False
        self._detach(qpi.uid)
        self._backoff.push(Entry(qpi, next(self._seq), self.backoff_expiry(qpi)))
        self._incoming(BACKOFF, label)
        if self._pop_from_backoff:
            self._cond.notify_all()  # an idle pop() may take it
        return True

    def _requeue(
        self, qpi: QueuedPodInfo, strategy: Strategy, label: str, *, pre_enqueued: bool = False
    ) -> str:
        """kube's requeuePodWithQueueingStrategy; returns the queue the pod went to. ``pre_enqueued``:
        PreEnqueue just passed (``_move_pods``), so it is not run again on the way."""
        if strategy == Strategy.SKIP:
            self._park(qpi, label)
            return GATED if qpi.gated else UNSCHEDULABLE
        if strategy == Strategy.AFTER_BACKOFF and self._is_backing_off(qpi):
            return BACKOFF if self._move_to_backoff(qpi, label, pre_enqueue=not pre_enqueued) else GATED
        if self._move_to_active(qpi, label, pre_enqueue=not pre_enqueued):
            return ACTIVE
        return GATED

    def _runs_pre_enqueue(self, qpi: QueuedPodInfo, strategy: Strategy) -> bool:
        """Whether ``_requeue(qpi, strategy)`` runs PreEnqueue on the way: always into activeQ; into
        backoffQ only when popping from it is on."""
        return self._pop_from_backoff or strategy != Strategy.AFTER_BACKOFF or not self._is_backing_off(qpi)

    def _regate(self, qpi: QueuedPodInfo, label: str) -> None:
        """A gated pod an event requeued, and PreEnqueue still rejects: where ``_requeue`` would leave it
        (last in the gated pool, filed under its gating plugin, counted as entering the unschedulable
        pool as kube counts it), without taking it out of the indexes and filing it again. An async
        preemption's preemptor, gated by DefaultPreemption until its victims are gone, meets this on
        every victim's deletion: ~50 µs a pod the long way, with tens of preemptors waiting."""
        self._gated.put(qpi)
        self._keys.repark(qpi)
        self._incoming(UNSCHEDULABLE, label)

    def _strategy_for_in_flight(self, qpi: QueuedPodInfo, rec: InFlight | None) -> Strategy:
        """kube's determineSchedulingHintForInFlightPod: what the events seen while in flight say
        (``hints.strategy_for_in_flight``)."""
        if not qpi.unschedulable_plugins and not qpi.pending_plugins:
            return Strategy.AFTER_BACKOFF
        if rec is None:
            log.warning("pod %s handed back but not in flight; backing it off", qpi.pod.key)
            return Strategy.AFTER_BACKOFF
        seen = itertools.islice(self._events, rec.start - self._events_base, None)
        return strategy_for_in_flight(self._events_map, qpi, seen, self._on_hint)

    def _move_pods(self, pods: list[QueuedPodInfo], event: ClusterEvent, old: Any, new: Any) -> None:
        """kube's movePodsToActiveOrBackoffQueue."""
        if not pods:  # the common case (every bind is an AssignedPodAdd): only in-flight pods care
            self._record(RecordedEvent(event, old, new))
            return
        label = event_label(event)
        activated = False
        # Plugins with a registration this event matches: a pod rejected only by others stays put
        # (what _worth_requeuing would say) without running its hints. Thousands of pods parked by
        # NodeResourcesFit must not cost a loop over hints on every pod bound elsewhere.
        wildcard = is_wildcard(event)
        # each plugin's registrations this event matches, worked out once per distinct event (a claim
        # event asks every pod waiting for its own claim); for a wildcard, the plugins that registered one
        matching, interested = self._matcher.match(event)
        for qpi in pods:
            if qpi.gated and qpi.gating_plugin not in interested:
                continue  # kube: the event does not interest the plugin that gated the pod
            if (
                not wildcard
                and (qpi.unschedulable_plugins or qpi.pending_plugins)
                and interested.isdisjoint(qpi.unschedulable_plugins)
                and interested.isdisjoint(qpi.pending_plugins)
            ):
                continue
            strategy = worth_requeuing(self._events_map, qpi, event, old, new, self._on_hint, matching)
            if strategy == Strategy.SKIP:
                continue
            pre_enqueued = False
            if qpi.gated and self._runs_pre_enqueue(qpi, strategy):
                if self._run_pre_enqueue(qpi):
                    self._regate(qpi, label)
                    continue
                pre_enqueued = True
            uid = qpi.uid
            self._unschedulable.pop(uid, None)
            self._gated.pop(uid)
            self._keys.drop(uid)
            if self._requeue(qpi, strategy, label, pre_enqueued=pre_enqueued) == ACTIVE:
                activated = True
        self._record(RecordedEvent(event, old, new))
        if activated:
            self._cond.notify_all()

    def _record(self, ev: RecordedEvent) -> None:
        if self._in_flight:
            self._events.append(ev)

    def _forget_in_flight(self, uid: str) -> None:
        if self._in_flight.pop(uid, None) is None:
            return
        if not self._in_flight:
            self._events_base += len(self._events)
            self._events.clear()
            return
        oldest = next(iter(self._in_flight.values())).start
        drop = oldest - self._events_base
        if drop > 0:
            del self._events[:drop]
            self._events_base = oldest
