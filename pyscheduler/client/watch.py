"""A streamed watch: one GET with ``watch=1``, read as chunks arrive and split on newlines.

A ``Watch`` is an iterator of ``(type, object)`` that another thread can ``stop()`` (the socket is shut
down, so a blocked read returns at once). ``Api.watch`` sets the client read timeout to the server's
``timeoutSeconds`` plus a margin, so a silently dead connection cannot hang a reflector forever. 410 (as
HTTP status or as an ERROR event) raises ``GoneError``.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from typing import Any

import orjson
import structlog
import urllib3

from pyscheduler.client.errors import ApiConnectionError, ApiError, GoneError
from pyscheduler.client.transport import JSON, Transport

log = structlog.get_logger("pyscheduler.client")


class Watch(Iterator[tuple[str, JSON]]):
    """An open watch: iterate for (type, object); ``stop()`` from any thread ends the iteration.

    The request is sent on the first ``next()``. Iteration ends (StopIteration) when the server closes
    the stream (``timeoutSeconds``) or after ``stop()``; a broken or timed-out connection raises
    ``ApiConnectionError``; an ERROR event raises ``GoneError`` (code 410) or ``ApiError``."""

    def __init__(self, api: Transport, path: str, url: str, read_timeout: float) -> None:
        self._api = api
        self.path = path
        self._url = url
        self._read_timeout = read_timeout
        self._resp: Any = None
        self._lock = threading.Lock()
        self._stopped = False
        self._done = False
        self._buf = bytearray()
        self._pending: deque[bytes] = deque()
        self.events = 0

    def __iter__(self) -> Watch:
        return self

    def is_stopped(self) -> bool:
        return self._stopped

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            resp = self._resp
        if resp is not None:
            try:
                resp.shutdown()  # wakes the thread blocked reading the stream
            except (urllib3.exceptions.HTTPError, OSError) as e:
                log.debug("watch stream shutdown failed", error=str(e))

    def _close(self) -> None:
        self._done = True
        with self._lock:
            resp, self._resp = self._resp, None
        if resp is not None:
            for done in (resp.close, resp.release_conn):
                try:
                    done()
                except (urllib3.exceptions.HTTPError, OSError) as e:  # the stream is gone either way
                    log.debug("closing a watch stream failed", step=done.__name__, error=str(e))

    def close(self) -> None:
        self.stop()
        self._close()

    def __next__(self) -> tuple[str, JSON]:
        while True:
            if self._pending:
                return self._decode(self._pending.popleft())
            if self._done or self.is_stopped():
                self._close()
                raise StopIteration
            if self._resp is None:
                resp = self._api._open_stream(self.path, self._url, self._read_timeout)
                with self._lock:
                    self._resp = resp
                if self.is_stopped():
                    self._close()
                    raise StopIteration
            try:
                data = self._resp.read1(65536)
            except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as e:
                if self.is_stopped():
                    self._close()
                    raise StopIteration from None
                self._close()
                raise ApiConnectionError(
                    0, type(e).__name__, str(e) or "watch stream broken", "WATCH", self.path
                ) from e
            if not data:
                if self._buf.strip():
                    self._pending.append(bytes(self._buf))
                self._buf.clear()
                self._done = True
                continue
            self._buf += data
            if b"\n" in data:
                *lines, rest = self._buf.split(b"\n")
                self._buf = bytearray(rest)
                self._pending.extend(bytes(line) for line in lines if line.strip())

    def _decode(self, line: bytes) -> tuple[str, JSON]:
        try:
            ev = orjson.loads(line)
            etype = str(ev["type"])
            obj = ev["object"]
        except (orjson.JSONDecodeError, KeyError, TypeError) as e:
            self._close()
            raise ApiError(
                200, "BadWatchEvent", f"cannot decode watch event: {e}: {line[:200]!r}", "WATCH", self.path
            ) from e
        if etype == "ERROR":
            self._close()
            obj = obj if isinstance(obj, dict) else {}
            code = int(obj.get("code") or 500)
            cls = GoneError if code == 410 else ApiError
            raise cls(
                code, str(obj.get("reason") or "Error"), str(obj.get("message") or ""), "WATCH", self.path
            )
        self.events += 1
        return etype, obj
