"""pyscheduler run the way its Deployment runs it: in-cluster config, the manifests' RBAC, leader election.

The module applies everything ``manifests/`` renders except the Deployment (no kubelet here runs our image)
to the session's cluster, mints a token for the ``py-scheduler`` ServiceAccount, writes it with the
cluster's CA into a directory laid out like ``/var/run/secrets/kubernetes.io/serviceaccount``, and starts
the daemon as a pod would: ``KUBERNETES_SERVICE_HOST``/``PORT``, ``POD_NAME``, ``--in-cluster-dir``, the
ConfigMap's own configuration (leader election on, Lease ``py-scheduler/py-scheduler``). With exactly those
permissions it must bind, write events and PodScheduled conditions, hold the lease, and preempt.

Any permission the manifests miss shows up as a 403 in the daemon's log (the API server's message names
the verb and the resource: ``cannot create resource "pods/binding"``). ``assert_not_forbidden`` turns such
lines into a failure that says which verbs on which resources were refused; the negative test proves it
does by running the daemon under a copy of the ClusterRole without ``pods/binding create``.

Cluster-scoped objects (ClusterRole, ClusterRoleBinding, PriorityClasses) are deleted at the end, and the
``py-scheduler`` namespace is deleted and waited for, so other modules can apply the manifests again.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.cluster import REPO_ROOT, LocalCluster
from pyscheduler.testing.daemon import SchedulerProcess
from pyscheduler.testing.kube import (
    create,
    events_for,
    eventually,
    get_pod,
    list_pods,
    node_of,
    scheduled_condition,
)

MANIFESTS = REPO_ROOT / "manifests"
NAMESPACE = "py-scheduler"
SERVICE_ACCOUNT = "py-scheduler"
POD_NAME = "py-scheduler-0"
LEASE_PATH = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/py-scheduler"

Doc = dict[str, Any]

# The API server's wording of an RBAC refusal: ... User "x" cannot <verb> resource "<resource>" ...
REFUSAL = re.compile(r'cannot (\w+) resource \\?"([^"\\]+)\\?"(?: in API group \\?"([^"\\]*)\\?")?')


def refusals(text: str) -> list[tuple[str, str, str]]:
    """(verb, resource, group) for every RBAC refusal in ``text`` (a log, an event note), in order, once."""
    seen: dict[tuple[str, str, str], None] = {}
    for line in forbidden_lines(text):
        for verb, resource, group in REFUSAL.findall(line):
            seen.setdefault((verb, resource, group or ""), None)
    return list(seen)


def forbidden_lines(text: str) -> list[str]:
    """Log lines with a 403, except the NamespaceLifecycle one (writing an event into a namespace a test
    just deleted is refused "because it is being terminated": not a permission)."""
    return [
        ln
        for ln in text.splitlines()
        if ("forbidden" in ln.lower() or "HTTP 403" in ln) and "because it is being terminated" not in ln
    ]


def assert_not_forbidden(daemon: SchedulerProcess) -> None:
    """Fail, naming each refused verb and resource, if the daemon's log holds a 403."""
    lines = forbidden_lines(daemon.log_text())
    text = "\n".join(lines)
    if lines:
        named = ", ".join(
            f"{verb} {resource}" + (f" ({group})" if group else "")
            for verb, resource, group in refusals(text)
        )
        raise AssertionError(
            f"the daemon was refused by RBAC: {named or 'see the lines below'}\n" + "\n".join(lines[:10])
        )


# ------------------------------------------------------------------------------------------- fixtures


