from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.plugins.examples.binding_notifier import (
    NAME,
    PLUGIN,
    WARN_INTERVAL,
    BindingNotifier,
    BindingNotifierArgs,
)
from pyscheduler.testing import make_handle
from pyscheduler.testing.builders import make_cycle_state, make_pod
from pyscheduler.testing.clock import FakeClock

URL = "http://127.0.0.1:9/bindings"


class RecordingLog:
    def __init__(self) -> None:
        self.warnings: list[tuple[str, dict[str, Any]]] = []

    def warning(self, event: str, **kw: Any) -> None:
        self.warnings.append((event, kw))


class FakePoster:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.calls: list[tuple[str, dict[str, Any], float]] = []

    def __call__(self, url: str, body: bytes, timeout: float) -> None:
        self.calls.append((url, json.loads(body), timeout))
        if self.error is not None:
            raise self.error


def notifier(
    poster: Any, clock: FakeClock | None = None, **args: Any
) -> tuple[BindingNotifier, RecordingLog]:
    a = BindingNotifierArgs(**{"webhookURL": URL, **args})
    n = BindingNotifier(a, make_handle(clock=clock or FakeClock(wall_start=1_700_000_000.0)), post=poster)
    rec = RecordingLog()
    n.log = rec
    return n, rec


def test_post_bind_sends_the_binding_off_thread() -> None:
    poster = FakePoster()
    n, rec = notifier(poster, timeout_seconds=0.5)
    pod = make_pod("web-1", "shop").scheduler("py-scheduler").obj()
    n.post_bind(make_cycle_state(), pod, "node-3")
    assert n.flush(5)
    n.close()
    assert poster.calls == [
        (
            URL,
            {
                "pod": "web-1",
                "namespace": "shop",
                "node": "node-3",
                "uid": "uid-shop-web-1",
                "scheduler": "py-scheduler",
                "time": "2023-11-14T22:13:20Z",
            },
            0.5,
        )
    ]
    assert (n.sent, n.dropped, rec.warnings) == (1, 0, [])


@pytest.mark.parametrize(
    ("error", "logged"),
    [
        pytest.param(
            ConnectionRefusedError("connection refused"), "connection refused", id="connection refused"
        ),
        pytest.param(TimeoutError("timed out"), "timed out", id="timeout"),
        pytest.param(RuntimeError(), "RuntimeError", id="error without a message"),
    ],
)
def test_failures_are_logged_never_raised(error: Exception, logged: str) -> None:
    n, rec = notifier(FakePoster(error))
    n.post_bind(make_cycle_state(), make_pod("p", "ns").obj(), "n1")  # does not raise
    assert n.flush(5)
    n.close()
    assert (n.sent, n.dropped) == (0, 1)
    ((event, kw),) = rec.warnings
    assert event == "binding notification not delivered"
    assert kw["error"] == logged and kw["pod"] == "ns/p" and kw["webhook"] == URL


def test_warnings_are_rate_limited_with_a_count() -> None:
    clock = FakeClock()
    n, rec = notifier(FakePoster(ConnectionRefusedError("refused")), clock)
    for i in range(3):
        n.post_bind(make_cycle_state(), make_pod(f"p{i}").obj(), "n1")
        assert n.flush(5)
    assert [kw["failures"] for _, kw in rec.warnings] == [1]
    clock.advance(WARN_INTERVAL)
    n.post_bind(make_cycle_state(), make_pod("late").obj(), "n1")
    assert n.flush(5)
    n.close()
    assert [kw["failures"] for _, kw in rec.warnings] == [1, 3]  # the two suppressed ones, and this one


