"""EventRecorder and AsyncWriter without a network: body format, non-blocking queue, ordering, errors."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from pyscheduler.client.errors import ApiError
from pyscheduler.client.events import WORKERS, EventRecorder, event_body, micro_time, truncate_note
from pyscheduler.client.writer import AsyncWriter
from pyscheduler.framework.types import Pod

POD = Pod(uid="0b1c", namespace="team-a", name="web-1")
T = 1767225600.123456  # 2026-01-01T00:00:00.123456Z


class FixedClock:
    def now(self) -> float:
        return 0.0

    def wall(self) -> float:
        return T


# ------------------------------------------------------------------------------------------ body


def test_event_body_format() -> None:
    b = event_body(
        POD,
        "Normal",
        "Scheduled",
        "Binding",
        "Successfully assigned team-a/web-1 to node-3",
        reporting_controller="py-scheduler",
        reporting_instance="py-scheduler-host",
        now=T,
    )
    assert b == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"web-1.{int(T * 1e9):x}", "namespace": "team-a"},
        "eventTime": "2026-01-01T00:00:00.123456Z",
        "reportingController": "py-scheduler",
        "reportingInstance": "py-scheduler-host",
        "action": "Binding",
        "reason": "Scheduled",
        "regarding": {
            "kind": "Pod",
            "apiVersion": "v1",
            "namespace": "team-a",
            "name": "web-1",
            "uid": "0b1c",
        },
        "note": "Successfully assigned team-a/web-1 to node-3",
        "type": "Normal",
    }


def test_micro_time_always_has_six_digits() -> None:
    assert micro_time(1767225600.0) == "2026-01-01T00:00:00.000000Z"


def test_note_is_cut_to_1024_bytes() -> None:
    assert truncate_note("x" * 1024) == "x" * 1024
    cut = truncate_note("x" * 2000)
    assert len(cut.encode()) == 1024 and cut.endswith("...")
    multi = truncate_note("é" * 1000)  # 2000 bytes; must not split a character
    assert len(multi.encode()) <= 1024 and multi.endswith("...") and "\ufffd" not in multi


def test_event_type_is_validated() -> None:
    with pytest.raises(ValueError, match="event type must be Normal or Warning"):
        event_body(POD, "Info", "r", "a", "n", reporting_controller="c", reporting_instance="i", now=T)


# ------------------------------------------------------------------------------------------ recorder


class SlowSink:
    def __init__(self) -> None:
        self.gate = threading.Event()
        self.bodies: list[dict[str, Any]] = []
        self.fail = False

    def create_event(self, body: Any) -> dict[str, Any]:
        self.gate.wait(5)
        if self.fail:
            raise ApiError(403, "Forbidden", "no", "POST", "/events")
        self.bodies.append(dict(body))
        return dict(body)

    def patch_event_series(self, namespace: str, name: str, series: Any) -> dict[str, Any]:
        raise AssertionError("no series expected here")


def test_recorder_posts_in_background_and_flushes() -> None:
    sink = SlowSink()
    sink.gate.set()
    rec = EventRecorder(sink, reporting_instance="inst", clock=FixedClock())
    try:
        assert rec.event(POD, "Warning", "FailedScheduling", "Scheduling", "0/3 nodes are available")
        assert rec.flush(5)
        assert rec.posted == 1 and sink.bodies[0]["reason"] == "FailedScheduling"
        assert sink.bodies[0]["reportingInstance"] == "inst" and sink.bodies[0]["type"] == "Warning"
    finally:
        rec.stop()


def test_recorder_never_blocks_and_drops_when_full() -> None:
    sink = SlowSink()  # gate closed: the poster is stuck on the first event
    rec = EventRecorder(sink, queue_size=3, workers=1, clock=FixedClock())
    t = time.monotonic()
    pods = [Pod(uid=f"u{i}", namespace="team-a", name=f"web-{i}") for i in range(10)]  # not one series
    results = [rec.event(p, "Normal", "Scheduled", "Binding", "n") for p in pods]
    assert time.monotonic() - t < 0.5
    assert results.count(True) in (3, 4)  # one may already have been taken by the poster
    assert rec.dropped == 10 - results.count(True)
    assert not rec.flush(0.05)
    sink.gate.set()
    assert rec.flush(5) and rec.posted == results.count(True)
    rec.stop()
    assert not rec.event(POD, "Normal", "Scheduled", "Binding", "late")


def test_a_flood_delays_a_later_event_by_at_most_client_gos_queue() -> None:
    """A flood of events (pods retried while their namespace is torn down) keeps at most 1,000 queued, as
    client-go's broadcaster does, so another pod's first FailedScheduling is posted after at most that
    many, not after the whole flood (a 10,000-event queue once made it minutes late)."""
    sink = SlowSink()  # gate closed: the posters are stuck
    rec = EventRecorder(sink, clock=FixedClock())
    try:
        flood = [Pod(uid=f"u{i}", namespace="gone", name=f"p-{i}") for i in range(3000)]
        for p in flood:
            rec.event(p, "Warning", "FailedScheduling", "Scheduling", "0/4 nodes are available")
        assert rec.dropped >= 3000 - 1000 - WORKERS  # each poster holds one
        sink.gate.set()
        assert rec.flush(10)
        late = Pod(uid="late", namespace="team-b", name="new")
        assert rec.event(late, "Warning", "FailedScheduling", "Scheduling", "0/4 nodes are available")
        assert rec.flush(5)
        assert sink.bodies[-1]["regarding"]["uid"] == "late" and len(sink.bodies) <= 1000 + WORKERS + 1
    finally:
        rec.stop()


class InFlightSink:
    """An API server that answers only when told to, counting the posts waiting on it at once."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.cond = threading.Condition()
        self.in_flight = 0
        self.most = 0
        self.bodies: list[dict[str, Any]] = []

    def create_event(self, body: Any) -> dict[str, Any]:
        with self.cond:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            self.cond.notify_all()
        self.gate.wait(10)
        with self.cond:
            self.in_flight -= 1
            self.bodies.append(dict(body))
        return dict(body)

    def patch_event_series(self, namespace: str, name: str, series: Any) -> dict[str, Any]:
        raise AssertionError("no series expected here")


