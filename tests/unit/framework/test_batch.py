"""Opportunistic batching's state machine (framework/batch.py) on a driven clock: when a hint is given,
and for each reason it is not, what kube's three metrics count."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from pyscheduler.framework import batch as b
from pyscheduler.framework.batch import MAX_BATCH_AGE, OpportunisticBatch
from pyscheduler.testing.clock import FakeClock

SIG = (("v1.Pod.Spec.SchedulerName", "default-scheduler"), ("v1.Pod.Spec.HostPorts()", (8080,)))
OTHER = (("v1.Pod.Spec.SchedulerName", "default-scheduler"), ("v1.Pod.Spec.HostPorts()", (9090,)))


class Recorder:
    def __init__(self) -> None:
        self.attempts: Counter[str] = Counter()
        self.flushes: Counter[str] = Counter()
        self.hint_durations: Counter[str] = Counter()
        self.stores = 0

    def batch_attempt(self, profile: str, result: str) -> None:
        assert profile == "p"
        self.attempts[result] += 1

    def batch_flushed(self, profile: str, reason: str) -> None:
        self.flushes[reason] += 1

    def node_hint_duration(self, hinted: str, profile: str, seconds: float) -> None:
        assert seconds >= 0
        self.hint_durations[hinted] += 1

    def store_results_duration(self, profile: str, seconds: float) -> None:
        self.stores += 1


def full(*names: str) -> Callable[[str], bool | None]:
    """Filter's answer on the last chosen node: rejected if it is in ``names``."""
    return lambda name: name in names


def missing(name: str) -> bool | None:
    return None


@pytest.fixture
def setup() -> tuple[OpportunisticBatch, FakeClock, Recorder]:
    clock = FakeClock()
    rec = Recorder()
    return OpportunisticBatch("p", clock, rec), clock, rec


def first_cycle(batch: OpportunisticBatch, cycle: int = 1) -> None:
    """A full cycle: no hint, n1 chosen, n2 then n3 the next best."""
    assert batch.node_hint(SIG, cycle, full()) == ""
    batch.store(SIG, "", "n1", ["n2", "n3"], cycle)


def test_hints_follow_the_stored_order_one_pod_per_node(
    setup: tuple[OpportunisticBatch, FakeClock, Recorder],
) -> None:
    batch, clock, rec = setup
    first_cycle(batch)
    clock.advance(0.1)
    assert batch.node_hint(SIG, 2, full("n1")) == "n2"
    batch.store(SIG, "n2", "n2", (), 2)  # the hint passed Filter: the only feasible node
    assert batch.node_hint(SIG, 3, full("n2")) == "n3"
    batch.store(SIG, "n3", "n3", (), 3)
    # nothing left: no hint and no flush counted (kube's stateEmpty)
    assert batch.node_hint(SIG, 4, full("n3")) == ""
    assert rec.attempts == {b.NO_HINT: 2, b.HINT_USED: 2}
    assert rec.flushes == {}
    assert rec.hint_durations == {"hint": 2, "no_hint": 2}
    assert rec.stores == 3
    assert batch.batched_pods == 2


def test_the_last_node_not_full_flushes(setup: tuple[OpportunisticBatch, FakeClock, Recorder]) -> None:
    batch, _, rec = setup
    first_cycle(batch)
    assert batch.node_hint(SIG, 2, full()) == ""  # n1 still takes the pod: its score changed
    assert rec.flushes == {b.FLUSH_NODE_NOT_FULL: 1}


def test_the_last_node_gone_flushes(setup: tuple[OpportunisticBatch, FakeClock, Recorder]) -> None:
    batch, _, rec = setup
    first_cycle(batch)
    assert batch.node_hint(SIG, 2, missing) == ""
    assert rec.flushes == {b.FLUSH_NODE_MISSING: 1}


def test_another_signature_flushes(setup: tuple[OpportunisticBatch, FakeClock, Recorder]) -> None:
    batch, _, rec = setup
    first_cycle(batch)
    assert batch.node_hint(OTHER, 2, full("n1")) == ""
    assert batch.node_hint(None, 2, full("n1")) == ""  # an unsigned pod too
    assert rec.flushes == {b.FLUSH_POD_INCOMPATIBLE: 2}


def test_a_cycle_in_between_flushes(setup: tuple[OpportunisticBatch, FakeClock, Recorder]) -> None:
    """Another pod was popped in between (another profile's, or one that failed before storing)."""
    batch, _, rec = setup
    first_cycle(batch, cycle=5)
    assert batch.node_hint(SIG, 7, full("n1")) == ""
    assert rec.flushes == {b.FLUSH_POD_SKIPPED: 1}


def test_the_state_expires_after_max_batch_age(setup: tuple[OpportunisticBatch, FakeClock, Recorder]) -> None:
    batch, clock, rec = setup
    first_cycle(batch)
    clock.advance(MAX_BATCH_AGE)  # at the limit: still usable
    assert batch.node_hint(SIG, 2, full("n1")) == "n2"
    batch.store(SIG, "n2", "n2", (), 2)
    clock.advance(0.001)  # the age counts from the full cycle that stored it, not from the last hint
    assert batch.node_hint(SIG, 3, full("n2")) == ""
    assert rec.flushes == {b.FLUSH_EXPIRED: 1}


def test_a_hint_not_taken_replaces_the_state(setup: tuple[OpportunisticBatch, FakeClock, Recorder]) -> None:
    """The hinted node failed Filter (or the pod went to its nominated node): a full cycle ran and its
    scores replace the state."""
    batch, _, rec = setup
    first_cycle(batch)
    assert batch.node_hint(SIG, 2, full("n1")) == "n2"
    batch.store(SIG, "n2", "n9", ["n8", "n3"], 2)
    assert rec.attempts[b.HINT_NOT_USED] == 1
    assert batch.node_hint(SIG, 3, full("n9")) == "n8"


def test_nothing_stored_without_a_signature_or_other_nodes(
    setup: tuple[OpportunisticBatch, FakeClock, Recorder],
) -> None:
    batch, _, rec = setup
    batch.store(None, "", "n1", ["n2"], 1)
    assert batch.node_hint(None, 2, full("n1")) == ""
    batch.store(SIG, "", "n1", (), 2)  # one feasible node: nothing to hand out
    assert batch.node_hint(SIG, 3, full("n1")) == ""
    assert batch.nodes_left == 0
    assert rec.flushes == {b.FLUSH_POD_NOT_BATCHABLE: 1, b.FLUSH_EMPTY_LIST: 1}
    assert rec.attempts == {b.NO_HINT: 2}


def test_a_flush_keeps_the_state_for_no_one(setup: tuple[OpportunisticBatch, FakeClock, Recorder]) -> None:
    """As in kube a flush only counts: the next cycle that stores replaces the state, and a pod in the
    cycle right after a refused one finds the cycle count moved on."""
    batch, _, rec = setup
    first_cycle(batch)
    assert batch.node_hint(OTHER, 2, full("n1")) == ""  # refused; this pod then fails (no store)
    assert batch.node_hint(SIG, 3, full("n1")) == ""
    assert rec.flushes == {b.FLUSH_POD_INCOMPATIBLE: 1, b.FLUSH_POD_SKIPPED: 1}
