"""The transport under ``Api``: one keep-alive connection pool, credentials, the rate limit, retries.

``Transport`` sends one request and returns the API's JSON; what the request means (which resource,
which verb) is ``api.Api``'s business, built on top of it. It is built from a
``kubernetes.client.Configuration`` (see ``connection.py``) but uses none of the kubernetes package's
generated models or API classes: they deserialize every field of every object into Python objects,
which costs more than scheduling the pod. Instead:

- **Connections.** The Configuration's TLS settings (CA file or data, client certificate and key,
  ``verify_ssl``, ``tls_server_name``, proxy), keep-alive (``POOL_MAXSIZE`` connections kept), TCP
  keepalive probes so a dead peer is noticed. Requests and their whole replies go over ``http1.py``
  (urllib3 opens its connections, httptools parses the replies: a third of urllib3's CPU per
  exchange); watches, and everything through a proxy, over a ``urllib3.PoolManager`` with its own
  retries off. Writes can instead be sent from a child process (``http_worker.py``, off by default);
  rate limiting, credentials, retries and error mapping stay here.
- **Credentials.** The ``Authorization`` header comes from ``Configuration.auth_settings()``, cached for
  10 s and dropped after a 401; that call runs the kubeconfig/in-cluster ``refresh_api_key_hook``, so
  rotating ServiceAccount tokens and exec/OIDC credentials keep working.
- **JSON.** Request bodies are encoded and responses decoded with orjson. Responses are returned as
  the API's own JSON (``dict``); turning them into records is the caller's business.
- **Rate limit.** A client-side token bucket (``ratelimit.py``; ``qps``/``burst``, 0 means unlimited).
  Every attempt, retries and watches included, takes a token.
- **Retries.** tenacity, exponential backoff with jitter, ``max_attempts`` attempts in all, on
  connection errors, timeouts, 429 and 5xx (a ``Retry-After`` header is honoured up to 10 s). Other 4xx
  are final at once. The final failure is an ``ApiError`` (``errors.py``).

Everything here is thread-safe: the scheduler's reflectors, binder, event recorder and writer threads
share one client.
"""

from __future__ import annotations

import copy
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol, Self

import orjson
import structlog
import urllib3
from kubernetes import client as k8s_client
from kubernetes.client.rest import should_bypass_proxies
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from pyscheduler.client.errors import (
    ApiConnectionError,
    ApiError,
    FencedError,
    error_from_response,
    is_retryable,
)
from pyscheduler.client.http1 import Http1Pool
from pyscheduler.client.http_worker import HttpWorker, WorkerError
from pyscheduler.client.ratelimit import TokenBucket
from pyscheduler.framework.clock import Clock, RealClock

log = structlog.get_logger("pyscheduler.client")

JSON = dict[str, Any]
Query = Mapping[str, str | int | bool | None]
USER_AGENT: Final = "pyscheduler/0.1.0"
AUTH_REFRESH_SECONDS: Final = 10.0
# Connections kept per server: one for each request that can be in flight at once, the binding cycles
# (scheduler_binding.BIND_WORKERS, 64) and the event posters (events.WORKERS, 64) plus the status
# writers, claim writers and leader election. A request past the pool's size opens a connection of its
# own and closes it afterwards: a TLS handshake each time the daemon is that busy.
POOL_MAXSIZE: Final = 160
MAX_RETRY_AFTER: Final = 10.0


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


def _pool_exchange(
    pool: Any, method: str, url: str, body: bytes | None, headers: dict[str, str], timeout: urllib3.Timeout
) -> tuple[int, str, str | None, bytes]:
    """One exchange through a urllib3 PoolManager (a proxy, or a pool a test injected): no retries, no
    redirects, body read. Transport errors propagate."""
    resp = pool.request(
        method,
        url,
        body=body,
        headers=headers,
        timeout=timeout,
        retries=False,
        redirect=False,
        preload_content=True,
    )
    return resp.status, resp.reason or "", resp.headers.get("Retry-After"), resp.data or b""


class RequestObserver(Protocol):
    """Where client-go's rest_client_* figures go (``pyscheduler.metrics.SchedulerMetrics``). A negative
    ``seconds`` marks a watch: counted, not timed."""

    def rest_request(
        self, method: str, host: str, code: str, seconds: float, request_bytes: int, response_bytes: int
    ) -> None: ...

    def rest_rate_limited(self, method: str, host: str, seconds: float) -> None: ...


class Transport:
    """One API server, JSON over HTTP: pooled connections, credentials, rate limit, retries; see the
    module docstring. ``Api`` adds the resources and verbs."""

    def __init__(
        self,
        configuration: k8s_client.Configuration,
        *,
        qps: float = 50.0,
        burst: int = 100,
        max_attempts: int = 5,
        backoff_initial: float = 0.1,
        backoff_max: float = 5.0,
        pool_maxsize: int = POOL_MAXSIZE,
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
        maxsize = max(32, pool_maxsize)
        self._pool: Any = pool if pool is not None else make_pool(configuration, maxsize)
        # Every call but a watch goes to one server over our own HTTP/1.1 framing (http1.py: a third of
        # urllib3's client CPU per exchange); only for a direct connection through our own pool (not
        # through a proxy: make_pool gives a ProxyManager then; not with an injected pool).
        self._origin = ""
        self._http1: Http1Pool | None = None
        # Writes (everything but GET) sent from a child process: see http_worker. Only where http1 is.
        self._worker: HttpWorker | None = None
        if pool is None and type(self._pool) is urllib3.PoolManager:
            parsed = urllib3.util.parse_url(self.server)
            self._origin = f"{parsed.scheme}://{parsed.netloc}"
            kw = pool_kwargs(configuration, maxsize)
            self._http1 = Http1Pool(self.server, kw)
            if http_worker:
                self._worker = HttpWorker(self.server, kw)
        self._timeouts: dict[float, urllib3.Timeout] = {}
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

    def with_own_rate_limiter(self) -> Self:
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
        if self._http1 is not None:
            self._http1.close()
        try:
            self._pool.clear()
        except (urllib3.exceptions.HTTPError, OSError) as e:  # closing idle sockets; nothing to retry
            log.debug("closing the connection pool failed", error=str(e))

    def __enter__(self) -> Self:
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
            status, out, _ = self._attempt(method, path, url, data, content_type, timeout)
            return status, out
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
        elif (http1 := self._http1) is not None:
            try:
                status, reason, retry_after, raw = http1.exchange(
                    method, url[len(self._origin) :], data, headers, connect, timeout
                )
            except (urllib3.exceptions.HTTPError, OSError) as e:
                raise ApiConnectionError(0, type(e).__name__, str(e), method, path) from e
        else:
            t = self._timeouts.get(timeout)
            if t is None:
                t = self._timeouts[timeout] = urllib3.Timeout(connect=connect, read=timeout)
            try:
                status, reason, retry_after, raw = _pool_exchange(self._pool, method, url, data, headers, t)
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
        sent = 1

        def replay_first_failure(*args: Any) -> tuple[int, Any]:
            # tenacity sees the failure we already had as its attempt 1, then retries as usual.
            nonlocal first_error, sent
            if first_error is not None:
                err, first_error = first_error, None
                raise err
            sent += 1
            return attempt(*args)

        retrying = Retrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=retry_if_exception(is_retryable),
            reraise=True,
            sleep=self._sleep,
            before_sleep=self._before_sleep,
        )
        try:
            result: tuple[int, Any] = retrying(
                replay_first_failure, method, path, url, data, content_type, timeout
            )
        except ApiError as e:
            e.attempts = sent
            raise
        return result

    # ------------------------------------------------------------------------------ streams
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
