"""SchedulingQueue: kube-scheduler's PriorityQueue semantics, driven by a FakeClock."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pyscheduler.backend.queue import (
    ACTIVE,
    BACKOFF,
    GATED,
    IN_FLIGHT,
    UNSCHEDULABLE,
    QueuedPodInfo,
    SchedulingQueue,
    event_label,
    is_pod_updated,
)
from pyscheduler.backend.queue.heap import Entry, Heap
from pyscheduler.framework.events import (
    FORCE_ACTIVATE,
    UNSCHEDULABLE_TIMEOUT,
    WILDCARD_EVENT,
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from pyscheduler.framework.interfaces import QueuedPodInfoView
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod, PodInfo
from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.clock import FakeClock

NODE_ADD = ClusterEvent(Resource.NODE, Action.ADD)
NODE_LABEL = ClusterEvent(Resource.NODE, Action.UPDATE_NODE_LABEL)
NODE_TAINT = ClusterEvent(Resource.NODE, Action.UPDATE_NODE_TAINT)
POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE)
PVC_ADD = ClusterEvent(Resource.PVC, Action.ADD)


def priority_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """PrioritySort: higher priority first, then earlier timestamp."""
    if a.pod.priority != b.pod.priority:
        return a.pod.priority > b.pod.priority
    return a.timestamp < b.timestamp


def gates_pre_enqueue(pod: Pod) -> Status | None:
    """The SchedulingGates PreEnqueue plugin."""
    if pod.scheduling_gates:
        return Status.pending(
            f"waiting for scheduling gates: {list(pod.scheduling_gates)}", plugin="SchedulingGates"
        )
    return None


def pod(name: str, priority: int = 0, **kw: Any) -> Pod:
    b = make_pod(name).priority(priority)
    for gate in kw.get("gates", ()):
        b.gate(gate)
    if kw.get("nominated"):
        b.nominated(kw["nominated"])
    if kw.get("label"):
        b.label(*kw["label"])
    return b.obj()


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def __call__(self, queue: str, event: str) -> None:
        self.calls.append((queue, event))


def new_queue(
    clock: FakeClock | None = None,
    events: Mapping[str, Sequence[ClusterEventWithHint]] | None = None,
    pre_enqueue: Callable[[Pod], Status | None] | None = gates_pre_enqueue,
    **kw: Any,
) -> tuple[SchedulingQueue, FakeClock, Recorder]:
    clock = clock or FakeClock()
    rec = Recorder()
    q = SchedulingQueue(
        priority_less, clock, pre_enqueue=pre_enqueue, events_map=events or {}, on_incoming=rec, **kw
    )
    return q, clock, rec


def fail(
    q: SchedulingQueue, qpi: QueuedPodInfo, *plugins: str, pending: Sequence[str] = (), error: bool = False
) -> None:
    qpi.unschedulable_plugins = set(plugins)
    qpi.pending_plugins = set(pending)
    q.add_unschedulable_if_not_present(qpi, error=error)


def pop_now(q: SchedulingQueue) -> QueuedPodInfo:
    qpi = q.pop(timeout=0)
    assert qpi is not None
    return qpi


# ========================================================================================== basics


def test_pop_orders_by_less_then_fifo() -> None:
    q, _, _ = new_queue()
    for name, prio in [("a", 1), ("b", 5), ("c", 1), ("d", 5), ("e", 3)]:
        q.add(pod(name, prio))
    order = [pop_now(q).pod.name for _ in range(5)]
    assert order == ["b", "d", "e", "a", "c"]
    assert q.pop(timeout=0) is None


def test_pop_marks_in_flight_and_counts_attempts() -> None:
    q, clock, _ = new_queue()
    q.add(pod("a"))
    entered = clock.now()
    clock.advance(5)
    qpi = pop_now(q)
    assert qpi.attempts == 1
    assert qpi.initial_attempt_timestamp == entered  # kube: set when it first enters activeQ
    assert qpi.timestamp == entered
    assert q.where(qpi.pod.uid) == IN_FLIGHT
    assert q.in_flight_count() == 1
    assert len(q) == 0
    assert q.scheduling_cycle() == 1
    q.done(qpi.pod.uid)
    assert q.where(qpi.pod.uid) is None
    assert q.in_flight_count() == 0


def test_pop_clears_rejectors_of_the_previous_attempt() -> None:
    q, clock, _ = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    q.add(pod("a"))
    qpi = pop_now(q)
    fail(q, qpi, "Fit", pending=["Dra"])
    q.move_all_to_active_or_backoff(WILDCARD_EVENT)
    clock.advance(10)
    q.flush()
    qpi = pop_now(q)
    assert qpi.attempts == 2
    assert qpi.unschedulable_plugins == set() and qpi.pending_plugins == set()


def test_add_of_known_pod_is_an_update() -> None:
    q, _, _ = new_queue()
    q.add(pod("a", 1))
    q.add(pod("a", 7))
    assert q.pending_pods()[ACTIVE] == 1
    assert pop_now(q).pod.priority == 7


def test_len_pending_pods_and_lists() -> None:
    q, _, _ = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    q.add(pod("a"))
    q.add(pod("b"))
    q.add(pod("c"))
    q.add(pod("g", gates=["x"]))
    qb = pop_now(q)
    fail(q, qb)  # -> backoff
    qu = pop_now(q)
    fail(q, qu, "Fit")  # -> unschedulable
    q.add(pod("d"))
    qf = pop_now(q)  # in flight (c, then d remains)
    assert q.pending_pods() == {ACTIVE: 1, BACKOFF: 1, UNSCHEDULABLE: 1, GATED: 1}
    assert len(q) == 4
    lists = q.pending_pod_list()
    assert {k: sorted(p.name for p in v) for k, v in lists.items()} == {
        ACTIVE: ["d"],
        BACKOFF: [qb.pod.name],
        UNSCHEDULABLE: [qu.pod.name],
        GATED: ["g"],
        IN_FLIGHT: [qf.pod.name],
    }
    assert "active=1" in repr(q)


# ========================================================================================== pop blocking


def test_pop_timeout_zero_and_short_timeout_return_none() -> None:
    q, _, _ = new_queue()
    assert q.pop(timeout=0) is None
    t0 = time.monotonic()
    assert q.pop(timeout=0.05) is None
    assert time.monotonic() - t0 >= 0.04


def test_pop_waits_on_real_time_not_the_fake_clock() -> None:
    q, clock, _ = new_queue()
    t0 = clock.now()
    assert q.pop(timeout=0.02) is None
    assert clock.now() == t0  # nothing advanced the fake clock, and pop still returned


def test_pop_is_woken_by_add_from_another_thread() -> None:
    q, _, _ = new_queue()
    got: list[QueuedPodInfo | None] = []
    t = threading.Thread(target=lambda: got.append(q.pop(timeout=5)))
    t.start()
    time.sleep(0.02)
    q.add(pod("a"))
    t.join(timeout=5)
    assert not t.is_alive()
    assert got and got[0] is not None and got[0].pod.name == "a"


def test_close_wakes_blocked_pop() -> None:
    q, _, _ = new_queue()
    got: list[QueuedPodInfo | None] = ["sentinel"]  # type: ignore[list-item]
    t = threading.Thread(target=lambda: got.__setitem__(0, q.pop()))
    t.start()
    time.sleep(0.02)
    q.close()
    t.join(timeout=5)
    assert not t.is_alive()
    assert got[0] is None
    assert q.closed


def test_closed_queue_still_hands_out_remaining_pods() -> None:
    q, _, _ = new_queue()
    q.add(pod("a"))
    q.close()
    assert pop_now(q).pod.name == "a"
    assert q.pop() is None  # does not block once closed and empty


# ========================================================================================== backoff


@pytest.mark.parametrize(
    ("attempts", "expected"), [(0, 0.0), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (50, 10.0)]
)
def test_backoff_duration_doubles_and_caps(attempts: int, expected: float) -> None:
    q, clock, _ = new_queue()
    qpi = QueuedPodInfo(pod("a"), clock.now(), attempts=attempts)
    # the window (1 s, kube's backoffQ ordering window) the backoff ends in; none before a first attempt
    assert q.backoff_expiry(qpi) == (math.floor(clock.now() + expected) if expected else -math.inf)


def test_failed_pod_without_rejectors_backs_off_then_flushes_to_active() -> None:
    q, clock, rec = new_queue()
    q.add(pod("a"))
    qpi = pop_now(q)
    clock.advance(3)
    fail(q, qpi)  # an error: no plugin rejected it
    assert q.where("uid-default-a") == BACKOFF
    assert qpi.timestamp == clock.now()  # refreshed on requeue
    clock.advance(1.999)
    q.flush()
    # attempts=1 -> 1 s backoff, ending in window [1004, 1005): backing off until that window is over
    assert q.where("uid-default-a") == BACKOFF
    clock.advance(0.001)
    q.flush()
    assert q.where("uid-default-a") == ACTIVE
    assert rec.calls == [
        (ACTIVE, "UnschedulablePodAdd"),
        (BACKOFF, "ScheduleAttemptFailure"),
        (ACTIVE, "BackoffComplete"),
    ]


def test_error_backs_off_even_with_rejectors() -> None:
    q, _, _ = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    q.add(pod("a"))
    qpi = pop_now(q)
    fail(q, qpi, "Fit", error=True)
    assert q.where(qpi.uid) == BACKOFF
    assert qpi.unschedulable_plugins == set()


def test_backoff_grows_with_attempts() -> None:
    q, clock, _ = new_queue()
    q.add(pod("a"))
    waits = []
    for _ in range(6):
        qpi = pop_now(q)
        fail(q, qpi)
        start = clock.now()
        while q.where(qpi.uid) != ACTIVE:
            clock.advance(0.5)
            q.flush()
        waits.append(clock.now() - start)
    # 1, 2, 4, 8, 10, 10 s, each ending in a 1 s window that must be over: a failure at a whole second
    # waits one window more (kube's alignToWindow)
    assert waits == [2.0, 3.0, 5.0, 9.0, 11.0, 11.0]


def test_backoff_queue_is_ordered_by_expiry() -> None:
    q, clock, _ = new_queue()
    for name in ("a", "b"):
        q.add(pod(name))
    qa = pop_now(q)
    qb = pop_now(q)
    qa.attempts = 4  # 8 s
    fail(q, qa)
    fail(q, qb)  # 1 s
    clock.advance(2)
    q.flush()
    assert q.where(qb.uid) == ACTIVE and q.where(qa.uid) == BACKOFF
    clock.advance(7)
    q.flush()
    assert q.where(qa.uid) == ACTIVE


def test_zero_initial_backoff_requeues_straight_to_active() -> None:
    q, _, _ = new_queue(initial_backoff=0.0)
    q.add(pod("a"))
    qpi = pop_now(q)
    fail(q, qpi)
    assert q.where(qpi.uid) == ACTIVE


def test_negative_durations_rejected() -> None:
    with pytest.raises(ValueError, match="durations must be >= 0"):
        SchedulingQueue(priority_less, FakeClock(), initial_backoff=-1)


# ========================================================================================== in-flight events


def test_failure_without_events_goes_to_unschedulable() -> None:
    q, _, rec = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    q.add(pod("a"))
    qpi = pop_now(q)
    fail(q, qpi, "Fit")
    assert q.where(qpi.uid) == UNSCHEDULABLE
    assert q.in_flight_count() == 0  # add_unschedulable_if_not_present ends in-flight tracking
    assert rec.calls[-1] == (UNSCHEDULABLE, "ScheduleAttemptFailure")


def test_event_during_flight_requeues_failed_pod() -> None:
    q, clock, _ = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    q.add(pod("a"))
    qpi = pop_now(q)
    q.move_all_to_active_or_backoff(NODE_ADD, None, "n1")
    fail(q, qpi, "Fit")
    assert q.where(qpi.uid) == BACKOFF
    clock.advance(2)
    q.flush()
    assert q.where(qpi.uid) == ACTIVE


def test_event_before_pop_does_not_count() -> None:
    q, _, _ = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    q.add(pod("x"))
    qx = pop_now(q)  # keeps the event log alive
    q.move_all_to_active_or_backoff(NODE_ADD)
    q.add(pod("a"))
    qa = pop_now(q)
    fail(q, qa, "Fit")
    assert q.where(qa.uid) == UNSCHEDULABLE
    fail(q, qx, "Fit")
    assert q.where(qx.uid) == BACKOFF


def test_event_for_other_plugin_or_skipped_by_hint_does_not_requeue() -> None:
    seen: list[tuple[Any, Any, Any]] = []

    def skip(p: Any, old: Any, new: Any) -> QueueingHint:
        seen.append((p, old, new))
        return QueueingHint.SKIP

    q, _, _ = new_queue(
        events={"Fit": [ClusterEventWithHint(NODE_ADD, skip)], "Taint": [ClusterEventWithHint(NODE_TAINT)]}
    )
    q.add(pod("a"))
    qpi = pop_now(q)
    q.move_all_to_active_or_backoff(NODE_ADD, None, "new-node")
    q.move_all_to_active_or_backoff(NODE_TAINT)  # registered by Taint, which did not reject it
    fail(q, qpi, "Fit")
    assert q.where(qpi.uid) == UNSCHEDULABLE
    assert len(seen) == 1 and seen[0][0].name == "a" and seen[0][2] == "new-node"


def test_pending_plugin_queue_hint_skips_backoff() -> None:
    q, _, _ = new_queue(
        events={"Dra": [ClusterEventWithHint(PVC_ADD)], "Fit": [ClusterEventWithHint(NODE_ADD)]}
    )
    q.add(pod("a"))
    qpi = pop_now(q)
    q.move_all_to_active_or_backoff(PVC_ADD)
    fail(q, qpi, "Fit", pending=["Dra"])
    assert q.where(qpi.uid) == ACTIVE


def test_unschedulable_plugin_with_pending_plugin_backs_off() -> None:
    q, _, _ = new_queue(
        events={"Dra": [ClusterEventWithHint(PVC_ADD)], "Fit": [ClusterEventWithHint(NODE_ADD)]}
    )
    q.add(pod("a"))
    qpi = pop_now(q)
    q.move_all_to_active_or_backoff(NODE_ADD)
    fail(q, qpi, "Fit", pending=["Dra"])
    assert q.where(qpi.uid) == BACKOFF


def test_uninteresting_events_are_not_recorded() -> None:
    q, _, _ = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    q.add(pod("a"))
    pop_now(q)
    q.move_all_to_active_or_backoff(PVC_ADD)
    assert q.in_flight_event_count() == 0
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.in_flight_event_count() == 1


def test_event_log_is_trimmed_to_oldest_in_flight_pod() -> None:
    q, _, _ = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    q.move_all_to_active_or_backoff(NODE_ADD)  # nobody in flight: not kept
    assert q.in_flight_event_count() == 0
    q.add(pod("a"))
    q.add(pod("b"))
    qa = pop_now(q)
    q.move_all_to_active_or_backoff(NODE_ADD)
    qb = pop_now(q)
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.in_flight_event_count() == 2
    q.done(qa.uid)
    assert q.in_flight_event_count() == 1  # only what b may still need
    fail(q, qb, "Fit")
    assert q.where(qb.uid) == BACKOFF  # b saw the event after its pop
    assert q.in_flight_event_count() == 0


def test_not_in_flight_handback_backs_off() -> None:
    q, clock, _ = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    qpi = QueuedPodInfo(pod("a"), clock.now(), attempts=1)
    fail(q, qpi, "Fit")
    assert q.where(qpi.uid) == BACKOFF  # kube's safe default: it may have missed events


def test_handback_of_pod_already_queued_is_ignored() -> None:
    q, _, _ = new_queue()
    q.add(pod("a"))
    qpi = q.get("uid-default-a")
    assert qpi is not None
    fail(q, qpi)
    assert q.where(qpi.uid) == ACTIVE
    assert q.pending_pods()[BACKOFF] == 0


def test_hint_that_raises_counts_as_queue() -> None:
    def boom(p: Any, old: Any, new: Any) -> QueueingHint:
        raise RuntimeError("bug")

    q, _, _ = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD, boom)]})
    q.add(pod("a"))
    qpi = pop_now(q)
    fail(q, qpi, "Fit")
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.where(qpi.uid) == BACKOFF


# ========================================================================================== moves


def _unschedulable(q: SchedulingQueue, name: str, *plugins: str, priority: int = 0) -> QueuedPodInfo:
    q.add(pod(name, priority))
    qpi = q.pop(timeout=0)
    assert qpi is not None and qpi.pod.name == name
    fail(q, qpi, *plugins)
    assert q.where(qpi.uid) == UNSCHEDULABLE
    return qpi


def test_move_all_uses_rejectors_events_and_hints() -> None:
    def only_big(p: Any, old: Any, new: Any) -> QueueingHint:
        return QueueingHint.QUEUE if new == "big" else QueueingHint.SKIP

    q, clock, rec = new_queue(
        events={
            "Fit": [ClusterEventWithHint(NODE_ADD, only_big)],
            "Affinity": [
                ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL))
            ],
            "Taint": [],
        }
    )
    fit = _unschedulable(q, "fit", "Fit")
    aff = _unschedulable(q, "aff", "Affinity")
    taint = _unschedulable(q, "taint", "Taint")
    unknown = _unschedulable(q, "unknown", "NotInEventsMap")
    q.move_all_to_active_or_backoff(NODE_ADD, None, "small")
    assert q.where(fit.uid) == UNSCHEDULABLE
    assert q.where(aff.uid) == BACKOFF  # still backing off from its failure
    clock.advance(2)
    q.move_all_to_active_or_backoff(NODE_ADD, None, "big")
    assert q.where(fit.uid) == ACTIVE  # backoff already over: straight to activeQ
    assert q.where(taint.uid) == UNSCHEDULABLE
    assert q.where(unknown.uid) == UNSCHEDULABLE
    assert (BACKOFF, "NodeAdd") in rec.calls and (ACTIVE, "NodeAdd") in rec.calls


def test_move_all_label_event_matches_by_action() -> None:
    q, _, _ = new_queue(events={"Affinity": [ClusterEventWithHint(NODE_LABEL)]})
    aff = _unschedulable(q, "aff", "Affinity")
    q.move_all_to_active_or_backoff(NODE_TAINT)
    assert q.where(aff.uid) == UNSCHEDULABLE
    q.move_all_to_active_or_backoff(
        ClusterEvent(Resource.NODE, Action.UPDATE_NODE_LABEL | Action.UPDATE_NODE_TAINT)
    )
    assert q.where(aff.uid) == BACKOFF


def test_assigned_pod_event_matches_pod_registration() -> None:
    q, _, _ = new_queue(
        events={"InterPodAffinity": [ClusterEventWithHint(ClusterEvent(Resource.POD, Action.ALL))]}
    )
    qpi = _unschedulable(q, "a", "InterPodAffinity")
    q.move_all_to_active_or_backoff(POD_DELETE)
    assert q.where(qpi.uid) == BACKOFF


def test_move_all_pre_check_narrows_candidates() -> None:
    q, _, _ = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    a = _unschedulable(q, "a", "Fit")
    b = _unschedulable(q, "b", "Fit")
    q.move_all_to_active_or_backoff(NODE_ADD, pre_check=lambda p: p.name == "b")
    assert q.where(a.uid) == UNSCHEDULABLE and q.where(b.uid) == BACKOFF


@pytest.mark.parametrize("event", [WILDCARD_EVENT, FORCE_ACTIVATE, UNSCHEDULABLE_TIMEOUT])
def test_wildcard_events_move_every_unschedulable_pod(event: ClusterEvent) -> None:
    q, _, rec = new_queue(events={"Fit": []})
    a = _unschedulable(q, "a", "Fit")
    b = _unschedulable(q, "b", "Whatever")
    q.move_all_to_active_or_backoff(event)
    assert q.where(a.uid) == BACKOFF and q.where(b.uid) == BACKOFF
    assert rec.calls[-1] == (BACKOFF, event.label)


def test_wildcard_event_targeted_at_another_pod_is_skipped() -> None:
    q, _, _ = new_queue()
    a = _unschedulable(q, "a", "Fit")
    q.move_all_to_active_or_backoff(FORCE_ACTIVATE, None, pod("other"))
    assert q.where(a.uid) == UNSCHEDULABLE


def test_leftover_flush_after_max_stay() -> None:
    q, clock, rec = new_queue(unschedulable_max_stay=300)
    qpi = _unschedulable(q, "a", "Fit")
    clock.advance(300)
    q.flush()
    assert q.where(qpi.uid) == UNSCHEDULABLE  # strictly longer than the max stay
    clock.advance(0.5)
    q.flush()
    assert q.where(qpi.uid) == ACTIVE
    assert rec.calls[-1] == (ACTIVE, "UnschedulableTimeout")


def test_activate_moves_from_backoff_and_unschedulable() -> None:
    q, _, rec = new_queue()
    u = _unschedulable(q, "u", "Fit")
    q.add(pod("b"))
    b = pop_now(q)
    fail(q, b)
    assert q.where(b.uid) == BACKOFF
    q.add(pod("act"))
    q.activate([u.uid, b.uid, "uid-default-act", "nope"])
    assert q.where(u.uid) == ACTIVE and q.where(b.uid) == ACTIVE
    assert rec.calls.count((ACTIVE, "ForceActivate")) == 2


def test_activate_in_flight_pod_requeues_its_failure() -> None:
    q, _, _ = new_queue()
    q.add(pod("a"))
    q.add(pod("b"))
    qa = pop_now(q)
    qb = pop_now(q)
    q.activate([qa.uid])
    fail(q, qb, "Fit")
    fail(q, qa, "Fit")
    assert q.where(qb.uid) == UNSCHEDULABLE  # ForceActivate was for a only
    assert q.where(qa.uid) == BACKOFF


# ========================================================================================== gating


def test_gated_pod_waits_until_update_removes_gates() -> None:
    q, _, rec = new_queue()
    q.add(pod("g", gates=["example.com/wait"]))
    assert q.where("uid-default-g") == GATED
    qpi = q.get("uid-default-g")
    assert qpi is not None and qpi.gated and qpi.gating_plugin == "SchedulingGates"
    assert "SchedulingGates" in qpi.unschedulable_plugins
    assert qpi.initial_attempt_timestamp is None  # never ready yet
    assert q.pop(timeout=0) is None
    q.update(None, pod("g", label=("a", "b"), gates=["example.com/wait"]))
    assert q.where("uid-default-g") == GATED
    q.update(None, pod("g"))
    assert q.where("uid-default-g") == ACTIVE
    assert rec.calls == [(UNSCHEDULABLE, "UnschedulablePodAdd"), (ACTIVE, "UnschedulablePodUpdate")]


def test_gated_pod_reconsidered_only_for_gating_plugin_events() -> None:
    open_gate = {"value": False}

    def pre_enqueue(p: Pod) -> Status | None:
        return None if open_gate["value"] else Status.pending("quota", plugin="Quota")

    q, clock, _ = new_queue(
        pre_enqueue=pre_enqueue,
        events={"Quota": [ClusterEventWithHint(PVC_ADD)], "Fit": [ClusterEventWithHint(NODE_ADD)]},
    )
    q.add(pod("g"))
    assert q.where("uid-default-g") == GATED
    open_gate["value"] = True
    q.move_all_to_active_or_backoff(NODE_ADD)  # not the gating plugin's event
    assert q.where("uid-default-g") == GATED
    clock.advance(1000)
    q.flush()  # UnschedulableTimeout is not registered by Quota either
    assert q.where("uid-default-g") == GATED
    q.move_all_to_active_or_backoff(PVC_ADD)
    assert q.where("uid-default-g") == ACTIVE


def test_activate_gated_pod_reruns_pre_enqueue() -> None:
    q, _, _ = new_queue()
    q.add(pod("g", gates=["x"]))
    q.activate(["uid-default-g"])
    assert q.where("uid-default-g") == GATED


def test_pre_enqueue_that_raises_gates_the_pod() -> None:
    def boom(p: Pod) -> Status | None:
        raise RuntimeError("bug")

    q, _, _ = new_queue(pre_enqueue=boom)
    q.add(pod("a"))
    assert q.where("uid-default-a") == GATED


def test_pod_becoming_gated_on_requeue_goes_to_gated_pool() -> None:
    gate = {"on": False}

    def pre_enqueue(p: Pod) -> Status | None:
        return Status.pending("later", plugin="Later") if gate["on"] else None

    q, _, _ = new_queue(pre_enqueue=pre_enqueue)
    q.add(pod("a"))
    qpi = pop_now(q)
    gate["on"] = True
    fail(q, qpi)  # PreEnqueue runs on the way into backoffQ (kube, with SchedulerPopFromBackoffQ)
    assert q.where(qpi.uid) == GATED


def test_pod_leaving_backoff_does_not_run_pre_enqueue_again() -> None:
    # kube runs PreEnqueue when a pod enters backoffQ, not when it leaves it
    calls: list[str] = []

    def pre_enqueue(p: Pod) -> Status | None:
        calls.append(p.name)
        return None

    q, clock, _ = new_queue(pre_enqueue=pre_enqueue)
    q.add(pod("a"))
    qpi = pop_now(q)
    fail(q, qpi)
    assert q.where(qpi.uid) == BACKOFF and calls == ["a", "a"]
    clock.advance(2)
    q.flush()
    assert q.where(qpi.uid) == ACTIVE and calls == ["a", "a"]


# ========================================================================================== update / delete


def test_update_in_active_resorts() -> None:
    q, _, _ = new_queue()
    q.add(pod("a", 1))
    q.add(pod("b", 2))
    q.update(pod("a", 1), pod("a", 9))
    assert pop_now(q).pod.name == "a"


def test_update_in_backoff_keeps_it_there_with_new_version() -> None:
    q, _, _ = new_queue()
    q.add(pod("a"))
    qpi = pop_now(q)
    fail(q, qpi)
    q.update(None, pod("a", label=("k", "v")))
    assert q.where(qpi.uid) == BACKOFF
    got = q.get(qpi.uid)
    assert got is not None and got.pod.labels == {"k": "v"}


def test_update_of_unschedulable_pod_requeues_on_spec_change_only() -> None:
    q, clock, rec = new_queue()
    qpi = _unschedulable(q, "a", "Fit")
    old = qpi.pod
    status_only = make_pod("a").nominated("n9").phase("Pending").obj()
    q.update(old, status_only)
    assert q.where(qpi.uid) == UNSCHEDULABLE
    clock.advance(2)
    q.update(status_only, pod("a", label=("x", "y")))
    assert q.where(qpi.uid) == ACTIVE
    assert rec.calls[-1] == (ACTIVE, "UnschedulablePodUpdate")


def test_update_of_unschedulable_pod_still_backing_off_goes_to_backoff() -> None:
    q, _, _ = new_queue()
    qpi = _unschedulable(q, "a", "Fit")
    q.update(None, pod("a", 3))
    assert q.where(qpi.uid) == BACKOFF


def test_update_while_in_flight_is_applied_when_handed_back() -> None:
    q, _, _ = new_queue()
    q.add(pod("a"))
    qpi = pop_now(q)
    q.update(qpi.pod, pod("a", label=("k", "v")))
    assert q.where(qpi.uid) == IN_FLIGHT
    fail(q, qpi, "Fit")
    assert q.where(qpi.uid) == BACKOFF  # its own spec changed during the attempt
    assert qpi.pod.labels == {"k": "v"}


def test_status_update_while_in_flight_does_not_requeue() -> None:
    q, _, _ = new_queue()
    q.add(pod("a"))
    qpi = pop_now(q)
    q.update(qpi.pod, make_pod("a").nominated("n1").obj())
    fail(q, qpi, "Fit")
    assert q.where(qpi.uid) == UNSCHEDULABLE


def test_update_of_unknown_pod_adds_it() -> None:
    q, _, rec = new_queue()
    q.update(None, pod("a"))
    assert q.where("uid-default-a") == ACTIVE
    assert rec.calls == [(ACTIVE, "UnschedulablePodUpdate")]


@pytest.mark.parametrize("where", [ACTIVE, BACKOFF, UNSCHEDULABLE, GATED])
def test_delete_from_each_queue(where: str) -> None:
    q, _, _ = new_queue()
    if where == GATED:
        q.add(pod("a", gates=["x"]))
    else:
        q.add(pod("a"))
        if where != ACTIVE:
            qpi = pop_now(q)
            fail(q, qpi, *(["Fit"] if where == UNSCHEDULABLE else []))
    assert q.where("uid-default-a") == where
    q.delete(pod("a"))
    assert q.where("uid-default-a") is None
    assert len(q) == 0


def test_delete_while_in_flight_drops_the_failed_pod() -> None:
    q, _, _ = new_queue()
    q.add(pod("a", nominated="n1"))
    qpi = pop_now(q)
    assert q.nominated_node_name(qpi.uid) == "n1"
    q.delete(qpi.pod)
    assert q.in_flight_count() == 0
    assert q.nominated_node_name(qpi.uid) is None
    fail(q, qpi, "Fit")
    assert q.where(qpi.uid) is None
    assert len(q) == 0


def test_done_after_delete_then_reuse_is_clean() -> None:
    q, _, _ = new_queue()
    q.add(pod("a"))
    qpi = pop_now(q)
    q.delete(qpi.pod)
    q.done(qpi.uid)
    q.add(pod("a"))
    assert q.where(qpi.uid) == ACTIVE


# ========================================================================================== nominator


def test_nominator_basics() -> None:
    q, _, _ = new_queue()
    a = PodInfo(pod("a"))
    b = PodInfo(pod("b"))
    q.add_nominated_pod(a, "n1")
    q.add_nominated_pod(b, "n1")
    assert [pi.pod.name for pi in q.nominated_pods_for_node("n1")] == ["a", "b"]
    q.add_nominated_pod(a, "n2")  # re-nominated elsewhere
    assert [pi.pod.name for pi in q.nominated_pods_for_node("n1")] == ["b"]
    assert q.nominated_node_name(a.pod.uid) == "n2"
    q.delete_nominated_pod_if_exists(b.pod)
    assert q.nominated_pods_for_node("n1") == []
    q.delete_nominated_pod_if_exists(b.pod)  # idempotent
    q.add_nominated_pod(PodInfo(pod("c")), "")  # no node given and none in status: nothing
    assert q.nominated_node_name("uid-default-c") is None
    q.add_nominated_pod(PodInfo(make_pod("d").node("n1").obj()), "n1")  # already assigned
    assert q.nominated_node_name("uid-default-d") is None


def test_pod_with_nominated_node_is_nominated_on_add() -> None:
    q, _, _ = new_queue()
    q.add(pod("a", nominated="n1"))
    assert [pi.pod.name for pi in q.nominated_pods_for_node("n1")] == ["a"]


def test_update_keeps_in_memory_nomination_and_refreshes_pod_info() -> None:
    q, _, _ = new_queue()
    qpi = _unschedulable(q, "a", "Fit")
    q.add_nominated_pod(qpi.pod_info, "n1")  # preemption chose n1; status not written yet
    same_spec = make_pod("a").obj()
    q.update(qpi.pod, same_spec)
    nominated = q.nominated_pods_for_node("n1")
    assert len(nominated) == 1 and nominated[0].pod is same_spec
    q.update(same_spec, make_pod("a").nominated("n2").obj())  # status now says n2
    assert q.nominated_node_name(qpi.uid) == "n2"


def test_delete_removes_nomination() -> None:
    q, _, _ = new_queue()
    q.add(pod("a", nominated="n1"))
    q.delete(pod("a"))
    assert q.nominated_pods_for_node("n1") == []


def test_a_nomination_cleared_in_flight_stays_cleared_until_the_status_names_a_node_again() -> None:
    # A preemptor nominated on n1 is popped, assumed (the scheduler drops its nomination) and its binding
    # fails (kube's clearNominatedNode). It is handed back with the version the watch last showed, whose
    # status still names n1 because the clearing write has not landed: that must not nominate it again,
    # nor must the watch's update that clears the field. Only a status naming a node nominates it.
    q, _, _ = new_queue()
    q.add(pod("a", 100, nominated="n1"))
    qpi = pop_now(q)
    assert q.nominated_node_name(qpi.uid) == "n1"
    q.delete_nominated_pod_if_exists(qpi.pod)  # assumed
    still_n1 = make_pod("a").priority(100).nominated("n1").obj()
    q.update(qpi.pod, still_n1)  # an update while in flight (the status still says n1)
    fail(q, qpi, "SomePermit")
    assert q.where(qpi.uid) == UNSCHEDULABLE
    assert qpi.pod is still_n1  # handed back as the watch last showed it
    assert q.nominated_node_name(qpi.uid) is None
    assert q.nominated_pods_for_node("n1") == []
    cleared = make_pod("a").priority(100).obj()
    q.update(still_n1, cleared)  # the clearing write lands
    assert q.nominated_node_name(qpi.uid) is None
    q.update(cleared, make_pod("a").priority(100).nominated("n2").obj())
    assert q.nominated_node_name(qpi.uid) == "n2"  # a status naming a node is followed


# ========================================================================================== helpers


def test_is_pod_updated_ignores_status_and_resource_version() -> None:
    base = make_pod("a").req(cpu="1").json()
    a = Pod.from_dict(base)
    b_json = make_pod("a").req(cpu="1").nominated("n1").phase("Pending").json()
    b_json["metadata"]["resourceVersion"] = "42"
    assert not is_pod_updated(a, Pod.from_dict(b_json))
    assert not is_pod_updated(a, a)
    assert is_pod_updated(a, make_pod("a").req(cpu="2").obj())
    assert is_pod_updated(a, make_pod("a").req(cpu="1").label("x", "y").obj())
    assert is_pod_updated(a, make_pod("a").req(cpu="1").toleration("k").obj())
    assert is_pod_updated(a, make_pod("a").req(cpu="1").pod_affinity("zone", {"a": "b"}).obj())


def test_event_label() -> None:
    assert event_label(ClusterEvent(Resource.NODE, Action.ADD)) == "NodeAdd"
    assert event_label(ClusterEvent(Resource.NODE, Action.UPDATE_NODE_LABEL)) == "NodeUpdateNodeLabel"
    assert event_label(ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE)) == "UnschedulablePodUpdate"
    assert event_label(ClusterEvent(Resource.POD, Action.ALL)) == "PodAll"
    assert event_label(FORCE_ACTIVATE) == "ForceActivate"


def test_on_incoming_hook_failure_does_not_break_queue() -> None:
    def bad(queue: str, event: str) -> None:
        raise RuntimeError("metrics down")

    q = SchedulingQueue(priority_less, FakeClock(), on_incoming=bad)
    q.add(pod("a"))
    assert pop_now(q).pod.name == "a"


def test_queued_pod_info_repr_and_view() -> None:
    qpi = QueuedPodInfo(pod("a"), 1.0, unschedulable_plugins=["Fit"], gated=True, gating_plugin="G")
    assert "default/a" in repr(qpi) and "Fit" in repr(qpi) and "gated by G" in repr(qpi)
    assert qpi.pod.name == "a" and qpi.uid == "uid-default-a"
    view: QueuedPodInfoView = qpi  # what QueueSort plugins see (checked by mypy)
    assert view.attempts == 0 and view.timestamp == 1.0


def test_get_finds_pods_everywhere() -> None:
    q, _, _ = new_queue()
    q.add(pod("a"))
    q.add(pod("g", gates=["x"]))
    qa = pop_now(q)
    assert q.get(qa.uid) is qa
    assert q.get("uid-default-g") is not None
    assert q.get("nope") is None


# ========================================================================================== heap


HEAP_OPS = st.lists(
    st.tuples(st.sampled_from(["push", "pop", "remove", "fix"]), st.integers(0, 15), st.integers(0, 5)),
    max_size=80,
)


@given(HEAP_OPS)
@settings(max_examples=200, deadline=None)
def test_heap_matches_sorted_model(ops: list[tuple[str, int, int]]) -> None:
    seq = iter(range(10**6))
    heap = Heap(lambda e: (e.key, e.seq))
    model: dict[str, tuple[float, int]] = {}
    entries: dict[str, Entry] = {}

    def smallest() -> str:
        return min(model, key=lambda u: model[u])

    for op, n, key in ops:
        uid = f"uid-default-p{n}"
        if op == "push":
            e = Entry(QueuedPodInfo(pod(f"p{n}"), 0.0), next(seq), float(key))
            heap.push(e)
            entries[uid] = e
            model[uid] = (e.key, e.seq)
        elif op == "pop" and model:
            want = smallest()
            assert heap.pop().qpi.uid == want
            del model[want]
        elif op == "remove":
            assert (heap.remove(uid) is not None) == (uid in model)
            model.pop(uid, None)
        elif op == "fix" and uid in model:
            entries[uid].key = float(key)
            heap.fix(uid)
            model[uid] = (float(key), entries[uid].seq)
        assert len(heap) == len(model)
        head = heap.peek()
        assert (head.qpi.uid if head else None) == (smallest() if model else None)
        assert all(e.index == i for i, e in enumerate(heap))
    while model:
        want = smallest()
        assert heap.pop().qpi.uid == want
        del model[want]


# ====================================================================================== stateful invariant


NAMES = [f"p{i}" for i in range(6)]


class QueueMachine(RuleBasedStateMachine):
    """Random operations; a pending pod is always in exactly one place and none is lost."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        hint_state = {"queue": True}
        self.hint_state = hint_state

        def hint(p: Any, old: Any, new: Any) -> QueueingHint:
            return QueueingHint.QUEUE if hint_state["queue"] else QueueingHint.SKIP

        quota_blocked: set[str] = set()
        self.quota_blocked = quota_blocked

        def pre_enqueue(p: Pod) -> Status | None:
            if p.name in quota_blocked:  # a second PreEnqueue plugin that can change its mind
                return Status.pending("over quota", plugin="Quota")
            return gates_pre_enqueue(p)

        self.q = SchedulingQueue(
            priority_less,
            self.clock,
            pre_enqueue=pre_enqueue,
            events_map={
                "Quota": [ClusterEventWithHint(PVC_ADD)],
                "Fit": [ClusterEventWithHint(NODE_ADD, hint)],
                "Affinity": [ClusterEventWithHint(NODE_LABEL)],
                "SchedulingGates": [
                    ClusterEventWithHint(ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE))
                ],
                "Dra": [ClusterEventWithHint(PVC_ADD)],
            },
            initial_backoff=1.0,
            max_backoff=4.0,
            unschedulable_max_stay=20.0,
        )
        self.live: set[str] = set()  # added, not deleted, not bound
        self.gates: dict[str, bool] = {}  # scheduling gates can only be removed (API validation)
        self.in_flight: dict[str, QueuedPodInfo] = {}
        self.deleted_in_flight: dict[str, QueuedPodInfo] = {}

    def _uid(self, name: str) -> str:
        return f"uid-default-{name}"

    @rule(name=st.sampled_from(NAMES), prio=st.integers(0, 3), gated=st.booleans())
    def add(self, name: str, prio: int, gated: bool) -> None:
        uid = self._uid(name)
        if uid in self.deleted_in_flight:
            return  # uids are never reused after a delete
        if uid in self.live:
            gated = gated and self.gates[uid]
        self.gates[uid] = gated
        self.q.add(pod(name, prio, gates=["g"] if gated else []))
        self.live.add(uid)

    @rule(name=st.sampled_from(NAMES), prio=st.integers(0, 3), gated=st.booleans())
    def update(self, name: str, prio: int, gated: bool) -> None:
        uid = self._uid(name)
        if uid not in self.live:
            return
        gated = gated and self.gates[uid]
        self.gates[uid] = gated
        self.q.update(None, pod(name, prio, gates=["g"] if gated else []))

    @rule(name=st.sampled_from(NAMES))
    def delete(self, name: str) -> None:
        uid = self._uid(name)
        self.q.delete(pod(name))
        self.live.discard(uid)
        if uid in self.in_flight:
            self.deleted_in_flight[uid] = self.in_flight.pop(uid)

    @rule()
    def pop(self) -> None:
        qpi = self.q.pop(timeout=0)
        if qpi is not None:
            assert qpi.uid in self.live
            assert qpi.uid not in self.in_flight
            self.in_flight[qpi.uid] = qpi

    @precondition(lambda self: bool(self.in_flight))
    @rule(
        data=st.data(),
        plugins=st.sets(st.sampled_from(["Fit", "Affinity", "Other"]), max_size=2),
        pending=st.sets(st.sampled_from(["Dra"]), max_size=1),
        error=st.booleans(),
    )
    def fail(self, data: st.DataObject, plugins: set[str], pending: set[str], error: bool) -> None:
        uid = data.draw(st.sampled_from(sorted(self.in_flight)))
        qpi = self.in_flight.pop(uid)
        qpi.unschedulable_plugins = set(plugins)
        qpi.pending_plugins = set(pending)
        self.q.add_unschedulable_if_not_present(qpi, error=error)

    @precondition(lambda self: bool(self.deleted_in_flight))
    @rule(data=st.data())
    def fail_deleted(self, data: st.DataObject) -> None:
        uid = data.draw(st.sampled_from(sorted(self.deleted_in_flight)))
        qpi = self.deleted_in_flight.pop(uid)
        qpi.unschedulable_plugins = {"Fit"}
        self.q.add_unschedulable_if_not_present(qpi)
        assert self.q.where(uid) is None

    @precondition(lambda self: bool(self.in_flight))
    @rule(data=st.data())
    def bound(self, data: st.DataObject) -> None:
        uid = data.draw(st.sampled_from(sorted(self.in_flight)))
        del self.in_flight[uid]
        self.q.done(uid)
        self.live.discard(uid)
        self.q.delete(pod(uid.removeprefix("uid-default-")))  # the watch then shows it assigned

    @rule(
        event=st.sampled_from([NODE_ADD, NODE_LABEL, NODE_TAINT, PVC_ADD, WILDCARD_EVENT]),
        queue=st.booleans(),
    )
    def event(self, event: ClusterEvent, queue: bool) -> None:
        self.hint_state["queue"] = queue
        self.q.move_all_to_active_or_backoff(event, None, None)

    @rule(name=st.sampled_from(NAMES))
    def toggle_quota(self, name: str) -> None:
        self.quota_blocked ^= {name}

    @rule(names=st.lists(st.sampled_from(NAMES), max_size=3))
    def activate(self, names: list[str]) -> None:
        self.q.activate([self._uid(n) for n in names])

    @rule(seconds=st.sampled_from([0.0, 0.5, 1.0, 3.0, 25.0]))
    def tick(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.q.flush()

    @invariant()
    def every_pod_in_exactly_one_place(self) -> None:
        lists = self.q.pending_pod_list()
        placed: dict[str, str] = {}
        for queue, pods in lists.items():
            for p in pods:
                assert p.uid not in placed, f"{p.uid} in {placed[p.uid]} and {queue}"
                placed[p.uid] = queue
        expected_in_flight = set(self.in_flight)
        assert {u for u, w in placed.items() if w == IN_FLIGHT} == expected_in_flight
        assert set(placed) == self.live, "a pod was lost or a ghost remains"
        for uid, queue in placed.items():
            assert self.q.where(uid) == queue
        counts = self.q.pending_pods()
        assert sum(counts.values()) == len(self.q) == len(self.live) - len(expected_in_flight)
        for p in lists[ACTIVE]:
            assert not p.scheduling_gates


QueueMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestQueueStateMachine = QueueMachine.TestCase


# ========================================================================================== sort_key

QUEUE_OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "update", "pop", "delete", "tick"]), st.integers(0, 9), st.integers(-2, 2)
    ),
    max_size=60,
)


