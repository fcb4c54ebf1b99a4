"""The gated pool's per-plugin index: an event asks only the gated pods whose gating plugin registered it.

``GatedPool`` is checked against a plain dict (what the queue kept before), and the queue against a
queue that walks every gated pod on every event (kube's loop): same pods moved, same order, same pools.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from pyscheduler.backend.queue import GATED, SchedulingQueue
from pyscheduler.backend.queue.gated import GatedPool
from pyscheduler.backend.queue.records import QueuedPodInfo
from pyscheduler.framework.events import (
    FORCE_ACTIVATE,
    WILDCARD_EVENT,
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    Resource,
)
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod
from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.clock import FakeClock

PLUGINS = ["A", "B", "C", ""]
UIDS = [f"u{i}" for i in range(6)]


def qpi(uid: str, plugin: str) -> QueuedPodInfo:
    return QueuedPodInfo(make_pod(uid).uid(uid).obj(), 0.0, gated=True, gating_plugin=plugin)


class PoolMachine(RuleBasedStateMachine):
    """GatedPool against a dict of uid -> (pod, plugin filed under), in insertion order."""

    def __init__(self) -> None:
        super().__init__()
        self.pool = GatedPool()
        self.model: dict[str, tuple[QueuedPodInfo, str]] = {}

    @rule(uid=st.sampled_from(UIDS), plugin=st.sampled_from(PLUGINS))
    def put(self, uid: str, plugin: str) -> None:
        self.model.pop(uid, None)
        q = qpi(uid, plugin)
        self.model[uid] = (q, plugin)
        self.pool.put(q)

    @rule(uid=st.sampled_from(UIDS))
    def pop(self, uid: str) -> None:
        want = self.model.pop(uid, None)
        got = self.pool.pop(uid)
        assert got is (want[0] if want else None)

    @rule(uid=st.sampled_from(UIDS), plugin=st.sampled_from(PLUGINS))
    def refile(self, uid: str, plugin: str) -> None:
        """PreEnqueue ran again on an update and another plugin gates the pod now; it keeps its place."""
        if uid not in self.model:
            return
        q, _ = self.model[uid]
        q.gating_plugin = plugin
        self.model[uid] = (q, plugin)
        self.pool.refile(q)

    @rule(uid=st.sampled_from(UIDS), plugin=st.sampled_from(PLUGINS))
    def pop_after_gating_plugin_changed(self, uid: str, plugin: str) -> None:
        """The queue runs PreEnqueue on a pooled pod before taking it out (activate, pop_specific)."""
        if uid not in self.model:
            return
        q, _ = self.model.pop(uid)
        q.gating_plugin = plugin
        assert self.pool.pop(uid) is q

    @invariant()
    def same_pods_in_the_same_order(self) -> None:
        assert list(self.pool) == list(self.model)
        assert len(self.pool) == len(self.model)
        for ps in (["A"], ["B", "A"], ["A", "B", "C", ""], ["C", "missing"], []):
            want = [q for q, filed in self.model.values() if filed in ps]
            assert self.pool.by_plugins(ps) == want, ps
        assert sorted(self.pool.plugins()) == sorted({filed for _, filed in self.model.values()})


PoolMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestGatedPool = PoolMachine.TestCase


# ============================================================================ the queue against a full walk

PVC_ADD = ClusterEvent(Resource.PVC, Action.ADD, "PersistentVolumeClaimAdd")
NODE_ADD = ClusterEvent(Resource.NODE, Action.ADD, "NodeAdd")
POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE, "AssignedPodDelete")
GATES_GONE = ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
EVENTS_MAP = {
    "SchedulingGates": [
        ClusterEventWithHint(ClusterEvent(Resource.POD, Action.UPDATE_POD_SCHEDULING_GATES_ELIMINATED))
    ],
    "Quota": [ClusterEventWithHint(PVC_ADD), ClusterEventWithHint(ClusterEvent(Resource.POD, Action.DELETE))],
    "Budget": [ClusterEventWithHint(PVC_ADD), ClusterEventWithHint(WILDCARD_EVENT)],
    "Fit": [ClusterEventWithHint(NODE_ADD), ClusterEventWithHint(ClusterEvent(Resource.POD, Action.DELETE))],
}


class WalkingQueue(SchedulingQueue):
    """The queue as it was: every event walks every gated pod and checks its gating plugin."""

    def move_all_to_active_or_backoff(
        self, event: ClusterEvent, old: Any = None, new: Any = None, pre_check: Any = None
    ) -> None:
        with self._lock:
            _, interested = self._matcher.match(event)
            if not interested and event.resource != Resource.WILDCARD:
                return
            pools = (self._unschedulable.values(), self._gated.values())
            candidates = [q for pool in pools for q in pool if pre_check is None or pre_check(q.pod)]
            self._move_pods(candidates, event, old, new)


def _recorder(seen: list[tuple[str, str]]) -> Callable[[str, str], None]:
    """An on_incoming hook that keeps (queue, event label) in ``seen``."""

    def record(queue: str, label: str) -> None:
        seen.append((queue, label))

    return record


class LongWayQueue(SchedulingQueue):
    """The queue as it was before gated pods were re-gated in place: an event that requeues a gated pod
    takes it out of every pool and index, and ``_requeue`` runs PreEnqueue, which parks it again."""

    def _runs_pre_enqueue(self, qpi: QueuedPodInfo, strategy: Any) -> bool:
        return False


class QueuesMachine(RuleBasedStateMachine):
    """Random pods gated by one of three PreEnqueue plugins (which can change their minds), events,
    pops and failures, on the indexed queue, on the walking one and on the one that requeues a gated
    pod the long way: they must agree throughout, in pools, order and incoming-pod counts."""

    def __init__(self) -> None:
        super().__init__()
        self.blocked: dict[str, str] = {}  # pod name -> the plugin turning it away ("" : none)

        def pre_enqueue(p: Pod) -> Status | None:
            if p.scheduling_gates:
                return Status.pending("gated", plugin="SchedulingGates")
            plugin = self.blocked.get(p.name, "")
            return Status.pending("not yet", plugin=plugin) if plugin else None

        self.clock = FakeClock()
        self.incoming: list[list[tuple[str, str]]] = [[], [], []]
        self.queues = [
            cls(
                lambda a, b: a.timestamp < b.timestamp,
                self.clock,
                pre_enqueue=pre_enqueue,
                events_map=EVENTS_MAP,
                unschedulable_max_stay=20.0,
                on_incoming=_recorder(seen),
            )
            for cls, seen in zip((SchedulingQueue, WalkingQueue, LongWayQueue), self.incoming, strict=True)
        ]
        self.gates: dict[str, bool] = {}
        self.in_flight: dict[str, list[QueuedPodInfo]] = {}

    @staticmethod
    def _pod(name: str, gated: bool) -> Pod:
        b = make_pod(name)
        if gated:
            b.gate("example.com/g")
        return b.obj()

    @rule(name=st.sampled_from(UIDS), gated=st.booleans(), by=st.sampled_from(["", "Quota", "Budget"]))
    def add_or_update(self, name: str, gated: bool, by: str) -> None:
        gated = gated and self.gates.get(name, True)  # gates can only be removed
        self.gates[name] = gated
        self.blocked[name] = by
        for q in self.queues:
            q.add(self._pod(name, gated))

    @rule(name=st.sampled_from(UIDS), by=st.sampled_from(["", "Quota", "Budget"]))
    def plugin_changes_its_mind(self, name: str, by: str) -> None:
        self.blocked[name] = by

    @rule(name=st.sampled_from(UIDS))
    def delete(self, name: str) -> None:
        self.gates.pop(name, None)
        self.in_flight.pop(name, None)
        for q in self.queues:
            q.delete(self._pod(name, False))

    @rule(event=st.sampled_from([PVC_ADD, NODE_ADD, POD_DELETE, GATES_GONE, WILDCARD_EVENT, FORCE_ACTIVATE]))
    def event(self, event: ClusterEvent) -> None:
        for q in self.queues:
            q.move_all_to_active_or_backoff(event)

    @rule()
    def pop_and_fail(self) -> None:
        got = [q.pop(timeout=0) for q in self.queues]
        assert [g.uid if g else None for g in got] == [got[0].uid if got[0] else None] * len(got)
        for q, g in zip(self.queues, got, strict=True):
            if g is not None:
                g.unschedulable_plugins = {"Fit"}
                q.add_unschedulable_if_not_present(g)

    @rule(names=st.lists(st.sampled_from(UIDS), max_size=3))
    def activate(self, names: list[str]) -> None:
        for q in self.queues:
            q.activate([f"uid-default-{n}" for n in names])

    @rule(seconds=st.sampled_from([0.5, 2.0, 25.0]))
    def tick(self, seconds: float) -> None:
        self.clock.advance(seconds)
        for q in self.queues:
            q.flush()

    @invariant()
    def same_pools_same_order(self) -> None:
        lists = [q.pending_pod_list() for q in self.queues]
        names = [{k: [p.name for p in v] for k, v in pl.items()} for pl in lists]
        assert names[0] == names[1] == names[2]
        gated = [
            {g.uid: g.gating_plugin for g in (q.get(p.uid) for p in pl[GATED]) if g}
            for q, pl in zip(self.queues, lists, strict=True)
        ]
        assert gated[0] == gated[1] == gated[2]
        assert self.incoming[0] == self.incoming[1] == self.incoming[2]


QueuesMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestIndexedQueueWalksLikeTheFullWalk = QueuesMachine.TestCase


def test_an_event_no_gating_plugin_registered_asks_no_gated_pod() -> None:
    """A bind or delete elsewhere (AssignedPod*) does not even look at pods held by SchedulingGates; the
    pods of a plugin that registered it are asked (pre_check sees exactly those)."""
    q = SchedulingQueue(
        lambda a, b: a.timestamp < b.timestamp,
        FakeClock(),
        pre_enqueue=lambda p: Status.pending(
            "g", plugin="SchedulingGates" if p.scheduling_gates else "Quota"
        ),
        events_map=EVENTS_MAP,
    )
    for i in range(5):
        q.add(make_pod(f"g{i}").gate("x").obj())
    q.add(make_pod("quota").obj())
    asked: list[str] = []

    def pre_check(p: Pod) -> bool:
        asked.append(p.name)
        return False

    q.move_all_to_active_or_backoff(POD_DELETE, pre_check=pre_check)
    assert asked == ["quota"]
    asked.clear()
    q.move_all_to_active_or_backoff(GATES_GONE, pre_check=pre_check)
    assert asked == [f"g{i}" for i in range(5)]
