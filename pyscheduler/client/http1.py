"""Keep-alive HTTP/1.1 request/response exchanges with one API server: the client's hot path.

Design
------
Every Binding, Event and status patch is one small request and one small reply. Sent through urllib3
(over ``http.client``, whose header parser is the ``email`` package), such an exchange cost about
0.95 ms of client CPU on the benchmark host; framed by hand and parsed by httptools it cost 0.32 ms
(2,000 Event POSTs, 32 threads, same cluster, medians of 3; docs/benchmark.md "Session 16"). At two
writes a pod that is the difference between the client and the scheduling cycle dominating the
daemon's CPU. So:

- **Connections** are opened by urllib3's own ``HTTPConnection``/``HTTPSConnection`` from the same
  keyword arguments as the pool (``transport.pool_kwargs``): CA file or data, client certificate and
  key, ``verify_ssl``, hostname assertion, SNI name, TCP keepalive options. The TLS setup is urllib3's;
  only the framing of requests and replies on the open socket is ours.
- **A request** is one ``sendall`` of the request line, ``Host``, the caller's headers, a
  ``Content-Length`` when there is a body (or the method carries one), and the body. Header values with
  CR or LF are refused (``ValueError``): a token or path must not smuggle a second request.
- **A reply** is parsed by httptools (the llhttp C parser): status, reason, ``Retry-After``, the body
  (``Content-Length``, chunked, or up to the connection's end), and whether the connection may be kept.
  A malformed reply is a ``ProtocolError``.
- **Reuse.** Idle connections wait in a LIFO list (at most ``maxsize``; more are opened when more
  requests run at once, and closed when they come back to a full list). One is reused only if its
  reply allowed keep-alive and left no extra bytes; before reuse a zero-timeout poll drops one the
  server has closed. There are no retries here: a transport failure raises, and the transport's retry
  policy decides (as with urllib3 and ``retries=False``).
- **Not here:** streaming replies (watches stay on urllib3), proxies (``Transport`` uses urllib3 for a
  proxied connection), redirects, compression (no ``Accept-Encoding`` is sent, so none comes back),
  ``Expect: 100-continue``.

Errors are ``OSError`` subclasses (``ConnectionError``, ``TimeoutError``, ``ssl.SSLError``) or urllib3's
connection errors from opening a connection; ``Transport`` maps both to ``ApiConnectionError``.
"""

from __future__ import annotations

import select
import threading
import urllib.parse
from typing import Any

import httptools
from urllib3.connection import HTTPConnection, HTTPSConnection

# (status, reason, Retry-After, body)
Reply = tuple[int, str, str | None, bytes]

RECV_BYTES = 65536
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_POOL_ONLY = ("num_pools", "maxsize", "block", "retries")


class ProtocolError(ConnectionError):
    """The server's reply was malformed, or the connection ended before the reply did."""


class _Reply:
    """httptools callbacks for one reply."""

    __slots__ = (
        "body",
        "complete",
        "framed",
        "headers_done",
        "keep_alive",
        "parser",
        "reason",
        "retry_after",
    )

    def __init__(self) -> None:
        self.body: list[bytes] = []
        self.complete = False
        self.headers_done = False
        self.reason = b""
        self.retry_after: str | None = None
        self.framed = False  # a Content-Length or Transfer-Encoding header: the end is not the EOF
        self.keep_alive = False
        self.parser: Any = None

    def on_status(self, reason: bytes) -> None:
        self.reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        n = name.lower()
        if n == b"retry-after":
            self.retry_after = value.decode("latin-1")
        elif n == b"content-length" or n == b"transfer-encoding":
            self.framed = True

    def on_headers_complete(self) -> None:
        self.headers_done = True

    def on_body(self, data: bytes) -> None:
        self.body.append(data)

    def on_message_complete(self) -> None:
        self.complete = True
        # read here: once feed_data returns, llhttp has reset its flags for a next message
        self.keep_alive = self.parser.should_keep_alive()


class _Conn:
    __slots__ = ("conn", "poller", "sock")

    def __init__(self, conn: HTTPConnection) -> None:
        self.conn = conn
        self.sock = conn.sock
        # registered once: the check before each reuse is then one poll(2) call
        self.poller = select.poll()
        self.poller.register(self.sock, select.POLLIN | select.POLLERR | select.POLLHUP)

    def dropped(self) -> bool:
        """Readable (or hung up) while idle: the server closed it, or sent what nobody asked for."""
        try:
            return bool(self.poller.poll(0))
        except (OSError, ValueError):
            return True

    def close(self) -> None:
        self.conn.close()