@given(QUEUE_OPS)
@settings(max_examples=200, deadline=None)
def test_sort_key_pops_in_the_same_order_as_less(ops: list[tuple[str, int, int]]) -> None:
    """activeQ with PrioritySort's sort_key (tuples compared in C) against the same queue calling less."""
    from pyscheduler.plugins.priority_sort import PrioritySort

    by_less, clock, _ = new_queue()
    by_key, _, _ = new_queue(clock, sort_key=PrioritySort().sort_key)
    known: dict[str, Pod] = {}
    for op, n, prio in ops:
        name = f"p{n}"
        if op == "add":
            known[name] = pod(name, prio)
            for q in (by_less, by_key):
                q.add(known[name])
        elif op == "update" and name in known:
            new = pod(name, prio)
            for q in (by_less, by_key):
                q.update(known[name], new)
            known[name] = new
        elif op == "delete" and name in known:
            for q in (by_less, by_key):
                q.delete(known[name])
            del known[name]
        elif op == "tick":
            clock.advance(0.5)  # later adds get later timestamps
        elif op == "pop":
            a, b = by_less.pop(timeout=0), by_key.pop(timeout=0)
            assert (a.pod.name if a else None) == (b.pod.name if b else None)
            for q, qpi in ((by_less, a), (by_key, b)):
                if qpi is not None:
                    q.done(qpi.uid)
            if a is not None:
                known.pop(a.pod.name, None)

    def drain(q: SchedulingQueue) -> list[str]:
        out = []
        while (qpi := q.pop(timeout=0)) is not None:
            out.append(qpi.pod.name)
        return out

    rest = [drain(q) for q in (by_less, by_key)]
    assert rest[0] == rest[1]


