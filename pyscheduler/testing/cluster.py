"""A real Kubernetes control plane on loopback, for tests, benchmarks and ``pyscheduler dev-cluster``.

Design
------
The binaries come from ``e2e/controlplane`` (a Go module pinning Kubernetes, KWOK and etcd), built once
by its ``build.sh`` into a cache keyed by the pinned versions. ``LocalCluster`` starts them:

    etcd (data on tmpfs, no fsync)
      └─ kube-apiserver (127.0.0.1:<free port>, RBAC, static admin token, service-account
         issuer + keys so TokenRequest works, our own CA and serving cert)
           ├─ kube-controller-manager   (optional: deployments, replicasets, GC, namespaces, ...)
           └─ kwok                      (optional: fake kubelets for nodes annotated
                                         kwok.x-k8s.io/node=fake, with our stages in kwok/stages.yaml)

Each process runs in its own session with a parent-death signal, so it dies with the Python process
that started it even on ``kill -9``; ``stop()`` (also run by the context manager, atexit and SIGTERM)
terminates them in reverse order and removes the state directory. Ports are chosen free per cluster,
so two clusters can run at once.

The cluster writes an admin kubeconfig (``self.kubeconfig``) and exposes ``kubectl()``,
``create_nodes()`` and a plain ``request()`` helper that uses only the standard library, so this module
does not depend on the scheduler's own client code it is used to test.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTROLPLANE_DIR = REPO_ROOT / "e2e" / "controlplane"
STAGES_FILE = Path(__file__).with_name("kwok") / "stages.yaml"
ADMIN_TOKEN = "pyscheduler-admin-token"
SERVICE_CIDR = "10.96.0.0/16"

KCM_CONTROLLERS = (
    "deployment-controller",
    "replicaset-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "job-controller",
    "statefulset-controller",
    "disruption-controller",
    # creates a pod's ResourceClaims from its ResourceClaimTemplates (DynamicResources)
    "resourceclaim-controller",
)


class ClusterError(RuntimeError):
    pass


def binaries_dir(build: bool = True) -> Path:
    """The directory with the control-plane binaries, building them first if needed.

    ``PYSCHEDULER_CONTROLPLANE_BIN`` overrides the location (binaries built elsewhere)."""
    env = os.environ.get("PYSCHEDULER_CONTROLPLANE_BIN")
    if env:
        return Path(env)
    if not build:
        raise ClusterError("control plane binaries not located; run `make controlplane`")
    proc = subprocess.run(
        ["bash", str(CONTROLPLANE_DIR / "build.sh")],
        stdout=subprocess.PIPE,
        stderr=None,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise ClusterError(
            f"building the control plane failed (exit {proc.returncode}); see the output above"
        )
    return Path(proc.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def stop_process_group(proc: subprocess.Popen[Any] | None, grace: float) -> None:
    """SIGTERM a child started in its own process group, SIGKILL it after ``grace`` seconds."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


def _set_pdeathsig() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def log_tail(path: Path, n: int = 30) -> str:
    """The last ``n`` lines of a child's log file ("" if it has none yet)."""
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-n:])


def spawn_logged(
    argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a session of its own (``stop_process_group`` signals the whole group), its stdout
    and stderr appended to ``log``, no stdin; the child is SIGKILLed when this process dies, even by
    SIGKILL, so a crashed test or benchmark leaves no server behind."""
    with open(log, "ab") as f:
        return subprocess.Popen(
            list(argv),
            stdout=f,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            start_new_session=True,
            preexec_fn=_set_pdeathsig,
        )


def wait_http_ready(
    proc: subprocess.Popen[Any],
    url: str,
    timeout: float,
    what: str,
    log_tail: Callable[[], str],
    *,
    context: ssl.SSLContext | None = None,
    interval: float = 0.1,
    error: type[Exception] = RuntimeError,
) -> None:
    """Poll ``url`` (a /readyz) until it answers 200. ``error`` with ``log_tail()`` if ``proc`` exits first
    or ``timeout`` seconds pass; ``context`` for an HTTPS server (e.g. one with a self-signed certificate)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise error(f"{what} exited with {proc.returncode}:\n{log_tail()}")
        with (
            contextlib.suppress(OSError),  # refused, reset, or an HTTP error status (URLError is an OSError)
            urllib.request.urlopen(url, timeout=1, context=context) as r,
        ):
            if r.status == 200:
                return
        time.sleep(interval)
    raise error(f"{what} not ready after {timeout:.0f}s:\n{log_tail()}")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def make_pki(d: Path) -> None:
    """A CA, a serving certificate for 127.0.0.1/localhost/kubernetes.default.svc, and service-account keys."""
    d.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "3650",
        "-subj",
        "/CN=pyscheduler-test-ca",
        cwd=d,
    )
    (d / "san.cnf").write_text(
        "[req]\ndistinguished_name=dn\n[dn]\n[ext]\nsubjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,"
        "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,"
        "DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n"
    )
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "apiserver.key",
        "-out",
        "apiserver.csr",
        "-subj",
        "/CN=kube-apiserver",
        cwd=d,
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        "apiserver.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "apiserver.crt",
        "-days",
        "3650",
        "-extfile",
        "san.cnf",
        "-extensions",
        "ext",
        cwd=d,
    )
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)