def _wait_namespace_gone(cluster: LocalCluster, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, _ = cluster.request("GET", f"/api/v1/namespaces/{NAMESPACE}")
        if status == 404:
            return
        time.sleep(0.3)
    raise AssertionError(f"namespace {NAMESPACE} still exists after {timeout:.0f}s")


@pytest.fixture(scope="module")
def rendered(cluster: LocalCluster) -> list[Doc]:
    out = cluster.kubectl("kustomize", str(MANIFESTS))
    return [d for d in yaml.safe_load_all(out.stdout) if d]


@pytest.fixture(scope="module")
def manifests(cluster: LocalCluster, rendered: list[Doc]) -> Iterator[list[Doc]]:
    """The base minus its Deployment, applied; deleted (namespace waited for) afterwards."""
    objs = [d for d in rendered if d["kind"] != "Deployment"]
    assert {d["kind"] for d in objs} >= {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ConfigMap",
    }
    as_list = json.dumps({"apiVersion": "v1", "kind": "List", "items": objs})
    _wait_namespace_gone(cluster)  # a previous module's copy may still be terminating
    try:
        out = cluster.kubectl("apply", "-f", "-", input=as_list, check=False)
        assert out.returncode == 0, out.stderr
        yield objs
    finally:
        cluster.request("DELETE", LEASE_PATH)  # the daemon's, not in the list
        cluster.kubectl("delete", "-f", "-", "--ignore-not-found", "--wait=false", input=as_list, check=False)
        _wait_namespace_gone(cluster)


def configmap_config(rendered: list[Doc]) -> Doc:
    cm = next(
        d for d in rendered if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "py-scheduler-config"
    )
    config: Doc = yaml.safe_load(cm["data"]["config.yaml"])
    return config


def service_account_dir(cluster: LocalCluster, directory: Path, namespace: str, name: str) -> Path:
    """What the kubelet mounts at /var/run/secrets/kubernetes.io/serviceaccount: token, ca.crt, namespace."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(cluster.create_token(namespace, name, seconds=3600))
    shutil.copy(cluster.ca_file, directory / "ca.crt")
    (directory / "namespace").write_text(namespace)
    return directory


def in_cluster_daemon(
    cluster: LocalCluster, config: Doc, sa_dir: Path, *, pod_name: str, leader_elect: bool
) -> SchedulerProcess:
    env = {
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(cluster.port),
        "POD_NAME": pod_name,
        "KUBECONFIG": "",
    }
    return SchedulerProcess(
        None,
        config,
        leader_elect=leader_elect,
        env=env,
        name=pod_name,
        extra_args=("--in-cluster-dir", str(sa_dir)),
    )


@pytest.fixture(scope="module")
def daemon(
    cluster: LocalCluster, manifests: list[Doc], rendered: list[Doc], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SchedulerProcess]:
    config = configmap_config(rendered)
    assert config["leaderElection"]["leaderElect"] is True
    assert config["leaderElection"]["resourceNamespace"] == NAMESPACE
    sa_dir = service_account_dir(
        cluster, tmp_path_factory.mktemp("sa") / "serviceaccount", NAMESPACE, SERVICE_ACCOUNT
    )
    d = in_cluster_daemon(cluster, config, sa_dir, pod_name=POD_NAME, leader_elect=True)
    with d:
        yield d
        assert d.alive(), f"the daemon died:\n{d.log_tail()}"
        assert_not_forbidden(d)


def pool(cluster: LocalCluster, ns: str, count: int, **kw: Any) -> list[str]:
    return cluster.create_nodes(count, prefix=f"{ns}-n", labels={"pool": ns}, **kw)


def pod(ns: str, name: str, scheduler: str = "py-scheduler"):  # type: ignore[no-untyped-def]
    return make_pod(name, ns).scheduler(scheduler).node_selector({"pool": ns})


def pod_scheduled(cluster: LocalCluster, ns: str, name: str, status: str) -> Doc:
    """The pod's PodScheduled condition, once it has the given status."""

    def get() -> Doc:
        cond = scheduled_condition(get_pod(cluster, ns, name))
        return cond if cond is not None and cond["status"] == status else {}

    out: Doc = eventually(get, what=f"PodScheduled={status} on {ns}/{name}")
    return out


def lease_spec(cluster: LocalCluster) -> Doc:
    """The Lease's spec; {} while it does not exist."""
    status, out = cluster.request("GET", LEASE_PATH)
    return dict(out["spec"]) if status == 200 else {}


# ------------------------------------------------------------------------------------------- tests


def test_daemon_runs_in_cluster_as_the_service_account_and_holds_the_lease(
    cluster: LocalCluster, daemon: SchedulerProcess
) -> None:
    spec: Doc = eventually(
        lambda: lease_spec(cluster) if lease_spec(cluster).get("holderIdentity") else {},
        timeout=20,
        what="the lease held",
    )
    assert spec["holderIdentity"] == POD_NAME
    assert spec["leaseDurationSeconds"] == 15  # the ConfigMap's leaseDuration
    # the daemon's token is the ServiceAccount's, and no more: an admin-only call with it is refused
    token = (Path(daemon.argv[daemon.argv.index("--in-cluster-dir") + 1]) / "token").read_text()
    status, out = cluster.request("GET", "/api/v1/secrets", token=token)
    user = 'User "system:serviceaccount:py-scheduler:py-scheduler"'
    assert status == 403 and f'{user} cannot list resource "secrets"' in out["message"]
    eventually(
        lambda: 'leader_election_master_status{name="py-scheduler"} 1.0' in daemon.metrics(),
        what="the leader's metric",
    )
    assert_not_forbidden(daemon)


def test_schedules_pods_with_events_and_conditions(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess
) -> None:
    nodes = pool(cluster, ns, 3, cpu="2", memory="4Gi")
    for i in range(10):
        create(cluster, pod(ns, f"web-{i}").req(cpu="100m", memory="64Mi").json())
    create(cluster, pod(ns, "too-big").req(cpu="3").json())

    def placed() -> dict[str, str]:
        got = {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in list_pods(cluster, ns)}
        return got if all(got[f"web-{i}"] for i in range(10)) else {}

    where = eventually(placed, timeout=30, what="10 pods bound")
    assert {where[f"web-{i}"] for i in range(10)} <= set(nodes)
    ev = eventually(lambda: events_for(cluster, ns, "web-0", "Scheduled"), what="Scheduled event")[0]
    assert ev["note"] == f"Successfully assigned {ns}/web-0 to {where['web-0']}"
    assert ev["reportingController"] == "py-scheduler"
    assert pod_scheduled(cluster, ns, "web-0", "True")  # written by the API server on binding

    failed = eventually(
        lambda: events_for(cluster, ns, "too-big", "FailedScheduling"), what="FailedScheduling"
    )
    assert "3 Insufficient cpu" in failed[0]["note"]
    cond = pod_scheduled(cluster, ns, "too-big", "False")
    assert cond["reason"] == "Unschedulable"
    assert "Insufficient cpu" in cond["message"]
    assert node_of(cluster, ns, "too-big") == ""
    assert_not_forbidden(daemon)


def test_preempts_a_lower_priority_pod(cluster: LocalCluster, ns: str, daemon: SchedulerProcess) -> None:
    """Preemption needs pods delete and pods/status patch (DisruptionTarget, nominatedNodeName)."""
    (node,) = pool(cluster, ns, 1, cpu="1", memory="4Gi")
    classes = [f"{ns}-low", f"{ns}-high"]
    try:
        for name, value in zip(classes, (10, 1000), strict=True):
            create(
                cluster,
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                },
            )
        create(cluster, pod(ns, "low").req(cpu="800m").priority_class(classes[0]).json())
        eventually(lambda: node_of(cluster, ns, "low") == node, what="low-priority pod bound")
        low_uid = get_pod(cluster, ns, "low")["metadata"]["uid"]
        create(cluster, pod(ns, "high").req(cpu="800m").priority_class(classes[1]).json())

        eventually(lambda: node_of(cluster, ns, "high") == node, timeout=30, what="high-priority pod bound")
        status, _ = cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/low")
        assert status == 404, "the victim was deleted"
        preempted = eventually(lambda: events_for(cluster, ns, "low", "Preempted"), what="Preempted event")
        assert preempted[0]["note"].startswith("Preempted by pod ")
        assert preempted[0]["regarding"]["uid"] == low_uid
    finally:
        for name in classes:
            cluster.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")
    assert_not_forbidden(daemon)