# ========================================================================================== PopFromBackoffQ


def _in_backoff(q: SchedulingQueue, name: str, priority: int = 0) -> QueuedPodInfo:
    """A pod Fit rejected, moved to backoffQ by a node event that arrived while it was in flight."""
    q.add(pod(name, priority))
    qpi = pop_now(q)
    q.move_all_to_active_or_backoff(NODE_ADD, None, "n1")
    fail(q, qpi, "Fit")
    assert q.where(qpi.uid) == BACKOFF
    return qpi


def test_an_idle_active_queue_pops_a_pod_still_backing_off() -> None:
    # kube 1.36 (SchedulerPopFromBackoffQ, beta, on): an idle scheduler does not wait out a backoff
    q, _, rec = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    qpi = _in_backoff(q, "a")
    got = q.pop(timeout=0)
    assert got is qpi and q.where(qpi.uid) == IN_FLIGHT
    assert rec.calls[-1] == (ACTIVE, "PopFromBackoffQ")


def test_active_pods_go_before_pods_backing_off() -> None:
    q, _, _ = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    backing_off = _in_backoff(q, "a", priority=100)
    q.add(pod("b"))
    first = pop_now(q)
    assert first.pod.name == "b"
    assert pop_now(q) is backing_off


def test_pods_backing_off_in_one_window_pop_in_priority_order() -> None:
    q, _, _ = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    low = _in_backoff(q, "low", priority=1)
    high = _in_backoff(q, "high", priority=10)
    assert pop_now(q) is high
    assert pop_now(q) is low


