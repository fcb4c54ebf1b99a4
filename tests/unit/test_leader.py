"""LeaderElector against an in-memory Lease API, with time driven by a FakeClock.

How time moves: the elector sleeps between attempts with ``self._stop.wait(retry_period)``. The tests
replace that Event with a ``Ticker`` whose ``wait`` advances the FakeClock by the requested period, runs
the test's script for that tick (a foreign holder renews, the API starts failing, ...) and returns at once.
The elector's own thread therefore runs through minutes of lease time in microseconds, deterministically:
what happens at each tick depends only on the tick number, never on thread timing. No test sleeps.

The fake API behaves like the API server for one Lease: GET (404 when absent), POST (409 AlreadyExists when
present), PUT with optimistic concurrency (409 Conflict when ``metadata.resourceVersion`` is stale), and can
be told to fail calls (no response, as a partitioned API server) or to inject one conflict.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

import pytest

from pyscheduler.client.errors import ApiError
from pyscheduler.client.leader import LeaderElector
from pyscheduler.testing.clock import FakeClock

NS, NAME = "py-scheduler", "py-scheduler"
RETRY = 2.0
MAX_TICKS = 500


class FakeLeaseApi:
    """One coordination.k8s.io/v1 Lease with the API server's concurrency rules."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lease: dict[str, Any] | None = None
        self.rv = 0
        self.down = False  # every call fails without a response
        self.conflict_next_update = False
        self.writes: list[str] = []  # "create <holder>" / "update <holder>" in order

    def _error(self, status: int, reason: str, method: str, message: str = "") -> ApiError:
        return ApiError(
            status, reason, message or reason, method, f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
        )

    def _check(self, kind: str, namespace: str | None, method: str) -> None:
        assert kind == "Lease" and namespace == NS
        if self.down:
            raise self._error(0, "ConnectionError", method, "connection refused")

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        with self.lock:
            self._check(kind, namespace, "GET")
            if self.lease is None or name != NAME:
                raise self._error(404, "NotFound", "GET", f'leases.coordination.k8s.io "{name}" not found')
            return copy.deepcopy(self.lease)

    def create(self, kind: str, namespace: str | None, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self._check(kind, namespace, "POST")
            if self.lease is not None:
                raise self._error(409, "AlreadyExists", "POST")
            stored = self._store(body)
            self.writes.append(f"create {body['spec'].get('holderIdentity', '')}")
            return copy.deepcopy(stored)

    def update(self, kind: str, namespace: str | None, name: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self._check(kind, namespace, "PUT")
            assert self.lease is not None and name == NAME
            if self.conflict_next_update:
                self.conflict_next_update = False
                raise self._error(409, "Conflict", "PUT", "the object has been modified")
            if (body.get("metadata") or {}).get("resourceVersion") != self.lease["metadata"][
                "resourceVersion"
            ]:
                raise self._error(409, "Conflict", "PUT", "the object has been modified")
            stored = self._store(body)
            self.writes.append(f"update {body['spec'].get('holderIdentity', '')}")
            return copy.deepcopy(stored)

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        lease = copy.deepcopy(body)
        lease.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        lease["metadata"].update(name=NAME, namespace=NS)
        self.lease = lease
        return lease

    # ---- what another replica does
    def hold(self, holder: str, duration: int = 15, renew: str = "2020-01-01T00:00:00.000000Z") -> None:
        """Another replica writes the lease (acquires or renews): a new renewTime each call."""
        with self.lock:
            spec = dict((self.lease or {}).get("spec") or {})
            transitions = int(spec.get("leaseTransitions") or 0)
            if spec.get("holderIdentity") != holder:
                transitions += 1 if self.lease is not None else 0
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {},
                "spec": {
                    "holderIdentity": holder,
                    "leaseDurationSeconds": duration,
                    "renewTime": f"{renew[:-8]}{self.rv:06d}Z",
                    "leaseTransitions": transitions,
                },
            }
            self._store(body)
            self.writes.append(f"foreign {holder}")

    def holder(self) -> str:
        return str(((self.lease or {}).get("spec") or {}).get("holderIdentity") or "")


class Ticker:
    """Stands in for the elector's stop Event (see the module docstring)."""

    def __init__(self, clock: FakeClock, script: Callable[[int], None]) -> None:
        self.clock = clock
        self.script = script
        self.ticks = 0
        self._set = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        if self._set.is_set():
            return True
        self.clock.advance(timeout or 0.0)
        self.ticks += 1
        if self.ticks >= MAX_TICKS:
            self._set.set()  # a runaway loop; the test's assertions will say what did not happen
        else:
            self.script(self.ticks)
        return self._set.is_set()

    def set(self) -> None:
        self._set.set()

    def is_set(self) -> bool:
        return self._set.is_set()


class Run:
    """An elector with recorded callbacks, driven by a Ticker and a per-tick script."""

    def __init__(
        self,
        api: FakeLeaseApi,
        identity: str = "me",
        clock: FakeClock | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
    ) -> None:
        self.api = api
        self.clock = clock or FakeClock()
        self.started: list[float] = []  # clock times of the callbacks
        self.stopped: list[float] = []
        self.steps: dict[int, Callable[[], None]] = {}
        self.every: list[Callable[[int], None]] = []
        self.elector = LeaderElector(
            api,
            namespace=NS,
            name=NAME,
            identity=identity,
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=RETRY,
            clock=self.clock,
            on_started_leading=lambda: self.started.append(self.clock.now()),
            on_stopped_leading=lambda: self.stopped.append(self.clock.now()),
        )
        self.ticker = Ticker(self.clock, self._tick)
        self.elector._stop = self.ticker  # type: ignore[assignment]
        self.t0 = self.clock.now()

    def _tick(self, n: int) -> None:
        for fn in self.every:
            fn(n)
        step = self.steps.get(n)
        if step is not None:
            step()

    def at(self, tick: int, fn: Callable[[], None]) -> Run:
        self.steps[tick] = fn
        return self

    def stop_at(self, tick: int) -> Run:
        return self.at(tick, self.ticker.set)

    def run(self) -> Run:
        """Run the elector's loop to its end (stopped by the script, or the lease lost)."""
        self.elector.start()
        self.elector._thread.join(10)
        assert not self.elector._thread.is_alive(), "the elector's loop did not end"
        assert self.ticker.ticks < MAX_TICKS, "the script never ended the loop"
        return self

    def elapsed(self, t: float) -> float:
        return t - self.t0


# ------------------------------------------------------------------------------------------ tests


def test_acquires_a_free_lease_at_once_and_renews_it_every_retry_period() -> None:
    api = FakeLeaseApi()
    seen: list[tuple[bool, str, str]] = []
    r = Run(api)
    r.every.append(
        lambda n: seen.append((r.elector.is_leader(), api.holder(), api.lease["spec"]["renewTime"]))  # type: ignore[index]
    )  # type: ignore[index]
    r.stop_at(4).run()

    assert r.started == [r.t0], "a free lease is taken on the first attempt, without waiting"
    assert r.stopped == []
    assert all(leader and holder == "me" for leader, holder, _ in seen)
    assert api.writes == ["create me", "update me", "update me", "update me"]
    spec = api.lease["spec"]  # type: ignore[index]
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"], "acquireTime is set on acquisition"
    assert r.elector.is_leader()


def test_renewal_keeps_acquire_time_and_transitions() -> None:
    api = FakeLeaseApi()
    r = Run(api)
    first: dict[str, Any] = {}
    r.at(1, lambda: first.update(api.lease["spec"]))  # type: ignore[index]
    r.stop_at(3).run()
    spec = api.lease["spec"]  # type: ignore[index]
    assert spec["acquireTime"] == first["acquireTime"]
    assert spec["leaseTransitions"] == first["leaseTransitions"] == 0


def test_does_not_acquire_while_another_renews_then_takes_over_once_it_stops() -> None:
    api = FakeLeaseApi()
    api.hold("other")
    r = Run(api)
    last_foreign_renew: list[float] = []

    def other_renews(n: int) -> None:
        if n <= 20:  # 40 s of renewals, well past one lease duration
            api.hold("other")
            last_foreign_renew.append(r.clock.now())
            assert not r.elector.is_leader(), "acquired a lease another replica keeps renewing"

    r.every.append(other_renews)
    r.every.append(lambda n: r.ticker.set() if r.started and n > 40 else None)
    r.run()

    assert len(r.started) == 1
    took = r.started[0] - last_foreign_renew[-1]
    # Expiry is judged from when *we* last saw the record change: leaseDuration, plus at most one retry.
    assert 15.0 < took <= 15.0 + RETRY, took
    spec = api.lease["spec"]  # type: ignore[index]
    assert spec["holderIdentity"] == "me"
    assert spec["leaseTransitions"] == 1, "taking over from another holder is a transition"
    assert "foreign other" in api.writes and api.writes[-1] == "update me"


def test_expired_lease_is_taken_after_a_full_lease_duration_of_our_own_observation() -> None:
    """The remote renewTime is years old, but we cannot trust it (clock skew): we wait leaseDuration from
    when we first saw the record, then take it."""
    api = FakeLeaseApi()
    api.hold("dead", duration=15, renew="2001-01-01T00:00:00.000000Z")
    r = Run(api)
    r.every.append(lambda n: r.ticker.set() if r.started else None)
    r.run()
    assert len(r.started) == 1
    assert 15.0 < r.elapsed(r.started[0]) <= 15.0 + RETRY
    assert api.holder() == "me"


def test_lease_duration_in_the_record_wins_over_our_own() -> None:
    api = FakeLeaseApi()
    api.hold("dead", duration=40)
    r = Run(api)
    r.every.append(lambda n: r.ticker.set() if r.started else None)
    r.run()
    assert 40.0 < r.elapsed(r.started[0]) <= 40.0 + RETRY


def test_released_lease_is_taken_at_once() -> None:
    api = FakeLeaseApi()
    leader = Run(api, identity="old")
    leader.stop_at(2).run()
    leader.elector.stop(release=True)
    spec = api.lease["spec"]  # type: ignore[index]
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1
    assert not leader.elector.is_leader()

    r = Run(api, identity="me")
    r.stop_at(1).run()
    assert r.started == [r.t0], "a released lease needs no waiting for expiry"
    assert api.lease["spec"]["leaseTransitions"] == 1  # type: ignore[index]


def test_one_conflict_on_renewal_is_retried_without_losing_the_lease() -> None:
    api = FakeLeaseApi()
    r = Run(api)
    r.at(2, lambda: setattr(api, "conflict_next_update", True))
    r.stop_at(6).run()
    assert r.stopped == [] and r.elector.is_leader()
    assert api.holder() == "me"


def test_failed_renewals_past_renew_deadline_stop_leading() -> None:
    api = FakeLeaseApi()
    r = Run(api)
    last_ok: list[float] = []
    r.at(1, lambda: last_ok.append(r.clock.now()))  # tick 1's renewal succeeds (the API is still up)

    def partition() -> None:
        api.down = True

    r.at(2, partition)
    r.run()  # ends by itself: the lease is lost
    assert len(r.started) == 1
    assert len(r.stopped) == 1, "on_stopped_leading is called once when renewals fail past renewDeadline"
    lost_after = r.stopped[0] - last_ok[0]
    assert 10.0 <= lost_after < 10.0 + RETRY, lost_after
    assert not r.elector.is_leader()


def test_leadership_is_given_up_at_once_when_another_replica_took_the_lease() -> None:
    api = FakeLeaseApi()
    r = Run(api)
    r.at(3, lambda: api.hold("usurper"))
    r.run()
    assert len(r.stopped) == 1
    # taken at tick 3, noticed at the same tick's attempt: no waiting for renewDeadline
    assert r.elapsed(r.stopped[0]) == 3 * RETRY
    assert api.holder() == "usurper", "the loser does not write the lease back"
    assert not r.elector.is_leader()


def test_two_candidates_for_a_free_lease_only_one_wins() -> None:
    api = FakeLeaseApi()
    clock = FakeClock()
    a = Run(api, identity="a", clock=clock)
    a.stop_at(1).run()
    b = Run(api, identity="b", clock=clock)
    b.stop_at(5).run()  # 10 s: less than a lease duration after b first saw a's record
    assert a.started and not b.started
    assert api.holder() == "a"
    assert [w for w in api.writes if w.endswith(" b")] == []


def test_stop_without_release_leaves_the_lease_to_expire() -> None:
    api = FakeLeaseApi()
    r = Run(api)
    r.stop_at(2).run()
    writes = list(api.writes)
    r.elector.stop(release=False)
    assert api.writes == writes
    assert api.holder() == "me"


def test_stop_of_a_follower_writes_nothing() -> None:
    api = FakeLeaseApi()
    api.hold("other")
    r = Run(api)
    r.every.append(lambda n: api.hold("other"))
    r.stop_at(3).run()
    writes = list(api.writes)
    r.elector.stop(release=True)
    assert api.writes == writes
    assert api.holder() == "other" and r.started == [] and r.stopped == []


def test_release_does_not_touch_a_lease_someone_else_took_meanwhile() -> None:
    api = FakeLeaseApi()
    r = Run(api)
    r.stop_at(2).run()
    api.hold("other")
    r.elector.stop(release=True)
    assert api.holder() == "other"


def test_unreachable_api_while_following_is_retried() -> None:
    api = FakeLeaseApi()
    api.down = True
    r = Run(api)
    r.at(3, lambda: setattr(api, "down", False))
    r.every.append(lambda n: r.ticker.set() if r.started else None)
    r.run()
    assert r.elapsed(r.started[0]) == 3 * RETRY


def test_timings_must_be_ordered() -> None:
    for lease, renew, retry in ((10, 10, 2), (15, 10, 10), (15, 10, 0)):
        with pytest.raises(ValueError, match="leaseDuration > renewDeadline > retryPeriod > 0"):
            LeaderElector(FakeLeaseApi(), lease_duration=lease, renew_deadline=renew, retry_period=retry)


def test_identity_defaults_to_pod_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAME", "py-scheduler-7d9f-abcde")
    assert LeaderElector(FakeLeaseApi()).identity == "py-scheduler-7d9f-abcde"
    monkeypatch.delenv("POD_NAME")
    assert LeaderElector(FakeLeaseApi()).identity != LeaderElector(FakeLeaseApi()).identity


# ------------------------------------------------------------------------------------------ shutdown and stalls


def test_stop_during_acquisition_still_releases_the_lease() -> None:
    api = FakeLeaseApi()
    r = Run(api)
    create = api.create

    def create_then_sigterm(kind: str, namespace: str | None, body: dict[str, Any]) -> dict[str, Any]:
        out = create(kind, namespace, body)
        r.ticker.set()  # SIGTERM arrives while the create is in flight
        return out

    api.create = create_then_sigterm  # type: ignore[method-assign]
    r.run()
    r.elector.stop(release=True)
    assert api.holder() == "", "the lease we just acquired is released on stop"


def test_leadership_ends_at_renew_deadline_even_while_a_renewal_hangs() -> None:
    api = FakeLeaseApi()
    r = Run(api)
    during: list[bool] = []
    get = api.get

    def slow_get(kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        if r.ticker.ticks == 2:
            r.clock.advance(20.0)  # the call takes 20 s (retries against an overloaded API server)
            during.append(r.elector.is_leader())
        return get(kind, namespace, name)

    api.get = slow_get  # type: ignore[method-assign]
    r.stop_at(3).run()
    assert during == [False], "20 s without a renewal is past renewDeadline (10 s): no longer leader"
