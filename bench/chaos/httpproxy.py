"""A TLS-terminating HTTP/1.1 fault proxy in front of kube-apiserver: 429, 500, 503 and slow responses.

``proxy.py`` passes TLS through untouched, so it can only break connections. This one terminates TLS
with a serving certificate it signs with the local cluster's own CA (``<state dir>/pki/ca.key``), so
a client using the cluster's kubeconfig (``certificate-authority`` unchanged, ``server`` pointed
here) trusts it, reads each request, and forwards it over a second TLS connection to the API server
(headers, bearer token included, untouched). Responses are relayed as they arrive, watches
(chunked streams) included.

Faults apply to a fraction of the requests matching a method and a path regex, and are one of:

- ``status`` before forwarding: the API server never sees the request; the client gets the status
  with a Status body as kube-apiserver writes it (429 ``TooManyRequests`` with ``Retry-After`` and
  ``details.retryAfterSeconds``, 500 ``InternalError``, 503 ``ServiceUnavailable``);
- ``status`` after forwarding (``"when": "after"``): the API server acted (a Binding was made) but the
  client gets the error instead of the answer: a lost response, as a proxy or load balancer in front of
  kube-apiserver can produce;
- ``delay``: the answer is held back for that many seconds before it is relayed (a slow API server;
  the request has already been served), or with ``"when": "before"`` the request is held before it is
  forwarded (a Binding still in flight while the harness deletes its node: ``held`` names those nodes).

Run as its own process: ``python -m bench.chaos.httpproxy --upstream 127.0.0.1:6443 --pki DIR --log
FILE`` prints ``listening <port> control <port>``. One-line commands on the control port:

- ``set {"status": 429, "retry_after": 2, "fraction": 0.3, "method": "POST", "path": "/binding$"}``
  adds a rule (``when``: ``before`` or ``after``, by default before for a status and after for a delay;
  ``delay``: seconds instead of a status; ``count``: at most this many requests; ``watch``: only
  watches, or none). The first rule that matches a request applies;
- ``clear``: removes every rule;
- ``held``: one JSON line: what is held right now (``delay`` before): a Binding's target node, else the
  request's path;
- ``stats``: one JSON line: requests and injected faults per status;
- ``end-watches``: ends every watch being relayed as kube-apiserver ends one at its timeout (the
  chunked stream's last chunk, then the connection is closed); answers how many. Watches otherwise
  live 5-10 minutes, so this is how a fault reaches the watches' re-connections: with a ``watch: true``
  rule in place, the clients' next watch requests meet it.

Every request is logged to ``--log`` as a JSON line: monotonic time, method, path (no query), a CRC of
the body, watch
or not, the status the client got, whether it was injected, the delay added: the harness reads the
retries and their spacing from it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import random
import re
import ssl
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

REASONS = {
    429: ("Too Many Requests", "TooManyRequests", "the server has received too many requests"),
    500: ("Internal Server Error", "InternalError", "an error on the server has prevented the request"),
    503: (
        "Service Unavailable",
        "ServiceUnavailable",
        "the server is currently unable to handle the request",
    ),
}
MAX_HEAD = 256 * 1024


@dataclass
class Rule:
    fraction: float = 1.0
    method: str = ""
    path: str = ""
    status: int = 0
    retry_after: int | None = None
    delay: float = 0.0
    when: str = ""  # before | after; default: before for a status, after for a delay
    watch: bool | None = None  # None: watches and other requests alike
    count: int = 0  # applies to this many requests at most (0: no limit)
    _re: re.Pattern[str] | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, spec: dict[str, Any]) -> Rule:
        r = cls(**{k: v for k, v in spec.items() if k in cls.__dataclass_fields__ and not k.startswith("_")})
        if r.status and r.status not in REASONS:
            raise ValueError(f"status must be one of {sorted(REASONS)}")
        r.when = r.when or ("before" if r.status else "after")
        if r.when not in ("before", "after"):
            raise ValueError("when must be 'before' or 'after'")
        if not r.status and r.delay <= 0:
            raise ValueError("a rule needs a status or a delay")
        r._re = re.compile(r.path) if r.path else None
        return r

    def matches(self, method: str, path: str, watch: bool, rng: random.Random) -> bool:
        if self.count < 0:
            return False
        if self.method and self.method != method:
            return False
        # a watch's answer is a stream: it cannot be held back or swallowed after forwarding
        if (self.watch is not None and self.watch != watch) or (
            watch and (self.delay or self.when == "after")
        ):
            return False
        if self._re is not None and not self._re.search(path):
            return False
        if rng.random() >= self.fraction:
            return False
        if self.count:
            self.count = self.count - 1 or -1  # -1: used up
        return True


def make_cert(pki: Path, out: Path) -> tuple[Path, Path]:
    """A serving certificate for 127.0.0.1/localhost signed by the cluster's CA."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "san.cnf").write_text(
        "[ext]\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
    )

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=out, check=True, capture_output=True)

    openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "proxy.key",
        "-out",
        "proxy.csr",
        "-subj",
        "/CN=chaos-proxy",
    )
    openssl(
        "x509", "-req", "-in", "proxy.csr", "-CA", str(pki / "ca.crt"), "-CAkey", str(pki / "ca.key"),
        "-CAcreateserial", "-CAserial", str(out / "ca.srl"), "-out", "proxy.crt", "-days", "2",
        "-extfile", "san.cnf", "-extensions", "ext",
    )  # fmt: skip
    return out / "proxy.crt", out / "proxy.key"


