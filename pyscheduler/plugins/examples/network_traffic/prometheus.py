"""A minimal Prometheus HTTP API client: one instant query (``GET /api/v1/query``) with a timeout.

Only the standard library (``urllib.request``). ``query`` returns the samples of an instant vector (or a
scalar, as one sample without labels) and raises ``PrometheusError`` for anything else: connection
refused, timeout, a non-2xx answer, an ``"error"`` status, a range vector, a body that is not JSON.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

USER_AGENT = "pyscheduler-network-traffic"


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
        url = f"{self.address}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        req = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": USER_AGENT})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            # Prometheus answers 400/422/503 with a JSON body naming the error.
            detail = _error_of(e.read())
            raise PrometheusError(f"HTTP {e.code}" + (f": {detail}" if detail else "")) from e
        except urllib.error.URLError as e:
            raise PrometheusError(str(e.reason)) from e
        except (TimeoutError, OSError) as e:
            raise PrometheusError(str(e) or type(e).__name__) from e
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
