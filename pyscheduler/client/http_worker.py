"""Writes to the API server sent from a second process (``--http-worker``; off by default).

Design
------
The daemon is one Python process: the scheduling thread, the reflectors, the binder threads, the event
recorder and the status writer share one GIL and therefore at most one core. Through urllib3 a
Binding, an Event or a status patch cost ~0.3 ms of GIL time each (request building, header parsing in
``http.client``); ``HttpWorker`` moved that work into a child process. Since the transport frames its
own HTTP/1.1 (``http1.py``, 0.28 ms of CPU per write in all), the pipe round trip here costs more (0.56
ms per write, session 16) than the GIL time it saves, so the daemon runs without it unless asked. How it
works:

- The parent keeps everything that decides what is sent and what a reply means: the rate limiter, the
  ``Authorization`` header (credential refresh hooks run in the parent), retries with backoff, error
  mapping and JSON decoding (``Api._once``). Only the HTTP exchange itself crosses over.
- A request is a small tuple ``(id, method, path, body, headers, connect timeout, read timeout)``
  pickled over a pipe (``multiprocessing.connection`` framing, plain ``pickle``); the child runs it
  on one of its threads over its own keep-alive pool (``http1.Http1Pool``, same TLS settings) and sends back
  ``(id, status, reason, Retry-After, body, error)``.
  A reader thread in the parent hands each reply to the thread waiting for it.
- Reads stay in the parent: lists and watches stream large bodies the parent parses anyway.
- If the child dies, every request in flight fails with a retryable connection error (as a dropped
  connection would: the caller's retry decides) and the worker marks itself dead; ``Api`` then sends
  in-process from the next request on. Nothing waits forever: a reply that does not come within the
  request's own timeouts (plus a margin) is a timeout error.

The child is a fresh interpreter (``python -m pyscheduler.client.http_worker``; never a ``fork``: the
parent has threads and open sockets) on its stdin and stdout. It exits when its stdin closes: on
``close()`` or when the parent dies.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pickle
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

import structlog

from pyscheduler.client.http1 import Http1Pool, Reply

log = structlog.get_logger("pyscheduler.client")

REPLY_MARGIN = 5.0  # seconds past the request's own timeouts before the parent gives up waiting
# Exchanges the child runs at once: the scheduler's binding cycles (scheduler_binding.BIND_WORKERS, 64)
# plus the event recorder's posters (client.events.WORKERS, 64). At 64 in all, with 10,000 pods pending
# at once, the posters' requests queued behind the binders' for the same threads and about 4,000 of
# 11,000 Scheduled events were dropped at 5,000 nodes (docs/benchmark.md, session 15).
THREADS = 128


def _dumps(obj: Any) -> bytes:
    """A message for the pipe. ``Connection.send`` builds a ``ForkingPickler`` (copying its dispatch
    table) per message, ~6 us against ~1 us for ``pickle.dumps`` of a request tuple; the messages are
    plain tuples, and ``Connection.recv`` on the other side would read either."""
    return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)


class WorkerError(Exception):
    """The exchange did not happen or its outcome is unknown: ``kind`` names the failure (e.g.
    ``ReadTimeoutError``, ``WorkerExited``)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Waiter:
    __slots__ = ("lock", "reply")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        self.reply: tuple[int, str, str | None, bytes, tuple[str, str] | None] | None = None


