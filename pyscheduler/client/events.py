"""EventRecorder: events.k8s.io/v1 Events about pods, posted off the scheduling thread.

Design
------
kube-scheduler records ``Scheduled``, ``FailedScheduling``, ``Preempted``, ... through client-go's
events library. Here ``event()`` only formats the body (cheap) and puts it on a bounded queue;
``WORKERS`` (64) daemon threads post the bodies with ``Api.create_event`` (which retries transient
errors). The caller never blocks: when the queue is full the event is dropped and counted
(``dropped``), as client-go's broadcaster drops events when its channel is full. Failed posts are
logged and counted (``failed``).

client-go posts each event from a goroutine of its own, so its posts are as concurrent as the events
come and its queue never fills while the API server answers. A post is a round trip of 5-30 ms on a
loaded API server, so four posting threads managed 130-800 events/s, and at 500-750 pods/s on 16 cores
(or 5,000 nodes with pods created ahead on 2) the queue filled and three Scheduled events in four were
lost, where kube-scheduler lost none (``bench.run``'s ``events_in_namespace``). Where the API server
is the bottleneck, as on two cores, each kind of write goes as fast as the requests of that kind in
flight: with 32 posters beside 64 binding cycles (``scheduler_binding.BIND_WORKERS``) events came at
half the rate of binds, and with 10,000 pods pending at once the queue filled and about 4,000 of
11,000 Scheduled events were lost at 5,000 nodes. So there are as many posters as binding cycles, and
the HTTP worker has threads for both (docs/benchmark.md, session 15). Posters cost nothing while idle;
their CPU is that of the posts, which have to be made.

The queue holds ``QUEUE_SIZE`` (1,000) events, client-go's ``maxQueuedEvents``, and the daemon hands
the recorder a client with a rate limiter of its own (kube-scheduler's separate event client). Both
bound how late an event can be: in a conformance run, ~1,200 events about pods retried while their
namespace was torn down (each refused with 403) were still draining 50 s after the last attempt,
through the 50-QPS limiter binds and status writes also took tokens from. No job can end a posting
thread: a refused series write once did (its log line read a field series jobs lack), and after four
the recorder went silent for good.

The body is what client-go's events recorder writes: ``regarding`` the pod (kind, namespace, name,
uid, apiVersion v1), ``eventTime`` as MicroTime (``2026-01-01T00:00:00.000000Z``), ``type``
Normal/Warning, ``reason``, ``action``, ``note`` (at most 1024 bytes, the API's limit; longer notes are
cut and end with ``...``), ``reportingController``/``reportingInstance``, and the name
``<pod name>.<hex of the event time in nanoseconds>`` in the pod's namespace.

Series, as client-go's events library makes them: events with the same type, action, reason,
reporting controller/instance and pod, at the same resourceVersion ("isomorphic", whatever their notes:
``regarding`` is client-go's object reference, which holds the version) are written once; the
second becomes a ``series`` (count 2) PATCHed onto the first, later ones only count. A series is
written again every 30 minutes while it lasts, and a last time once 6 minutes pass without another
occurrence, when it is forgotten (as are single events after 6 minutes). So a pod failing every few
seconds costs the API server two writes, not one per attempt, and its ``FailedScheduling`` shows the
first note with a count, as kube-scheduler's does. A series PATCH that finds the event gone (404:
expired, namespace deleted) creates it instead. Timers read the clock given (tests drive it).
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
SERIES_FINISH: Final = 6 * 60.0  # client-go's finishTime: a series ends 6 minutes after its last event
SERIES_REFRESH: Final = 30 * 60.0  # client-go's refreshTime: a running series is written every 30 minutes


QUEUE_SIZE: Final = 1000  # client-go's maxQueuedEvents: beyond it, events are dropped
WORKERS: Final = 64  # posting threads: as many as binding cycles, to keep up with binds (module docstring)


class EventSink(Protocol):
    """What the recorder needs of ``Api``."""

    def create_event(self, body: Mapping[str, Any]) -> JSON: ...

    def patch_event_series(self, namespace: str, name: str, series: Mapping[str, Any]) -> JSON: ...


def _series_key(body: Mapping[str, Any]) -> tuple[Any, ...]:
    """client-go's isomorphic-event key: everything but the note and the time. The pod reference holds its
    resourceVersion (client-go's GetReference), so an event about a pod changed since (its PodScheduled
    condition rewritten with another message, say) starts a new event rather than counting in a series."""
    reg = body["regarding"]
    return (
        body["type"],
        body["action"],
        body["reason"],
        body["reportingController"],
        body["reportingInstance"],
        reg["namespace"],
        reg["name"],
        reg["uid"],
        reg.get("resourceVersion", ""),
    )


class _Seen:
    """An event written recently: its body (name, namespace), and its series once it has one."""

    __slots__ = ("body", "count", "last", "last_written")

    def __init__(self, body: JSON, now: float) -> None:
        self.body = body
        self.count = 1
        self.last = now  # wall time of the last occurrence
        self.last_written = now

    def series(self) -> JSON:
        return {"count": self.count, "lastObservedTime": micro_time(self.last)}


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
            **({"resourceVersion": pod.resource_version} if pod.resource_version else {}),
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
        queue_size: int = QUEUE_SIZE,
        workers: int = WORKERS,
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
        self._seen: dict[tuple[Any, ...], _Seen] = {}
        self._next_sweep = self.clock.wall() + 60.0
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
        now = self.clock.wall()
        body = event_body(
            pod,
            type,
            reason,
            action,
            note,
            reporting_controller=self.reporting_controller,
            reporting_instance=self.reporting_instance,
            now=now,
        )
        job = self._aggregate(body, now)
        if job is None:
            return True  # counted into a series already written
        return self._put(job, pod, reason)

    def _aggregate(self, body: JSON, now: float) -> JSON | None:
        """The write this event needs: the body (a new event), a series patch, or None (only counted)."""
        sweep = False
        with self._cond:
            key = _series_key(body)
            seen = self._seen.get(key)
            if now >= self._next_sweep:
                self._next_sweep = now + 60.0
                sweep = True
            if seen is None or now - seen.last > SERIES_FINISH:
                self._seen[key] = _Seen(body, now)
                job: JSON | None = body
            else:
                seen.count += 1
                seen.last = now
                job = None
                if seen.count == 2:
                    seen.last_written = now
                    job = _patch_job(seen)
        if sweep:
            for j in self._sweep(now):
                self._put(j, None, "series")
        return job

    def _sweep(self, now: float) -> list[JSON]:
        """Series to write (ended 6 minutes ago: a last time; running 30 minutes: again); forget the rest
        of what is older than 6 minutes."""
        out = []
        with self._cond:
            for key, seen in list(self._seen.items()):
                idle = now - seen.last > SERIES_FINISH
                if seen.count > 1 and (idle or now - seen.last_written >= SERIES_REFRESH):
                    seen.last_written = now
                    out.append(_patch_job(seen))
                if idle:
                    del self._seen[key]
        return out

    def sweep(self) -> None:
        """Write due series now (the recorder also does this as events come, at most once a minute)."""
        for j in self._sweep(self.clock.wall()):
            self._put(j, None, "series")

    def _put(self, job: JSON, pod: Pod | None, reason: str) -> bool:
        with self._cond:
            self._pending += 1
        try:
            self._queue.put_nowait(job)
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
                    "event queue full, dropping events",
                    pod=pod.key if pod is not None else None,
                    reason=reason,
                    dropped=self.dropped,
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
            job = self._queue.get()
            if job is None:
                return
            ok = False
            try:
                ok = self._post(job)
            except Exception as e:  # never let one job end the thread: the recorder would go silent
                log.exception("posting event failed", event_name=_name(job), error=repr(e))
            finally:
                self._done(ok)

    def _post(self, job: JSON) -> bool:
        """Write one job (a new event or a series patch); False if the API server refused it (logged)."""
        try:
            series = job.get("_series")
            if series is None:
                self.api.create_event(job)
            else:
                self._write_series(job["_event"], series)
            return True
        except ApiError as e:
            if e.is_already_exists() and (e.attempts > 1 or self._in_series(job)):
                # an earlier attempt created it, only its answer was lost (make chaos: api-lost-response);
                # or the series patch of its second occurrence overtook it and created it
                return True
            log.warning(
                "posting event failed", event_name=_name(job), reason=_event(job)["reason"], error=str(e)
            )
            return False

    def _in_series(self, body: JSON) -> bool:
        with self._cond:
            seen = self._seen.get(_series_key(body)) if "regarding" in body else None
            return seen is not None and seen.count > 1 and seen.body is body

    def _write_series(self, event: JSON, series: JSON) -> None:
        meta = event["metadata"]
        try:
            self.api.patch_event_series(meta["namespace"], meta["name"], series)
        except ApiError as e:
            if e.status != 404:
                raise
            self.api.create_event({**event, "series": series})  # the event expired or was deleted

    def __enter__(self) -> EventRecorder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _patch_job(seen: _Seen) -> JSON:
    return {"_event": seen.body, "_series": seen.series()}


def _event(job: Mapping[str, Any]) -> Mapping[str, Any]:
    """The event a job writes: the body itself, or the event a series patch is about."""
    return job.get("_event") or job


def _name(job: Mapping[str, Any]) -> str:
    return str(_event(job)["metadata"]["name"])