def test_events_are_posted_concurrently_so_a_slow_api_server_loses_none() -> None:
    """client-go posts each event from its own goroutine. With four posters and a 20 ms API server,
    events past 200/s piled up and three Scheduled events in four were lost at 5,000 nodes; here every
    poster waits on the API server at once, and a burst as large as the queue plus the posters loses
    nothing."""
    sink = InFlightSink()
    rec = EventRecorder(sink, clock=FixedClock())
    try:
        pods = [Pod(uid=f"u{i}", namespace="team-a", name=f"web-{i}") for i in range(1000 + WORKERS)]
        assert all(rec.event(p, "Normal", "Scheduled", "Binding", "n") for p in pods[:WORKERS])
        with sink.cond:  # every poster is waiting on the API server at once
            assert sink.cond.wait_for(lambda: sink.in_flight == WORKERS, timeout=10)
        assert all(rec.event(p, "Normal", "Scheduled", "Binding", "n") for p in pods[WORKERS:])
        sink.gate.set()
        assert rec.flush(20)
        assert rec.dropped == 0 and rec.posted == len(pods) and sink.most == WORKERS >= 32
        assert {b["regarding"]["uid"] for b in sink.bodies} == {p.uid for p in pods}
    finally:
        sink.gate.set()
        rec.stop()


