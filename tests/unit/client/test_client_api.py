"""Api without a network: error classification, retries, rate limiting, watch decoding (a fake pool)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import orjson
import pytest
import urllib3
from kubernetes import client as k8s_client

from pyscheduler.client.api import Api, resource_path
from pyscheduler.client.errors import (
    ApiConnectionError,
    ApiError,
    FencedError,
    GoneError,
    error_from_response,
    is_conflict,
    is_forbidden,
    is_gone,
    is_not_found,
    is_retryable,
)
from pyscheduler.client.ratelimit import TokenBucket
from pyscheduler.client.transport import make_pool
from pyscheduler.framework.status import Code
from pyscheduler.framework.types import Pod

# ------------------------------------------------------------------------------------------ fakes


class FakeResponse:
    def __init__(
        self,
        status: int,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        reason: str = "",
        chunks: Iterable[bytes | BaseException] = (),
    ) -> None:
        self.status = status
        if body is None:
            self.data = b""
        elif isinstance(body, bytes):
            self.data = body
        else:
            self.data = orjson.dumps(body)
        self.headers = headers or {}
        self.reason = reason
        self._chunks = list(chunks)
        self.closed = False
        self.released = False

    # streaming
    def read1(self, amt: int = -1) -> bytes:
        if not self._chunks:
            return b""
        c = self._chunks.pop(0)
        if isinstance(c, BaseException):
            raise c
        return c

    def read(self) -> bytes:
        return self.data

    def shutdown(self) -> None:
        self._chunks.clear()

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        self.released = True


class FakePool:
    def __init__(self, *responses: Any) -> None:
        self.responses = list(responses)
        self.calls: list[dict[str, Any]] = []

    def request(self, method: str, url: str, **kw: Any) -> FakeResponse:
        self.calls.append({"method": method, "url": url, **kw})
        r = self.responses.pop(0)
        if isinstance(r, BaseException):
            raise r
        assert isinstance(r, FakeResponse)
        return r

    def clear(self) -> None:
        pass


def config(token: str = "Bearer t0k") -> k8s_client.Configuration:
    cfg = k8s_client.Configuration(host="https://api.example:6443")
    cfg.api_key["BearerToken"] = token
    return cfg


def make_api(*responses: Any, **kw: Any) -> tuple[Api, FakePool, list[float]]:
    pool = FakePool(*responses)
    sleeps: list[float] = []
    kw.setdefault("qps", 0)
    api = Api(config(), pool=pool, sleep=sleeps.append, **kw)
    return api, pool, sleeps


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


POD = Pod(uid="u-1", namespace="ns", name="p")

# ------------------------------------------------------------------------------------------ rate limiter


class ManualClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_token_bucket_allows_burst_then_spaces_by_qps() -> None:
    clock = ManualClock()
    slept: list[float] = []
    tb = TokenBucket(10, 3, clock=clock, sleep=slept.append)
    assert [tb.acquire() for _ in range(3)] == [0.0, 0.0, 0.0]
    # the 4th and 5th wait 1/qps and 2/qps (reservations queue up)
    assert tb.acquire() == pytest.approx(0.1)
    assert tb.acquire() == pytest.approx(0.2)
    assert slept == [pytest.approx(0.1), pytest.approx(0.2)]


def test_token_bucket_refills_at_qps_up_to_burst() -> None:
    clock = ManualClock()
    tb = TokenBucket(5, 2, clock=clock, sleep=lambda s: None)
    tb.reserve()
    tb.reserve()
    assert tb.reserve() == pytest.approx(0.2)
    clock.t += 10.0  # long idle: refilled to burst (2), not to 50
    assert tb.reserve() == 0.0
    assert tb.reserve() == 0.0
    assert tb.reserve() == pytest.approx(0.2)


def test_token_bucket_zero_qps_is_unlimited() -> None:
    tb = TokenBucket(0, 0, sleep=lambda s: pytest.fail("must not sleep"))
    assert tb.unlimited
    assert all(tb.acquire() == 0.0 for _ in range(10_000))


def test_token_bucket_is_thread_safe() -> None:
    clock = ManualClock()
    tb = TokenBucket(100, 10, clock=clock, sleep=lambda s: None)
    delays: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(50):
            d = tb.reserve()
            with lock:
                delays.append(d)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # 400 reservations at a frozen clock: 10 free, then 1/100 s apart, each handed out once
    assert sorted(delays) == pytest.approx([0.0] * 10 + [i / 100 for i in range(1, 391)])


def test_api_requests_take_tokens() -> None:
    api, _pool, sleeps = make_api(*[FakeResponse(200, {}) for _ in range(4)], qps=10, burst=2)
    for _ in range(4):
        api.request("GET", "/api/v1/pods")
    assert len(sleeps) == 2 and all(s > 0 for s in sleeps)


# ------------------------------------------------------------------------------------------ errors


def test_error_from_status_body_keeps_reason_and_message() -> None:
    msg = (
        'pods "x" is forbidden: User "system:serviceaccount:ns:sa" cannot create resource "pods/binding" '
        'in API group "" in the namespace "ns"'
    )
    e = error_from_response(403, orjson.dumps(status_body(403, "Forbidden", msg)), "POST", "/api/v1/x")
    assert e.is_forbidden() and is_forbidden(e)
    assert not (e.is_conflict() or e.is_not_found() or e.is_gone())
    assert e.reason == "Forbidden" and e.message == msg
    assert str(e) == f"POST /api/v1/x: HTTP 403 Forbidden: {msg}"
    assert not e.is_retryable()


@pytest.mark.parametrize(
    ("status", "reason", "check", "retryable"),
    [
        (409, "Conflict", is_conflict, False),
        (409, "AlreadyExists", is_conflict, False),
        (404, "NotFound", is_not_found, False),
        (410, "Expired", is_gone, False),
        (422, "Invalid", None, False),
        (400, "BadRequest", None, False),
        (429, "TooManyRequests", None, True),
        (500, "InternalError", None, True),
        (503, "ServiceUnavailable", None, True),
        (504, "Timeout", None, True),
        (501, "NotImplemented", None, False),
    ],
)
def test_error_classification(status: int, reason: str, check: Any, retryable: bool) -> None:
    e = error_from_response(status, orjson.dumps(status_body(status, reason, "m")), "GET", "/p")
    assert e.status == status and e.reason == reason
    if check is not None:
        assert check(e)
    assert is_retryable(e) is retryable
    assert isinstance(e, GoneError) is (status == 410)


def test_error_from_non_json_body_and_retry_after() -> None:
    e = error_from_response(
        503, b"upstream down\n", "GET", "/p", http_reason="Service Unavailable", retry_after="3"
    )
    assert e.message == "upstream down" and e.reason == "Service Unavailable" and e.retry_after == 3.0
    e2 = error_from_response(
        429, orjson.dumps({"kind": "Status", "details": {"retryAfterSeconds": 2}}), "GET", "/p"
    )
    assert e2.retry_after == 2.0


def test_connection_error_is_retryable_with_status_zero() -> None:
    e = ApiConnectionError(0, "NewConnectionError", "refused", "GET", "/p")
    assert is_retryable(e) and e.status == 0
    assert str(e) == "GET /p: NewConnectionError: refused"
    assert not is_conflict(ValueError()) and not is_not_found(None)


# ------------------------------------------------------------------------------------------ retries


def test_retries_5xx_then_succeeds() -> None:
    api, pool, sleeps = make_api(
        FakeResponse(503, status_body(503, "ServiceUnavailable", "busy")),
        FakeResponse(500, status_body(500, "InternalError", "etcd")),
        FakeResponse(200, {"kind": "Pod"}),
    )
    assert api.request("GET", "/api/v1/namespaces/ns/pods/p") == (200, {"kind": "Pod"})
    assert len(pool.calls) == 3 and len(sleeps) == 2 and api.retries_total == 2


def test_retries_connection_errors_and_timeouts_then_gives_up() -> None:
    errs = [
        urllib3.exceptions.NewConnectionError(None, "refused"),  # type: ignore[arg-type]
        urllib3.exceptions.ReadTimeoutError(None, "/", "timed out"),  # type: ignore[arg-type]
        ConnectionResetError("reset"),
    ]
    api, pool, sleeps = make_api(*errs, max_attempts=3)
    with pytest.raises(ApiConnectionError) as ei:
        api.request("GET", "/api/v1/pods")
    assert ei.value.status == 0 and "reset" in str(ei.value)
    assert len(pool.calls) == 3 and len(sleeps) == 2


def test_backoff_is_exponential_with_jitter_and_bounded() -> None:
    responses = [FakeResponse(503) for _ in range(6)]
    api, _pool, sleeps = make_api(*responses, max_attempts=6, backoff_initial=0.1, backoff_max=0.5)
    with pytest.raises(ApiError):
        api.request("GET", "/x")
    assert len(sleeps) == 5
    assert 0.1 <= sleeps[0] <= 0.2 and 0.2 <= sleeps[1] <= 0.3
    assert all(s <= 0.5 for s in sleeps)


def test_retry_after_is_honoured_on_429() -> None:
    api, _pool, sleeps = make_api(
        FakeResponse(429, status_body(429, "TooManyRequests", "slow down"), headers={"Retry-After": "2"}),
        FakeResponse(201, {"ok": True}),
    )
    assert api.request("POST", "/x", body={"a": 1})[0] == 201
    assert sleeps == [2.0]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 410, 422])
def test_other_4xx_are_not_retried(status: int) -> None:
    api, pool, sleeps = make_api(FakeResponse(status, status_body(status, "X", "no")))
    with pytest.raises(ApiError) as ei:
        api.request("GET", "/x")
    assert ei.value.status == status and len(pool.calls) == 1 and sleeps == []


def test_request_sends_json_auth_and_query() -> None:
    api, pool, _ = make_api(FakeResponse(200, {"items": []}))
    api.request(
        "POST", "/api/v1/namespaces/n/pods", query={"dryRun": "All", "x": None, "b": True}, body={"k": "v"}
    )
    call = pool.calls[0]
    assert call["url"] == "https://api.example:6443/api/v1/namespaces/n/pods?dryRun=All&b=true"
    assert call["body"] == b'{"k":"v"}'
    assert call["headers"]["Authorization"] == "Bearer t0k"
    assert call["headers"]["Content-Type"] == "application/json"
    assert call["retries"] is False


# ------------------------------------------------------------------------------------------ verbs


def test_bind_posts_binding_with_uid_precondition() -> None:
    api, pool, _ = make_api(FakeResponse(201, {"kind": "Status", "status": "Success"}))
    assert api.bind(POD, "node-1") is None
    call = pool.calls[0]
    assert call["method"] == "POST" and call["url"].endswith("/api/v1/namespaces/ns/pods/p/binding")
    assert orjson.loads(call["body"]) == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u-1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    }


@pytest.mark.parametrize("status", [409, 404])
def test_bind_conflict_and_not_found_are_final_error_statuses(status: int) -> None:
    msg = 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n"'
    api, pool, sleeps = make_api(FakeResponse(status, status_body(status, "Conflict", msg)))
    st = api.bind(POD, "node-1")
    assert st is not None and st.code == Code.ERROR
    assert isinstance(st.error, ApiError) and st.error.status == status
    assert len(pool.calls) == 1 and sleeps == []


def test_bind_retries_transient_errors() -> None:
    api, pool, _ = make_api(FakeResponse(503), FakeResponse(201, {}))
    assert api.bind(POD, "node-1") is None
    assert len(pool.calls) == 2


def test_bind_is_not_sent_once_the_fence_says_the_lease_is_gone() -> None:
    api, pool, _ = make_api(FakeResponse(201, {}))
    api.bind_fence = lambda: False
    st = api.bind(POD, "node-1")
    assert st is not None and st.code == Code.ERROR
    assert isinstance(st.error, FencedError) and "not the leader any more" in str(st.error)
    assert pool.calls == []


def test_bind_retry_after_losing_the_lease_during_backoff_is_not_sent() -> None:
    # A 503, then a backoff during which the process was stopped and its lease expired: the retry
    # must not go out (another replica may be binding this pod's node by now).
    leader = [True]
    api, pool, _ = make_api(FakeResponse(503), FakeResponse(201, {}))
    api.bind_fence = lambda: leader[0]
    api._sleep = lambda s: leader.__setitem__(0, False)  # the backoff sleep
    st = api.bind(POD, "node-1")
    assert st is not None and isinstance(st.error, FencedError)
    assert len(pool.calls) == 1


def test_bind_fence_is_checked_after_the_rate_limiter_wait() -> None:
    leader = [True]
    api, pool, _ = make_api(FakeResponse(201, {}), qps=1, burst=1)
    api.bind_fence = lambda: leader[0]
    api.limiter.acquire()  # the bucket is empty: the bind waits for a token

    def stopped_while_waiting(seconds: float) -> None:
        leader[0] = False

    api.limiter._sleep = stopped_while_waiting
    st = api.bind(POD, "node-1")
    assert st is not None and isinstance(st.error, FencedError) and pool.calls == []


def test_lease_renewal_does_not_wait_behind_binds_in_the_rate_limiter() -> None:
    from pyscheduler.client.leader import LeaderElector

    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "namespace": "ns", "resourceVersion": "1"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 6},
    }
    api, pool, sleeps = make_api(FakeResponse(200, lease), FakeResponse(200, lease), qps=1, burst=2)
    api.limiter.acquire()
    api.limiter.acquire()  # binds took both tokens: the next request on this bucket waits a second
    elector = LeaderElector(
        api, namespace="ns", name="l", identity="me", lease_duration=6, renew_deadline=4, retry_period=1
    )
    assert elector._try_acquire_or_renew()
    assert [c["method"] for c in pool.calls] == ["GET", "PUT"] and sleeps == []


def test_fence_applies_to_bindings_only() -> None:
    api, pool, _ = make_api(FakeResponse(200, {"kind": "Pod"}))
    api.bind_fence = lambda: False
    api.patch_pod_status("ns", "p", nominated_node_name="")
    assert len(pool.calls) == 1


def test_patch_pod_status_sets_condition_and_clears_nomination() -> None:
    api, pool, _ = make_api(FakeResponse(200, {"kind": "Pod"}), FakeResponse(200, {"kind": "Pod"}))
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}
    api.patch_pod_status("ns", "p", condition=cond, nominated_node_name="n1")
    call = pool.calls[0]
    assert call["method"] == "PATCH" and call["url"].endswith("/api/v1/namespaces/ns/pods/p/status")
    assert call["headers"]["Content-Type"] == "application/strategic-merge-patch+json"
    body = orjson.loads(call["body"])
    (c,) = body["status"]["conditions"]
    assert (
        c["type"] == "PodScheduled"
        and c["reason"] == "Unschedulable"
        and c["lastTransitionTime"].endswith("Z")
    )
    assert body["status"]["nominatedNodeName"] == "n1"
    api.patch_pod_status("ns", "p", nominated_node_name="")
    assert orjson.loads(pool.calls[1]["body"]) == {"status": {"nominatedNodeName": None}}
    assert api.patch_pod_status("ns", "p") is None and len(pool.calls) == 2


def test_delete_pod_with_uid_precondition_treats_gone_as_false() -> None:
    api, pool, _ = make_api(
        FakeResponse(200, {}),
        FakeResponse(404, status_body(404, "NotFound", "gone")),
        FakeResponse(409, status_body(409, "Conflict", "Precondition failed: UID")),
    )
    assert api.delete_pod("ns", "p", uid="u-1", grace_period_seconds=0) is True
    assert orjson.loads(pool.calls[0]["body"]) == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": {"uid": "u-1"},
        "gracePeriodSeconds": 0,
    }
    assert api.delete_pod("ns", "p") is False
    assert api.delete_pod("ns", "p", uid="u-1") is False


def test_resource_paths() -> None:
    assert resource_path("Pod", "ns", "p", "binding") == "/api/v1/namespaces/ns/pods/p/binding"
    assert resource_path("Pod") == "/api/v1/pods"
    assert resource_path("PersistentVolume", None, "pv1") == "/api/v1/persistentvolumes/pv1"
    assert (
        resource_path("Lease", "kube-system", "s")
        == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/s"
    )
    with pytest.raises(ValueError, match="unknown kind"):
        resource_path("Gadget")
    with pytest.raises(ValueError, match="namespaced"):
        resource_path("PersistentVolumeClaim", None, "c")


def test_patch_kinds_and_types() -> None:
    api, pool, _ = make_api(FakeResponse(200, {"a": 1}), FakeResponse(200, {"a": 2}))
    assert api.patch("PersistentVolumeClaim", "ns", "c", {"metadata": {"annotations": {"x": "y"}}}) == {
        "a": 1
    }
    assert pool.calls[0]["headers"]["Content-Type"] == "application/merge-patch+json"
    api.patch("Pod", "ns", "p", [{"op": "remove", "path": "/x"}], patch_type="json")
    assert pool.calls[1]["headers"]["Content-Type"] == "application/json-patch+json"
    with pytest.raises(ValueError, match="unknown patch type 'yaml'"):
        api.patch("Pod", "ns", "p", {}, patch_type="yaml")


# ------------------------------------------------------------------------------------------ list


def test_list_follows_continue_tokens() -> None:
    api, pool, _ = make_api(
        FakeResponse(
            200, {"metadata": {"resourceVersion": "10", "continue": "c1"}, "items": [{"n": 1}, {"n": 2}]}
        ),
        FakeResponse(
            200, {"metadata": {"resourceVersion": "10", "continue": "c2"}, "items": [{"n": 3}, {"n": 4}]}
        ),
        FakeResponse(200, {"metadata": {"resourceVersion": "10"}, "items": [{"n": 5}]}),
    )
    items, rv = api.list("/api/v1/pods", page_size=2, field_selector="spec.nodeName=")
    assert [i["n"] for i in items] == [1, 2, 3, 4, 5] and rv == "10"
    assert "limit=2" in pool.calls[0]["url"] and "continue" not in pool.calls[0]["url"]
    assert "continue=c1" in pool.calls[1]["url"] and "fieldSelector=spec.nodeName%3D" in pool.calls[1]["url"]


def test_list_restarts_unpaginated_when_continue_expires() -> None:
    api, pool, _ = make_api(
        FakeResponse(200, {"metadata": {"resourceVersion": "10", "continue": "c1"}, "items": [{"n": 1}]}),
        FakeResponse(410, status_body(410, "Expired", "The provided continue parameter is too old")),
        FakeResponse(200, {"metadata": {"resourceVersion": "20"}, "items": [{"n": 1}, {"n": 2}]}),
    )
    items, rv = api.list("/api/v1/pods", page_size=1)
    assert [i["n"] for i in items] == [1, 2] and rv == "20"
    assert "limit" not in pool.calls[2]["url"]


# ------------------------------------------------------------------------------------------ watch


def ev(t: str, name: str, rv: str) -> bytes:
    return orjson.dumps({"type": t, "object": {"metadata": {"name": name, "resourceVersion": rv}}}) + b"\n"


def test_watch_splits_chunks_into_events() -> None:
    a, b, c = ev("ADDED", "a", "1"), ev("MODIFIED", "a", "2"), ev("BOOKMARK", "", "3")
    stream = [a[:7], a[7:] + b[:10], b[10:] + c]
    api, pool, _ = make_api(FakeResponse(200, chunks=stream))
    w = api.watch("/api/v1/pods", "0", timeout_seconds=60)
    got = [(t, o["metadata"]["resourceVersion"]) for t, o in w]
    assert got == [("ADDED", "1"), ("MODIFIED", "2"), ("BOOKMARK", "3")]
    url = pool.calls[0]["url"]
    assert "watch=1" in url and "allowWatchBookmarks=true" in url and "timeoutSeconds=60" in url
    assert pool.calls[0]["preload_content"] is False
    assert pool.calls[0]["timeout"].read_timeout > 60


def test_watch_error_event_410_raises_gone() -> None:
    err = orjson.dumps(
        {"type": "ERROR", "object": status_body(410, "Expired", "too old resource version: 1 (5)")}
    )
    api, _, _ = make_api(FakeResponse(200, chunks=[ev("ADDED", "a", "1"), err + b"\n"]))
    w = api.watch("/api/v1/pods", "1")
    assert next(w)[0] == "ADDED"
    with pytest.raises(GoneError, match="too old resource version"):
        next(w)


def test_watch_http_410_and_other_errors() -> None:
    api, _, _ = make_api(
        FakeResponse(410, status_body(410, "Expired", "too old")),
        FakeResponse(
            200, chunks=[orjson.dumps({"type": "ERROR", "object": status_body(500, "InternalError", "x")})]
        ),
    )
    with pytest.raises(GoneError):
        next(api.watch("/api/v1/pods", "1"))
    with pytest.raises(ApiError) as ei:
        list(api.watch("/api/v1/pods", "1"))
    assert ei.value.status == 500 and not isinstance(ei.value, GoneError)


def test_watch_broken_stream_raises_connection_error_unless_stopped() -> None:
    broken = urllib3.exceptions.ProtocolError("Connection broken")
    api, _, _ = make_api(FakeResponse(200, chunks=[ev("ADDED", "a", "1"), broken]))
    w = api.watch("/api/v1/pods", "1")
    next(w)
    with pytest.raises(ApiConnectionError):
        next(w)

    api2, _, _ = make_api(FakeResponse(200, chunks=[ev("ADDED", "a", "1"), broken]))
    w2 = api2.watch("/api/v1/pods", "1")
    next(w2)
    w2.stop()
    assert list(w2) == []


def test_make_pool_uses_configuration_tls_settings(tmp_path: Any) -> None:
    cfg = k8s_client.Configuration(host="https://127.0.0.1:6443")
    cfg.verify_ssl = True
    cfg.ssl_ca_cert = str(tmp_path / "ca.crt")
    cfg.tls_server_name = "kubernetes.default.svc"
    pool = make_pool(cfg, maxsize=40)
    assert isinstance(pool, urllib3.PoolManager) and not isinstance(pool, urllib3.ProxyManager)
    kw = pool.connection_pool_kw
    assert kw["maxsize"] == 40 and kw["ca_certs"] == cfg.ssl_ca_cert
    assert kw["server_hostname"] == "kubernetes.default.svc"
    assert kw["retries"].total is False


ALREADY_ON = 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "{}"'


def test_bind_whose_answer_was_lost_is_a_success_when_the_retry_finds_the_pod_on_our_node() -> None:
    # make chaos (api-lost-response): the API server bound the pod, a proxy answered 500; the retry met
    # 409 and the bound pod was requeued, reported FailedScheduling and marked PodScheduled=False.
    lost = FakeResponse(500, status_body(500, "InternalError", "lost"))
    conflict = FakeResponse(409, status_body(409, "Conflict", ALREADY_ON.format("node-1")))
    api, pool, _ = make_api(lost, conflict)
    assert api.bind(POD, "node-1") is None
    assert len(pool.calls) == 2


def test_bind_retry_finding_the_pod_on_another_node_is_still_a_conflict() -> None:
    lost = FakeResponse(503)
    conflict = FakeResponse(409, status_body(409, "Conflict", ALREADY_ON.format("node-2")))
    api, _, _ = make_api(lost, conflict)
    st = api.bind(POD, "node-1")
    assert st is not None and isinstance(st.error, ApiError) and st.error.status == 409
    assert st.error.attempts == 2


def test_a_first_attempt_conflict_on_our_node_stays_an_error() -> None:
    # No earlier attempt of ours: someone else bound the pod; kube-scheduler reports that as a failure.
    api, _, _ = make_api(FakeResponse(409, status_body(409, "Conflict", ALREADY_ON.format("node-1"))))
    st = api.bind(POD, "node-1")
    assert st is not None and isinstance(st.error, ApiError) and st.error.attempts == 1