class Http1Pool:
    """Keep-alive connections to one origin (``http://`` or ``https://host[:port]``); thread-safe."""

    def __init__(self, server: str, pool_kwargs: dict[str, Any] | None = None) -> None:
        u = urllib.parse.urlsplit(server)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"not an http(s) server URL: {server!r}")
        kw = {k: v for k, v in (pool_kwargs or {}).items() if k not in _POOL_ONLY}
        self.maxsize = max(1, int((pool_kwargs or {}).get("maxsize", 10)))
        self._https = u.scheme == "https"
        if not self._https:  # TLS settings mean nothing to a plain connection
            kw = {k: v for k, v in kw.items() if k in ("socket_options", "source_address")}
        default = 443 if self._https else 80
        self._host = u.hostname
        self._port = u.port or default
        self._conn_kw = kw
        host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname
        self._host_line = f"Host: {host}\r\n" if self._port == default else f"Host: {host}:{self._port}\r\n"
        self._idle: list[_Conn] = []
        self._lock = threading.Lock()
        self._closed = False
        self.opened = 0  # connections opened so far (for tests and metrics)

    # ------------------------------------------------------------------------------ connections
    def _connect(self, connect_timeout: float) -> _Conn:
        cls = HTTPSConnection if self._https else HTTPConnection
        conn = cls(self._host, self._port, timeout=connect_timeout, **self._conn_kw)
        conn.connect()
        with self._lock:
            self.opened += 1
        return _Conn(conn)

    def _get(self, connect_timeout: float) -> _Conn:
        while True:
            with self._lock:
                c = self._idle.pop() if self._idle else None
            if c is None:
                return self._connect(connect_timeout)
            if not c.dropped():
                return c
            c.close()

    def _put(self, c: _Conn) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self.maxsize:
                self._idle.append(c)
                return
        c.close()

    def close(self) -> None:
        """Close the idle connections; those in use close when their exchange ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    # ------------------------------------------------------------------------------ exchanges
    def _head(self, method: str, path: str, headers: dict[str, str], body: bytes | None) -> bytes:
        parts = [f"{method} {path} HTTP/1.1\r\n", self._host_line]
        for k, v in headers.items():
            parts.append(f"{k}: {v}\r\n")
        if body is not None:
            parts.append(f"Content-Length: {len(body)}\r\n")
        elif method in _BODY_METHODS:
            parts.append("Content-Length: 0\r\n")
        parts.append("\r\n")
        head = "".join(parts)
        # every line break must be one we put there: one per part (the request line, each header, the
        # blank line) and none inside a path, name or value
        if head.count("\n") != len(parts) or head.count("\r") != len(parts):
            raise ValueError(f"CR or LF inside the request line or a header of {method} {path!r}")
        return head.encode("latin-1")

    def exchange(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: dict[str, str],
        connect_timeout: float,
        read_timeout: float,
    ) -> Reply:
        """Send one request on a pooled connection and read its whole reply."""
        head = self._head(method, path, headers, body)
        c = self._get(connect_timeout)
        keep = False
        try:
            sock = c.sock
            sock.settimeout(read_timeout)
            sock.sendall(head + body if body else head)
            r = _Reply()
            parser = r.parser = httptools.HttpResponseParser(r)
            while not r.complete:
                data = sock.recv(RECV_BYTES)
                if not data:
                    if r.headers_done and not r.framed:
                        break  # a body delimited by the connection's end (never kept alive)
                    raise ProtocolError(
                        f"the server closed the connection before the reply to {method} {path} ended"
                    )
                try:
                    parser.feed_data(data)
                except httptools.HttpParserUpgrade as e:
                    raise ProtocolError(f"unexpected protocol upgrade in the reply to {method} {path}") from e
                except httptools.HttpParserError as e:
                    raise ProtocolError(f"malformed reply to {method} {path}: {e}") from e
            keep = r.complete and r.keep_alive
            return parser.get_status_code(), r.reason.decode("latin-1"), r.retry_after, b"".join(r.body)
        finally:
            if keep:
                self._put(c)
            else:
                c.close()