def test_a_pod_that_failed_with_an_error_waits_out_its_backoff() -> None:
    q, clock, _ = new_queue()
    q.add(pod("a"))
    qpi = pop_now(q)
    fail(q, qpi, error=True)  # nobody rejected it: kube's podErrorBackoffQ, never popped early
    assert q.pop(timeout=0) is None
    clock.advance(2)
    q.flush()
    assert pop_now(q) is qpi


def test_popping_from_backoff_can_be_switched_off() -> None:
    q, _, _ = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]}, pop_from_backoff=False)
    _in_backoff(q, "a")
    assert q.pop(timeout=0) is None


def test_a_waiting_pop_wakes_when_a_pod_enters_backoff() -> None:
    q, _, _ = new_queue(events={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    q.add(pod("a"))
    qpi = pop_now(q)
    got: list[QueuedPodInfo | None] = []
    t = threading.Thread(target=lambda: got.append(q.pop(timeout=10)))
    t.start()
    time.sleep(0.05)
    q.move_all_to_active_or_backoff(NODE_ADD, None, "n1")
    fail(q, qpi, "Fit")
    t.join(timeout=5)
    assert got == [qpi]


# ---------------------------------------------------------------------------- pop_specific (pod groups)


def test_pop_specific_takes_a_pod_from_any_waiting_pool_into_flight() -> None:
    """kube's PopSpecificPod: a pod group's other members join the popped pod's cycle wherever they
    wait (activeQ, backoffQ, unschedulable); a gated one, an unknown one or one in flight is not taken."""
    q, _, _ = new_queue()
    pods = {
        n: pod(n, gates=("g",)) if n == "gated" else pod(n) for n in ("first", "backoff", "parked", "gated")
    }
    for p in pods.values():
        q.add(p)
    first, backoff, parked = pop_now(q), pop_now(q), pop_now(q)
    assert [first.pod.name, backoff.pod.name, parked.pod.name] == ["first", "backoff", "parked"]
    fail(q, backoff, error=True)  # an error: backoffQ
    fail(q, parked, "NodeResourcesFit")  # rejected, no event since: the unschedulable pool
    q.add(pod("active"))
    uids = {n: p.uid for n, p in pods.items()} | {"active": pod("active").uid}
    assert (q.where(uids["backoff"]), q.where(uids["parked"]), q.where(uids["gated"])) == (
        "backoff",
        "unschedulable",
        "gated",
    )
    got = {n: q.pop_specific(u) for n, u in uids.items()}
    assert q.pop_specific("no-such-uid") is None
    assert {n for n, v in got.items() if v is not None} == {"active", "backoff", "parked"}
    for n in ("active", "backoff", "parked"):
        assert q.where(uids[n]) == "in_flight"
        qpi = got[n]
        assert qpi is not None and qpi.attempts >= 1
    assert q.pop(timeout=0) is None  # nothing left in activeQ: they are in flight, not queued twice
    assert q.where(uids["gated"]) == "gated"  # PreEnqueue still holds it


def test_pop_specific_runs_pre_enqueue_except_from_backoff() -> None:
    """kube: PreEnqueue runs when a pod enters backoffQ (SchedulerPopFromBackoffQ), so a group member
    taken from there is not checked again; one taken from the unschedulable pool is."""
    calls: list[str] = []

    def pre_enqueue(p: Pod) -> Status | None:
        calls.append(p.name)
        return None

    for pop_from_backoff, expected in ((True, ["parked"]), (False, ["backoff", "parked"])):
        q, _, _ = new_queue(pre_enqueue=pre_enqueue, pop_from_backoff=pop_from_backoff)
        q.add(pod("backoff"))
        q.add(pod("parked"))
        backoff, parked = pop_now(q), pop_now(q)
        fail(q, backoff, error=True)
        fail(q, parked, "NodeResourcesFit")
        assert q.where(backoff.uid) == "backoff" and q.where(parked.uid) == "unschedulable"
        calls.clear()
        assert q.pop_specific(backoff.uid) is backoff and q.pop_specific(parked.uid) is parked
        assert calls == expected, pop_from_backoff
