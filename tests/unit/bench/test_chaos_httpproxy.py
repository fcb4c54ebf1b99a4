"""The HTTP fault proxy's rules and answers, and how the harness reads retries from its log (no cluster)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from bench.chaos.figures import retry_figures
from bench.chaos.httpproxy import Rule, bind_target, status_response

BIND = "/api/v1/namespaces/ns/pods/p/binding"


def test_an_injected_429_reads_like_kube_apiservers_with_retry_after() -> None:
    raw = status_response(429, 2, "POST", BIND)
    head, body = raw.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 429 Too Many Requests\r\n")
    assert b"\r\nRetry-After: 2" in head and f"Content-Length: {len(body)}".encode() in head
    status = json.loads(body)
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "TooManyRequests", 429)
    assert status["details"] == {"retryAfterSeconds": 2}


def test_rules_match_method_path_and_count_and_never_hold_or_swallow_a_watch() -> None:
    rng = random.Random(1)
    r = Rule.parse({"status": 500, "method": "POST", "path": "/binding$", "count": 2})
    assert r.when == "before"
    assert not r.matches("GET", BIND, False, rng)
    assert r.matches("POST", BIND, False, rng) and r.matches("POST", BIND, False, rng)
    assert not r.matches("POST", BIND, False, rng)  # count used up
    assert Rule.parse({"delay": 1.0}).when == "after"
    assert not Rule.parse({"delay": 1.0}).matches("GET", "/api/v1/pods", True, rng)
    assert not Rule.parse({"status": 503, "when": "after"}).matches("GET", "/api/v1/pods", True, rng)
    assert Rule.parse({"status": 503}).matches("GET", "/api/v1/pods", True, rng)  # refused before: fine


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param({"status": 404}, "status must be one of", id="status"),
        pytest.param({"status": 500, "when": "later"}, "when must be", id="when"),
        pytest.param({"fraction": 0.5}, "needs a status or a delay", id="empty"),
    ],
)
def test_a_bad_rule_is_refused(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Rule.parse(spec)


def test_bind_target_reads_the_binding_body() -> None:
    body = json.dumps({"kind": "Binding", "target": {"kind": "Node", "name": "n-7"}}).encode()
    assert bind_target(BIND, body) == "n-7"
    assert bind_target("/api/v1/namespaces/ns/pods/p", body) == ""
    assert bind_target(BIND, b"not json") == ""


def rec(t: float, status: int, injected: str | None = None, b: int = 1, **kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"t": t, "m": "POST", "p": BIND, "b": b, "watch": False, "status": status, **kw}
    if injected:
        r["injected"] = injected
    return r


def test_retry_figures_measure_retry_after_backoff_and_lost_answers() -> None:
    log = [
        rec(10.0, 429, "before"),
        rec(12.01, 201),  # waited out Retry-After 2
        rec(20.0, 429, "before", b=2),
        rec(20.5, 201, b=2),  # too early
        rec(30.0, 500, "before", b=3),
        rec(30.15, 500, "after", b=3, upstream=201),
        rec(30.45, 409, b=3),  # a lost answer, then 409 on the retry
        rec(40.0, 503, "before", b=4),  # never retried: failed for good
    ]
    f = retry_figures(log)
    assert f["injected"] == 5
    assert f["429 (Retry-After 2s) -> next attempt, binds"] == "n=2 min 0.50s median 2.01s max 2.01s"
    assert f["retried before Retry-After"] == 1
    assert f["5xx -> retry 1"] == "n=1 min 0.15s median 0.15s max 0.15s"
    assert f["5xx -> retry 2"] == "n=1 min 0.30s median 0.30s max 0.30s"
    assert f["binds retried after a lost answer, answered 409"] == 1
    assert f["failed for good (last attempt failed)"] == {"binds": 1, "other": 0}


def test_watch_figures_time_an_ended_watch_until_it_is_open_again() -> None:
    pods, nodes = "/api/v1/pods", "/api/v1/nodes"

    def watch(t: float, p: str, status: int) -> dict[str, Any]:
        r = {"t": t, "m": "GET", "p": p, "b": 0, "watch": True, "status": status}
        return {**r, "injected": "before"} if status == 429 else r

    log = [
        watch(1.0, pods, 200),
        watch(1.0, nodes, 200),
        {"t": 5.0, "conn": 1, "ended_watch": pods},
        {"t": 5.0, "conn": 2, "ended_watch": nodes},
        watch(5.01, pods, 429),
        watch(7.02, pods, 429),
        watch(9.03, pods, 200),  # back after two refusals, from its resourceVersion
        watch(5.02, nodes, 429),
        {"t": 8.0, "m": "GET", "p": nodes, "b": 0, "watch": False, "status": 200},  # relisted
        watch(8.5, nodes, 200),
    ]
    f = retry_figures(sorted(log, key=lambda r: r["t"]))
    assert f["watches ended by the proxy"] == 2
    assert f["ended watch -> open again"] == "n=2 min 3.50s median 4.03s max 4.03s"
    assert (
        f["re-connections refused before it opened (per ended watch)"]
        == "n=2 min 1.00s median 2.00s max 2.00s"
    )
    assert f["relists instead of a re-watch"] == 1 and f["never re-opened"] == 0
    assert (
        f["429 (Retry-After 2s) -> next attempt, watches"] == "n=3 min 2.01s median 2.01s max 2.98s"
    )  # the relist is the next request there