class TerminatingNamespaceSink:
    """The API server while namespace ``gone`` is deleted: every write there is refused with 403."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def _refuse(self, namespace: str) -> None:
        if namespace == "gone":
            raise ApiError(403, "Forbidden", "namespace gone is being terminated", "POST", "/events")

    def create_event(self, body: Any) -> dict[str, Any]:
        self._refuse(body["metadata"]["namespace"])
        self.bodies.append(dict(body))
        return dict(body)

    def patch_event_series(self, namespace: str, name: str, series: Any) -> dict[str, Any]:
        self._refuse(namespace)
        return {}


def test_refused_series_writes_do_not_silence_the_recorder() -> None:
    """A pod failing twice in a namespace being deleted makes a series patch the API server refuses. Each
    such refusal once ended a posting thread (its log line read a field series jobs lack); after four, no
    event was ever posted again, and the conformance specs waiting for a FailedScheduling timed out."""
    sink = TerminatingNamespaceSink()
    rec = EventRecorder(sink, workers=4, clock=FixedClock())
    try:
        for i in range(8):  # twice each: the second occurrence is a series patch
            pod = Pod(uid=f"g{i}", namespace="gone", name=f"p-{i}")
            rec.event(pod, "Warning", "FailedScheduling", "Scheduling", "0/4 nodes are available")
            rec.event(pod, "Warning", "FailedScheduling", "Scheduling", "0/4 nodes are available")
        assert rec.flush(5)
        assert rec.failed == 16 and rec.posted == 0
        assert rec.event(POD, "Warning", "FailedScheduling", "Scheduling", "0/4 nodes are available")
        assert rec.flush(5), "the recorder's threads are gone"
        assert [b["regarding"]["name"] for b in sink.bodies] == ["web-1"]
    finally:
        rec.stop()


def test_recorder_counts_failures() -> None:
    sink = SlowSink()
    sink.gate.set()
    sink.fail = True
    rec = EventRecorder(sink, clock=FixedClock())
    rec.event(POD, "Normal", "Scheduled", "Binding", "x")
    assert rec.flush(5) and rec.failed == 1 and rec.posted == 0
    rec.stop()


class AlreadyThereSink:
    """The event was created, but the answer to the request that created it was lost."""

    def __init__(self, attempts: int) -> None:
        self.attempts = attempts

    def create_event(self, body: Any) -> dict[str, Any]:
        e = ApiError(409, "AlreadyExists", "events ... already exists", "POST", "/events")
        e.attempts = self.attempts
        raise e

    def patch_event_series(self, namespace: str, name: str, series: Any) -> dict[str, Any]:
        raise AssertionError("no series expected here")


def test_an_event_whose_retry_finds_it_created_is_posted() -> None:
    # make chaos (api-lost-response): 21 'posting event failed' warnings for events that existed
    rec = EventRecorder(AlreadyThereSink(attempts=2), clock=FixedClock())
    rec.event(POD, "Normal", "Scheduled", "Binding", "x")
    assert rec.flush(5) and (rec.posted, rec.failed) == (1, 0)
    rec.stop()
    first = EventRecorder(AlreadyThereSink(attempts=1), clock=FixedClock())  # not ours: a real conflict
    first.event(POD, "Normal", "Scheduled", "Binding", "x")
    assert first.flush(5) and (first.posted, first.failed) == (0, 1)
    first.stop()


class Clock:
    def __init__(self) -> None:
        self.t = T

    def now(self) -> float:
        return self.t - T

    def wall(self) -> float:
        return self.t


class SeriesSink:
    """Records creates and series patches; ``gone`` names events a patch finds deleted (404)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.gone: set[str] = set()

    def create_event(self, body: Any) -> dict[str, Any]:
        self.calls.append(("create", body["metadata"]["name"], dict(body)))
        return dict(body)

    def patch_event_series(self, namespace: str, name: str, series: Any) -> dict[str, Any]:
        if name in self.gone:
            raise ApiError(404, "NotFound", "gone", "PATCH", "/events")
        self.calls.append(("patch", name, dict(series)))
        return {}


def _failing(rec: EventRecorder, clock: Clock, times: int, step: float = 2.0) -> None:
    for i in range(times):
        rec.event(POD, "Warning", "FailedScheduling", "Scheduling", f"0/3 nodes are available: attempt {i}")
        clock.t += step
    assert rec.flush(5)


def test_a_pod_failing_again_and_again_costs_two_writes_then_a_last_count() -> None:
    sink, clock = SeriesSink(), Clock()
    rec = EventRecorder(sink, workers=1, clock=clock)
    try:
        _failing(rec, clock, 30)  # one attempt every 2 s for a minute
        (kind1, name, first), (kind2, name2, series) = sink.calls
        assert (kind1, kind2, name2) == ("create", "patch", name)
        assert first["note"].endswith("attempt 0")  # the first note stays, as with kube-scheduler
        assert series["count"] == 2
        rec.event(POD, "Normal", "Scheduled", "Binding", "Successfully assigned team-a/web-1 to n1")
        assert rec.flush(5) and sink.calls[-1][0] == "create"  # another reason: its own event
        clock.t += 6 * 60 + 1  # six quiet minutes end the series: its count is written a last time
        rec.sweep()
        assert rec.flush(5)
        assert ("patch", name, {"count": 30, "lastObservedTime": micro_time(T + 58.0)}) in sink.calls
        n = len(sink.calls)
        _failing(rec, clock, 1)  # after the end, the next failure is a new event again
        assert sink.calls[n][0] == "create" and sink.calls[n][1] != name
    finally:
        rec.stop()


def test_an_event_about_a_changed_pod_is_a_new_event_not_a_count() -> None:
    """client-go keys a series by the pod reference, resourceVersion included: once the pod changed (its
    PodScheduled condition rewritten with another message), the next failure is an event of its own, as
    `kubectl describe` shows kube-scheduler's."""
    sink, clock = SeriesSink(), Clock()
    rec = EventRecorder(sink, workers=1, clock=clock)
    try:
        v1 = Pod(uid="0b1c", namespace="team-a", name="web-1", resource_version="10")
        v2 = Pod(uid="0b1c", namespace="team-a", name="web-1", resource_version="11")
        rec.event(v1, "Warning", "FailedScheduling", "Scheduling", "binding failed")
        rec.event(v1, "Warning", "FailedScheduling", "Scheduling", "binding failed")
        rec.event(v2, "Warning", "FailedScheduling", "Scheduling", "deallocation completed")
        assert rec.flush(5)
        assert [c[0] for c in sink.calls] == ["create", "patch", "create"]
        assert sink.calls[0][2]["regarding"]["resourceVersion"] == "10"
        assert sink.calls[2][2]["note"] == "deallocation completed"
    finally:
        rec.stop()


