"""storage-health: an example scheduler extender (kube-scheduler's HTTP extender protocol).

It keeps pods off nodes whose storage link is down and prefers nodes whose link is healthy:

- ``POST /filter``: ExtenderArgs -> ExtenderFilterResult. Nodes reported ``down`` are returned in
  ``FailedAndUnresolvableNodes`` (preemption cannot bring a link back) with the reason
  ``node(s) had storage link down``; the others are kept. The answer has both ``Nodes`` (when the
  scheduler sent node objects) and ``NodeNames``, so it works with or without ``nodeCacheCapable``.
- ``POST /prioritize``: ExtenderArgs -> HostPriorityList: healthy 10, ``degraded`` 5, ``down`` 0.
- ``POST /bind`` (with ``--bind``): ExtenderBindingArgs -> ExtenderBindingResult. Creates the pod's
  Binding on the API server (kubeconfig token, client certificate or in-cluster service account) and
  annotates the pod ``storage-health.example.com/bound-by: storage-health-extender``.
- ``GET /healthz``; ``GET /state``: the node states in use and how many calls each verb served.

Node states come from a JSON object ``{"node-a": "down", "node-b": "degraded"}`` (any other value,
or a node not listed, is healthy): either a file (``--state-file``, re-read when it changes) or an HTTP
endpoint returning the same JSON (``--health-url``, polled every ``--poll-interval`` seconds). When a
source cannot be read the last good state is kept.

Run (from the repository root)::

    python -m examples.storage_health_extender.server --port 8888 --state-file state.json \\
        [--tls-cert server.crt --tls-key server.key [--tls-client-ca ca.crt]] [--bind --kubeconfig ~/.kube/config]

Standard library only (PyYAML is used for YAML kubeconfigs when installed; JSON ones need nothing).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import logging
import os
import ssl
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

log = logging.getLogger("storage-health")

DOWN = "down"
DEGRADED = "degraded"
DOWN_REASON = "node(s) had storage link down"
SCORES = {DOWN: 0, DEGRADED: 5}
HEALTHY_SCORE = 10
BOUND_BY = "storage-health.example.com/bound-by"
SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


# ------------------------------------------------------------------------------------------ state


def _parse_state(raw: bytes, source: str) -> dict[str, str]:
    data = json.loads(raw) if raw.strip() else {}
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise ValueError(f'{source}: expected a JSON object of node name to state, e.g. {{"node-a": "down"}}')
    return {k: v.strip().lower() for k, v in data.items()}


class FileState:
    """Node states from a JSON file, re-read whenever its size, mtime or inode changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._sig: tuple[int, int, int] | None = None
        self._state: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self) -> dict[str, str]:
        with self._lock:
            try:
                st = self.path.stat()
            except FileNotFoundError:
                if self._sig is not None:
                    log.warning("state file %s disappeared; keeping the last state", self.path)
                return self._state
            sig = (st.st_mtime_ns, st.st_size, st.st_ino)
            if sig != self._sig:
                try:
                    self._state = _parse_state(self.path.read_bytes(), str(self.path))
                    log.info("state loaded from %s: %s", self.path, self._state)
                except (OSError, ValueError) as e:
                    log.error("cannot read state file: %s; keeping the last state", e)
                self._sig = sig
            return self._state


class PolledState:
    """Node states polled from an HTTP health endpoint that returns the same JSON."""

    def __init__(self, url: str, interval: float, timeout: float = 5.0) -> None:
        self.url = url
        self.interval = interval
        self.timeout = timeout
        self._state: dict[str, str] = {}
        self._stop = threading.Event()
        self.poll()
        threading.Thread(target=self._run, name="health-poller", daemon=True).start()

    def poll(self) -> None:
        try:
            with urllib.request.urlopen(self.url, timeout=self.timeout) as r:
                state = _parse_state(r.read(), self.url)
        except (OSError, ValueError) as e:
            log.error("polling %s failed: %s; keeping the last state", self.url, e)
            return
        if state != self._state:
            log.info("state from %s: %s", self.url, state)
        self._state = state

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def get(self) -> dict[str, str]:
        return self._state

    def stop(self) -> None:
        self._stop.set()


# -------------------------------------------------------------------------------------- binding


