"""A stand-in Prometheus for the NetworkTraffic plugin, whose answers can be broken on command.

It serves ``GET /api/v1/query`` (any query) with an instant vector: one sample per node named
``<prefix>-<i>`` (i < ``--count``), labelled ``instance=<node>``, the value a CRC32 of the name: the
plugin's default aggregate query gets every node's "traffic" in one answer.

Run as its own process: ``python -m bench.chaos.prometheus --prefix POOL --count N`` prints ``listening
<port> control <port>``. One-line commands on the control port:

- ``mode ok``: answer normally;
- ``mode down``: close the listener and every open connection (connections refused);
- ``mode blackhole``: accept, read the request, never answer (until the client hangs up);
- ``mode trickle``: answer one byte every 0.2 s (each read gets a byte within any sensible socket
  timeout; only a deadline on the whole query ends it);
- ``mode error``: answer 503 with Prometheus's JSON error body;
- ``mode garbage``: answer 200 with HTML;
- ``stats``: one JSON line: queries per mode, and for blackhole / trickle how long each client held
  on before it hung up (``held``: seconds, the longest first).
"""

from __future__ import annotations

import argparse
import json
import select
import socket
import sys
import threading
import time
import zlib

from bench.chaos.standin import QuietHandler, StandInServer

MODES = ("ok", "down", "blackhole", "trickle", "error", "garbage")
TRICKLE_S = 0.2
HOLD_MAX_S = 60.0


class State:
    def __init__(self, prefix: str, count: int) -> None:
        self.prefix = prefix
        self.count = count
        self.mode = "ok"
        self.lock = threading.Lock()
        self.queries: dict[str, int] = {}
        self.held: dict[str, list[float]] = {}

    def answer(self) -> bytes:
        result = [
            {
                "metric": {"instance": f"{self.prefix}-{i}"},
                "value": [time.time(), str(zlib.crc32(f"{self.prefix}-{i}".encode()) % 1_000_000)],
            }
            for i in range(self.count)
        ]
        return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


class Handler(QuietHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        st = self.server.state
        mode = st.mode
        with st.lock:
            st.queries[mode] = st.queries.get(mode, 0) + 1
        if mode == "blackhole":
            start = time.monotonic()
            # the request has been read: wait for the client to hang up (readable with no data)
            while time.monotonic() - start < HOLD_MAX_S:
                r, _, _ = select.select([self.connection], [], [], 0.05)
                if r and not self.connection.recv(1, socket.MSG_PEEK):
                    break
            self._held(mode, time.monotonic() - start)
            self.close_connection = True
            return
        if mode == "error":
            self._send(
                503, b'{"status":"error","errorType":"unavailable","error":"chaos: down for maintenance"}'
            )
        elif mode == "garbage":
            self._send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
        elif mode == "trickle":
            body = st.answer()
            whole = (
                f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode() + body
            start = time.monotonic()
            try:
                for i in range(len(whole)):
                    self.wfile.write(whole[i : i + 1])
                    self.wfile.flush()
                    time.sleep(TRICKLE_S)
                    if time.monotonic() - start > HOLD_MAX_S:
                        break
            except OSError:
                pass
            self._held(mode, time.monotonic() - start)
            self.close_connection = True
        else:
            self._send(200, st.answer())

    def _held(self, mode: str, seconds: float) -> None:
        st = self.server.state
        with st.lock:
            st.held.setdefault(mode, []).append(round(seconds, 2))


class Server(StandInServer):
    def __init__(self, port: int, state: State) -> None:
        super().__init__(port, state, Handler)
        self.state: State = state


class Prometheus:
    def __init__(self, state: State) -> None:
        self.state = state
        self.port = 0
        self.srv: Server | None = None
        self._up()

    def _up(self) -> None:
        self.srv = Server(self.port, self.state)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        if mode == "down" and self.srv is not None:
            self.srv.hang_up()
            self.srv = None
        elif mode != "down" and self.srv is None:
            self._up()
        self.state.mode = mode

    def control(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rw") as f:
            for line in f:
                cmd, *rest = line.split() or [""]
                try:
                    if cmd == "mode":
                        self.set_mode(rest[0])
                        reply = "ok"
                    elif cmd == "stats":
                        with self.state.lock:
                            held = {k: sorted(v, reverse=True) for k, v in self.state.held.items()}
                            reply = json.dumps({"queries": self.state.queries, "held": held})
                    else:
                        reply = f"error unknown command {cmd!r}"
                except (ValueError, IndexError) as e:
                    reply = f"error {e}"
                f.write(reply + "\n")
                f.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.chaos.prometheus", description=__doc__)
    ap.add_argument("--prefix", required=True, help="node names are <prefix>-<i>")
    ap.add_argument("--count", type=int, default=2000, help="how many node names to answer for")
    args = ap.parse_args(argv)
    prom = Prometheus(State(args.prefix, args.count))
    ctl = socket.create_server(("127.0.0.1", 0))
    print(f"listening {prom.port} control {ctl.getsockname()[1]}", flush=True)
    while True:
        conn, _ = ctl.accept()
        threading.Thread(target=prom.control, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
