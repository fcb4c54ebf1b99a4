"""HTTP extenders against the real control plane: ``pyscheduler run`` with ``extenders:`` configured.

One daemon serves every test. Each extender in its config manages its own extended resource
(``managedResources``), so a test picks the extender it exercises by what its pods request:

- storage (the example server, ``examples/storage_health_extender``, run as a subprocess): filter,
  prioritize (weight 5) and bind, over HTTP;
- storage over HTTPS with a private CA and a client certificate (same example, node cache capable);
- an extender nobody listens for, once ignorable and once not;
- a slow one (answers after 3 s; ``httpTimeout: 1s``) and one that answers garbage (in-test servers).

Each test has its own node pool (label ``pool=<namespace>``), with the extended resources its pods ask
for, and pins its pods there; the storage state file is keyed by node name, so tests do not collide.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Generator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pyscheduler.testing.builders import PodBuilder, make_pod
from pyscheduler.testing.cluster import LocalCluster, free_port
from pyscheduler.testing.daemon import SchedulerProcess
from pyscheduler.testing.kube import create, events_for, eventually, get_pod, list_pods, scheduled_condition

ROOT = Path(__file__).resolve().parents[2]
STORAGE = "storage.example.com/volume"
TLS = "tls.example.com/volume"
DOWN_IGNORABLE = "down-ignorable.example.com/thing"
DOWN = "down.example.com/thing"
SLOW = "slow.example.com/thing"
GARBAGE = "garbage.example.com/thing"
ALL_RESOURCES = {r: "100" for r in (STORAGE, TLS, DOWN_IGNORABLE, DOWN, SLOW, GARBAGE)}
BOUND_BY = "storage-health.example.com/bound-by"


# ------------------------------------------------------------------------------------- servers


class Scripted(ThreadingHTTPServer):
    """An in-test extender: ``answer(args) -> (status, body)``, after ``delay`` seconds."""

    daemon_threads = True

    def __init__(self, answer: Callable[[Any], tuple[int, bytes]], delay: float = 0.0) -> None:
        super().__init__(("127.0.0.1", 0), _ScriptedHandler)
        self.answer = answer
        self.delay = delay
        self.calls = 0
        self.closing = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ScriptedHandler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True
    server: Scripted

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        args = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.calls += 1
        self.server.closing.wait(self.server.delay)
        status, body = self.server.answer(args)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the scheduler gave up waiting


def keep_all(args: Any) -> tuple[int, bytes]:
    return 200, json.dumps({"Nodes": args["Nodes"], "NodeNames": args["NodeNames"]}).encode()


def _run_scripted(server: Scripted) -> Generator[Scripted, None, None]:
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    t.start()
    try:
        yield server
    finally:
        server.closing.set()
        server.shutdown()
        server.server_close()


def _openssl(d: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)


def make_certs(d: Path) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, with the openssl CLI."""
    _openssl(
        d,
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=extender-ca",
    )
    for name, san, usage in (
        ("server", "IP:127.0.0.1", "serverAuth"),
        ("client", "DNS:pyscheduler", "clientAuth"),
    ):
        (d / f"{name}.cnf").write_text(f"[ext]\nsubjectAltName={san}\nextendedKeyUsage={usage}\n")
        _openssl(
            d,
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            f"/CN={name}",
        )
        _openssl(
            d,
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "2",
            "-extfile",
            f"{name}.cnf",
            "-extensions",
            "ext",
        )
    return d


class Example:
    """The example extender, run as a user would: ``python -m examples.storage_health_extender.server``."""

    def __init__(self, d: Path, state_file: Path, *extra: str, tls: bool = False) -> None:
        self.port = free_port()
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.log = d / f"example-{self.port}.log"
        argv = [
            sys.executable,
            "-m",
            "examples.storage_health_extender.server",
            "--port",
            str(self.port),
            "--state-file",
            str(state_file),
            *extra,
        ]
        with open(self.log, "wb") as f:
            self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT)
        self.ca = str(d / "ca.crt") if tls else None

    def get(self, path: str) -> Any:
        ctx = ssl.create_default_context(cafile=self.ca) if self.ca else None
        if ctx is not None:
            ctx.load_cert_chain(Path(self.ca).with_name("client.crt"), Path(self.ca).with_name("client.key"))  # type: ignore[arg-type]
        with urllib.request.urlopen(self.url + path, timeout=5, context=ctx) as r:
            return json.loads(r.read())

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"example extender exited:\n{self.log.read_text()}")
            try:
                self.get("/healthz")
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"example extender not ready:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