def test_a_missing_permission_fails_naming_verb_and_resource(
    cluster: LocalCluster, ns: str, rendered: list[Doc], manifests: list[Doc], tmp_path: Path
) -> None:
    """The manifests' ClusterRole minus ``pods/binding create``, bound to another ServiceAccount."""
    role = copy.deepcopy(next(d for d in rendered if d["kind"] == "ClusterRole"))
    rules = [r for r in role["rules"] if "pods/binding" not in r["resources"]]
    assert len(rules) == len(role["rules"]) - 1
    name = f"py-scheduler-nobind-{ns}"
    role["metadata"] = {"name": name}
    role["rules"] = rules
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "nobind", "namespace": ns}],
    }
    scheduler = "py-scheduler-nobind"  # not the module daemon's profile: it must not bind these pods
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": scheduler}],
    }
    try:
        cluster.api("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role)
        cluster.api("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)
        cluster.api(
            "POST",
            f"/api/v1/namespaces/{ns}/serviceaccounts",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nobind"}},
        )
        sa_dir = service_account_dir(cluster, tmp_path / "serviceaccount", ns, "nobind")
        pool(cluster, ns, 1)
        with in_cluster_daemon(cluster, config, sa_dir, pod_name="nobind-0", leader_elect=False) as d:
            create(cluster, pod(ns, "unbindable", scheduler).json())
            ev = eventually(
                lambda: events_for(cluster, ns, "unbindable", "FailedScheduling"),
                timeout=30,
                what="FailedScheduling for the refused binding",
            )
            note = ev[0]["note"]
            user = f'User "system:serviceaccount:{ns}:nobind"'
            assert f'pods "unbindable" is forbidden: {user} cannot create resource "pods/binding"' in note
            cond = pod_scheduled(cluster, ns, "unbindable", "False")
            assert cond["reason"] == "SchedulerError"
            assert 'cannot create resource "pods/binding"' in cond["message"]
            assert node_of(cluster, ns, "unbindable") == ""
            eventually(
                lambda: (
                    'cannot create resource \\"pods/binding\\"' in d.log_text()
                    or 'cannot create resource "pods/binding"' in d.log_text()
                ),
                what="the 403 in the log",
            )

            with pytest.raises(AssertionError) as failure:
                assert_not_forbidden(d)
            message = str(failure.value)
            assert message.startswith("the daemon was refused by RBAC: create pods/binding")
            assert refusals(d.log_text()) == [("create", "pods/binding", "")]
    finally:
        cluster.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}")
        cluster.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}")
