"""Http1Pool against a scripted HTTP server on loopback: framing, reuse, and what a broken reply does."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from pyscheduler.client.http1 import Http1Pool, ProtocolError

pytestmark = pytest.mark.network

# What the server does with one request on a connection: it gets the socket and the request's bytes
# and returns whether to keep reading requests on that connection.
Handler = Callable[[socket.socket, bytes], bool]


class Server:
    """Accepts connections; for each request read off a connection, calls the next handler."""

    def __init__(self, *handlers: Handler) -> None:
        self.handlers = list(handlers)
        self.requests: list[bytes] = []
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self._t = threading.Thread(target=self._accept, daemon=True)
        self._t.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, rest = buf.partition(b"\r\n\r\n")
                n = 0
                for line in head.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        n = int(v)
                while len(rest) < n:
                    rest += conn.recv(65536)
                self.requests.append(head + b"\r\n\r\n" + rest[:n])
                buf = rest[n:]
                if not self.handlers or not self.handlers.pop(0)(conn, self.requests[-1]):
                    return

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., tuple[Server, Http1Pool]]]:
    made: list[tuple[Server, Http1Pool]] = []

    def make(*handlers: Handler) -> tuple[Server, Http1Pool]:
        s = Server(*handlers)
        p = Http1Pool(f"http://127.0.0.1:{s.port}", {"maxsize": 4})
        made.append((s, p))
        return s, p

    yield make
    for s, p in made:
        p.close()
        s.close()


def reply(raw: bytes, keep: bool = True) -> Handler:
    def h(conn: socket.socket, _req: bytes) -> bool:
        conn.sendall(raw)
        return keep

    return h


def ok(body: bytes, status: str = "201 Created", extra: str = "") -> Handler:
    return reply(
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def post(p: Http1Pool, body: bytes | None = b'{"a":1}', headers: dict[str, str] | None = None) -> tuple:
    return p.exchange("POST", "/api/v1/namespaces/ns/events", body, headers or {"Accept": "x"}, 2.0, 2.0)


def test_a_request_carries_host_length_and_headers_and_the_reply_is_read_whole(serve) -> None:
    s, p = serve(ok(b'{"kind":"Event"}', extra="Retry-After: 3\r\n"))
    assert post(p, headers={"Authorization": "Bearer t"}) == (201, "Created", "3", b'{"kind":"Event"}')
    req = s.requests[0]
    assert req.startswith(b"POST /api/v1/namespaces/ns/events HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{s.port}\r\n".encode() in req
    assert b"Authorization: Bearer t\r\n" in req and b"Content-Length: 7\r\n" in req
    assert req.endswith(b'\r\n\r\n{"a":1}')


def test_a_post_without_a_body_says_content_length_zero_and_a_get_says_nothing(serve) -> None:
    s, p = serve(ok(b""), ok(b"{}", "200 OK"))
    post(p, body=None)
    p.exchange("GET", "/api/v1/pods", None, {}, 2.0, 2.0)
    assert b"Content-Length: 0\r\n" in s.requests[0]
    assert b"Content-Length" not in s.requests[1]


def test_a_chunked_reply_is_decoded(serve) -> None:
    chunks = b'5\r\n{"a":\r\n3\r\n 1}\r\n0\r\n\r\n'
    _, p = serve(reply(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks))
    assert post(p)[3] == b'{"a": 1}'


def test_connections_are_reused_while_the_server_keeps_them(serve) -> None:
    s, p = serve(*[ok(b"{}") for _ in range(5)])
    for _ in range(5):
        assert post(p)[0] == 201
    assert s.connections == 1 and p.opened == 1


def test_a_connection_the_server_closed_while_idle_is_dropped_before_reuse(serve) -> None:
    # the server answers and then closes without saying so: the next request must not be sent on it
    s, p = serve(reply(b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}", keep=False), ok(b"{}"))
    assert post(p)[0] == 201
    deadline = threading.Event()
    deadline.wait(0.1)  # let the FIN arrive
    assert post(p)[0] == 201
    assert s.connections == 2 and len(s.requests) == 2


def test_connection_close_and_a_reply_ended_by_eof_are_not_reused(serve) -> None:
    s, p = serve(
        reply(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", keep=False),
        reply(b'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{"until":"eof"}', keep=False),
        ok(b"{}"),
    )
    assert post(p)[3] == b"{}"
    assert post(p)[3] == b'{"until":"eof"}'
    assert post(p)[0] == 201
    assert s.connections == 3


def test_a_reply_cut_short_is_a_protocol_error_and_the_connection_is_not_kept(serve) -> None:
    s, p = serve(reply(b'HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n{"half', keep=False), ok(b"{}"))
    with pytest.raises(ProtocolError, match="closed the connection before the reply"):
        post(p)
    assert post(p)[0] == 201 and s.connections == 2


def test_a_malformed_reply_is_a_protocol_error(serve) -> None:
    _, p = serve(reply(b"SMTP ready\r\n\r\n", keep=False))
    with pytest.raises(ProtocolError, match="malformed reply"):
        post(p)


def test_a_reply_that_does_not_come_is_a_timeout(serve) -> None:
    _, p = serve(lambda conn, req: threading.Event().wait(1.0))
    with pytest.raises(TimeoutError):
        p.exchange("POST", "/x", b"{}", {}, 1.0, 0.2)


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/x HTTP/1.1\r\nHost: evil\r\n\r\nGET /y", {}),
        ("/x", {"Authorization": "Bearer t\r\nX-Injected: 1"}),
        ("/x", {"X-Bad\nName": "v"}),
    ],
)
def test_cr_or_lf_in_the_request_line_or_a_header_is_refused_before_anything_is_sent(
    serve, path: str, headers: dict[str, str]
) -> None:
    s, p = serve(ok(b"{}"))
    with pytest.raises(ValueError, match="CR or LF"):
        p.exchange("POST", path, b"{}", headers, 1.0, 1.0)
    assert s.requests == [] and p.opened == 0


def test_many_threads_each_get_their_own_reply_and_idle_connections_stay_bounded(serve) -> None:
    def echo(conn: socket.socket, req: bytes) -> bool:
        body = req.split(b"\r\n\r\n", 1)[1]
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        return True

    s, p = serve(*[echo for _ in range(16 * 25)])
    wrong: list[bytes] = []

    def run(t: int) -> None:
        for i in range(25):
            body = b"%d-%d" % (t, i)
            got = post(p, body=body)[3]
            if got != body:
                wrong.append(got)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert wrong == [] and len(s.requests) == 16 * 25
    assert len(p._idle) <= p.maxsize


def test_closing_the_pool_closes_idle_connections_and_ones_in_use_when_they_return(serve) -> None:
    s, p = serve(ok(b"{}"), ok(b"{}"))
    post(p)
    p.close()
    assert p._idle == []
    assert post(p)[0] == 201  # still works, on a fresh connection that is not kept
    assert p._idle == [] and s.connections == 2


def test_only_http_and_https_urls_are_accepted() -> None:
    with pytest.raises(ValueError, match="not an http"):
        Http1Pool("unix:///var/run/x.sock")
