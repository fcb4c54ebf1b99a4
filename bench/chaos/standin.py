"""What the chaos suite's stand-in HTTP processes share (extender.py, prometheus.py): a threading server
that can hang up on every open connection at once (the process "goes away" without exiting), and a
handler base that answers with a body and stays quiet in the log."""

from __future__ import annotations

import contextlib
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class StandInServer(ThreadingHTTPServer):
    """A loopback server holding the stand-in's ``state``, tracking its connections so ``hang_up`` can
    close the listener and every keep-alive connection: the stand-in is gone."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, state: Any, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", port), handler)
        self.state = state
        self.conns: set[socket.socket] = set()

    def process_request(self, request: Any, client_address: Any) -> None:
        self.conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.conns.discard(request)
        super().shutdown_request(request)

    def hang_up(self) -> None:
        self.shutdown()
        self.server_close()
        for c in list(self.conns):
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # the scheduler hung up on a slow answer (its timeout): expected here, not worth a traceback
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)
