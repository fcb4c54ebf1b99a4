"""A minimal Prometheus HTTP API client: one instant query (``GET /api/v1/query``) with a timeout.

Only the standard library (``http.client``). ``query`` returns the samples of an instant vector (or a
scalar, as one sample without labels) and raises ``PrometheusError`` for anything else: connection
refused, timeout, a non-2xx answer, an ``"error"`` status, a range vector, a body that is not JSON.

The timeout bounds the whole query (connect, request, answer), not each socket operation: a server
that accepts and then trickles its answer a byte at a time would otherwise hold the scheduling cycle
for as long as it likes (a socket timeout restarts with every byte). At the deadline a timer shuts the
socket down, which ends the blocked read. The connection goes to the address as given (no HTTP proxy
from the environment).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import socket
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any

USER_AGENT = "pyscheduler-network-traffic"
MAX_ANSWER = 64 << 20  # bytes; a larger answer is an error, not a reason to fill the memory


class PrometheusError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class Sample:
    labels: dict[str, str]
    value: float


class PrometheusClient:
    def __init__(self, address: str) -> None:
        self.address = address.rstrip("/")

    def query(self, promql: str, timeout: float) -> list[Sample]:
        u = urllib.parse.urlsplit(self.address)
        target = f"{u.path}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        try:
            conn = cls(u.hostname or "", u.port, timeout=timeout)
        except ValueError as e:  # a port that is not a number
            raise PrometheusError(str(e)) from e
        expired = threading.Event()

        def abort() -> None:
            expired.set()
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(timeout, abort)
        timer.daemon = True
        timer.start()
        try:
            conn.connect()
            if expired.is_set():  # connected just after the deadline: the timer found no socket
                raise TimeoutError
            conn.request("GET", target, headers={"Accept": "application/json", "User-Agent": USER_AGENT})
            resp = conn.getresponse()
            raw = resp.read(MAX_ANSWER + 1)
            status = resp.status
        except (http.client.HTTPException, OSError) as e:
            if expired.is_set() or isinstance(e, TimeoutError):
                raise PrometheusError(f"no answer within {timeout:g}s") from e
            raise PrometheusError(str(e) or type(e).__name__) from e
        finally:
            timer.cancel()
            conn.close()
        if expired.is_set():  # the shutdown may read as the end of a shorter answer
            raise PrometheusError(f"no answer within {timeout:g}s")
        if len(raw) > MAX_ANSWER:
            raise PrometheusError(f"answer larger than {MAX_ANSWER} bytes")
        if not 200 <= status < 300:
            # Prometheus answers 400/422/503 with a JSON body naming the error.
            detail = _error_of(raw)
            raise PrometheusError(f"HTTP {status}" + (f": {detail}" if detail else ""))
        return parse_response(raw)


def _error_of(raw: bytes) -> str:
    try:
        body = json.loads(raw)
    except ValueError:
        return ""
    if isinstance(body, dict) and body.get("error"):
        return f"{body.get('errorType', 'error')}: {body['error']}"
    return ""


def parse_response(raw: bytes) -> list[Sample]:
    """The samples of a ``/api/v1/query`` answer; NaN and infinite values are left out."""
    try:
        body: Any = json.loads(raw)
    except ValueError as e:
        raise PrometheusError(f"answer is not JSON: {e}") from e
    if not isinstance(body, dict):
        raise PrometheusError("answer is not a JSON object")
    if body.get("status") != "success":
        raise PrometheusError(_error_of(raw) or f"status {body.get('status')!r}")
    data = body.get("data")
    if not isinstance(data, dict):
        raise PrometheusError("answer has no data")
    kind = data.get("resultType")
    result = data.get("result")
    if kind == "scalar":
        items: list[Any] = [{"metric": {}, "value": result}]
    elif kind == "vector":
        items = result if isinstance(result, list) else []
    else:
        raise PrometheusError(f"the query must give an instant vector, got a {kind}")
    out: list[Sample] = []
    for item in items:
        try:
            metric = item.get("metric") or {}
            v = float(item["value"][1])
        except (AttributeError, KeyError, IndexError, TypeError, ValueError) as e:
            raise PrometheusError(f"malformed sample {item!r}") from e
        if math.isfinite(v):
            out.append(Sample({str(k): str(x) for k, x in metric.items()}, v))
    return out