class HttpWorker:
    """A child process that performs HTTP exchanges for the parent (see the module docstring)."""

    def __init__(self, server: str, pool_kwargs: dict[str, Any], threads: int = THREADS) -> None:
        # A plain child interpreter on two pipes: its stdin carries requests, its stdout replies.
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "pyscheduler.client.http_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._out = Connection(os.dup(self._proc.stdin.fileno()), readable=False)
        self._in = Connection(os.dup(self._proc.stdout.fileno()), writable=False)
        self._proc.stdin.close()
        self._proc.stdout.close()
        # a connection kept for each exchange that can run at once: the pool opens one more past
        # ``maxsize`` when all are busy and closes it after one exchange, a TLS handshake each time
        pool_kwargs = {**pool_kwargs, "maxsize": max(int(pool_kwargs.get("maxsize", 1)), threads)}
        self._out.send((server, pool_kwargs, threads))
        self._send_lock = threading.Lock()
        self._pending: dict[int, _Waiter] = {}
        self._pending_lock = threading.Lock()
        self._ids = itertools.count(1)
        self.alive = True
        self._reader = threading.Thread(target=self._read_loop, name="http-worker-reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: dict[str, str],
        connect_timeout: float,
        read_timeout: float,
    ) -> Reply:
        """One exchange; raises ``WorkerError`` when it did not complete (transport error, timeout,
        worker gone)."""
        if not self.alive:
            raise WorkerError("WorkerExited", "the HTTP worker process is not running")
        rid = next(self._ids)
        w = _Waiter()
        with self._pending_lock:
            self._pending[rid] = w
        try:
            with self._send_lock:
                self._out.send_bytes(
                    _dumps((rid, method, path, body, headers, connect_timeout, read_timeout))
                )
        except (OSError, EOFError, ValueError) as e:
            with self._pending_lock:
                self._pending.pop(rid, None)
            self._die(f"sending to the HTTP worker failed: {e}")
            raise WorkerError("WorkerExited", str(e)) from e
        if not w.lock.acquire(timeout=connect_timeout + read_timeout + REPLY_MARGIN):
            with self._pending_lock:
                self._pending.pop(rid, None)
            raise WorkerError("ReadTimeoutError", f"no reply from the HTTP worker for {method} {path}")
        reply = w.reply
        assert reply is not None
        status, reason, retry_after, data, error = reply
        if error is not None:
            raise WorkerError(error[0], error[1])
        return status, reason, retry_after, data

    def _read_loop(self) -> None:
        conn = self._in
        while True:
            try:
                rid, status, reason, retry_after, data, error = pickle.loads(conn.recv_bytes())
            except (EOFError, OSError, ValueError):
                break
            with self._pending_lock:
                w = self._pending.pop(rid, None)
            if w is not None:
                w.reply = (status, reason, retry_after, data, error)
                w.lock.release()
        self._die("the HTTP worker process exited")

    def _die(self, why: str) -> None:
        with self._pending_lock:
            was_alive, self.alive = self.alive, False
            pending, self._pending = self._pending, {}
        if was_alive:
            log.warning("HTTP worker stopped; sending from the scheduler process", reason=why)
        for w in pending.values():
            w.reply = (0, "", None, b"", ("WorkerExited", why))
            w.lock.release()

    def close(self) -> None:
        """Stop the child once the requests it holds are answered."""
        self.alive = False
        with self._send_lock:
            try:
                self._out.close()  # EOF on the child's stdin: it finishes what is in flight and exits
            except OSError as e:  # the child is gone already (broken pipe): wait() below reaps it
                log.debug("closing the HTTP worker's stdin failed", error=str(e))
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=2)
        self._reader.join(timeout=2)
        try:
            self._in.close()
        except OSError as e:
            log.debug("closing the HTTP worker's stdout failed", error=str(e))


def _child_main() -> None:
    """The worker process: receive requests on stdin, run them on a thread pool, reply on stdout."""
    conn_in = Connection(os.dup(0), writable=False)
    conn_out = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)  # nothing else may write into the reply pipe
    try:
        server, kw, threads = conn_in.recv()
    except EOFError:
        return
    pool = Http1Pool(server, kw)
    send_lock = threading.Lock()

    def run(req: tuple[int, str, str, bytes | None, dict[str, str], float, float]) -> None:
        rid, method, path, body, headers, connect, read = req
        out: tuple[int, int, str, str | None, bytes, tuple[str, str] | None]
        try:
            out = (rid, *pool.exchange(method, path, body, headers, connect, read), None)
        except Exception as e:  # transport errors, and anything else: never leave the parent waiting
            out = (rid, 0, "", None, b"", (type(e).__name__, str(e)))
        with send_lock, contextlib.suppress(OSError, ValueError):
            conn_out.send_bytes(_dumps(out))

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="http") as ex:
        while True:
            try:
                req = pickle.loads(conn_in.recv_bytes())
            except (EOFError, OSError):
                break  # the parent closed the pipe or died
            ex.submit(run, req)


if __name__ == "__main__":
    _child_main()
