"""AsyncWriter: API writes (status patches, preemption deletes) off the scheduling thread.

Design
------
kube-scheduler writes a pod's PodScheduled condition and nominatedNodeName, and deletes preemption
victims, in goroutines so that the scheduling loop never waits for the API server. Here a small pool
of daemon worker threads does the same. Each worker has its own bounded queue; a write submitted with
a ``key`` (``namespace/name``) always goes to the same worker, so writes about one object are applied in
the order they were submitted (setting then clearing a nomination cannot be reordered). Writes
without a key go to the shortest queue.

``submit`` does not wait for the write. When the chosen queue is full it waits up to
``submit_timeout`` for room (back-pressure on a scheduler that outruns the API server), then drops
the write, logs and counts it (``dropped``). A write that raises is logged (structlog) and counted
(``failed``); the exception never reaches the caller. ``Api`` already retries transient errors.
``flush(timeout)`` waits until everything submitted so far is done; ``stop()`` flushes and ends
the workers.

Metrics: the writes kube-scheduler sends through its asynchronous API dispatcher are reported to
``observer`` (``pyscheduler.metrics.SchedulerMetrics``) under kube's call type: ``Api.patch_pod_status``
(a PodScheduled condition, setting or clearing nominatedNodeName) is ``pod_status_patch``. Each such
write counts as pending from ``submit`` until a worker takes it (or it is dropped), and its run is
observed with result ``success`` or ``error``. Other writes (PodGroup status, preemption deletes) are
not the dispatcher's in kube and are not reported. (``pod_binding`` is reported by ``Api.bind`` and
the scheduler's binder pool; see docs/metrics.md.)
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from pyscheduler.client.api import Api
from pyscheduler.client.drain import wait_drained
from pyscheduler.client.errors import ApiError

log = structlog.get_logger("pyscheduler.client")

_Item = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any], str | None, str | None] | None

# The function a write runs -> kube's API call type (pkg/scheduler/framework/api_calls)
CALL_TYPES: dict[str, str] = {"patch_pod_status": "pod_status_patch"}


def _call_type(fn: Callable[..., Any]) -> str | None:
    """kube's call type of a write: a function may name its own in ``api_call_type`` (one that wraps a
    status patch in a guard, say); else by ``CALL_TYPES``."""
    marked = getattr(fn, "api_call_type", None)
    return marked if isinstance(marked, str) else CALL_TYPES.get(getattr(fn, "__name__", ""))


class AsyncCallObserver(Protocol):
    """Where kube's scheduler_async_api_call_* and scheduler_pending_async_api_calls figures go."""

    def async_api_call(self, call_type: str, result: str, seconds: float) -> None: ...

    def async_api_pending(self, call_type: str, delta: int) -> None: ...


class AsyncWriter:
    """Run API writes on ``workers`` threads; see the module docstring."""

    def __init__(
        self,
        api: Api | None = None,
        workers: int = 4,
        *,
        queue_size: int = 10000,
        submit_timeout: float = 10.0,
        observer: AsyncCallObserver | None = None,
    ) -> None:
        self.api = api
        self.observer = observer
        self.submit_timeout = submit_timeout
        n = max(1, workers)
        per = max(1, queue_size // n)
        self._queues: list[queue.Queue[_Item]] = [queue.Queue(maxsize=per) for _ in range(n)]
        self._cond = threading.Condition()
        self._pending = 0
        self._stopped = False
        self._rr = itertools.count()
        self.completed = 0
        self.failed = 0
        self.dropped = 0
        self._threads = [
            threading.Thread(target=self._run, args=(q,), name=f"api-writer-{i}", daemon=True)
            for i, q in enumerate(self._queues)
        ]
        for t in self._threads:
            t.start()

    # ------------------------------------------------------------------------------ submit
    def submit(self, fn: Callable[..., Any], *args: Any, key: str | None = None, **kwargs: Any) -> bool:
        """Run ``fn(*args, **kwargs)`` on a worker (the one for ``key``, if given). False if the write
        was dropped (writer stopped, or the queue stayed full for ``submit_timeout``)."""
        if self._stopped:
            self.dropped += 1
            log.error("api writer stopped, dropping write", fn=_name(fn), key=key)
            return False
        if key is not None:
            q = self._queues[zlib.crc32(key.encode()) % len(self._queues)]
        else:
            start = next(self._rr)
            q = min(
                (self._queues[(start + i) % len(self._queues)] for i in range(len(self._queues))),
                key=lambda x: x.qsize(),
            )
        obs = self.observer  # reported only when observed from submit on (the pending gauge must balance)
        call_type = _call_type(fn) if obs is not None else None
        with self._cond:
            self._pending += 1
        if obs is not None and call_type is not None:
            obs.async_api_pending(call_type, 1)
        try:
            q.put((fn, args, kwargs, key, call_type), timeout=self.submit_timeout)
        except queue.Full:
            if obs is not None and call_type is not None:
                obs.async_api_pending(call_type, -1)
            self._done()
            self.dropped += 1
            log.error("api writer queue full, dropping write", fn=_name(fn), key=key, dropped=self.dropped)
            return False
        return True

    def patch_pod_status(self, namespace: str, name: str, **kwargs: Any) -> bool:
        """Submit ``Api.patch_pod_status`` for the pod (ordered with other writes about it)."""
        assert self.api is not None, "AsyncWriter built without an Api"
        return self.submit(self.api.patch_pod_status, namespace, name, key=f"{namespace}/{name}", **kwargs)

    def delete_pod(self, namespace: str, name: str, **kwargs: Any) -> bool:
        """Submit ``Api.delete_pod`` for the pod (ordered with other writes about it)."""
        assert self.api is not None, "AsyncWriter built without an Api"
        return self.submit(self.api.delete_pod, namespace, name, key=f"{namespace}/{name}", **kwargs)

    # ------------------------------------------------------------------------------ lifecycle
    @property
    def pending(self) -> int:
        return self._pending

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every write submitted so far has run; False on timeout."""
        return wait_drained(self._cond, lambda: self._pending, timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Finish queued writes (up to ``timeout``) and end the workers; later submits are dropped."""
        if self._stopped:
            return
        self._stopped = True
        self.flush(timeout)
        for q in self._queues:
            try:
                q.put(None, timeout=1.0)
            except queue.Full:
                log.warning("api writer still busy at stop", pending=self._pending)
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> AsyncWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------------------ workers
    def _done(self, ok: bool | None = None) -> None:
        with self._cond:
            if ok is True:
                self.completed += 1
            elif ok is False:
                self.failed += 1
            self._pending -= 1
            if self._pending <= 0:
                self._cond.notify_all()

    def _run(self, q: queue.Queue[_Item]) -> None:
        while True:
            item = q.get()
            if item is None:
                return
            fn, args, kwargs, key, call_type = item
            obs = self.observer
            if obs is not None and call_type is not None:
                obs.async_api_pending(call_type, -1)
            ok = False
            start = time.perf_counter()
            try:
                fn(*args, **kwargs)
                ok = True
            except ApiError as e:
                log.warning("api write failed", fn=_name(fn), key=key, error=str(e))
            except Exception as e:
                log.exception("api write failed", fn=_name(fn), key=key, error=repr(e))
            finally:
                if obs is not None and call_type is not None:
                    obs.async_api_call(call_type, "success" if ok else "error", time.perf_counter() - start)
                self._done(ok)


def _name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))
