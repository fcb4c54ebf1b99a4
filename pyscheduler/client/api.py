"""The one boundary between the scheduler and the API server: plain JSON over a keep-alive urllib3 pool.

Design
------
``Api`` is built from a ``kubernetes.client.Configuration`` (see ``connection.py``) but uses none of the
kubernetes package's generated models or API classes: they deserialize every field of every object into
Python objects, which costs more than scheduling the pod. Instead:

- **Transport.** One ``urllib3.PoolManager`` built from the Configuration's TLS settings (CA file or data,
  client certificate and key, ``verify_ssl``, ``tls_server_name``, proxy), keep-alive, ``maxsize`` 64 by
  default, TCP keepalive probes so a dead peer is noticed, urllib3's own retries off. The
  ``Authorization`` header comes from ``Configuration.auth_settings()``, cached for 10 s and dropped
  after a 401; that call runs the kubeconfig/in-cluster ``refresh_api_key_hook``, so rotating
  ServiceAccount tokens and exec/OIDC credentials keep working.
- **JSON.** Request bodies are encoded and responses decoded with orjson. Responses are returned as
  the API's own JSON (``dict``); turning them into records is the caller's business.
- **Rate limit.** A client-side token bucket (``qps``/``burst``, as client-go's ``--kube-api-qps`` and
  ``--kube-api-burst``; 0 means unlimited). Every attempt, retries and watches included, takes a token.
- **Retries.** tenacity, exponential backoff with jitter, ``max_attempts`` attempts in all, on
  connection errors, timeouts, 429 and 5xx (a ``Retry-After`` header is honoured up to 10 s). Other 4xx
  are final at once. The final failure is an ``ApiError`` (``status`` 0 for transport failures, see
  ``ApiConnectionError``), whose ``str`` names the method, path, HTTP status, the API's ``reason`` and
  its message verbatim (e.g. ``pods "x" is forbidden: User "..." cannot create resource
  "pods/binding" in API group "" in the namespace "ns"``).
- **Lists** are paginated with ``limit``/``continue``; when a continue token expires mid-list (410)
  the list restarts without pagination, as client-go's pager does.
- **Watches** are streamed: one GET with ``watch=1``, read with ``read1`` as chunks arrive and split on
  newlines. A ``Watch`` is an iterator of ``(type, object)`` that another thread can ``stop()`` (the
  socket is shut down, so a blocked read returns at once). The client read timeout is the server's
  ``timeoutSeconds`` plus a margin, so a silently dead connection cannot hang a reflector forever.
  410 (as HTTP status or as an ERROR event) raises ``GoneError``.

Everything here is thread-safe: the scheduler's reflectors, binder, event recorder and writer threads
share one ``Api``.
"""

from __future__ import annotations

import contextlib
import copy
import socket
import ssl
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, Protocol

import orjson
import structlog
import urllib3
from kubernetes import client as k8s_client
from kubernetes.client.rest import should_bypass_proxies
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from pyscheduler.client.http_worker import HttpWorker, WorkerError, exchange
from pyscheduler.framework.clock import Clock, RealClock
from pyscheduler.framework.helpers.timefmt import rfc3339
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod

log = structlog.get_logger("pyscheduler.client")

JSON = dict[str, Any]
USER_AGENT: Final = "pyscheduler/0.1.0"
AUTH_REFRESH_SECONDS: Final = 10.0
MAX_RETRY_AFTER: Final = 10.0

PATCH_CONTENT_TYPES: Final = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}

# kind -> (API prefix, resource, namespaced)
KINDS: Final[dict[str, tuple[str, str, bool]]] = {
    "Pod": ("/api/v1", "pods", True),
    "Node": ("/api/v1", "nodes", False),
    "Namespace": ("/api/v1", "namespaces", False),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Service": ("/api/v1", "services", True),
    "ReplicationController": ("/api/v1", "replicationcontrollers", True),
    "PersistentVolumeClaim": ("/api/v1", "persistentvolumeclaims", True),
    "PersistentVolume": ("/api/v1", "persistentvolumes", False),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "StorageClass": ("/apis/storage.k8s.io/v1", "storageclasses", False),
    "CSINode": ("/apis/storage.k8s.io/v1", "csinodes", False),
    "CSIDriver": ("/apis/storage.k8s.io/v1", "csidrivers", False),
    "CSIStorageCapacity": ("/apis/storage.k8s.io/v1", "csistoragecapacities", True),
    "VolumeAttachment": ("/apis/storage.k8s.io/v1", "volumeattachments", False),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "Lease": ("/apis/coordination.k8s.io/v1", "leases", True),
    "Event": ("/apis/events.k8s.io/v1", "events", True),
    # DynamicResources
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
}