class Binder:
    """POSTs Bindings to the API server with the credentials of a kubeconfig (or in-cluster)."""

    def __init__(self, kubeconfig: str | None) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="storage-health-")
        self.headers: dict[str, str] = {}
        self._token_file: Path | None = None
        if kubeconfig:
            self.server, self.ctx = self._from_kubeconfig(Path(kubeconfig).expanduser())
        else:
            host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
            if not host or not port:
                raise SystemExit("--bind needs --kubeconfig (or to run in a cluster)")
            self.server = f"https://{host}:{port}"
            self.ctx = ssl.create_default_context(cafile=str(SA_DIR / "ca.crt"))
            self._token_file = SA_DIR / "token"

    def _data_file(self, name: str, b64: str) -> str:
        path = os.path.join(self._tmp.name, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(base64.b64decode(b64))
        return path

    def _from_kubeconfig(self, path: Path) -> tuple[str, ssl.SSLContext]:
        text = path.read_text()
        try:
            cfg = json.loads(text)
        except ValueError:
            import yaml  # a YAML kubeconfig needs PyYAML

            cfg = yaml.safe_load(text)

        def named(kind: str, name: str) -> dict[str, Any]:
            for item in cfg.get(kind + "s") or ():
                if item.get("name") == name:
                    return dict(item.get(kind) or {})
            raise SystemExit(f"{path}: no {kind} named {name!r}")

        ctx_name = cfg.get("current-context") or ""
        context = named("context", ctx_name)
        cluster = named("cluster", context.get("cluster", ""))
        user = named("user", context.get("user", "")) if context.get("user") else {}
        base = path.parent

        def rel(p: str) -> str:
            return str(p if os.path.isabs(p) else base / p)

        ssl_ctx = ssl.create_default_context()
        if cluster.get("certificate-authority-data"):
            ssl_ctx = ssl.create_default_context(
                cafile=self._data_file("ca.crt", cluster["certificate-authority-data"])
            )
        elif cluster.get("certificate-authority"):
            ssl_ctx = ssl.create_default_context(cafile=rel(cluster["certificate-authority"]))
        if cluster.get("insecure-skip-tls-verify"):
            ssl_ctx.check_hostname = False
            ssl_ctx.verify_mode = ssl.CERT_NONE
        cert = user.get("client-certificate-data") and self._data_file(
            "client.crt", user["client-certificate-data"]
        )
        cert = cert or (user.get("client-certificate") and rel(user["client-certificate"]))
        key = user.get("client-key-data") and self._data_file("client.key", user["client-key-data"])
        key = key or (user.get("client-key") and rel(user["client-key"]))
        if cert and key:
            ssl_ctx.load_cert_chain(cert, key)
        self._token_file = Path(rel(user["tokenFile"])) if user.get("tokenFile") else None
        if user.get("token"):
            self.headers["Authorization"] = f"Bearer {user['token']}"
        return str(cluster["server"]).rstrip("/"), ssl_ctx

    def bind(self, namespace: str, name: str, uid: str, node: str) -> str:
        """Create the Binding; "" on success, else the error to report to the scheduler."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": uid,
                "annotations": {BOUND_BY: "storage-health-extender"},
            },
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        path = f"/api/v1/namespaces/{urllib.parse.quote(namespace)}/pods/{urllib.parse.quote(name)}/binding"
        req = urllib.request.Request(self.server + path, data=json.dumps(body).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        req.add_header("Accept", "application/json")
        for k, v in self.headers.items():
            req.add_header(k, v)
        if self._token_file is not None:
            req.add_header("Authorization", f"Bearer {self._token_file.read_text().strip()}")
        try:
            with urllib.request.urlopen(req, timeout=10, context=self.ctx) as r:
                r.read()
            return ""
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")
            with contextlib.suppress(ValueError, AttributeError):
                detail = json.loads(detail).get("message", detail)
            return f"binding {namespace}/{name} to {node}: HTTP {e.code}: {detail}"
        except OSError as e:
            return f"binding {namespace}/{name} to {node}: {e}"


# --------------------------------------------------------------------------------------- server


def _get(obj: Mapping[str, Any] | None, key: str) -> Any:
    """Field lookup ignoring case, as kube-scheduler's Go decoder does."""
    if not obj:
        return None
    if key in obj:
        return obj[key]
    low = key.lower()
    for k, v in obj.items():
        if k.lower() == low:
            return v
    return None


def filter_nodes(args: Mapping[str, Any], state: Mapping[str, str]) -> dict[str, Any]:
    """The ExtenderFilterResult for ExtenderArgs ``args``."""
    nodes = _get(args, "Nodes")
    items: list[dict[str, Any]] = list((_get(nodes, "items") or []) if isinstance(nodes, dict) else [])
    names = _get(args, "NodeNames")
    if names is None:
        names = [((n.get("metadata") or {}).get("name") or "") for n in items]
    down = {n: DOWN_REASON for n in names if state.get(n) == DOWN}
    result: dict[str, Any] = {
        "NodeNames": [n for n in names if n not in down],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": down,
        "Error": "",
    }
    if items:
        result["Nodes"] = {
            "metadata": {},
            "items": [n for n in items if (n.get("metadata") or {}).get("name") not in down],
        }
    return result


def prioritize_nodes(args: Mapping[str, Any], state: Mapping[str, str]) -> list[dict[str, Any]]:
    """The HostPriorityList for ExtenderArgs ``args``."""
    names = _get(args, "NodeNames")
    if names is None:
        nodes = _get(args, "Nodes")
        names = [((n.get("metadata") or {}).get("name") or "") for n in (_get(nodes, "items") or [])]
    return [{"Host": n, "Score": SCORES.get(state.get(n, ""), HEALTHY_SCORE)} for n in names]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the scheduler reuses its connections
    disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart (delayed ACK)
    server: ExtenderServer

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def _reply(self, code: int, payload: Any) -> None:
        body = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._reply(200, "ok")
        elif self.path == "/state":
            self._reply(200, {"nodes": self.server.state(), "calls": dict(self.server.calls)})
        else:
            self._reply(404, {"Error": f"no such path {self.path}"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            args = json.loads(self.rfile.read(length) or b"null")
        except ValueError as e:
            self._reply(400, {"Error": f"invalid JSON: {e}"})
            return
        verb = self.path.strip("/")
        handler = self.server.verbs.get(verb)
        if handler is None or not isinstance(args, dict):
            self._reply(404, {"Error": f"unsupported verb {verb!r}"})
            return
        self.server.calls[verb] += 1
        started = time.monotonic()
        try:
            result = handler(args)
        except Exception as e:  # answer with the error rather than dropping the connection
            log.exception("%s failed", verb)
            self._reply(200, {"Error": f"storage-health {verb}: {e}"})
            return
        log.info("%s answered in %.1f ms", verb, (time.monotonic() - started) * 1000)
        self._reply(200, result)


class ExtenderServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        state: Callable[[], dict[str, str]],
        binder: Binder | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__(address, Handler)
        self.state = state
        self.calls: Counter[str] = Counter()
        self.verbs: dict[str, Callable[[dict[str, Any]], Any]] = {
            "filter": lambda a: filter_nodes(a, self.state()),
            "prioritize": lambda a: prioritize_nodes(a, self.state()),
        }
        if binder is not None:
            self.verbs["bind"] = lambda a: {
                "Error": binder.bind(
                    str(_get(a, "PodNamespace") or ""),
                    str(_get(a, "PodName") or ""),
                    str(_get(a, "PodUID") or ""),
                    str(_get(a, "Node") or ""),
                )
            }
        if ssl_context is not None:
            # The handshake happens in the handler thread, so a slow client cannot stall accept().
            self.socket = ssl_context.wrap_socket(
                self.socket, server_side=True, do_handshake_on_connect=False
            )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="storage-health-extender", description=__doc__.split("\n\n")[0])
    p.add_argument("--address", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8888, help="listen port (0: any free port, printed on start)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--state-file", type=Path, help='JSON file {"node": "down"|"degraded"}, re-read on change'
    )
    src.add_argument("--health-url", help="HTTP endpoint returning the same JSON, polled")
    p.add_argument("--poll-interval", type=float, default=5.0, help="seconds between polls of --health-url")
    p.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM)")
    p.add_argument("--tls-key", help="private key of --tls-cert (PEM)")
    p.add_argument("--tls-client-ca", help="require client certificates signed by this CA (PEM)")
    p.add_argument(
        "--bind", action="store_true", help="serve the bind verb (creates Bindings on the API server)"
    )
    p.add_argument("--kubeconfig", help="credentials for --bind (default: in-cluster service account)")
    p.add_argument("--log-level", default="info")
    args = p.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )

    source: FileState | PolledState
    source = (
        FileState(args.state_file) if args.state_file else PolledState(args.health_url, args.poll_interval)
    )
    ctx = None
    if args.tls_cert or args.tls_key:
        if not (args.tls_cert and args.tls_key):
            p.error("--tls-cert and --tls-key go together")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        if args.tls_client_ca:
            ctx.load_verify_locations(cafile=args.tls_client_ca)
            ctx.verify_mode = ssl.CERT_REQUIRED
    binder = Binder(args.kubeconfig) if args.bind else None
    server = ExtenderServer((args.address, args.port), source.get, binder, ctx)
    host, port = server.server_address[:2]
    scheme = "https" if ctx else "http"
    print(f"storage-health extender listening on {scheme}://{host!s}:{port}", flush=True)
    verbs = ", ".join(sorted(server.verbs))
    log.info("serving verbs: %s", verbs)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
