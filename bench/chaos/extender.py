"""A real scheduler extender process for the chaos scenarios, whose answers can be broken on command.

It speaks kube-scheduler's extender wire format (``nodeCacheCapable``: ``NodeNames`` in, ``NodeNames``
and ``FailedNodes`` out) for three verbs:

- ``filter``: rejects every node whose name's CRC32 is divisible by 7 (``chaos extender: node excluded``),
  so its answer visibly shapes placement;
- ``prioritize``: a score 0..10 from the CRC32 of the node name;
- ``bind``: POSTs the Binding to the API server itself (the cluster's CA and admin token), and answers
  ``ExtenderBindingResult`` with the API server's error, if any, in ``Error``.

Run as its own process: ``CHAOS_EXTENDER_TOKEN=T python -m bench.chaos.extender --server URL --ca FILE`` prints
``listening <port> control <port>``. One-line commands on the control port (``mode <mode> [<arg>
[<verb>,<verb>]]``: the verbs it applies to, all by default) set how the extender answers:

- ``mode ok``: answer normally;
- ``mode slow <s>``: do the work (a bind is made), then answer after ``s`` seconds (past the scheduler's
  ``httpTimeout``: the scheduler gives up on an extender that did its job);
- ``mode error``: answer HTTP 500 (after doing the work: a bind is made);
- ``mode garbage``: answer 200 with a body that is not JSON (after doing the work);
- ``mode down``: close the listening socket (connections refused) until the next ``mode``;
- ``exclude 0`` / ``exclude 1``: stop / start filtering nodes out;
- ``stats``: one JSON line: calls per verb and mode, binds made.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request
import zlib
from typing import Any

from bench.chaos.standin import QuietHandler, StandInServer


class State:
    def __init__(self, server: str, ca: str, token: str) -> None:
        self.server = server.rstrip("/")
        self.ctx = ssl.create_default_context(cafile=ca)
        self.token = token
        self.mode = "ok"
        self.slow = 0.0
        self.verbs: set[str] = set()  # the verbs the mode applies to (empty: all)
        self.exclude = True  # filter out the nodes whose name's CRC32 is divisible by 7
        self.lock = threading.Lock()
        self.calls: dict[str, int] = {}
        self.binds = 0
        self.bind_errors = 0

    def mode_for(self, verb: str) -> str:
        return self.mode if not self.verbs or verb in self.verbs else "ok"

    def count(self, verb: str, mode: str) -> None:
        with self.lock:
            key = f"{verb}:{mode}"
            self.calls[key] = self.calls.get(key, 0) + 1

    def bind(self, args: dict[str, Any]) -> str:
        ns, name, uid, node = args["PodNamespace"], args["PodName"], args["PodUID"], args["Node"]
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": ns, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        req = urllib.request.Request(
            f"{self.server}/api/v1/namespaces/{ns}/pods/{name}/binding",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=10):
                pass
        except urllib.error.HTTPError as e:
            with self.lock:
                self.bind_errors += 1
            return f"binding {ns}/{name} to {node}: HTTP {e.code}: {e.read()[:200].decode(errors='replace')}"
        except OSError as e:
            with self.lock:
                self.bind_errors += 1
            return f"binding {ns}/{name} to {node}: {e}"
        with self.lock:
            self.binds += 1
        return ""


def _crc(name: str) -> int:
    return zlib.crc32(name.encode())


def answer(verb: str, args: dict[str, Any], st: State) -> dict[str, Any] | list[dict[str, Any]]:
    if verb == "filter":
        names = list(args.get("NodeNames") or [])
        keep = [n for n in names if _crc(n) % 7 or not st.exclude]
        return {
            "NodeNames": keep,
            "FailedNodes": {n: "chaos extender: node excluded" for n in names if n not in keep},
            "Error": "",
        }
    if verb == "prioritize":
        return [{"Host": n, "Score": _crc(n) % 11} for n in args.get("NodeNames") or []]
    if verb == "bind":
        return {"Error": st.bind(args)}
    raise KeyError(verb)


class Handler(QuietHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: Server

    def do_POST(self) -> None:
        st = self.server.state
        verb = self.path.strip("/").rsplit("/", 1)[-1]
        args = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        mode, slow = st.mode_for(verb), st.slow
        if mode == "down":  # a connection opened before the listener closed: hang up, no answer
            self.close_connection = True
            return
        st.count(verb, mode)
        try:
            out = answer(verb, args, st)
        except KeyError:
            self._send(404, b"unknown verb")
            return
        if mode == "slow":
            time.sleep(slow)
        if mode == "error":
            self._send(500, b"chaos extender: injected error")
        elif mode == "garbage":
            self._send(200, b"<html>this is not JSON{", "text/html")
        else:
            self._send(200, json.dumps(out).encode())


class Server(StandInServer):
    def __init__(self, port: int, state: State) -> None:
        super().__init__(port, state, Handler)
        self.state: State = state


class Extender:
    def __init__(self, state: State) -> None:
        self.state = state
        self.port = 0
        self.srv: Server | None = None
        self._up()

    def _up(self) -> None:
        self.srv = Server(self.port, self.state)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def set_mode(self, mode: str, arg: str = "", verbs: str = "") -> None:
        if mode not in ("ok", "slow", "error", "garbage", "down"):
            raise ValueError(f"unknown mode {mode!r}")
        self.state.verbs = {v for v in verbs.split(",") if v}
        if mode == "down" and self.srv is not None:
            self.srv.hang_up()
            self.srv = None
        elif mode != "down" and self.srv is None:
            self._up()
        self.state.mode = mode
        self.state.slow = float(arg or 0)

    def control(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rw") as f:
            for line in f:
                cmd, *rest = line.split() or [""]
                try:
                    if cmd == "mode":
                        self.set_mode(rest[0], *rest[1:3])
                        reply = "ok"
                    elif cmd == "exclude":
                        self.state.exclude = bool(int(rest[0]))
                        reply = "ok"
                    elif cmd == "stats":
                        with self.state.lock:
                            reply = json.dumps(
                                {
                                    "calls": self.state.calls,
                                    "binds": self.state.binds,
                                    "bind_errors": self.state.bind_errors,
                                }
                            )
                    else:
                        reply = f"error unknown command {cmd!r}"
                except (ValueError, IndexError) as e:
                    reply = f"error {e}"
                f.write(reply + "\n")
                f.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.chaos.extender", description=__doc__)
    ap.add_argument("--server", required=True, help="the API server's URL (for binds)")
    ap.add_argument("--ca", required=True, help="the cluster's CA file")
    args = ap.parse_args(argv)
    # the token (allowed to create pods/binding) comes from the environment, not argv, so ps does not show it
    ext = Extender(State(args.server, args.ca, os.environ["CHAOS_EXTENDER_TOKEN"]))
    ctl = socket.create_server(("127.0.0.1", 0))
    print(f"listening {ext.port} control {ctl.getsockname()[1]}", flush=True)
    while True:
        conn, _ = ctl.accept()
        threading.Thread(target=ext.control, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