# --------------------------------------------------------------------------------------------- errors


class ApiError(Exception):
    """A failed API call. ``status`` is the HTTP status (0: no response: connection error or timeout),
    ``reason`` the API Status's reason (``Conflict``, ``NotFound``, ``Forbidden``, ``Expired``, ...) or
    the HTTP reason phrase, ``message`` the API server's message verbatim."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        method: str,
        path: str,
        *,
        retry_after: float | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.method = method
        self.path = path
        self.retry_after = retry_after
        self.details: Mapping[str, Any] = details or {}
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.status:
            return f"{self.method} {self.path}: HTTP {self.status} {self.reason}: {self.message}"
        return f"{self.method} {self.path}: {self.reason}: {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.status, self.reason, self.message, self.method, self.path))

    def is_conflict(self) -> bool:
        return self.status == 409

    def is_not_found(self) -> bool:
        return self.status == 404

    def is_gone(self) -> bool:
        return self.status == 410

    def is_forbidden(self) -> bool:
        return self.status == 403

    def is_already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    def is_retryable(self) -> bool:
        """Connection errors, timeouts, 429 and 5xx (except 501 Not Implemented)."""
        return self.status == 0 or self.status == 429 or (self.status >= 500 and self.status != 501)


class GoneError(ApiError):
    """410: the resourceVersion (of a watch or a continue token) is older than etcd keeps. Relist."""


class ApiConnectionError(ApiError):
    """No HTTP response: connection refused or reset, TLS failure, timeout."""


class FencedError(ApiError):
    """A Binding not sent because ``Api.bind_fence`` said no (this replica no longer holds its lease).
    Final: retrying cannot make us leader again."""

    def is_retryable(self) -> bool:
        return False


def is_conflict(e: BaseException | None) -> bool:
    return isinstance(e, ApiError) and e.is_conflict()


def is_not_found(e: BaseException | None) -> bool:
    return isinstance(e, ApiError) and e.is_not_found()


def is_gone(e: BaseException | None) -> bool:
    return isinstance(e, ApiError) and e.is_gone()


def is_forbidden(e: BaseException | None) -> bool:
    return isinstance(e, ApiError) and e.is_forbidden()


def is_retryable(e: BaseException | None) -> bool:
    return isinstance(e, ApiError) and e.is_retryable()


def error_from_response(
    status: int, body: bytes, method: str, path: str, *, http_reason: str = "", retry_after: str | None = None
) -> ApiError:
    """An ApiError from an error response; the body is normally a v1 Status."""
    reason, message, details = http_reason or "Error", "", None
    parsed: Any = None
    if body:
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:
            message = body.decode("utf-8", "replace").strip()
    if isinstance(parsed, dict):
        reason = str(parsed.get("reason") or reason)
        message = str(parsed.get("message") or "")
        d = parsed.get("details")
        details = d if isinstance(d, dict) else None
    if not message:
        message = http_reason or f"HTTP {status}"
    ra = _parse_retry_after(retry_after)
    if details and ra is None and isinstance(details.get("retryAfterSeconds"), int):
        ra = float(details["retryAfterSeconds"])
    cls = GoneError if status == 410 else ApiError
    return cls(status, reason, message, method, path, retry_after=ra, details=details)


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------- rate limit


class TokenBucket:
    """client-go's token-bucket rate limiter: ``burst`` tokens, refilled at ``qps`` per second.

    ``acquire`` reserves a token and sleeps until it is due; reservations are handed out in order, so
    concurrent callers are served first come, first served. ``qps <= 0`` disables the limit."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(self.burst)
        self._last = clock()

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0

    def reserve(self) -> float:
        """Take a token now; return how many seconds the caller must wait before using it."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            elapsed = now - self._last
            self._last = now
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.qps

    def acquire(self) -> float:
        """Block until a token is available; return the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
        return delay


# --------------------------------------------------------------------------------------------- Api


def _keepalive_options() -> list[tuple[int, int, int]]:
    opts = [
        *urllib3.connection.HTTPConnection.default_socket_options,
        (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
    ]
    for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):
            opts.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return opts


