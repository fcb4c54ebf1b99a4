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
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

import structlog

from pyscheduler.client.api import Api
from pyscheduler.client.drain import wait_drained
from pyscheduler.client.errors import ApiError

log = structlog.get_logger("pyscheduler.client")

_Item = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any], str | None] | None


class AsyncWriter:
    """Run API writes on ``workers`` threads; see the module docstring."""

    def __init__(
        self,
        api: Api | None = None,
        workers: int = 4,
        *,
        queue_size: int = 10000,
        submit_timeout: float = 10.0,
    ) -> None:
        self.api = api
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
        with self._cond:
            self._pending += 1
        try:
            q.put((fn, args, kwargs, key), timeout=self.submit_timeout)
        except queue.Full:
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
            fn, args, kwargs, key = item
            ok = False
            try:
                fn(*args, **kwargs)
                ok = True
            except ApiError as e:
                log.warning("api write failed", fn=_name(fn), key=key, error=str(e))
            except Exception as e:
                log.exception("api write failed", fn=_name(fn), key=key, error=repr(e))
            finally:
                self._done(ok)


def _name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))