# ------------------------------------------------------------------------------------ fixtures


class Env:
    def __init__(self, d: Path) -> None:
        self.dir = d
        self.state_file = d / "state.json"
        self.state_file.write_text("{}")
        self._lock = threading.Lock()

    def set_state(self, states: dict[str, str]) -> None:
        with self._lock:
            cur = json.loads(self.state_file.read_text())
            cur.update(states)
            tmp = self.state_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(cur))
            os.replace(tmp, self.state_file)  # atomic: the extender never reads half a file


@pytest.fixture(scope="module")
def env(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    d = make_certs(tmp_path_factory.mktemp("extender"))
    e = Env(d)
    storage = Example(d, e.state_file, "--bind", f"--kubeconfig={cluster.kubeconfig}")
    storage_tls = Example(
        d,
        e.state_file,
        "--tls-cert",
        str(d / "server.crt"),
        "--tls-key",
        str(d / "server.key"),
        "--tls-client-ca",
        str(d / "ca.crt"),
        tls=True,
    )
    slow_gen = _run_scripted(Scripted(keep_all, delay=3.0))
    garbage_gen = _run_scripted(Scripted(lambda args: (200, b"<html>upstream hiccup</html>")))
    slow, garbage = next(slow_gen), next(garbage_gen)
    nobody = f"http://127.0.0.1:{free_port()}"

    def managed(name: str) -> list[dict[str, Any]]:
        return [{"name": name}]

    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "py-scheduler"}],
        "extenders": [
            {
                "urlPrefix": storage.url + "/",
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 5,
                "bindVerb": "bind",
                "managedResources": managed(STORAGE),
            },
            {
                "urlPrefix": storage_tls.url,
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 5,
                "enableHTTPS": True,
                "nodeCacheCapable": True,
                "managedResources": managed(TLS),
                "tlsConfig": {
                    "caFile": str(d / "ca.crt"),
                    "certFile": str(d / "client.crt"),
                    "keyFile": str(d / "client.key"),
                },
            },
            {
                "urlPrefix": nobody,
                "filterVerb": "filter",
                "ignorable": True,
                "managedResources": managed(DOWN_IGNORABLE),
            },
            {"urlPrefix": nobody, "filterVerb": "filter", "managedResources": managed(DOWN)},
            {
                "urlPrefix": slow.url,
                "filterVerb": "filter",
                "httpTimeout": "1s",
                "managedResources": managed(SLOW),
            },
            {"urlPrefix": garbage.url, "filterVerb": "filter", "managedResources": managed(GARBAGE)},
        ],
    }
    try:
        storage.wait_ready()
        storage_tls.wait_ready()
        with SchedulerProcess(cluster.kubeconfig, config, name="pyscheduler-extender") as daemon:
            yield {
                "env": e,
                "daemon": daemon,
                "storage": storage,
                "storage_tls": storage_tls,
                "slow": slow,
                "garbage": garbage,
                "nobody": nobody,
            }
            assert daemon.alive(), f"the daemon died during the tests:\n{daemon.log_tail()}"
    finally:
        storage.stop()
        storage_tls.stop()
        for gen in (slow_gen, garbage_gen):
            gen.close()


def pool(cluster: LocalCluster, ns: str, count: int) -> list[str]:
    return cluster.create_nodes(
        count, prefix=f"{ns}-n", labels={"pool": ns}, cpu="4", memory="16Gi", extra_resources=ALL_RESOURCES
    )


def pod(ns: str, name: str, resource: str) -> PodBuilder:
    return (
        make_pod(name, ns)
        .scheduler("py-scheduler")
        .node_selector({"pool": ns})
        .req(cpu="500m")
        .res({resource: 1}, limits=True)
    )


def placement(cluster: LocalCluster, ns: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in list_pods(cluster, ns)}


def all_bound(cluster: LocalCluster, ns: str, n: int) -> dict[str, str]:
    """Pod name -> node once all ``n`` pods are bound, else {}."""
    got = placement(cluster, ns)
    return got if len(got) == n and all(got.values()) else {}