def pool_kwargs(configuration: k8s_client.Configuration, maxsize: int = 64) -> dict[str, Any]:
    """``urllib3.PoolManager`` arguments for the Configuration's TLS settings (all picklable)."""
    kw: dict[str, Any] = {
        "num_pools": 4,
        "maxsize": maxsize,
        "block": False,
        "retries": False,
        "cert_reqs": ssl.CERT_REQUIRED if configuration.verify_ssl else ssl.CERT_NONE,
        "ca_certs": configuration.ssl_ca_cert,
        "ca_cert_data": getattr(configuration, "ca_cert_data", None),
        "cert_file": configuration.cert_file,
        "key_file": configuration.key_file,
        "socket_options": _keepalive_options(),
    }
    if configuration.assert_hostname is not None:
        kw["assert_hostname"] = configuration.assert_hostname
    if getattr(configuration, "tls_server_name", None):
        kw["server_hostname"] = configuration.tls_server_name
    return kw


def _uses_proxy(configuration: k8s_client.Configuration) -> bool:
    proxy = configuration.proxy
    return bool(proxy) and not should_bypass_proxies(
        configuration.host, getattr(configuration, "no_proxy", None) or ""
    )


def make_pool(configuration: k8s_client.Configuration, maxsize: int = 64) -> urllib3.PoolManager:
    """A keep-alive PoolManager with the Configuration's TLS and proxy settings; urllib3 retries off."""
    kw = pool_kwargs(configuration, maxsize)
    proxy = configuration.proxy
    if proxy and _uses_proxy(configuration):
        if proxy.split("://", 1)[0].lower().startswith("socks"):
            raise ValueError(f"SOCKS proxy {proxy!r} is not supported")
        return urllib3.ProxyManager(proxy, proxy_headers=configuration.proxy_headers, **kw)
    return urllib3.PoolManager(**kw)