def status_response(status: int, retry_after: int | None, method: str, path: str) -> bytes:
    phrase, reason, message = REASONS[status]
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"{message} (injected by the chaos proxy: {method} {path})",
        "reason": reason,
        "code": status,
    }
    headers = [f"HTTP/1.1 {status} {phrase}", "Content-Type: application/json", "Cache-Control: no-cache"]
    if retry_after is not None:
        body["details"] = {"retryAfterSeconds": retry_after}
        headers.append(f"Retry-After: {retry_after}")
    raw = json.dumps(body).encode()
    headers.append(f"Content-Length: {len(raw)}")
    return ("\r\n".join(headers) + "\r\n\r\n").encode() + raw


def bind_target(path: str, body: bytes) -> str:
    """The node a Binding POST names ("" for anything else)."""
    if not path.endswith("/binding"):
        return ""
    try:
        return str(json.loads(body)["target"]["name"])
    except (ValueError, KeyError, TypeError):
        return ""


class Closed(Exception):
    pass


async def read_head(r: asyncio.StreamReader) -> bytes:
    try:
        return await r.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        raise Closed from e
    except asyncio.LimitOverrunError as e:
        raise Closed("head too long") from e


def parse_headers(head: bytes) -> tuple[str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    hdrs: dict[str, str] = {}
    for ln in lines[1:]:
        if ":" in ln:
            k, v = ln.split(":", 1)
            hdrs[k.strip().lower()] = v.strip()
    return lines[0], hdrs


async def relay_body(
    r: asyncio.StreamReader, w: asyncio.StreamWriter | None, hdrs: dict[str, str], until_close: bool
) -> bytes:
    """Copy one message body from r to w (or collect it when w is None), as its framing says."""
    collected = bytearray()

    async def out(data: bytes) -> None:
        if w is None:
            collected.extend(data)
        else:
            w.write(data)
            await w.drain()

    if "chunked" in hdrs.get("transfer-encoding", "").lower():
        while True:
            line = await r.readuntil(b"\r\n")
            size = int(line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                trailer = line
                while True:
                    t = await r.readuntil(b"\r\n")
                    trailer += t
                    if t == b"\r\n":
                        break
                await out(trailer)
                return bytes(collected)
            chunk = await r.readexactly(size + 2)
            await out(line + chunk)
    n = hdrs.get("content-length")
    if n is not None:
        left = int(n)
        while left > 0:
            data = await r.read(min(left, 65536))
            if not data:
                raise Closed("short body")
            left -= len(data)
            await out(data)
    elif until_close:
        while data := await r.read(65536):
            await out(data)
    return bytes(collected)


class HttpFaultProxy:
    def __init__(
        self, upstream: tuple[str, int], upstream_ctx: ssl.SSLContext, log: IO[str], seed: int
    ) -> None:
        self.upstream = upstream
        self.upstream_ctx = upstream_ctx
        self.rules: list[Rule] = []
        self.rng = random.Random(seed)
        self.log = log
        self.requests = 0
        self.injected: dict[str, int] = {}
        self.ids = itertools.count(1)
        self.held: dict[int, str] = {}  # request id -> a held Binding's node, or a held request's path
        # conn -> a watch being relayed: (client writer, relay task, path)
        self.watching: dict[int, tuple[asyncio.StreamWriter, asyncio.Task[Any], str]] = {}

    def _record(self, **kv: Any) -> None:
        self.log.write(json.dumps(kv) + "\n")

    def _rule(self, method: str, path: str, watch: bool) -> Rule | None:
        for rule in self.rules:
            if rule.matches(method, path, watch, self.rng):
                return rule
        return None

    async def client(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        conn = next(self.ids)
        up: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while True:
                head = await read_head(cr)
                line, hdrs = parse_headers(head)
                method, target, _ = line.split(" ", 2)
                body = await relay_body(cr, None, hdrs, until_close=False)
                path, _, query = target.partition("?")
                watch = "watch=1" in query or "watch=true" in query
                self.requests += 1
                t = time.monotonic()
                rule = self._rule(method, path, watch)
                rec: dict[str, Any] = {
                    "t": round(t, 4),
                    "conn": conn,
                    "m": method,
                    "p": path,
                    "b": zlib.crc32(body),  # a retry sends the same body; two events to one path do not
                    "watch": watch,
                }
                if node := bind_target(path, body):
                    rec["node"] = node
                if rule is not None and rule.status and rule.when == "before":
                    cw.write(status_response(rule.status, rule.retry_after, method, path))
                    await cw.drain()
                    self._count(rule)
                    self._record(**rec, status=rule.status, injected="before")
                    continue
                if rule is not None and rule.delay and rule.when == "before":
                    await self._hold(rule, path, body)
                    rec["held"] = rule.delay
                up = await self._upstream(up)
                ur, uw = up
                uw.write(head + body)
                await uw.drain()
                rhead = await read_head(ur)
                rline, rhdrs = parse_headers(rhead)
                status = int(rline.split(" ", 2)[1])
                no_body = method == "HEAD" or status in (204, 304) or 100 <= status < 200
                until_close = rhdrs.get("connection", "").lower() == "close"
                if rule is not None and rule.status:  # after: the server acted; the answer is lost
                    if not no_body:
                        await relay_body(ur, None, rhdrs, until_close)
                    cw.write(status_response(rule.status, rule.retry_after, method, path))
                    await cw.drain()
                    self._count(rule)
                    self._record(**rec, status=rule.status, injected="after", upstream=status)
                    if until_close:
                        uw.close()
                        up = None
                    continue
                if rule is not None and rule.delay and rule.when == "after":
                    await asyncio.sleep(rule.delay)
                    self._count(rule)
                held_after = rule is not None and rule.delay and rule.when == "after"
                self._record(**rec, status=status, delay=rule.delay if rule and held_after else 0.0)
                cw.write(rhead)
                await cw.drain()
                if not no_body:
                    await self._relay(conn, path, watch and status == 200, ur, cw, rhdrs, until_close)
                if until_close:
                    break
        except (Closed, ConnectionError, OSError, asyncio.IncompleteReadError, ValueError, ssl.SSLError):
            pass
        except asyncio.CancelledError:  # end-watches
            pass
        finally:
            for w in (cw, up[1] if up else None):
                if w is not None:
                    with contextlib.suppress(Exception):
                        w.close()

    async def _relay(
        self,
        conn: int,
        path: str,
        watch: bool,
        ur: asyncio.StreamReader,
        cw: asyncio.StreamWriter,
        rhdrs: dict[str, str],
        until_close: bool,
    ) -> None:
        """Relay an answer's body; a watch's is registered meanwhile, for ``end-watches``."""
        task = asyncio.current_task()
        if watch and task is not None:
            self.watching[conn] = (cw, task, path)
        try:
            await relay_body(ur, cw, rhdrs, until_close)
        finally:
            self.watching.pop(conn, None)

    async def _hold(self, rule: Rule, path: str, body: bytes) -> None:
        rid = next(self.ids)
        self.held[rid] = bind_target(path, body) or path
        try:
            await asyncio.sleep(rule.delay)
        finally:
            self.held.pop(rid, None)
        self._count(rule)

    async def _upstream(
        self, up: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The client connection's own connection to the API server, (re)opened when needed."""
        if up is not None and not up[0].at_eof():
            return up
        if up is not None:
            up[1].close()
        return await asyncio.open_connection(
            *self.upstream, ssl=self.upstream_ctx, server_hostname=self.upstream[0], limit=MAX_HEAD
        )

    def end_watches(self) -> int:
        """End every relayed watch cleanly: the last chunk (written between two relayed chunks: one
        relayed chunk is one write), then the relay is cancelled and both connections closed."""
        ended = list(self.watching.items())
        self.watching.clear()
        for conn, (cw, task, path) in ended:
            with contextlib.suppress(Exception):
                cw.write(b"0\r\n\r\n")
            task.cancel()
            self._record(t=round(time.monotonic(), 4), conn=conn, ended_watch=path)
        return len(ended)

    def _count(self, rule: Rule) -> None:
        key = (
            str(rule.status) + ("-after" if rule.when == "after" and rule.status else "")
            if rule.status
            else "delay"
        )
        self.injected[key] = self.injected.get(key, 0) + 1

    async def control(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        while line := await r.readline():
            cmd, _, arg = line.decode().strip().partition(" ")
            try:
                if cmd == "set":
                    self.rules.append(Rule.parse(json.loads(arg)))
                    reply = "ok"
                elif cmd == "clear":
                    self.rules.clear()
                    reply = "ok"
                elif cmd == "held":
                    reply = json.dumps(sorted({n for n in self.held.values() if n}))
                elif cmd == "end-watches":
                    reply = str(self.end_watches())
                elif cmd == "stats":
                    self.log.flush()
                    reply = json.dumps({"requests": self.requests, "injected": self.injected})
                else:
                    reply = f"error unknown command {cmd!r}"
            except (ValueError, TypeError) as e:
                reply = f"error {e}"
            w.write(reply.encode() + b"\n")
            await w.drain()


async def amain(args: argparse.Namespace) -> None:
    host, port = args.upstream.rsplit(":", 1)
    pki = Path(args.pki)
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="chaos-httpproxy-"))
    crt, key = make_cert(pki, workdir)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(crt, key)
    server_ctx.set_alpn_protocols(["http/1.1"])
    upstream_ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    upstream_ctx.set_alpn_protocols(["http/1.1"])
    with open(args.log, "a", buffering=1 << 16) as log:
        p = HttpFaultProxy((host, int(port)), upstream_ctx, log, args.seed)
        srv = await asyncio.start_server(p.client, "127.0.0.1", args.listen, ssl=server_ctx, limit=MAX_HEAD)
        ctl = await asyncio.start_server(p.control, "127.0.0.1", 0)
        print(
            f"listening {srv.sockets[0].getsockname()[1]} control {ctl.sockets[0].getsockname()[1]}",
            flush=True,
        )
        await asyncio.gather(srv.serve_forever(), ctl.serve_forever())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.chaos.httpproxy", description=__doc__)
    ap.add_argument("--upstream", required=True, help="host:port of kube-apiserver")
    ap.add_argument("--pki", required=True, help="the cluster's pki directory (ca.crt and ca.key)")
    ap.add_argument("--listen", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    ap.add_argument("--log", default="/dev/null", help="append one JSON line per request here")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", default="", help="where to write the certificate (default: a new temp dir)")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(amain(ap.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