def test_a_long_series_is_written_every_30_minutes_and_recreated_if_gone() -> None:
    sink, clock = SeriesSink(), Clock()
    rec = EventRecorder(sink, workers=1, clock=clock)
    try:
        _failing(rec, clock, 3, step=60.0)
        name = sink.calls[0][1]
        _failing(rec, clock, 29, step=60.0)  # still failing once a minute, half an hour on
        rec.sweep()
        assert rec.flush(5)
        refreshes = [c for c in sink.calls if c[0] == "patch"]
        assert [c[2]["count"] for c in refreshes] == [2, 32]
        sink.gone.add(name)  # the event expired (the API server keeps events an hour) or was deleted
        _failing(rec, clock, 31, step=60.0)
        rec.sweep()
        assert rec.flush(5)
        recreated = sink.calls[-1]  # the refresh due 30 minutes after the last one met a 404: created again
        assert recreated[0] == "create" and recreated[1] == name and recreated[2]["series"]["count"] == 62
        assert rec.failed == 0
    finally:
        rec.stop()


# ------------------------------------------------------------------------------------------ writer


def test_writer_runs_off_thread_and_keeps_order_per_key() -> None:
    out: dict[str, list[int]] = {}
    lock = threading.Lock()
    caller = threading.current_thread()

    def write(key: str, i: int) -> None:
        assert threading.current_thread() is not caller
        time.sleep(0.0005 * (i % 3))
        with lock:
            out.setdefault(key, []).append(i)

    w = AsyncWriter(workers=4)
    for i in range(60):
        for k in ("a/x", "b/y", "c/z"):
            assert w.submit(write, k, i, key=k)
    assert w.flush(10)
    assert out == {k: list(range(60)) for k in ("a/x", "b/y", "c/z")}
    assert w.completed == 180 and w.failed == 0
    w.stop()
    assert not w.submit(write, "a/x", 1)
    assert w.dropped == 1


def test_writer_logs_errors_and_never_raises() -> None:
    def boom() -> None:
        raise ApiError(500, "InternalError", "x", "PATCH", "/p")

    def bug() -> None:
        raise KeyError("k")

    with AsyncWriter(workers=2) as w:
        assert w.submit(boom) and w.submit(bug) and w.submit(lambda: None)
        assert w.flush(5)
        assert w.failed == 2 and w.completed == 1


def test_writer_drops_after_submit_timeout_when_full() -> None:
    gate = threading.Event()
    w = AsyncWriter(workers=1, queue_size=1, submit_timeout=0.05)
    assert w.submit(gate.wait, 5)  # taken by the worker
    time.sleep(0.05)
    assert w.submit(lambda: None)  # fills the queue
    assert not w.submit(lambda: None)
    assert w.dropped == 1
    gate.set()
    assert w.flush(5)
    w.stop()


class FakeApi:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def patch_pod_status(self, namespace: str, name: str, **kw: Any) -> None:
        self.calls.append(("patch", namespace, name, kw))

    def delete_pod(self, namespace: str, name: str, **kw: Any) -> bool:
        self.calls.append(("delete", namespace, name, kw))
        return True


def test_writer_helpers_for_pod_writes() -> None:
    api = FakeApi()
    with AsyncWriter(api, workers=3) as w:  # type: ignore[arg-type]
        w.patch_pod_status("ns", "p", nominated_node_name="n1")
        w.patch_pod_status("ns", "p", nominated_node_name="")
        w.delete_pod("ns", "v", uid="u")
        assert w.flush(5)
    assert [c for c in api.calls if c[2] == "p"] == [
        ("patch", "ns", "p", {"nominated_node_name": "n1"}),
        ("patch", "ns", "p", {"nominated_node_name": ""}),
    ]
    assert ("delete", "ns", "v", {"uid": "u"}) in api.calls


def test_posters_and_http_threads_keep_up_with_the_binding_cycles() -> None:
    """Where the API server is the bottleneck each kind of write goes as fast as its requests in flight.
    With fewer posters than binding cycles, or an HTTP worker (or connection pool) with room for only one
    of them, events fell behind binds and, with 10,000 pods pending at 5,000 nodes, about 4,000 Scheduled events were
    dropped."""
    from pyscheduler.client import http_worker, transport
    from pyscheduler.scheduler_binding import BIND_WORKERS

    assert WORKERS >= BIND_WORKERS
    assert http_worker.THREADS >= BIND_WORKERS + WORKERS
    # in process, each of them keeps a connection: past the pool's size, every request pays a TLS handshake
    assert transport.POOL_MAXSIZE >= BIND_WORKERS + WORKERS
