"""EventRecorder: events.k8s.io/v1 Events about pods, posted off the scheduling thread.

Design
------
kube-scheduler records ``Scheduled``, ``FailedScheduling``, ``Preempted``, ... through client-go's
events library. Here ``event()`` only formats the body (cheap) and puts it on a bounded queue; one
daemon thread posts the bodies with ``Api.create_event`` (which retries transient errors). The
caller never blocks: when the queue is full the event is dropped and counted (``dropped``), as
client-go's broadcaster drops events when its channel is full. Failed posts are logged and counted
(``failed``).

The body is what client-go's events recorder writes: ``regarding`` the pod (kind, namespace, name,
uid, apiVersion v1), ``eventTime`` as MicroTime (``2026-01-01T00:00:00.000000Z``), ``type``
Normal/Warning, ``reason``, ``action``, ``note`` (at most 1024 bytes, the API's limit; longer notes are
cut and end with ``...``), ``reportingController``/``reportingInstance``, and the name
``<pod name>.<hex of the event time in nanoseconds>`` in the pod's namespace. Events are not
aggregated into series.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
from collections.abc import Mapping
from typing import Any, Final, Protocol

import structlog

from pyscheduler.client.drain import wait_drained
from pyscheduler.client.errors import ApiError
from pyscheduler.framework.clock import Clock, RealClock
from pyscheduler.framework.helpers.timefmt import rfc3339_micro
from pyscheduler.framework.types import JSON, Pod

log = structlog.get_logger("pyscheduler.client")

NOTE_LIMIT: Final = 1024
NORMAL: Final = "Normal"
WARNING: Final = "Warning"


class EventSink(Protocol):
    """What the recorder needs of ``Api``."""

    def create_event(self, body: Mapping[str, Any]) -> JSON: ...


def micro_time(ts: float) -> str:
    """MicroTime as the API writes it: ``2026-01-01T00:00:00.000000Z``."""
    return rfc3339_micro(ts)


def truncate_note(note: str, limit: int = NOTE_LIMIT) -> str:
    """Cut ``note`` to at most ``limit`` UTF-8 bytes, ending with ``...`` when cut."""
    raw = note.encode("utf-8")
    if len(raw) <= limit:
        return note
    return raw[: limit - 3].decode("utf-8", "ignore") + "..."


def event_body(
    pod: Pod,
    type: str,
    reason: str,
    action: str,
    note: str,
    *,
    reporting_controller: str,
    reporting_instance: str,
    now: float,
) -> JSON:
    """The events.k8s.io/v1 Event for ``pod`` at wall time ``now``."""
    if type not in (NORMAL, WARNING):
        raise ValueError(f"event type must be Normal or Warning, not {type!r}")
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{pod.name}.{int(now * 1e9):x}", "namespace": pod.namespace},
        "eventTime": micro_time(now),
        "reportingController": reporting_controller,
        "reportingInstance": reporting_instance,
        "action": action,
        "reason": reason,
        "regarding": {
            "kind": "Pod",
            "apiVersion": "v1",
            "namespace": pod.namespace,
            "name": pod.name,
            "uid": pod.uid,
        },
        "note": truncate_note(note),
        "type": type,
    }


class EventRecorder:
    """Queue events and post them from one daemon thread; see the module docstring."""

    def __init__(
        self,
        api: EventSink,
        reporting_controller: str = "py-scheduler",
        reporting_instance: str | None = None,
        *,
        queue_size: int = 10000,
        workers: int = 4,
        clock: Clock | None = None,
    ) -> None:
        self.api = api
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance or f"{reporting_controller}-{socket.gethostname()}"
        self.clock: Clock = clock or RealClock()
        self._queue: queue.Queue[JSON | None] = queue.Queue(maxsize=max(1, queue_size))
        self._pending = 0  # queued or being posted
        self._cond = threading.Condition()
        self._stopped = False
        self.posted = 0
        self.dropped = 0
        self.failed = 0
        self._last_drop_warning = -1e18
        self._threads = [
            threading.Thread(target=self._run, name=f"event-recorder-{i}", daemon=True)
            for i in range(max(1, workers))
        ]
        for t in self._threads:
            t.start()

    def event(self, pod: Pod, type: str, reason: str, action: str, note: str) -> bool:
        """Queue an event about ``pod``; False if it was dropped (queue full or recorder stopped)."""
        if self._stopped:
            self.dropped += 1
            return False
        body = event_body(
            pod,
            type,
            reason,
            action,
            note,
            reporting_controller=self.reporting_controller,
            reporting_instance=self.reporting_instance,
            now=self.clock.wall(),
        )
        with self._cond:
            self._pending += 1
        try:
            self._queue.put_nowait(body)
        except queue.Full:
            self._done()
            with self._cond:
                self.dropped += 1
                now = self.clock.now()
                warn = now - self._last_drop_warning >= 10.0
                if warn:
                    self._last_drop_warning = now
            if warn:  # at most one warning per 10 s; the count says how many were lost
                log.warning(
                    "event queue full, dropping events", pod=pod.key, reason=reason, dropped=self.dropped
                )
            return False
        return True

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued event has been posted (or failed); False on timeout."""
        return wait_drained(self._cond, lambda: self._pending, timeout)

    def stop(self, timeout: float = 5.0) -> None:
        """Post what is queued (up to ``timeout``), then end the thread."""
        if self._stopped:
            return
        self.flush(timeout)
        self._stopped = True
        for _ in self._threads:
            with contextlib.suppress(queue.Full):
                self._queue.put(None, timeout=1.0)
        for t in self._threads:
            t.join(timeout)

    def _done(self, ok: bool | None = None) -> None:
        with self._cond:
            if ok is True:
                self.posted += 1
            elif ok is False:
                self.failed += 1
            self._pending -= 1
            if self._pending <= 0:
                self._cond.notify_all()

    def _run(self) -> None:
        while True:
            body = self._queue.get()
            if body is None:
                return
            ok = False
            try:
                self.api.create_event(body)
                ok = True
            except ApiError as e:
                if e.is_already_exists() and e.attempts > 1:
                    # an earlier attempt created it; only its answer was lost (make chaos: api-lost-response)
                    ok = True
                    continue
                log.warning(
                    "posting event failed",
                    event_name=body["metadata"]["name"],
                    reason=body["reason"],
                    error=str(e),
                )
            except Exception as e:
                log.exception("posting event failed", event_name=body["metadata"]["name"], error=repr(e))
            finally:
                self._done(ok)

    def __enter__(self) -> EventRecorder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
