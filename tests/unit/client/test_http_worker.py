"""Api with its HTTP worker process, against a small HTTP server on loopback.

The autouse fixture makes any urllib3 request from this (the parent) process fail the test, so a write
that succeeds here was sent by the worker process; reads stay in the parent.
"""

from __future__ import annotations

import http.server
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from kubernetes import client as k8s_client

from pyscheduler.client.api import Api
from pyscheduler.client.errors import ApiConnectionError
from pyscheduler.framework.types import Pod


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[tuple[str, str, str | None, Any]] = []
        self.status = 201
        self.hold = threading.Event()
        self.hold.set()


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        body = orjson.loads(self.rfile.read(n)) if n else None
        self.server.seen.append(("POST", self.path, self.headers.get("Authorization"), body))
        self.server.hold.wait(10)
        status = self.server.status
        if status >= 400:
            out = {
                "kind": "Status",
                "status": "Failure",
                "reason": "Conflict",
                "code": status,
                "message": 'pods "p" is already assigned to node "n1"',
            }
        else:
            out = {"kind": "Status", "status": "Success", "code": status, "details": {"name": self.path}}
        data = orjson.dumps(out)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    t = threading.Thread(target=s.serve_forever, daemon=True)
    t.start()
    yield s
    s.hold.set()
    s.shutdown()
    s.server_close()


@pytest.fixture
def api(server: _Server) -> Iterator[Api]:
    conf = k8s_client.Configuration()
    conf.host = f"http://127.0.0.1:{server.server_address[1]}"
    conf.api_key = {"authorization": "secret-token"}
    conf.api_key_prefix = {"authorization": "Bearer"}
    a = Api(conf, qps=0, burst=0, max_attempts=3, backoff_initial=0.01, http_worker=True)
    yield a
    a.close()


def _pod() -> Pod:
    return Pod.from_dict({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": {}})


def test_a_binding_is_posted_by_the_worker_process_with_the_parents_credentials(
    api: Api, server: _Server
) -> None:
    assert api.http_worker_pid is not None and api.http_worker_pid != os.getpid()
    assert api.bind(_pod(), "n1") is None
    method, path, auth, body = server.seen[0]
    assert (method, path, auth) == ("POST", "/api/v1/namespaces/ns/pods/p/binding", "Bearer secret-token")
    assert body["metadata"]["uid"] == "u1" and body["target"]["name"] == "n1"


def test_reads_stay_in_the_scheduler_process(api: Api) -> None:
    with pytest.raises(AssertionError, match="unit test tried a real API call: GET"):
        api.get("Pod", "ns", "p")


def test_an_api_error_from_the_worker_keeps_its_status_and_is_not_retried(api: Api, server: _Server) -> None:
    server.status = 409
    st = api.bind(_pod(), "n1")
    assert st is not None and st.error is not None
    assert getattr(st.error, "status", None) == 409
    assert "already assigned" in st.message()
    assert len(server.seen) == 1


def test_many_requests_in_flight_each_get_their_own_reply(api: Api, server: _Server) -> None:
    wrong: list[tuple[str, Any]] = []

    def post(t: int) -> None:
        for i in range(20):
            path = f"/api/v1/namespaces/ns{t}/events/e{i}"
            _, out = api.request("POST", path, body={"n": i})
            if out["details"]["name"] != path:
                wrong.append((path, out))

    threads = [threading.Thread(target=post, args=(t,)) for t in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert wrong == []
    assert len(server.seen) == 32 * 20


def _wait_dead(api: Api) -> None:
    deadline = time.monotonic() + 10
    while api.http_worker_pid is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert api.http_worker_pid is None


def test_a_request_in_flight_when_the_worker_dies_fails_as_a_retryable_connection_error(
    api: Api, server: _Server
) -> None:
    pid = api.http_worker_pid
    assert pid is not None
    server.hold.clear()  # the server holds the request: it is in flight when the worker is killed
    errors: list[BaseException] = []

    def post() -> None:
        try:
            api.request("POST", "/api/v1/namespaces/ns/events", body={}, retry=False)
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=post)
    t.start()
    deadline = time.monotonic() + 10
    while not server.seen and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    t.join(10)
    assert not t.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], ApiConnectionError)
    assert errors[0].is_retryable()
    _wait_dead(api)


@pytest.mark.network
def test_after_the_worker_dies_writes_are_sent_from_the_scheduler_process(api: Api, server: _Server) -> None:
    pid = api.http_worker_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    _wait_dead(api)
    assert api.bind(_pod(), "n1") is None
    assert [s[1] for s in server.seen] == ["/api/v1/namespaces/ns/pods/p/binding"]
