"""EventRecorder and AsyncWriter without a network: body format, non-blocking queue, ordering, errors."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from pyscheduler.client.errors import ApiError
from pyscheduler.client.events import EventRecorder, event_body, micro_time, truncate_note
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
    results = [rec.event(POD, "Normal", "Scheduled", "Binding", f"n{i}") for i in range(10)]
    assert time.monotonic() - t < 0.5
    assert results.count(True) in (3, 4)  # one may already have been taken by the poster
    assert rec.dropped == 10 - results.count(True)
    assert not rec.flush(0.05)
    sink.gate.set()
    assert rec.flush(5) and rec.posted == results.count(True)
    rec.stop()
    assert not rec.event(POD, "Normal", "Scheduled", "Binding", "late")


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
