"""The queue's HintIndex (backend/queue/keyed.py): an event whose interested plugins can say which pods it
concerns asks only those pods' hints, and moves exactly the pods the full walk moves, in the same order.

The model: a plugin "Keyed" whose hint keeps the index's promise (a pod without one of the event's keys
is skipped) and otherwise queues or skips by a rule of its own; a plugin "Plain" with a hint and no index
on one of the two events; PreEnqueue plugins that gate and ungate pods; pods relabelled (their keys
change) while parked, failed by random sets of plugins (or none), popped, deleted, flushed. The same steps
run on a queue with the index and one whose registrations have it taken out (kube's loop over every pod).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Iterable
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from pyscheduler.backend.queue import GATED, UNSCHEDULABLE, SchedulingQueue
from pyscheduler.backend.queue.records import QueuedPodInfo
from pyscheduler.framework.events import (
    WILDCARD_EVENT,
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    HintIndex,
    QueueingHint,
    Resource,
)
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod
from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.clock import FakeClock

CLAIM = ClusterEvent(Resource.RESOURCE_CLAIM, Action.ADD, "ResourceClaimAdd")  # only Keyed registers it
SLICE = ClusterEvent(Resource.RESOURCE_SLICE, Action.ADD, "ResourceSliceAdd")  # Keyed and Plain
NODE = ClusterEvent(Resource.NODE, Action.ADD, "NodeAdd")  # Fit, and Keyed without a hint
NAMES = [f"p{i}" for i in range(6)]
KEYS = ["a", "b", "a", "b", "c", "boom", None]  # "boom": pod_keys raises; None: no key


def pod_keys(pod: Pod) -> Iterable[Hashable]:
    """The pod's label ``k``, the claim names in its status and its nominated node (a status-only update
    changes the last one without moving a parked pod)."""
    k = pod.labels.get("k")
    if k == "boom":
        raise ValueError("boom")
    keys = [k] if k else []
    keys += [st["resourceClaimName"] for st in pod.resource_claim_statuses]
    return keys + ([pod.nominated_node_name] if pod.nominated_node_name else [])


def event_keys(old: Any, new: Any) -> Iterable[Hashable] | None:
    if new.get("raise"):  # a plugin bug: the queue asks every pod
        raise ValueError("event_keys bug")
    keys: list[Hashable] | None = new["keys"]
    return keys


def keyed_hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
    keys = new["keys"]
    if keys is not None and pod.labels.get("k") != "boom" and not set(pod_keys(pod)) & set(keys):
        return QueueingHint.SKIP  # the promise the index relies on
    return QueueingHint.QUEUE if (sum(map(ord, pod.name)) + new["salt"]) % 3 else QueueingHint.SKIP


def plain_hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE if (len(pod.labels) + new["salt"]) % 2 else QueueingHint.SKIP


INDEX = HintIndex(pod_keys=pod_keys, event_keys=event_keys)
EVENTS_MAP = {
    "Keyed": [
        ClusterEventWithHint(CLAIM, keyed_hint, INDEX),
        ClusterEventWithHint(SLICE, keyed_hint, INDEX),
        ClusterEventWithHint(NODE),
    ],
    "Plain": [ClusterEventWithHint(SLICE, plain_hint)],
    "Fit": [ClusterEventWithHint(NODE)],
    "Other": [ClusterEventWithHint(ClusterEvent(Resource.PVC, Action.ADD))],
    "Binder": [ClusterEventWithHint(WILDCARD_EVENT)],  # no EnqueueExtensions: every event
}
UNINDEXED = {p: [dataclasses.replace(r, index=None) for r in regs] for p, regs in EVENTS_MAP.items()}
REJECTORS = [
    set(),
    {"Keyed"},
    {"Keyed"},
    {"Plain"},
    {"Fit"},
    {"Keyed", "Fit"},
    {"Keyed", "Plain"},
    {"Binder"},
]


class KeyedMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.blocked: dict[str, str] = {}
        self.labels: dict[str, str | None] = {}
        self.status_keys: dict[str, str] = {}
        self.nominated: dict[str, str] = {}
        self.asked: list[list[str]] = [[], []]

        def pre_enqueue(p: Pod) -> Status | None:
            plugin = self.blocked.get(p.name, "")
            return Status.pending("not yet", plugin=plugin) if plugin else None

        def counting(i: int, hint: Any) -> Any:
            def wrapped(pod: Pod, old: Any, new: Any) -> QueueingHint:
                self.asked[i].append(pod.name)
                result: QueueingHint = hint(pod, old, new)
                return result

            return wrapped

        def with_counting(i: int, events_map: Any) -> Any:
            return {
                p: [dataclasses.replace(r, hint=counting(i, r.hint)) if r.hint else r for r in regs]
                for p, regs in events_map.items()
            }

        self.clock = FakeClock()
        self.queues = [
            SchedulingQueue(
                lambda a, b: a.timestamp < b.timestamp,
                self.clock,
                pre_enqueue=pre_enqueue,
                events_map=with_counting(i, m),
                unschedulable_max_stay=20.0,
            )
            for i, m in enumerate((EVENTS_MAP, UNINDEXED))
        ]

    def _pod(self, name: str) -> Pod:
        b = make_pod(name).resource_claim("pc", template="t")
        if self.labels.get(name):
            b.label("k", self.labels[name] or "")
        if self.status_keys.get(name):
            b.claim_status("pc", self.status_keys[name])
        if self.nominated.get(name):
            b.nominated(self.nominated[name])
        return b.obj()

    @rule(
        name=st.sampled_from(NAMES), key=st.sampled_from(KEYS), by=st.sampled_from(["", "", "Keyed", "Other"])
    )
    def add_or_update(self, name: str, key: str | None, by: str) -> None:
        self.labels[name] = key
        self.status_keys.pop(name, None)
        self.nominated.pop(name, None)
        self.blocked[name] = by
        for q in self.queues:
            q.add(self._pod(name))

    @rule(name=st.sampled_from(NAMES), key=st.sampled_from(["a", "b", "c"]))
    def status_update(self, name: str, key: str) -> None:
        """The resourceclaim controller names the pod's claim in its status (a gated pod stays gated,
        refiled under its new keys; the queue counts it as an update of an unschedulable one)."""
        if name not in self.labels:
            return
        old = self._pod(name)
        self.status_keys[name] = key
        for q in self.queues:
            q.update(old, self._pod(name))

    @rule(name=st.sampled_from(NAMES), key=st.sampled_from(["a", "b", "c"]))
    def nominate(self, name: str, key: str) -> None:
        """A status field the queue does not count as an update: the pod stays parked, with new keys."""
        if name not in self.labels:
            return
        old = self._pod(name)
        self.nominated[name] = key
        for q in self.queues:
            q.update(old, self._pod(name))

    @rule(name=st.sampled_from(NAMES), by=st.sampled_from(["", "Keyed", "Other"]))
    def plugin_changes_its_mind(self, name: str, by: str) -> None:
        self.blocked[name] = by

    @rule(name=st.sampled_from(NAMES))
    def delete(self, name: str) -> None:
        for q in self.queues:
            q.delete(self._pod(name))

    @rule(
        event=st.sampled_from([CLAIM, SLICE, NODE]),
        keys=st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "c", "z"]), max_size=2)),
        salt=st.integers(0, 5),
        broken=st.booleans(),
    )
    def event(self, event: ClusterEvent, keys: list[str] | None, salt: int, broken: bool) -> None:
        new = {"keys": keys, "salt": salt, "raise": broken and salt == 0}
        for q in self.queues:
            q.move_all_to_active_or_backoff(event, None, new)

    @rule(
        keys=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True),
        salt=st.integers(0, 5),
    )
    def claim_event(self, keys: list[str], salt: int) -> None:
        """The case the index is for: an event with keys that only indexed registrations match."""
        for q in self.queues:
            q.move_all_to_active_or_backoff(CLAIM, None, {"keys": keys, "salt": salt})

    @rule(rejectors=st.sampled_from(REJECTORS), pending=st.booleans(), count=st.integers(1, 3))
    def pop_and_fail(self, rejectors: set[str], pending: bool, count: int) -> None:
        """Pop ``count`` pods, then hand them all back (events may come between pops and failures)."""
        popped = []
        for _ in range(count):
            got = [q.pop(timeout=0) for q in self.queues]
            assert [g.uid if g else None for g in got] == [got[0].uid if got[0] else None] * 2
            popped.append(got)
        for got in popped:
            for q, g in zip(self.queues, got, strict=True):
                if g is not None:
                    if pending:
                        g.pending_plugins = set(rejectors)
                    else:
                        g.unschedulable_plugins = set(rejectors)
                    q.add_unschedulable_if_not_present(g)

    @rule(seconds=st.sampled_from([0.5, 2.0, 25.0]))
    def tick(self, seconds: float) -> None:
        self.clock.advance(seconds)
        for q in self.queues:
            q.flush()

    @invariant()
    def same_pools_same_order(self) -> None:
        lists = [q.pending_pod_list() for q in self.queues]
        names = [{k: [p.name for p in v] for k, v in pl.items()} for pl in lists]
        assert names[0] == names[1]
        # the indexed queue asked a part of what the full walk asked
        assert set(self.asked[0]) <= set(self.asked[1])

    @invariant()
    def every_parked_pod_is_filed_under_its_current_keys(self) -> None:
        q = self.queues[0]
        for name in NAMES:
            uid = f"uid-default-{name}"
            where = q.where(uid)
            filed = q._keys.keys_of(uid)
            if where in (UNSCHEDULABLE, GATED):
                qpi = q.get(uid)
                assert isinstance(qpi, QueuedPodInfo)
                got = filed[0]
                assert got is not None
                if qpi.pod.labels.get("k") != "boom":
                    assert set(got) == set(pod_keys(qpi.pod))
            else:
                assert filed == [None]


KeyedMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestIndexedQueueMovesWhatTheFullWalkMoves = KeyedMachine.TestCase


def _parked_by_keyed(q: SchedulingQueue, names_keys: list[tuple[str, str]], **rejectors: set[str]) -> None:
    """Add the pods (label k), pop each and hand it back rejected by Keyed (or ``rejectors[name]``)."""
    for name, key in names_keys:
        q.add(make_pod(name).label("k", key).obj())
    for _ in names_keys:
        qpi = q.pop(timeout=0)
        assert qpi is not None
        qpi.unschedulable_plugins = set(rejectors.get(qpi.pod.name, {"Keyed"}))
        q.add_unschedulable_if_not_present(qpi)


def test_an_event_with_keys_asks_only_the_pods_filed_under_them() -> None:
    asked: list[str] = []

    def hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
        asked.append(pod.name)
        return QueueingHint.SKIP

    events_map = {"Keyed": [ClusterEventWithHint(CLAIM, hint, INDEX)]}
    q = SchedulingQueue(lambda a, b: a.timestamp < b.timestamp, FakeClock(), events_map=events_map)
    _parked_by_keyed(q, [(f"p{i}", "ab"[i % 2]) for i in range(6)])
    q.move_all_to_active_or_backoff(CLAIM, None, {"keys": ["a"]})
    assert asked == ["p0", "p2", "p4"]
    asked.clear()
    q.move_all_to_active_or_backoff(CLAIM, None, {"keys": ["z"]})
    assert asked == []
    q.move_all_to_active_or_backoff(CLAIM, None, {"keys": None})  # may concern any pod
    assert asked == [f"p{i}" for i in range(6)]


def test_a_plugin_without_an_index_on_the_event_has_the_pods_it_rejected_asked() -> None:
    asked: list[str] = []

    def hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
        asked.append(pod.name)
        return QueueingHint.SKIP

    events_map = {
        "Keyed": [ClusterEventWithHint(SLICE, hint, INDEX)],
        "Plain": [ClusterEventWithHint(SLICE, lambda p, o, n: QueueingHint.SKIP)],
        "Binder": [ClusterEventWithHint(WILDCARD_EVENT)],  # rejects nobody: asks nobody more
    }
    q = SchedulingQueue(lambda a, b: a.timestamp < b.timestamp, FakeClock(), events_map=events_map)
    _parked_by_keyed(q, [("p0", "a"), ("p1", "b"), ("p2", "b")], p2={"Keyed", "Plain"})
    q.move_all_to_active_or_backoff(SLICE, None, {"keys": ["a"]})
    assert asked == ["p0", "p2"]


def test_a_parked_pod_whose_keys_change_without_leaving_the_pool_is_found_under_the_new_ones() -> None:
    """A status field the queue does not count as an update (here the nominated node) leaves the pod
    parked: it is filed again under its new keys."""
    asked: list[str] = []

    def hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
        asked.append(pod.name)
        return QueueingHint.SKIP

    events_map = {"Keyed": [ClusterEventWithHint(CLAIM, hint, INDEX)]}
    q = SchedulingQueue(lambda a, b: a.timestamp < b.timestamp, FakeClock(), events_map=events_map)
    _parked_by_keyed(q, [("p0", "a")])
    before = make_pod("p0").label("k", "a").obj()
    q.update(before, make_pod("p0").label("k", "a").nominated("b").obj())
    assert q.where("uid-default-p0") == UNSCHEDULABLE
    q.move_all_to_active_or_backoff(CLAIM, None, {"keys": ["b"]})
    assert asked == ["p0"]
