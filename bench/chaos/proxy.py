"""A fault-injecting TCP proxy on loopback, in front of kube-apiserver (TLS passes through untouched).

Why our own: toxiproxy is not packaged for Debian or PyPI here, and its Go module would add a build to
the control-plane cache; what the scenarios need (connection resets, refused connections, added
latency) is a page of asyncio. HTTP status injection (429/500/503) would need TLS termination and is
not done here.

Run as its own process: ``python -m bench.chaos.proxy --upstream 127.0.0.1:6443 --listen 0`` prints
``listening <port> control <port>`` and then takes one-line commands on the control port:

- ``reset``: close every open connection with a TCP RST (SO_LINGER 0), watches included;
- ``refuse 1`` / ``refuse 0``: new connections are reset at once / accepted again;
- ``latency <seconds>``: delay every chunk forwarded in either direction (0 turns it off).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import struct
import sys


class Proxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.latency = 0.0
        self.refuse = False
        self.conns: set[asyncio.StreamWriter] = set()
        self.resets = 0

    @staticmethod
    def _rst(w: asyncio.StreamWriter) -> None:
        sock = w.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        w.transport.abort()

    async def _pump(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, ConnectionError):
            while data := await r.read(65536):
                if self.latency:
                    await asyncio.sleep(self.latency)
                w.write(data)
                await w.drain()
        with contextlib.suppress(OSError, RuntimeError):
            w.close()

    async def client(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        if self.refuse:
            self._rst(cw)
            return
        try:
            ur, uw = await asyncio.open_connection(*self.upstream)
        except OSError:
            self._rst(cw)
            return
        self.conns.update((cw, uw))
        try:
            await asyncio.gather(self._pump(cr, uw), self._pump(ur, cw))
        finally:
            self.conns.discard(cw)
            self.conns.discard(uw)

    async def control(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        while line := await r.readline():
            cmd, *arg = line.decode().split()
            if cmd == "reset":
                for c in list(self.conns):
                    self._rst(c)
                self.resets += 1
            elif cmd == "refuse":
                self.refuse = bool(int(arg[0]))
            elif cmd == "latency":
                self.latency = float(arg[0])
            else:
                w.write(f"error unknown command {cmd!r}\n".encode())
                await w.drain()
                continue
            w.write(f"ok conns={len(self.conns)}\n".encode())
            await w.drain()


async def amain(args: argparse.Namespace) -> None:
    host, port = args.upstream.rsplit(":", 1)
    p = Proxy(host, int(port))
    srv = await asyncio.start_server(p.client, "127.0.0.1", args.listen)
    ctl = await asyncio.start_server(p.control, "127.0.0.1", 0)
    print(
        f"listening {srv.sockets[0].getsockname()[1]} control {ctl.sockets[0].getsockname()[1]}", flush=True
    )
    await asyncio.gather(srv.serve_forever(), ctl.serve_forever())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.chaos.proxy", description=__doc__)
    ap.add_argument("--upstream", required=True, help="host:port of kube-apiserver")
    ap.add_argument("--listen", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(amain(ap.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