def _seg(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def resource_path(
    kind: str, namespace: str | None = None, name: str | None = None, subresource: str | None = None
) -> str:
    """The REST path of a kind from ``KINDS`` (collection, object, or subresource)."""
    try:
        prefix, resource, namespaced = KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown kind {kind!r}; known: {', '.join(sorted(KINDS))}") from None
    if namespaced:
        if not namespace:
            if name:
                raise ValueError(f"{kind} is namespaced: a namespace is needed for {name!r}")
            path = f"{prefix}/{resource}"  # all namespaces (list/watch)
        else:
            path = f"{prefix}/namespaces/{_seg(namespace)}/{resource}"
    else:
        path = f"{prefix}/{resource}"
    if name:
        path += f"/{_seg(name)}"
        if subresource:
            path += f"/{subresource}"
    elif subresource:
        raise ValueError("a subresource needs an object name")
    return path


Query = Mapping[str, str | int | bool | None]


class RequestObserver(Protocol):
    """Where client-go's rest_client_* figures go (``pyscheduler.metrics.SchedulerMetrics``). A negative
    ``seconds`` marks a watch: counted, not timed."""

    def rest_request(
        self, method: str, host: str, code: str, seconds: float, request_bytes: int, response_bytes: int
    ) -> None: ...

    def rest_rate_limited(self, method: str, host: str, seconds: float) -> None: ...


class Api:
    """JSON over HTTP to the API server; see the module docstring."""

    def __init__(
        self,
        configuration: k8s_client.Configuration,
        *,
        qps: float = 50.0,
        burst: int = 100,
        max_attempts: int = 5,
        backoff_initial: float = 0.1,
        backoff_max: float = 5.0,
        pool_maxsize: int = 64,
        user_agent: str = USER_AGENT,
        clock: Clock | None = None,
        auth_refresh_seconds: float = AUTH_REFRESH_SECONDS,
        pool: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        http_worker: bool = False,
    ) -> None:
        self.configuration = configuration
        self.server = str(configuration.host).rstrip("/")
        self.limiter = TokenBucket(qps, burst, sleep=sleep)
        self.max_attempts = max(1, max_attempts)
        self.clock: Clock = clock or RealClock()
        self._backoff = wait_exponential_jitter(
            multiplier=backoff_initial, max=backoff_max, jitter=backoff_initial
        )
        self._sleep = sleep
        self._pool: Any = pool if pool is not None else make_pool(configuration, max(32, pool_maxsize))
        # Every call goes to one server: take its connection pool once, so a request does not pay for
        # PoolManager's URL parsing and pool-key lookup (a fifth of a bind's client CPU, py-spy).
        self._origin = ""
        self._host_pool: Any = None
        if pool is None and type(self._pool) is urllib3.PoolManager:
            parsed = urllib3.util.parse_url(self.server)
            self._origin = f"{parsed.scheme}://{parsed.netloc}"
            self._host_pool = self._pool.connection_from_url(self.server)
        self._timeouts: dict[float, urllib3.Timeout] = {}
        # Writes (everything but GET) sent from a child process: see http_worker. Only for a direct
        # connection through our own pool (not through a proxy, not with an injected pool).
        self._worker: HttpWorker | None = None
        if http_worker and self._host_pool is not None and not _uses_proxy(configuration):
            self._worker = HttpWorker(self.server, pool_kwargs(configuration, max(32, pool_maxsize)))
        self._user_agent = user_agent
        self._auth: str | None = None
        self._auth_at = -1e18
        self._auth_lock = threading.Lock()
        self._auth_ttl = auth_refresh_seconds
        # counters for metrics and tests
        self.requests_total = 0
        self.retries_total = 0
        # client-go's rest_client_* figures go to this observer when set (pyscheduler.metrics)
        self.metrics_observer: RequestObserver | None = None
        self._metrics_host = urllib3.util.parse_url(self.server).netloc or self.server
        # Checked right before every attempt of a Binding POST, after the rate limiter's wait and before
        # each retry: a replica that was stopped (SIGSTOP, a frozen VM) while binds waited for a token or
        # a backoff must not send them once its lease may have passed to another replica.
        self.bind_fence: Callable[[], bool] | None = None

    def with_own_rate_limiter(self) -> Api:
        """This client (same connections, credentials and retries) with a rate limiter of its own, the
        same QPS and burst: kube-scheduler gives leader election its own client for the same reason.
        Lease renewals must not queue behind a burst of binds: a leader starved of renewals for
        renewDeadline stops binding and loses its lease to its own load."""
        view = copy.copy(self)
        view.limiter = TokenBucket(self.limiter.qps, self.limiter.burst, sleep=self._sleep)
        return view

    @property
    def http_worker_pid(self) -> int | None:
        """The HTTP worker process's pid while it runs (None: requests are sent in-process)."""
        w = self._worker
        return w.pid if w is not None and w.alive else None

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        self._host_pool = None
        with contextlib.suppress(Exception):
            self._pool.clear()

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------ plumbing
    def _authorization(self) -> str | None:
        now = time.monotonic()
        if now - self._auth_at < self._auth_ttl:
            return self._auth
        with self._auth_lock:
            if now - self._auth_at < self._auth_ttl:
                return self._auth
            cfg = self.configuration
            value: str | None = None
            setting = cfg.auth_settings().get("BearerToken")
            if setting and setting.get("value"):
                value = str(setting["value"])
            elif cfg.username or cfg.password:
                value = cfg.get_basic_auth_token()
            self._auth, self._auth_at = value, now
            return value

    def _headers(self, content_type: str | None) -> dict[str, str]:
        h = {"Accept": "application/json", "User-Agent": self._user_agent}
        auth = self._authorization()
        if auth:
            h["Authorization"] = auth
        if content_type:
            h["Content-Type"] = content_type
        return h

    def url(self, path: str, query: Query | None = None) -> str:
        u = self.server + path
        if query:
            q = {
                k: ("true" if v is True else "false" if v is False else str(v))
                for k, v in query.items()
                if v is not None
            }
            if q:
                u += "?" + urllib.parse.urlencode(q)
        return u

    def _once(
        self, method: str, path: str, url: str, data: bytes | None, content_type: str | None, timeout: float
    ) -> tuple[int, Any]:
        obs = self.metrics_observer
        if obs is None:
            return self._attempt(method, path, url, data, content_type, timeout)[:2]
        began = time.perf_counter()
        self.limiter.acquire()
        sent = time.perf_counter()
        obs.rest_rate_limited(method, self._metrics_host, sent - began)
        code = "<error>"
        size = 0
        try:
            status, out, size = self._attempt(method, path, url, data, content_type, timeout, limited=True)
            code = str(status)
            return status, out
        except ApiError as e:
            if e.status:
                code = str(e.status)
            raise
        finally:
            obs.rest_request(
                method, self._metrics_host, code, time.perf_counter() - sent, len(data or b""), size
            )

    def _attempt(
        self,
        method: str,
        path: str,
        url: str,
        data: bytes | None,
        content_type: str | None,
        timeout: float,
        limited: bool = False,
    ) -> tuple[int, Any, int]:
        """One attempt: (HTTP status, parsed body, body size in bytes)."""
        if not limited:
            self.limiter.acquire()
        fence = self.bind_fence
        if fence is not None and method == "POST" and path.endswith("/binding") and not fence():
            raise FencedError(0, "Fenced", "not the leader any more: binding stopped", method, path)
        self.requests_total += 1
        connect = min(timeout, 10.0)
        headers = self._headers(content_type if data is not None else None)
        worker = self._worker
        status: int
        raw: bytes
        if worker is not None and method != "GET" and worker.alive:
            try:
                status, reason, retry_after, raw = worker.request(
                    method, url[len(self._origin) :], data, headers, connect, timeout
                )
            except WorkerError as e:
                raise ApiConnectionError(0, e.kind, str(e), method, path) from e
        else:
            t = self._timeouts.get(timeout)
            if t is None:
                t = self._timeouts[timeout] = urllib3.Timeout(connect=connect, read=timeout)
            host_pool = self._host_pool
            if host_pool is not None:
                send, where = host_pool.urlopen, url[len(self._origin) :]
            else:
                send, where = self._pool.request, url
            try:
                status, reason, retry_after, raw = exchange(send, method, where, data, headers, t)
            except (urllib3.exceptions.HTTPError, OSError) as e:
                raise ApiConnectionError(0, type(e).__name__, str(e), method, path) from e
        if status >= 400:
            if status == 401:
                self._auth_at = -1e18  # re-read the credentials (a rotated token) on the next call
            raise error_from_response(
                status,
                raw,
                method,
                path,
                http_reason=reason,
                retry_after=retry_after,
            )
        if not raw:
            return status, None, 0
        try:
            return status, orjson.loads(raw), len(raw)
        except orjson.JSONDecodeError:
            return status, raw.decode("utf-8", "replace"), len(raw)

    def _wait(self, rs: RetryCallState) -> float:
        exc = rs.outcome.exception() if rs.outcome is not None else None
        if isinstance(exc, ApiError) and exc.retry_after is not None:
            return min(exc.retry_after, MAX_RETRY_AFTER)
        return float(self._backoff(rs))

    def _before_sleep(self, rs: RetryCallState) -> None:
        self.retries_total += 1
        exc = rs.outcome.exception() if rs.outcome is not None else None
        log.info(
            "api call failed, retrying",
            attempt=rs.attempt_number,
            error=str(exc),
            wait=round(rs.upcoming_sleep, 3),
        )

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
        retry: bool = True,
    ) -> tuple[int, Any]:
        """One API call with retries; returns (HTTP status, parsed JSON or text or None).

        Raises ``ApiError`` (``GoneError``, ``ApiConnectionError``) when the call fails for good."""
        url = self.url(path, query)
        data: bytes | None
        if body is None:
            data = None
        elif isinstance(body, bytes | bytearray):
            data = bytes(body)
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = orjson.dumps(body)
        if not retry or self.max_attempts == 1:
            return self._once(method, path, url, data, content_type, timeout)
        # Almost every call succeeds at once: try it before paying for a tenacity retry loop.
        try:
            return self._once(method, path, url, data, content_type, timeout)
        except ApiError as e:
            if not is_retryable(e):
                raise
            first_error: ApiError | None = e
        attempt = self._once

        def replay_first_failure(*args: Any) -> tuple[int, Any]:
            # tenacity sees the failure we already had as its attempt 1, then retries as usual.
            nonlocal first_error
            if first_error is not None:
                err, first_error = first_error, None
                raise err
            return attempt(*args)

        retrying = Retrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=retry_if_exception(is_retryable),
            reraise=True,
            sleep=self._sleep,
            before_sleep=self._before_sleep,
        )
        result: tuple[int, Any] = retrying(
            replay_first_failure, method, path, url, data, content_type, timeout
        )
        return result

    # ------------------------------------------------------------------------------ list & watch
    def list(
        self,
        path: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        timeout: float = 60.0,
    ) -> tuple[list[JSON], str]:
        """All items of a collection (consistent read, paginated); returns (items, list resourceVersion).

        Items of a list carry no ``kind``/``apiVersion``. If a continue token expires (410) the list is
        restarted without pagination."""
        items: list[JSON] = []
        cont: str | None = None
        limit: int | None = page_size if page_size > 0 else None
        while True:
            query: dict[str, str | int | bool | None] = {
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
                "limit": limit,
                "continue": cont,
            }
            try:
                _, out = self.request("GET", path, query=query, timeout=timeout)
            except GoneError:
                if cont is None:
                    raise
                log.info("list continue token expired, relisting without pagination", path=path)
                items, cont, limit = [], None, None
                continue
            if not isinstance(out, dict):
                raise ApiError(
                    200, "BadResponse", f"expected a list object, got {type(out).__name__}", "GET", path
                )
            items.extend(out.get("items") or ())
            meta = out.get("metadata") or {}
            cont = meta.get("continue") or None
            if not cont:
                return items, str(meta.get("resourceVersion") or "")

    def watch(
        self,
        path: str,
        resource_version: str,
        *,
        field_selector: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
        read_timeout: float | None = None,
        bookmarks: bool = True,
    ) -> Watch:
        """A stream of (type, object) from ``resource_version`` on; see ``Watch``."""
        query: dict[str, str | int | bool | None] = {
            "watch": "1",
            "resourceVersion": resource_version or None,
            "allowWatchBookmarks": True if bookmarks else None,
            "timeoutSeconds": int(timeout_seconds),
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
        }
        rt = read_timeout if read_timeout is not None else timeout_seconds + max(30.0, 0.1 * timeout_seconds)
        return Watch(self, path, self.url(path, query), rt)

    def _open_stream(self, path: str, url: str, read_timeout: float) -> Any:
        began = time.perf_counter()
        self.limiter.acquire()
        obs = self.metrics_observer
        if obs is not None:
            obs.rest_rate_limited("GET", self._metrics_host, time.perf_counter() - began)
        self.requests_total += 1
        try:
            resp = self._pool.request(
                "GET",
                url,
                headers=self._headers(None),
                timeout=urllib3.Timeout(connect=10.0, read=read_timeout),
                retries=False,
                redirect=False,
                preload_content=False,
            )
        except (urllib3.exceptions.HTTPError, OSError) as e:
            if obs is not None:
                obs.rest_request("GET", self._metrics_host, "<error>", -1.0, 0, 0)
            raise ApiConnectionError(0, type(e).__name__, str(e), "WATCH", path) from e
        if obs is not None:  # a watch is counted, not timed (its duration is its lifetime), as client-go does
            obs.rest_request("GET", self._metrics_host, str(resp.status), -1.0, 0, 0)
        if resp.status != 200:
            try:
                raw = resp.read()
            except (urllib3.exceptions.HTTPError, OSError):
                raw = b""
            finally:
                resp.release_conn()
            raise error_from_response(
                resp.status,
                raw,
                "WATCH",
                path,
                http_reason=resp.reason or "",
                retry_after=resp.headers.get("Retry-After"),
            )
        return resp

    # ------------------------------------------------------------------------------ generic objects
    def get(self, kind: str, namespace: str | None, name: str) -> JSON:
        _, out = self.request("GET", resource_path(kind, namespace, name))
        return _as_obj(out)

    def create(self, kind: str, namespace: str | None, body: Mapping[str, Any]) -> JSON:
        _, out = self.request("POST", resource_path(kind, namespace), body=body)
        return _as_obj(out)

    def update(self, kind: str, namespace: str | None, name: str, body: Mapping[str, Any]) -> JSON:
        """PUT: optimistic concurrency through ``metadata.resourceVersion`` (409 if stale)."""
        _, out = self.request("PUT", resource_path(kind, namespace, name), body=body)
        return _as_obj(out)

    def update_status(self, kind: str, namespace: str | None, name: str, body: Mapping[str, Any]) -> JSON:
        """PUT the status subresource; 409 when ``metadata.resourceVersion`` is stale."""
        _, out = self.request("PUT", resource_path(kind, namespace, name, "status"), body=body)
        return _as_obj(out)

    def patch(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        patch_type: str = "merge",
        field_manager: str | None = None,
    ) -> JSON:
        """PATCH with ``patch_type`` one of merge, strategic, json, apply (apply needs field_manager)."""
        try:
            ct = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise ValueError(
                f"unknown patch type {patch_type!r}; use one of {', '.join(PATCH_CONTENT_TYPES)}"
            ) from None
        query = {"fieldManager": field_manager} if field_manager else None
        _, out = self.request(
            "PATCH",
            resource_path(kind, namespace, name, subresource),
            query=query,
            body=body,
            content_type=ct,
        )
        return _as_obj(out)

    def delete(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> bool:
        """Delete; False when the object is already gone (404) or was replaced (uid precondition failed)."""
        opts: JSON = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            opts["preconditions"] = {"uid": uid}
        if grace_period_seconds is not None:
            opts["gracePeriodSeconds"] = int(grace_period_seconds)
        if propagation_policy:
            opts["propagationPolicy"] = propagation_policy
        try:
            self.request("DELETE", resource_path(kind, namespace, name), body=opts)
        except ApiError as e:
            if e.is_not_found() or (uid and e.is_conflict()):
                return False
            raise
        return True

    # ------------------------------------------------------------------------------ scheduler verbs
    def bind(self, pod: Pod, node_name: str) -> Status | None:
        """POST pods/{name}/binding with a uid precondition. None on success; otherwise an error Status
        whose ``error`` is the ApiError (409: already bound, or the pod was replaced; 404: pod gone;
        those are final and not retried)."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        try:
            self.request("POST", resource_path("Pod", pod.namespace, pod.name, "binding"), body=body)
        except ApiError as e:
            return Status.as_error(e)
        return None

    def patch_pod_status(
        self,
        namespace: str,
        name: str,
        *,
        condition: Mapping[str, Any] | None = None,
        nominated_node_name: str | None = None,
    ) -> JSON | None:
        """Strategic-merge patch of pods/{name}/status: merge one condition (by ``type``; its
        ``lastTransitionTime`` defaults to now) and/or set ``status.nominatedNodeName`` ("" clears it).
        Returns the updated pod, or None when there was nothing to patch."""
        status: JSON = {}
        if condition is not None:
            c = dict(condition)
            if not c.get("type"):
                raise ValueError("a pod condition needs a type")
            c.setdefault("lastTransitionTime", rfc3339(self.clock.wall()))
            status["conditions"] = [c]
        if nominated_node_name is not None:
            status["nominatedNodeName"] = nominated_node_name or None
        if not status:
            return None
        return self.patch(
            "Pod", namespace, name, {"status": status}, subresource="status", patch_type="strategic"
        )

    def add_pod_condition(self, namespace: str, name: str, condition: Mapping[str, Any]) -> JSON | None:
        """Merge a condition (e.g. DisruptionTarget before preemption) into the pod's status."""
        return self.patch_pod_status(namespace, name, condition=condition)

    def delete_pod(
        self, namespace: str, name: str, *, uid: str | None = None, grace_period_seconds: int | None = None
    ) -> bool:
        """Delete a pod (preemption); False if it is already gone or was replaced (uid differs)."""
        return self.delete("Pod", namespace, name, uid=uid, grace_period_seconds=grace_period_seconds)

    def create_event(self, body: Mapping[str, Any]) -> JSON:
        """POST an events.k8s.io/v1 Event into ``body.metadata.namespace`` (default ``default``)."""
        ns = (body.get("metadata") or {}).get("namespace") or "default"
        return self.create("Event", ns, body)


def _as_obj(out: Any) -> JSON:
    if isinstance(out, dict):
        return out
    return {} if out is None else {"value": out}


# --------------------------------------------------------------------------------------------- Watch


class Watch(Iterator[tuple[str, JSON]]):
    """An open watch: iterate for (type, object); ``stop()`` from any thread ends the iteration.

    The request is sent on the first ``next()``. Iteration ends (StopIteration) when the server closes
    the stream (``timeoutSeconds``) or after ``stop()``; a broken or timed-out connection raises
    ``ApiConnectionError``; an ERROR event raises ``GoneError`` (code 410) or ``ApiError``."""

    def __init__(self, api: Api, path: str, url: str, read_timeout: float) -> None:
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
            with contextlib.suppress(Exception):
                resp.shutdown()

    def _close(self) -> None:
        self._done = True
        with self._lock:
            resp, self._resp = self._resp, None
        if resp is not None:
            with contextlib.suppress(Exception):
                resp.close()
            with contextlib.suppress(Exception):
                resp.release_conn()

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