def _tmp_root() -> Path:
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm
    return Path(tempfile.gettempdir())


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path


@dataclass(eq=False)
class LocalCluster:
    """A running (after ``start()``) etcd + kube-apiserver, optionally kube-controller-manager and KWOK."""

    with_kwok: bool = True
    with_controller_manager: bool = False
    state_dir: Path | None = None
    keep_state: bool = False
    apiserver_args: Sequence[str] = ()
    name: str = "pyscheduler"
    bin_dir: Path | None = None
    # what `make conformance` changes: KWOK's stages file and the controller manager's controllers
    kwok_stages: Path = STAGES_FILE
    controllers: Sequence[str] = KCM_CONTROLLERS
    controller_manager_args: Sequence[str] = ()

    port: int = 0
    etcd_port: int = 0
    server: str = ""
    procs: list[_Proc] = field(default_factory=list)
    _stopped: bool = False

    # ------------------------------------------------------------------------------ paths
    @property
    def kubeconfig(self) -> Path:
        assert self.state_dir is not None
        return self.state_dir / "kubeconfig"

    @property
    def ca_file(self) -> Path:
        assert self.state_dir is not None
        return self.state_dir / "pki" / "ca.crt"

    def binary(self, name: str) -> str:
        assert self.bin_dir is not None
        return str(self.bin_dir / name)

    # ------------------------------------------------------------------------------ lifecycle
    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 120.0) -> LocalCluster:
        if self.bin_dir is None:
            self.bin_dir = binaries_dir()
        own_dir = self.state_dir is None
        if own_dir:
            self.state_dir = Path(tempfile.mkdtemp(prefix=f"{self.name}-", dir=_tmp_root()))
        else:
            assert self.state_dir is not None
            self.state_dir.mkdir(parents=True, exist_ok=True)
        self.keep_state = self.keep_state or not own_dir
        _live.add(self)
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, timeout: float) -> None:
        assert self.state_dir is not None
        sd = self.state_dir
        pki = sd / "pki"
        if not (pki / "sa.pub").exists():
            make_pki(pki)
        (sd / "tokens.csv").write_text(f'{ADMIN_TOKEN},admin,uid-admin,"system:masters"\n')
        self.etcd_port, peer = free_port(), free_port()
        self._spawn(
            "etcd",
            [
                self.binary("etcd"),
                "--name=default",
                f"--data-dir={sd / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{self.etcd_port}",
                f"--advertise-client-urls=http://127.0.0.1:{self.etcd_port}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=default=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync=true",
                "--quota-backend-bytes=8589934592",
                "--log-level=warn",
            ],
        )
        self._wait(lambda: self._http_ok(f"http://127.0.0.1:{self.etcd_port}/health"), timeout, "etcd")
        self.port = free_port()
        self.server = f"https://127.0.0.1:{self.port}"
        self._spawn(
            "kube-apiserver",
            [
                self.binary("kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--token-auth-file={sd / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                # Pods are admitted without a "default" ServiceAccount (no token controller needed), and
                # new nodes are not tainted not-ready: no node-lifecycle controller runs to lift the taint
                # (KWOK keeps nodes Ready instead).
                "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
                "--allow-privileged=true",
                "--profiling=false",
                "--max-requests-inflight=2000",
                "--max-mutating-requests-inflight=1000",
                "--event-ttl=1h",
                "--v=0",
                *self.apiserver_args,
            ],
        )
        self._wait(self._ready, timeout, "kube-apiserver /readyz")
        self._write_kubeconfig()
        if self.with_controller_manager:
            self._spawn(
                "kube-controller-manager",
                [
                    self.binary("kube-controller-manager"),
                    f"--kubeconfig={self.kubeconfig}",
                    "--leader-elect=false",
                    f"--controllers={','.join(self.controllers)}",
                    f"--service-account-private-key-file={pki / 'sa.key'}",
                    f"--root-ca-file={pki / 'ca.crt'}",
                    "--use-service-account-credentials=false",
                    "--secure-port=0",
                    "--concurrent-deployment-syncs=10",
                    "--concurrent-replicaset-syncs=10",
                    "--kube-api-qps=500",
                    "--kube-api-burst=1000",
                    "--v=0",
                    *self.controller_manager_args,
                ],
            )
        if self.with_kwok:
            self._spawn(
                "kwok",
                [
                    self.binary("kwok"),
                    f"--kubeconfig={self.kubeconfig}",
                    f"--config={self.kwok_stages}",
                    "--manage-all-nodes=false",
                    "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                    "--node-ip=10.0.0.1",
                    "--cidr=10.244.0.0/16",
                    f"--server-address=127.0.0.1:{free_port()}",
                    "--node-lease-duration-seconds=0",
                ],
            )
        # Give the optional components a moment and fail early with their log if they die.
        time.sleep(0.3)
        self._check_alive()

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        for p in reversed(self.procs):
            if p.popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.popen.pid, signal.SIGTERM)
        deadline = time.monotonic() + 3  # kube-apiserver would wait up to 60 s for open watches
        for p in reversed(self.procs):
            try:
                p.popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.popen.pid, signal.SIGKILL)
                p.popen.wait(5)
        _live.discard(self)
        if self.state_dir is not None and not self.keep_state:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def restart_apiserver(self, down_seconds: float = 0.0, timeout: float = 60.0) -> None:
        """Stop kube-apiserver, wait, start it again on the same port (for watch-resilience tests)."""
        p = next(p for p in self.procs if p.name == "kube-apiserver")
        if p.popen.poll() is None:
            # A graceful stop waits up to 60 s for open watches to end; a crash-like stop is the point here.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.popen.pid, signal.SIGTERM)
            try:
                p.popen.wait(3)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.popen.pid, signal.SIGKILL)
                p.popen.wait(10)
        time.sleep(down_seconds)
        args = list(p.popen.args)  # type: ignore[arg-type]
        self.procs.remove(p)
        self._spawn("kube-apiserver", [str(a) for a in args])
        self._wait(self._ready, timeout, "kube-apiserver /readyz after restart")

    def compact_etcd(self) -> int:
        """Compact etcd at its current revision so older watch resourceVersions get 410 Gone."""
        status = self._etcd_post("/v3/kv/range", {"key": "AA==", "limit": 1})
        rev = int(status["header"]["revision"])
        self._etcd_post("/v3/kv/compaction", {"revision": rev, "physical": True})
        return rev

    def _etcd_post(self, path: str, body: Mapping[str, Any]) -> Any:
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.etcd_port}{path}", data=json.dumps(body).encode(), method="POST"
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    # ------------------------------------------------------------------------------ processes
    def _spawn(self, name: str, argv: list[str]) -> None:
        assert self.state_dir is not None
        log = self.state_dir / f"{name}.log"
        self.procs.append(_Proc(name, spawn_logged(argv, log), log))

    def _check_alive(self) -> None:
        for p in self.procs:
            if p.popen.poll() is not None:
                raise ClusterError(f"{p.name} exited with {p.popen.returncode}:\n{self.log_tail(p.name)}")

    def log_tail(self, name: str, lines: int = 30) -> str:
        for p in self.procs:
            if p.name == name and p.log.exists():
                return log_tail(p.log, lines)
        return ""

    def _wait(self, ok: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            if ok():
                return
            time.sleep(0.2)
        raise ClusterError(f"{what} not ready after {timeout:.0f}s")

    @staticmethod
    def _http_ok(url: str) -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return bool(r.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def _ready(self) -> bool:
        try:
            status, _ = self.request("GET", "/readyz")
            return status == 200
        except (OSError, urllib.error.URLError):
            return False

    def _write_kubeconfig(self) -> None:
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": self.name,
                    "cluster": {"server": self.server, "certificate-authority": str(self.ca_file)},
                }
            ],
            "users": [{"name": "admin", "user": {"token": ADMIN_TOKEN}}],
            "contexts": [{"name": self.name, "context": {"cluster": self.name, "user": "admin"}}],
            "current-context": self.name,
        }
        self.kubeconfig.write_text(json.dumps(cfg, indent=2))

    # ------------------------------------------------------------------------------ API helpers
    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        token: str = ADMIN_TOKEN,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> tuple[int, Any]:
        """One API call with the standard library; returns (status, parsed JSON or text)."""
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self.ssl_context()) as r:
                raw = r.read()
                status = r.status
        except urllib.error.HTTPError as e:
            raw = e.read()
            status = e.code
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def api(self, method: str, path: str, body: Any = None, ok: Iterable[int] = (200, 201, 202)) -> Any:
        status, out = self.request(method, path, body)
        if status not in tuple(ok):
            raise ClusterError(f"{method} {path}: HTTP {status}: {out}")
        return out

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.binary("kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            text=True,
            capture_output=True,
            check=check,
        )

    def create_nodes(
        self,
        count: int,
        *,
        prefix: str = "node",
        cpu: str = "4",
        memory: str = "32Gi",
        pods: int = 110,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, str]] = (),
        zones: Sequence[str] = (),
        extra_resources: Mapping[str, str] | None = None,
        start: int = 0,
        parallel: int = 16,
        on_progress: Callable[[int], None] | None = None,
    ) -> list[str]:
        """Create ``count`` KWOK-managed nodes ``<prefix>-<i>`` with status already set (Ready is kept by
        KWOK). Zones, if given, are assigned round-robin to topology.kubernetes.io/zone. ``on_progress``
        is called with the number created so far, after each node (from the creating threads)."""
        names = [f"{prefix}-{i}" for i in range(start, start + count)]
        alloc = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra_resources or {})}

        def body(i: int, name: str) -> dict[str, Any]:
            lbl = {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "type": "kwok",
                **(labels or {}),
            }
            if zones:
                lbl["topology.kubernetes.io/zone"] = zones[i % len(zones)]
            spec: dict[str, Any] = {}
            if taints:
                spec["taints"] = [dict(t) for t in taints]
            return {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": lbl, "annotations": {"kwok.x-k8s.io/node": "fake"}},
                "spec": spec,
                "status": {
                    "allocatable": alloc,
                    "capacity": alloc,
                    "conditions": [
                        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kwok"}
                    ],
                    "phase": "Running",
                },
            }

        errors: list[str] = []
        created = [0]
        lock = threading.Lock()

        def worker(items: list[tuple[int, str]]) -> None:
            for i, name in items:
                status, out = self.request("POST", "/api/v1/nodes", body(i, name))
                if status not in (200, 201, 409):
                    errors.append(f"{name}: HTTP {status}: {out}")
                if on_progress is not None:
                    with lock:
                        created[0] += 1
                        done = created[0]
                    on_progress(done)

        chunks: list[list[tuple[int, str]]] = [[] for _ in range(max(1, min(parallel, count)))]
        for j, item in enumerate(enumerate(names, start)):
            chunks[j % len(chunks)].append(item)
        threads = [threading.Thread(target=worker, args=(c,)) for c in chunks]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise ClusterError(f"creating nodes failed: {errors[:3]}")
        return names

    def delete_all(self, resource: str = "pods", namespace: str = "default") -> None:
        path = f"/api/v1/namespaces/{namespace}/{resource}" if namespace else f"/api/v1/{resource}"
        self.api("DELETE", path + "?gracePeriodSeconds=0")

    def create_token(self, namespace: str, service_account: str, seconds: int = 3600) -> str:
        """Mint a token for a ServiceAccount through the TokenRequest API."""
        out = self.api(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": seconds},
            },
        )
        token: str = out["status"]["token"]
        return token

    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}


_live: set[LocalCluster] = set()


def _stop_all() -> None:
    for c in list(_live):
        try:
            c.stop()
        except (OSError, subprocess.SubprocessError) as e:  # at exit: stop the others all the same
            print(f"pyscheduler.testing.cluster: stopping a cluster at exit failed: {e!r}", file=sys.stderr)


atexit.register(_stop_all)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pyscheduler.testing.cluster``: start a cluster, print its kubeconfig, wait for Ctrl-C."""
    c = LocalCluster(with_controller_manager="--kcm" in (argv or sys.argv[1:]))
    with c:
        print(f"export KUBECONFIG={c.kubeconfig}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