def failed_note(cluster: LocalCluster, ns: str, name: str, text: str) -> str:
    def find() -> str:
        return next(
            (str(e["note"]) for e in events_for(cluster, ns, name, "FailedScheduling") if text in e["note"]),
            "",
        )

    return eventually(find, timeout=20, what=f"a FailedScheduling event with {text!r}")


# --------------------------------------------------------------------------------------- tests


def test_pods_avoid_a_node_whose_storage_link_is_down_and_bind_through_the_extender(
    cluster: LocalCluster, ns: str, env: dict[str, Any]
) -> None:
    nodes = pool(cluster, ns, 3)
    env["env"].set_state({nodes[0]: "down"})
    for i in range(6):
        create(cluster, pod(ns, f"p{i}", STORAGE).json())
    got = eventually(lambda: all_bound(cluster, ns, 6), timeout=30, what="6 pods bound")
    assert nodes[0] not in got.values(), f"a pod landed on the node whose storage is down: {got}"
    # Bound by the extender's bind verb (the example annotates through the Binding), reported by us.
    for p in list_pods(cluster, ns):
        assert p["metadata"].get("annotations", {}).get(BOUND_BY) == "storage-health-extender"
        assert events_for(cluster, ns, p["metadata"]["name"], "Scheduled")
    calls = env["storage"].get("/state")["calls"]
    assert calls["filter"] >= 6 and calls["bind"] >= 6


def test_when_every_node_is_down_the_event_gives_the_extenders_reason(
    cluster: LocalCluster, ns: str, env: dict[str, Any]
) -> None:
    nodes = pool(cluster, ns, 2)
    env["env"].set_state(dict.fromkeys(nodes, "down"))
    create(cluster, pod(ns, "stuck", STORAGE).json())
    note = failed_note(cluster, ns, "stuck", "storage link down")
    total = len(cluster.api("GET", "/api/v1/nodes")["items"])
    assert note.startswith(f"0/{total} nodes are available: 2 node(s) had storage link down, "), note
    cond = scheduled_condition(get_pod(cluster, ns, "stuck"))
    assert cond is not None and cond["reason"] == "Unschedulable"
    assert get_pod(cluster, ns, "stuck")["spec"].get("nodeName") is None


def test_weight_makes_the_extenders_preferred_node_win(
    cluster: LocalCluster, ns: str, env: dict[str, Any]
) -> None:
    nodes = pool(cluster, ns, 3)
    env["env"].set_state({nodes[0]: "degraded", nodes[1]: "degraded"})
    for i in range(4):
        create(cluster, pod(ns, f"p{i}", STORAGE).json())
    got = eventually(lambda: all_bound(cluster, ns, 4), timeout=30, what="4 pods bound")
    # LeastAllocated alone would spread them; 10 vs 5 points times weight 5 times 10 outweighs it.
    assert set(got.values()) == {nodes[2]}, got


def test_https_extender_with_private_ca_and_client_certificate(
    cluster: LocalCluster, ns: str, env: dict[str, Any]
) -> None:
    nodes = pool(cluster, ns, 2)
    env["env"].set_state({nodes[0]: "down"})
    for i in range(3):
        create(cluster, pod(ns, f"p{i}", TLS).json())
    got = eventually(lambda: all_bound(cluster, ns, 3), timeout=30, what="3 pods bound")
    assert set(got.values()) == {nodes[1]}, got
    assert env["storage_tls"].get("/state")["calls"]["filter"] >= 3


def test_an_unreachable_ignorable_extender_is_skipped(
    cluster: LocalCluster, ns: str, env: dict[str, Any]
) -> None:
    pool(cluster, ns, 1)
    create(cluster, pod(ns, "p", DOWN_IGNORABLE).json())
    eventually(lambda: all_bound(cluster, ns, 1), timeout=20, what="the pod bound despite the extender")
    logs = env["daemon"].log_lines()
    assert any(
        rec.get("event") == "skipping ignorable extender" and rec.get("extender") == env["nobody"]
        for rec in logs
    )


def test_an_unreachable_extender_fails_the_cycle_and_the_pod_waits(
    cluster: LocalCluster, ns: str, env: dict[str, Any]
) -> None:
    pool(cluster, ns, 1)
    create(cluster, pod(ns, "p", DOWN).json())
    note = failed_note(cluster, ns, "p", "cannot reach")
    assert note.startswith(f"extender {env['nobody']}: filter: cannot reach {env['nobody']}/filter"), note
    cond = eventually(lambda: scheduled_condition(get_pod(cluster, ns, "p")))
    assert cond is not None and cond["reason"] == "SchedulerError"
    assert get_pod(cluster, ns, "p")["spec"].get("nodeName") is None
    assert env["daemon"].alive()


