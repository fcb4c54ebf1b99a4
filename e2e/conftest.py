"""The end-to-end suite's cluster: the ``kube`` fixture, the same tests against two kinds of cluster.

- ``PYSCHEDULER_E2E_KUBECONFIG`` set (``make e2e-kind``, e2e/kind.sh): that cluster, where pyscheduler is
  already deployed from manifests/ (a Deployment of two replicas, leader election on). Nothing is
  installed; the fixture only checks that a replica holds the lease and reads the deployed configuration
  to learn which profiles exist.
- unset (``make e2e``): a local control plane (etcd, kube-apiserver, kube-controller-manager, KWOK) with
  4 fake nodes, one labelled ``scheduler.pyscheduler.io/filter=gpu``. manifests/ is applied except its
  Deployment (nothing here runs our image), and the daemon is started the way that Deployment starts it:
  in-cluster configuration with a token of the ``py-scheduler`` ServiceAccount (so exactly the manifests'
  RBAC), ``POD_NAME``, the ConfigMap's configuration, plus the ``py-scheduler-label-match`` profile of
  manifests/examples/label-match/ when the ``LabelMatch`` plugin is registered.

Tests talk to either cluster through ``Kube``: plain HTTPS with the standard library, authenticated from the
kubeconfig (a bearer token, or kind's client certificate), so no test depends on pyscheduler's own client.

``pytest e2e --kind`` (what kind.sh runs) insists on the kind cluster: without the variable it stops at
once instead of silently testing the local control plane.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import ssl
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from pyscheduler.testing.cluster import REPO_ROOT, LocalCluster
from pyscheduler.testing.daemon import SchedulerProcess

T = TypeVar("T")
Doc = dict[str, Any]

MANIFESTS = REPO_ROOT / "manifests"
LABEL_MATCH_CONFIGMAP = MANIFESTS / "examples" / "label-match" / "configmap.yaml"
SCHEDULER_NAMESPACE = "py-scheduler"
GPU_LABEL = "scheduler.pyscheduler.io/filter"
LOCAL_NODES = 4


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--kind",
        action="store_true",
        default=False,
        help="run against the kind cluster in $PYSCHEDULER_E2E_KUBECONFIG (fail if unset)",
    )


# ------------------------------------------------------------------------------------------- client


class Kube:
    """A cluster reached through a kubeconfig's current context, with the standard library only."""

    def __init__(self, kubeconfig: Path, *, mode: str) -> None:
        self.kubeconfig = kubeconfig
        self.mode = mode  # "local" or "kind"
        self.profiles: set[str] = set()
        self.daemon: SchedulerProcess | None = None  # local mode: the scheduler process
        self._dir = Path(tempfile.mkdtemp(prefix="pyscheduler-e2e-"))
        cfg = yaml.safe_load(kubeconfig.read_text())
        ctx_name = cfg.get("current-context") or cfg["contexts"][0]["name"]
        ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == ctx_name)
        cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
        user: Doc = (
            next((u["user"] for u in cfg.get("users") or [] if u["name"] == ctx.get("user")), {}) or {}
        )
        self.server = str(cluster["server"]).rstrip("/")

        if cluster.get("insecure-skip-tls-verify"):
            self._ssl = ssl._create_unverified_context()
        elif cluster.get("certificate-authority-data"):
            ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
            self._ssl = ssl.create_default_context(cadata=ca)
        elif cluster.get("certificate-authority"):
            self._ssl = ssl.create_default_context(cafile=self._resolve(cluster["certificate-authority"]))
        else:
            self._ssl = ssl.create_default_context()
        self._headers = {"Accept": "application/json"}
        if user.get("token"):
            self._headers["Authorization"] = f"Bearer {user['token']}"
        elif user.get("tokenFile"):
            self._headers["Authorization"] = (
                f"Bearer {Path(self._resolve(user['tokenFile'])).read_text().strip()}"
            )
        cert = self._material(user, "client-certificate", "client.crt")
        key = self._material(user, "client-key", "client.key")
        if cert and key:
            self._ssl.load_cert_chain(cert, key)
        if "Authorization" not in self._headers and not cert:
            raise RuntimeError(
                f"{kubeconfig}: the e2e client supports token and client-certificate users "
                "only (not exec or auth-provider plugins)"
            )

    def _resolve(self, path: str) -> str:
        p = Path(path).expanduser()
        return str(p if p.is_absolute() else self.kubeconfig.parent / p)

    def _material(self, user: Doc, field: str, filename: str) -> str | None:
        if user.get(f"{field}-data"):
            path = self._dir / filename
            path.write_bytes(base64.b64decode(user[f"{field}-data"]))
            path.chmod(0o600)
            return str(path)
        if user.get(field):
            return self._resolve(user[field])
        return None

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)

    # ---------------------------------------------------------------------------------------- calls
    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> tuple[int, Any]:
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(
            self.server + path, data=data, method=method, headers=dict(self._headers)
        )
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self._ssl) as r:
                raw, status = r.read(), r.status
        except urllib.error.HTTPError as e:
            raw, status = e.read(), e.code
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def api(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 201, 202)) -> Any:
        status, out = self.request(method, path, body)
        if status not in ok:
            raise AssertionError(f"{method} {path}: HTTP {status}: {out}")
        return out

    def merge_patch(self, path: str, body: Doc) -> Any:
        status, out = self.request("PATCH", path, body, content_type="application/merge-patch+json")
        if status != 200:
            raise AssertionError(f"PATCH {path}: HTTP {status}: {out}")
        return out

    # ---------------------------------------------------------------------------------------- reads
    def pods(self, ns: str, selector: str = "") -> list[Doc]:
        q = f"?labelSelector={urllib.parse.quote(selector)}" if selector else ""
        items: list[Doc] = self.api("GET", f"/api/v1/namespaces/{ns}/pods{q}")["items"]
        return items

    def pod(self, ns: str, name: str) -> Doc:
        out: Doc = self.api("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
        return out

    def events(self, ns: str, name: str = "", reason: str = "") -> list[Doc]:
        items = self.api("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events")["items"]
        return [
            e
            for e in items
            if (not name or e.get("regarding", {}).get("name") == name)
            and (not reason or e.get("reason") == reason)
        ]

    def nodes(self) -> dict[str, Doc]:
        """Nodes a workload pod may land on: not a control plane, no NoSchedule/NoExecute taint."""
        out: dict[str, Doc] = {}
        for n in self.api("GET", "/api/v1/nodes")["items"]:
            labels = n["metadata"].get("labels") or {}
            taints = (n.get("spec") or {}).get("taints") or []
            if "node-role.kubernetes.io/control-plane" in labels or n["spec"].get("unschedulable"):
                continue
            if any(t.get("effect") in ("NoSchedule", "NoExecute") for t in taints):
                continue
            out[n["metadata"]["name"]] = n
        return out

    def gpu_nodes(self) -> set[str]:
        return {
            name
            for name, n in self.nodes().items()
            if (n["metadata"].get("labels") or {}).get(GPU_LABEL) == "gpu"
        }

    def lease_holder(self) -> str:
        status, out = self.request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{SCHEDULER_NAMESPACE}/leases/py-scheduler"
        )
        return str(((out or {}).get("spec") or {}).get("holderIdentity") or "") if status == 200 else ""

    # ---------------------------------------------------------------------------------------- diagnostics
    def describe(self, ns: str) -> str:
        """Pods and scheduler events of a namespace, and the local daemon's log tail, for failure messages."""
        lines = []
        with contextlib.suppress(Exception):
            for p in self.pods(ns):
                cond: Doc = next(
                    (c for c in p["status"].get("conditions") or [] if c["type"] == "PodScheduled"), {}
                )
                lines.append(
                    f"  pod {p['metadata']['name']}: {p['status'].get('phase')} "
                    f"node={p['spec'].get('nodeName', '')} {cond.get('reason', '')} {cond.get('message', '')}"
                )
            for e in self.events(ns)[-10:]:
                lines.append(
                    f"  event {e.get('regarding', {}).get('name')}: {e.get('reason')}: {e.get('note')}"
                )
        if self.daemon is not None:
            lines.append("daemon log tail:\n" + self.daemon.log_tail(15))
        return "\n".join(lines)

    def eventually(
        self, fn: Callable[[], T], ns: str, what: str, timeout: float = 60.0, interval: float = 0.3
    ) -> T:
        """``fn()`` until truthy; on timeout fail with what the namespace looks like."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            value = fn()
            if value:
                return value
            last = value
            time.sleep(interval)
        raise AssertionError(f"{what}: not within {timeout:.0f}s (last: {last!r})\n{self.describe(ns)}")


# ------------------------------------------------------------------------------------------- fixtures


def _profiles(config: Doc) -> set[str]:
    return {str(p.get("schedulerName") or "default-scheduler") for p in config.get("profiles") or []}


def _label_match_registered() -> bool:
    from pyscheduler.plugins.registry import full_registry

    return "LabelMatch" in full_registry()


def _local_config(rendered: list[Doc]) -> Doc:
    """The ConfigMap's configuration, plus the label-match example's extra profile if LabelMatch exists."""
    cm = next(d for d in rendered if d["kind"] == "ConfigMap")
    config: Doc = yaml.safe_load(cm["data"]["config.yaml"])
    if _label_match_registered():
        example = yaml.safe_load(yaml.safe_load(LABEL_MATCH_CONFIGMAP.read_text())["data"]["config.yaml"])
        have = _profiles(config)
        config["profiles"] = list(config["profiles"]) + [
            p for p in example["profiles"] if p.get("schedulerName") not in have
        ]
    return config


def _forbidden(log: str) -> list[str]:
    return [
        ln
        for ln in log.splitlines()
        if ("forbidden" in ln.lower() or "HTTP 403" in ln) and "because it is being terminated" not in ln
    ]


@contextlib.contextmanager
def _local_cluster() -> Iterator[Kube]:
    cluster = LocalCluster(with_kwok=True, with_controller_manager=True, name="e2e")
    cluster.start()
    kube: Kube | None = None
    try:
        cluster.create_nodes(LOCAL_NODES - 1, prefix="e2e-node", cpu="4", memory="16Gi")
        cluster.create_nodes(
            1, prefix="e2e-node", cpu="4", memory="16Gi", start=LOCAL_NODES - 1, labels={GPU_LABEL: "gpu"}
        )
        rendered = [d for d in yaml.safe_load_all(cluster.kubectl("kustomize", str(MANIFESTS)).stdout) if d]
        objs = [d for d in rendered if d["kind"] != "Deployment"]
        cluster.kubectl(
            "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs})
        )

        sa = Path(tempfile.mkdtemp(prefix="pyscheduler-e2e-sa-"))
        (sa / "token").write_text(cluster.create_token(SCHEDULER_NAMESPACE, "py-scheduler", seconds=3600))
        shutil.copy(cluster.ca_file, sa / "ca.crt")
        (sa / "namespace").write_text(SCHEDULER_NAMESPACE)
        config = _local_config(rendered)
        env = {
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(cluster.port),
            "POD_NAME": "py-scheduler-e2e-0",
            "KUBECONFIG": "",
        }
        daemon = SchedulerProcess(
            None,
            config,
            leader_elect=True,
            env=env,
            name="py-scheduler-e2e",
            extra_args=("--in-cluster-dir", str(sa)),
        )
        with daemon:
            kube = Kube(cluster.kubeconfig, mode="local")
            kube.daemon = daemon
            kube.profiles = _profiles(config)
            holder = _wait(kube.lease_holder, 30)
            assert holder == "py-scheduler-e2e-0", f"the daemon did not take the lease:\n{daemon.log_tail()}"
            yield kube
            assert daemon.alive(), f"the scheduler died during the suite:\n{daemon.log_tail()}"
            refused = _forbidden(daemon.log_text())
            assert not refused, "the scheduler was refused by RBAC:\n" + "\n".join(refused[:10])
        shutil.rmtree(sa, ignore_errors=True)
    finally:
        if kube is not None:
            kube.close()
        cluster.stop()


def _wait(fn: Callable[[], T], timeout: float) -> T:
    deadline = time.monotonic() + timeout
    value = fn()
    while not value and time.monotonic() < deadline:
        time.sleep(0.2)
        value = fn()
    return value


def _kind_cluster(kubeconfig: str) -> Kube:
    kube = Kube(Path(kubeconfig), mode="kind")
    status, cm = kube.request(
        "GET", f"/api/v1/namespaces/{SCHEDULER_NAMESPACE}/configmaps/py-scheduler-config"
    )
    if status != 200:
        raise RuntimeError(
            f"pyscheduler is not deployed in {kubeconfig}: ConfigMap "
            f"{SCHEDULER_NAMESPACE}/py-scheduler-config: HTTP {status}"
        )
    kube.profiles = _profiles(yaml.safe_load(cm["data"]["config.yaml"]))
    if not _wait(kube.lease_holder, 60):
        raise RuntimeError(f"no pyscheduler replica holds the lease {SCHEDULER_NAMESPACE}/py-scheduler")
    return kube


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--kind", default=False) and not os.environ.get("PYSCHEDULER_E2E_KUBECONFIG"):
        raise pytest.UsageError("--kind: PYSCHEDULER_E2E_KUBECONFIG is not set (run `make e2e-kind`)")


@pytest.fixture(scope="session")
def kube() -> Iterator[Kube]:
    kubeconfig = os.environ.get("PYSCHEDULER_E2E_KUBECONFIG", "")
    if kubeconfig:
        k = _kind_cluster(kubeconfig)
        try:
            yield k
        finally:
            k.close()
    else:
        with _local_cluster() as k:
            yield k


@pytest.fixture
def ns(kube: Kube) -> Iterator[str]:
    """A fresh namespace, deleted afterwards (without waiting)."""
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    kube.api(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    yield name
    kube.request("DELETE", f"/api/v1/namespaces/{name}")
