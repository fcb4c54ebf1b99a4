"""Health and metrics endpoints on one port (10259 by default): /livez, /readyz, /healthz, /metrics.

- /livez and /healthz: the process and its scheduling thread are alive.
- /readyz: caches have synced (a replica that is not the leader is ready too).
- /metrics: Prometheus text format from the scheduler's own registry.
Plain HTTP by default; HTTPS when given a certificate and key.
"""

from __future__ import annotations

import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest


class HealthServer:
    def __init__(
        self,
        app: Any,
        *,
        port: int = 10259,
        address: str = "0.0.0.0",
        cert_file: str | None = None,
        key_file: str | None = None,
    ) -> None:
        self.app = app
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet: probes are frequent
                return

            def _send(self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path in ("/livez", "/healthz"):
                    ok, why = outer.live()
                    self._send(200 if ok else 500, b"ok" if ok else why.encode())
                elif path == "/readyz":
                    ok, why = outer.ready()
                    self._send(200 if ok else 503, b"ok" if ok else why.encode())
                elif path == "/metrics":
                    self._send(200, generate_latest(outer.app.metrics.registry), CONTENT_TYPE_LATEST)
                else:
                    self._send(404, b"not found")

        self.httpd = ThreadingHTTPServer((address, port), Handler)
        self.httpd.daemon_threads = True
        if cert_file:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert_file, key_file)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="health", daemon=True)

    def live(self) -> tuple[bool, str]:
        for t in getattr(self.app, "threads", []):
            if not t.is_alive() and not self.app.stop_event.is_set():
                return False, f"thread {t.name} died"
        return True, ""

    def ready(self) -> tuple[bool, str]:
        if not self.app.synced.is_set():
            return False, "caches not synced"
        return True, ""

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