def test_a_full_queue_drops_instead_of_blocking() -> None:
    entered = threading.Event()
    release = threading.Event()

    def slow(url: str, body: bytes, timeout: float) -> None:
        entered.set()
        release.wait(10)

    n, rec = notifier(slow, queue_size=1)
    n.post_bind(make_cycle_state(), make_pod("a").obj(), "n1")
    assert entered.wait(5)  # the sender holds "a"
    n.post_bind(make_cycle_state(), make_pod("b").obj(), "n1")  # queued
    n.post_bind(make_cycle_state(), make_pod("c").obj(), "n1")  # dropped, at once
    assert n.dropped == 1
    assert "queue full" in rec.warnings[0][1]["error"] and rec.warnings[0][1]["pod"] == "default/c"
    release.set()
    assert n.flush(5)
    n.close()
    assert n.sent == 2


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        pytest.param({}, "args.webhookURL: required", id="URL missing"),
        pytest.param(
            {"webhookURL": "ftp://x/y"}, "args.webhookURL: must be an http or https URL", id="not http"
        ),
        pytest.param(
            {"webhookURL": "http://"}, "args.webhookURL: must be an http or https URL", id="no host"
        ),
        pytest.param(
            {"webhookURL": URL, "timeoutSeconds": 0},
            "args.timeoutSeconds: must be greater than 0",
            id="timeout zero",
        ),
        pytest.param(
            {"webhookURL": URL, "timeoutSeconds": "2"},
            "args.timeoutSeconds: must be a number",
            id="timeout as a string",
        ),
        pytest.param(
            {"webhookURL": URL, "queueSize": 0}, "args.queueSize: must be at least 1", id="queue size zero"
        ),
        pytest.param({"webhookUrl": URL}, "args.webhookUrl: unknown field", id="unknown field"),
    ],
)
def test_bad_args(raw: dict[str, Any], error: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert str(e.value).startswith(error)


def test_args_and_factory() -> None:
    args = PLUGIN.decode({"webhookURL": "https://hooks.example.com/b", "timeoutSeconds": 1}, "args")
    assert args == BindingNotifierArgs("https://hooks.example.com/b", 1.0, 1000)
    pl = PLUGIN.new(args, make_handle())
    assert isinstance(pl, BindingNotifier) and pl.name == NAME
    assert list(pl.events_to_register()) == []


# ------------------------------------------------------------------------------ a real webhook


class _Hook(http.server.BaseHTTPRequestHandler):
    received: list[tuple[str, str, dict[str, Any]]] = []
    status = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((self.path, self.headers["Content-Type"], json.loads(body)))
        self.send_response(type(self).status)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[type[_Hook]]:
    handler = type("Hook", (_Hook,), {"received": [], "status": 200})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    t.start()
    handler.url = f"http://127.0.0.1:{srv.server_address[1]}/bindings"  # type: ignore[attr-defined]
    yield handler
    srv.shutdown()
    srv.server_close()


@pytest.mark.network
def test_real_webhook_receives_the_binding(webhook: Any) -> None:
    n = BindingNotifier(BindingNotifierArgs(webhook.url, 2.0), make_handle())
    n.post_bind(make_cycle_state(), make_pod("p", "ns").scheduler("py-scheduler").obj(), "node-1")
    assert n.flush(10)
    n.close()
    ((path, ctype, payload),) = webhook.received
    assert (path, ctype) == ("/bindings", "application/json")
    assert {k: payload[k] for k in ("pod", "namespace", "node", "scheduler")} == {
        "pod": "p",
        "namespace": "ns",
        "node": "node-1",
        "scheduler": "py-scheduler",
    }
    assert n.sent == 1


@pytest.mark.network
def test_real_webhook_error_status_is_a_logged_failure(webhook: Any) -> None:
    webhook.status = 500
    n = BindingNotifier(BindingNotifierArgs(webhook.url, 2.0), make_handle())
    rec = RecordingLog()
    n.log = rec
    n.post_bind(make_cycle_state(), make_pod("p").obj(), "node-1")
    assert n.flush(10)
    n.close()
    assert n.dropped == 1 and rec.warnings[0][1]["error"].startswith("HTTP 500")