def test_a_slow_extender_times_out_after_http_timeout(
    cluster: LocalCluster, ns: str, env: dict[str, Any]
) -> None:
    pool(cluster, ns, 1)
    create(cluster, pod(ns, "p", SLOW).json())
    note = failed_note(cluster, ns, "p", "timed out")
    assert (
        note
        == f"extender {env['slow'].url}: filter: no answer from {env['slow'].url}/filter within 1s (timed out)"
    )
    # Had the 1 s timeout not applied, the slow answer (keep every node) would have scheduled it.
    assert get_pod(cluster, ns, "p")["spec"].get("nodeName") is None
    assert env["daemon"].alive()


def test_a_garbage_answer_is_a_clear_error_and_the_pod_is_retried(
    cluster: LocalCluster, ns: str, env: dict[str, Any]
) -> None:
    pool(cluster, ns, 1)
    before = env["garbage"].calls
    create(cluster, pod(ns, "p", GARBAGE).json())
    note = failed_note(cluster, ns, "p", "invalid JSON")
    assert note.startswith(
        f"extender {env['garbage'].url}: filter: invalid JSON from {env['garbage'].url}/filter"
    )
    assert "upstream hiccup" in note
    eventually(lambda: env["garbage"].calls - before >= 2, timeout=15, what="the pod retried after backoff")
    assert get_pod(cluster, ns, "p")["spec"].get("nodeName") is None
    assert env["daemon"].alive()


# ------------------------------------------------------------------------- the same with kube


class KubeScheduler:
    """The real kube-scheduler (same release as the cluster) with an ``extenders:`` config."""

    def __init__(self, cluster: LocalCluster, d: Path, config: dict[str, Any]) -> None:
        self.port = free_port()
        cfg = d / f"kube-scheduler-{self.port}.json"
        cfg.write_text(
            json.dumps(
                {
                    **config,
                    "clientConnection": {"kubeconfig": str(cluster.kubeconfig)},
                    "leaderElection": {"leaderElect": False},
                }
            )
        )
        self.log = d / f"kube-scheduler-{self.port}.log"
        argv = [
            cluster.binary("kube-scheduler"),
            f"--config={cfg}",
            f"--secure-port={self.port}",
            "--bind-address=127.0.0.1",
            "--v=2",
        ]
        with open(self.log, "wb") as f:
            self.proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_ready(self, timeout: float = 30) -> None:

        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kube-scheduler exited:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/readyz", timeout=1, context=ctx):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"kube-scheduler not ready:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def test_the_example_extender_works_the_same_with_kube_scheduler(
    cluster: LocalCluster, ns: str, env: dict[str, Any]
) -> None:
    storage = env["storage"]
    nodes = pool(cluster, ns, 3)
    env["env"].set_state({nodes[0]: "down", nodes[1]: "degraded"})
    ks = KubeScheduler(
        cluster,
        env["env"].dir,
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "kube-with-extender"}],
            "extenders": [
                {
                    "urlPrefix": storage.url + "/",
                    "filterVerb": "filter",
                    "prioritizeVerb": "prioritize",
                    "weight": 5,
                    "bindVerb": "bind",
                    "managedResources": [{"name": STORAGE}],
                }
            ],
        },
    )
    try:
        ks.wait_ready()
        before = storage.get("/state")["calls"]
        for i in range(3):
            create(cluster, pod(ns, f"k{i}", STORAGE).scheduler("kube-with-extender").json())
        got = eventually(lambda: all_bound(cluster, ns, 3), timeout=30, what="3 pods bound by kube-scheduler")
    finally:
        ks.stop()
    assert set(got.values()) == {nodes[2]}, got  # the same decision pyscheduler makes
    for p in list_pods(cluster, ns):
        assert p["metadata"].get("annotations", {}).get(BOUND_BY) == "storage-health-extender"
    after = storage.get("/state")["calls"]
    assert (
        after["prioritize"] - before.get("prioritize", 0) >= 3 and after["bind"] - before.get("bind", 0) >= 3
    )
