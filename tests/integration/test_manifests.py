"""The deployment manifests (``manifests/``, a kustomize base) against the real API server.

- ``kubectl kustomize manifests`` renders the expected objects, Namespace first;
- the ClusterRole and the lease Role grant exactly the calls derived from pyscheduler/'s code (both ways:
  nothing granted is unused, nothing called is missing), no wildcards, every kind the daemon watches, and
  nothing kube-scheduler's own ``system:kube-scheduler`` + ``system:volume-scheduler`` roles do not grant;
- every Deployment container runs with the restricted security context;
- the ConfigMap's KubeSchedulerConfiguration passes pyscheduler's loader;
- ``kubectl apply -k manifests/ --dry-run=server`` passes, a real apply creates the objects and the
  Deployment's pods are admitted (Pod Security "restricted" is enforced in the namespace);
- a token of the ServiceAccount can make every API call the daemon makes (list/watch of each kind, the
  lease, bind, status patches, events, deletes, PV/PVC writes) and is refused what it should not do.

The session's cluster is shared: the module applies the manifests once and deletes what it created (the
namespace and the cluster-scoped objects) at the end.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyscheduler.testing.cluster import REPO_ROOT, LocalCluster

MANIFESTS = REPO_ROOT / "manifests"
EXAMPLES = MANIFESTS / "examples"
NAMESPACE = "py-scheduler"
SERVICE_ACCOUNT = "py-scheduler"
LEASE = "py-scheduler"

Doc = dict[str, Any]

# ------------------------------------------------------------ the API calls, derived from the code

PKG = REPO_ROOT / "pyscheduler"
# Api methods that take the kind first, and the RBAC verb each sends
_KIND_VERBS = {"get": "get", "create": "create", "update": "update", "patch": "patch", "delete": "delete"}
# Api methods that take the kind first and write a subresource: method -> (subresource, verb)
_KIND_SUBRESOURCE_VERBS = {"update_status": ("status", "update")}
# Api methods with a fixed target; any reference to one (a call, a bound method handed to the writer,
# a getattr by name) counts as a use
_FIXED = {
    "patch_pod_status": ("", "pods/status", "patch"),
    "add_pod_condition": ("", "pods/status", "patch"),
    "delete_pod": ("", "pods", "delete"),
    "create_event": ("events.k8s.io", "events", "create"),
    "patch_event_series": ("events.k8s.io", "events", "patch"),
    "patch_pod_group_status": ("scheduling.k8s.io", "podgroups/status", "patch"),
}
# bind is also a plugin's and an extender's method name: only on an API client it is the binding POST
_CLIENT_BIND = ("", "pods/binding", "create")


def _group_resource(kind: str) -> tuple[str, str]:
    from pyscheduler.client.api import KINDS

    prefix, resource, _ = KINDS[kind]
    return ("" if prefix == "/api/v1" else prefix.split("/")[2]), resource


def _path_group_resource(path: str) -> tuple[str, str]:
    parts = path.strip("/").split("/")
    return ("", parts[2]) if parts[0] == "api" else (parts[1], parts[3])


def code_calls(files: list[Path]) -> set[tuple[str, str, str]]:
    """(group, resource, verb) of every write or single-object read these files make through the Api.

    Walks the syntax trees: ``<x>api.<verb>(KIND, ...)`` / ``<x>client.<verb>(KIND, ...)`` with KIND a
    string or a module-level string constant, ``client.bind``, and any reference to the fixed-target
    methods. An Api call it cannot resolve (a raw ``request``, a kind in a variable) fails the test.
    """
    import ast

    trees = {f: ast.parse(f.read_text(encoding="utf-8")) for f in files}
    consts = _module_string_constants()
    used: set[tuple[str, str, str]] = set()
    for f, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in _FIXED:
                used.add(_FIXED[node.attr])
            if isinstance(node, ast.Constant) and node.value in _FIXED:
                used.add(_FIXED[node.value])  # getattr(client, "patch_pod_status")
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            receiver = ast.unparse(node.func.value)
            if receiver.endswith(("api", "client")):
                call = _api_call(node, f"{f.relative_to(REPO_ROOT)}:{node.lineno}", consts)
                if call is not None:
                    used.add(call)
    return used


def _module_string_constants() -> dict[str, str]:
    """NAME -> value of every module-level ``NAME = "string"`` in pyscheduler/ (kinds passed by name)."""
    import ast

    consts: dict[str, str] = {}
    for pkg_file in PKG.rglob("*.py"):
        for stmt in ast.parse(pkg_file.read_text(encoding="utf-8")).body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant):
                for target in stmt.targets:
                    if isinstance(target, ast.Name) and isinstance(stmt.value.value, str):
                        consts[target.id] = stmt.value.value
    return consts


def _api_call(node: Any, where: str, consts: dict[str, str]) -> tuple[str, str, str] | None:
    """(group, resource, verb) of one ``<x>api.<method>(...)`` call; None for a method that is no API
    call; an AssertionError for one this test cannot resolve."""
    import ast

    method = node.func.attr
    if method == "bind":
        return _CLIENT_BIND
    if method == "request":
        raise AssertionError(f"{where}: a raw request; give it an Api method so RBAC can be derived")
    if method not in _KIND_VERBS and method not in _KIND_SUBRESOURCE_VERBS:
        return None
    arg = node.args[0] if node.args else None
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        kind = arg.value
    elif isinstance(arg, ast.Name) and arg.id in consts:
        kind = consts[arg.id]
    else:
        raise AssertionError(f"{where}: {method} of a kind this test cannot resolve")
    group, resource = _group_resource(kind)
    if method in _KIND_SUBRESOURCE_VERBS:
        sub, verb = _KIND_SUBRESOURCE_VERBS[method]
        return (group, f"{resource}/{sub}", verb)
    return (group, resource, _KIND_VERBS[method])


def watched_paths() -> list[str]:
    """Every kind the daemon lists and watches; the resource.k8s.io kinds when a profile enables
    DynamicResources (granted cluster-wide all the same: the role does not depend on the profile)."""
    from pyscheduler.app import DRA_CLAIMS_PATH, DRA_OBJECT_KINDS, OBJECT_KINDS, POD_GROUP_KINDS

    return [
        "/api/v1/pods",
        "/api/v1/nodes",
        *(path for path, _ in OBJECT_KINDS.values()),
        DRA_CLAIMS_PATH,
        *(path for path, _ in DRA_OBJECT_KINDS.values()),
        *(path for path, _ in POD_GROUP_KINDS.values()),  # with the GenericWorkload gate on
    ]


def daemon_calls() -> set[tuple[str, str, str]]:
    """Everything the daemon sends: list + watch of each watched kind, and the calls in its code (all of
    pyscheduler/ but explain, which runs with the caller's credentials, and the test helpers)."""
    files = [
        f
        for f in PKG.rglob("*.py")
        if not f.name.startswith("test_") and "testing" not in f.parts and f.name != "explain.py"
    ]
    used = code_calls(files)
    for path in watched_paths():
        used |= {(*_path_group_resource(path), verb) for verb in ("list", "watch")}
    return used


def explain_calls() -> set[tuple[str, str, str]]:
    """explain GETs its pod and lists what the daemon watches (its snapshot), the resource.k8s.io kinds
    DynamicResources reads and the PodGroups (with the GenericWorkload gate) included."""
    from pyscheduler.app import DRA_CLAIMS_PATH, DRA_OBJECT_KINDS, OBJECT_KINDS, POD_GROUP_KINDS

    used = code_calls([PKG / "explain.py"])
    paths = [
        "/api/v1/pods",
        "/api/v1/nodes",
        *(path for path, _ in OBJECT_KINDS.values()),
        DRA_CLAIMS_PATH,
        *(path for path, _ in DRA_OBJECT_KINDS.values()),
        *(path for path, _ in POD_GROUP_KINDS.values()),  # with --feature-gates GenericWorkload=true
    ]
    return used | {(*_path_group_resource(path), "list") for path in paths}


def eventually(fn: Callable[[], Any], timeout: float = 30.0, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last value {last!r})")


def grants(rules: list[Doc], *, with_names: bool = False) -> set[tuple[Any, ...]]:
    """(group, resource, verb[, resourceName or None]) for every combination the rules spell out."""
    out: set[tuple[Any, ...]] = set()
    for r in rules:
        names = r.get("resourceNames") or [None]
        for g in r.get("apiGroups") or []:
            for res in r.get("resources") or []:
                for v in r.get("verbs") or []:
                    for n in names:
                        out.add((g, res, v, n) if with_names else (g, res, v))
    return out


def strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield str(k)
            yield from strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from strings(v)


def find(docs: list[Doc], kind: str, name: str | None = None) -> Doc:
    hits = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(hits) == 1, f"expected one {kind} {name or ''}, found {len(hits)}"
    return hits[0]


def load_yaml_files(*paths: Path) -> list[Doc]:
    docs: list[Doc] = []
    for p in paths:
        docs.extend(d for d in yaml.safe_load_all(p.read_text()) if d)
    return docs


def example_files() -> list[Path]:
    return sorted(p for p in EXAMPLES.rglob("*.yaml"))


# ------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def rendered(cluster: LocalCluster) -> list[Doc]:
    out = cluster.kubectl("kustomize", str(MANIFESTS))
    return [d for d in yaml.safe_load_all(out.stdout) if d]


@pytest.fixture(scope="module")
def applied(cluster: LocalCluster, rendered: list[Doc]) -> Iterator[dict[str, Any]]:
    """Apply the base once for the module; delete it afterwards (the cluster is shared)."""
    # A server-side dry run cannot create the namespace its namespaced objects go to, so create the
    # Namespace (exactly as rendered) first; the dry run then checks everything else.
    namespace = find(rendered, "Namespace", NAMESPACE)
    try:
        cluster.kubectl("apply", "-f", "-", input=json.dumps(namespace))
        dry = cluster.kubectl("apply", "-k", str(MANIFESTS), "--dry-run=server", check=False)
        real = cluster.kubectl("apply", "-k", str(MANIFESTS), check=False)
        yield {"dry_run": dry, "apply": real}
    finally:
        cluster.kubectl("delete", "-k", str(MANIFESTS), "--ignore-not-found", "--wait=false", check=False)
        cluster.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false", check=False)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            status, _ = cluster.request("GET", f"/api/v1/namespaces/{NAMESPACE}")
            if status == 404:
                break
            time.sleep(0.5)


# ------------------------------------------------------------------------------------------- rendering


def test_kustomize_renders_the_base(rendered: list[Doc]) -> None:
    got = {(d["kind"], d["metadata"]["name"]) for d in rendered}
    assert got == {
        ("Namespace", NAMESPACE),
        ("ServiceAccount", SERVICE_ACCOUNT),
        ("ClusterRole", "py-scheduler"),
        ("ClusterRole", "py-scheduler-explain"),
        ("ClusterRoleBinding", "py-scheduler"),
        ("Role", "py-scheduler-leader-election"),
        ("RoleBinding", "py-scheduler-leader-election"),
        ("ConfigMap", "py-scheduler-config"),
        ("Service", "py-scheduler-metrics"),
        ("Deployment", "py-scheduler"),
    }
    # kustomize's order makes one `kubectl apply -k` work: the Namespace before what goes in it, the
    # ServiceAccount and RBAC before the Deployment that uses them.
    kinds = [d["kind"] for d in rendered]
    assert kinds[0] == "Namespace"
    assert kinds.index("ServiceAccount") < kinds.index("Deployment")
    assert kinds.index("ConfigMap") < kinds.index("Deployment")
    for d in rendered:
        if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert d["metadata"].get("namespace") == NAMESPACE, d["kind"]
    dep = find(rendered, "Deployment")
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "pyscheduler:dev"
    svc = find(rendered, "Service")
    assert [p["port"] for p in svc["spec"]["ports"]] == [10259]
    assert svc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()


def test_cluster_role_has_no_wildcards(rendered: list[Doc]) -> None:
    roles = [d for d in rendered if d["kind"] in ("ClusterRole", "Role")]
    assert len(roles) == 3
    for role in roles:
        bad = [s for s in strings(role) if "*" in s]
        assert not bad, f"{role['kind']} {role['metadata']['name']} has wildcards: {bad}"


def test_code_derived_calls_are_found() -> None:
    # the scan sees what the daemon is known to do; if it stopped finding these it would prove nothing
    calls = daemon_calls()
    for call in [
        ("", "pods/binding", "create"),
        ("", "pods/status", "patch"),
        ("", "pods", "delete"),
        ("events.k8s.io", "events", "create"),
        ("", "persistentvolumes", "patch"),
        ("", "persistentvolumeclaims", "patch"),
        ("coordination.k8s.io", "leases", "update"),
        ("", "pods", "watch"),
    ]:
        assert call in calls
    assert ("", "pods", "get") in explain_calls() and ("", "pods", "get") not in calls


def test_rbac_grants_exactly_what_the_daemon_code_calls(rendered: list[Doc]) -> None:
    role = find(rendered, "ClusterRole", "py-scheduler")
    assert all(not r.get("resourceNames") and not r.get("nonResourceURLs") for r in role["rules"])
    lease_role = find(rendered, "Role", "py-scheduler-leader-election")
    got = grants(role["rules"]) | grants(lease_role["rules"])
    used = daemon_calls()
    assert got - used == set(), "granted but never called"
    assert used - got == set(), "called but not granted"
    # cluster-wide only what is not the Lease
    assert {g for g, _, _ in grants(role["rules"])}.isdisjoint({"coordination.k8s.io"})


def test_explain_role_grants_exactly_what_explain_reads(rendered: list[Doc]) -> None:
    role = find(rendered, "ClusterRole", "py-scheduler-explain")
    assert grants(role["rules"]) == explain_calls()


def test_cluster_role_covers_every_kind_the_daemon_watches(rendered: list[Doc]) -> None:
    from pyscheduler.app import DRA_CLAIMS_PATH, DRA_OBJECT_KINDS, OBJECT_KINDS, POD_GROUP_KINDS

    got = grants(find(rendered, "ClusterRole", "py-scheduler")["rules"])
    paths = ["/api/v1/pods", "/api/v1/nodes", *(path for path, _ in OBJECT_KINDS.values())]
    paths += [DRA_CLAIMS_PATH, *(path for path, _ in DRA_OBJECT_KINDS.values())]
    paths += [path for path, _ in POD_GROUP_KINDS.values()]
    for path in paths:
        parts = path.strip("/").split("/")
        group, resource = ("", parts[2]) if parts[0] == "api" else (parts[1], parts[3])
        for verb in ("list", "watch"):
            assert (group, resource, verb) in got, f"the daemon watches {path}; the ClusterRole lacks {verb}"


def test_lease_role_is_limited_to_the_scheduler_lease(rendered: list[Doc]) -> None:
    role = find(rendered, "Role", "py-scheduler-leader-election")
    assert grants(role["rules"], with_names=True) == {
        # create cannot be restricted by resourceNames (a POST has no name in its URL)
        ("coordination.k8s.io", "leases", "create", None),
        ("coordination.k8s.io", "leases", "get", LEASE),
        ("coordination.k8s.io", "leases", "update", LEASE),
    }
    subject = {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}
    rbac = "rbac.authorization.k8s.io"
    rb = find(rendered, "RoleBinding")
    assert rb["roleRef"] == {"apiGroup": rbac, "kind": "Role", "name": role["metadata"]["name"]}
    assert rb["subjects"] == [subject]
    crb = find(rendered, "ClusterRoleBinding")
    assert crb["roleRef"] == {"apiGroup": rbac, "kind": "ClusterRole", "name": "py-scheduler"}
    assert crb["subjects"] == [subject]


def test_cluster_role_is_within_kube_schedulers_own_roles(cluster: LocalCluster, rendered: list[Doc]) -> None:
    upstream: set[tuple[Any, ...]] = set()
    for name in ("system:kube-scheduler", "system:volume-scheduler"):
        role = cluster.api("GET", f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}")
        upstream |= grants([r for r in role["rules"] if not r.get("resourceNames")])
    # kube adds these to system:kube-scheduler only when the API server runs with the GenericWorkload
    # gate (bootstrappolicy/policy.go: podgroups get/list/watch, podgroups/status patch/update); this
    # cluster's may not, and our role grants them whatever the gate (as for DynamicResources' kinds).
    sg = "scheduling.k8s.io"
    upstream |= {(sg, "podgroups", v) for v in ("get", "list", "watch")}
    upstream |= {(sg, "podgroups/status", v) for v in ("patch", "update")}
    ours = grants(find(rendered, "ClusterRole", "py-scheduler")["rules"])
    assert ours - upstream == set(), "granted beyond kube-scheduler's bootstrap roles"


def _containers(pod_spec: Doc) -> list[Doc]:
    return [*(pod_spec.get("initContainers") or []), *pod_spec["containers"]]


def _pod_specs(docs: list[Doc]) -> list[tuple[str, Doc]]:
    out = []
    for d in docs:
        if d["kind"] == "Deployment":
            out.append((f"Deployment {d['metadata']['name']}", d["spec"]["template"]["spec"]))
        elif d["kind"] == "Pod":
            out.append((f"Pod {d['metadata']['name']}", d["spec"]))
    return out


def test_every_deployment_container_runs_restricted(rendered: list[Doc]) -> None:
    specs = _pod_specs(rendered) + _pod_specs(load_yaml_files(*example_files()))
    assert any(what == "Deployment py-scheduler" for what, _ in specs)
    for what, spec in specs:
        psc = spec.get("securityContext") or {}
        for c in _containers(spec):
            sc = c.get("securityContext") or {}
            where = f"{what} container {c['name']}"
            assert sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True, where
            uid = sc.get("runAsUser", psc.get("runAsUser"))
            assert isinstance(uid, int) and uid > 0, f"{where}: runAsUser must be a non-zero number"
            assert sc.get("readOnlyRootFilesystem") is True, where
            assert sc.get("allowPrivilegeEscalation") is False, where
            assert sc.get("privileged", False) is False, where
            assert (sc.get("capabilities") or {}).get("drop") == ["ALL"], where
            assert not (sc.get("capabilities") or {}).get("add"), where
            seccomp = sc.get("seccompProfile") or psc.get("seccompProfile") or {}
            assert seccomp.get("type") == "RuntimeDefault", where
            res = c.get("resources") or {}
            assert res.get("requests") and res.get("limits"), f"{where}: requests and limits"


def test_scheduler_deployment(rendered: list[Doc]) -> None:
    dep = find(rendered, "Deployment", "py-scheduler")
    assert dep["spec"]["replicas"] == 2
    spec = dep["spec"]["template"]["spec"]
    assert spec["schedulerName"] == "default-scheduler"  # it cannot schedule itself
    assert spec["serviceAccountName"] == SERVICE_ACCOUNT
    (c,) = spec["containers"]
    argv = [*c.get("command", []), *c.get("args", [])]
    assert argv[:2] == ["pyscheduler", "run"]
    assert "--config=/etc/py-scheduler/config.yaml" in argv
    env = {e["name"]: e for e in c["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    for probe, path in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
        get = c[probe]["httpGet"]
        port = get["port"]
        if isinstance(port, str):
            port = next(p["containerPort"] for p in c["ports"] if p["name"] == port)
        assert (get["path"], port, get.get("scheme", "HTTP")) == (path, 10259, "HTTP")
    mount = next(m for m in c["volumeMounts"] if m["mountPath"] == "/etc/py-scheduler")
    vol = next(v for v in spec["volumes"] if v["name"] == mount["name"])
    assert vol["configMap"]["name"] == "py-scheduler-config"
    anti = spec["affinity"]["podAntiAffinity"]
    terms = [t["podAffinityTerm"] for t in anti.get("preferredDuringSchedulingIgnoredDuringExecution", [])]
    terms += anti.get("requiredDuringSchedulingIgnoredDuringExecution", [])
    assert any(t["topologyKey"] == "kubernetes.io/hostname" for t in terms)


# ------------------------------------------------------------------------------------------- config


def _loader() -> Any:
    try:
        from pyscheduler.config import load
    except ImportError:
        return None
    return getattr(load, "parse_config", None)


def _parse(text: str) -> Any:
    parse_config = _loader()
    if parse_config is None:
        pytest.skip("pyscheduler.config.load.parse_config does not exist")
    from pyscheduler.plugins.registry import full_registry, plugin_extension_points

    registry = full_registry()

    def eps(name: str) -> set[str]:
        spec = registry.get(name)
        return plugin_extension_points(spec) if spec else set()

    return parse_config(yaml.safe_load(text), registry, eps), registry


def test_configmap_holds_a_valid_scheduler_configuration(rendered: list[Doc]) -> None:
    text = find(rendered, "ConfigMap", "py-scheduler-config")["data"]["config.yaml"]
    raw = yaml.safe_load(text)
    assert raw["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert raw["kind"] == "KubeSchedulerConfiguration"
    assert [p["schedulerName"] for p in raw["profiles"]] == ["py-scheduler"]
    le = raw["leaderElection"]
    assert (le["leaderElect"], le["resourceNamespace"], le["resourceName"]) == (True, NAMESPACE, LEASE)

    config, _ = _parse(text)
    assert config.scheduler_names == ("py-scheduler",)
    assert config.leader_election.leader_elect is True
    assert config.leader_election.resource_namespace == NAMESPACE
    assert config.leader_election.resource_name == LEASE


def test_label_match_example_configuration() -> None:
    (cm,) = load_yaml_files(EXAMPLES / "label-match" / "configmap.yaml")
    assert (cm["metadata"]["name"], cm["metadata"]["namespace"]) == ("py-scheduler-config", NAMESPACE)
    text = cm["data"]["config.yaml"]
    raw = yaml.safe_load(text)
    assert [p["schedulerName"] for p in raw["profiles"]] == ["py-scheduler", "py-scheduler-label-match"]
    (workload,) = load_yaml_files(EXAMPLES / "label-match" / "workload.yaml")
    tmpl = workload["spec"]["template"]
    assert tmpl["spec"]["schedulerName"] == "py-scheduler-label-match"
    assert tmpl["metadata"]["labels"]["scheduler.pyscheduler.io/filter"] == "gpu"

    if _loader() is None:
        pytest.skip("pyscheduler.config.load.parse_config does not exist")
    from pyscheduler.plugins.registry import full_registry

    if "LabelMatch" not in full_registry():
        pytest.skip("the example plugin LabelMatch is not registered")
    config, _ = _parse(text)
    assert config.scheduler_names == ("py-scheduler", "py-scheduler-label-match")


# ------------------------------------------------------------------------------------------- apply


def test_server_side_dry_run_passes(applied: dict[str, Any]) -> None:
    dry = applied["dry_run"]
    assert dry.returncode == 0, dry.stderr
    assert "(server dry run)" in dry.stdout
    # Pod Security "restricted" is set to warn (and enforce) on the namespace: a non-compliant pod
    # template would show up here as a warning.
    assert "Warning" not in dry.stderr, dry.stderr


def test_examples_pass_server_dry_run(cluster: LocalCluster, ns: str) -> None:
    for name in ("deployment.yaml", "too-big-pod.yaml", "label-match/workload.yaml"):
        out = cluster.kubectl("apply", "--dry-run=server", "-n", ns, "-f", str(EXAMPLES / name), check=False)
        assert out.returncode == 0, f"{name}: {out.stderr}"


def test_apply_creates_the_objects(
    cluster: LocalCluster, applied: dict[str, Any], rendered: list[Doc]
) -> None:
    assert applied["apply"].returncode == 0, applied["apply"].stderr
    for d in rendered:
        args = ["get", d["kind"].lower(), d["metadata"]["name"], "-o", "json"]
        if d["metadata"].get("namespace"):
            args += ["-n", d["metadata"]["namespace"]]
        live = json.loads(cluster.kubectl(*args).stdout)
        assert live["metadata"]["name"] == d["metadata"]["name"]
    # The label-match example ConfigMap applies over the base's (same name and namespace).
    out = cluster.kubectl(
        "apply", "--dry-run=server", "-f", str(EXAMPLES / "label-match" / "configmap.yaml"), check=False
    )
    assert out.returncode == 0, out.stderr

    # The ReplicaSet's pods pass admission: Pod Security "restricted" (enforced on the namespace) and the
    # system-cluster-critical priority class outside kube-system.
    def pods() -> list[Doc]:
        selector = "labelSelector=app.kubernetes.io%2Fname%3Dpy-scheduler"
        items: list[Doc] = cluster.api("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?{selector}")["items"]
        return items if len(items) == 2 else []

    try:
        created = eventually(pods, timeout=60)
    except AssertionError:
        events = cluster.kubectl("get", "events", "-n", NAMESPACE, check=False).stdout
        raise AssertionError(f"the Deployment's pods were not created:\n{events}") from None
    for p in created:
        assert p["spec"]["priorityClassName"] == "system-cluster-critical"
        assert p["spec"]["priority"] == 2000000000
        assert p["spec"]["schedulerName"] == "default-scheduler"


def test_service_account_can_do_what_the_daemon_does(
    cluster: LocalCluster, applied: dict[str, Any], ns: str, tmp_path: Path
) -> None:
    """Every call the daemon makes, made with the ServiceAccount's token through pyscheduler's own client."""
    assert applied["apply"].returncode == 0, applied["apply"].stderr
    from pyscheduler.app import OBJECT_KINDS, POD_FIELD_SELECTOR
    from pyscheduler.client.api import Api
    from pyscheduler.client.connection import load_configuration
    from pyscheduler.client.errors import ApiError
    from pyscheduler.client.leader import LeaderElector

    token = cluster.create_token(NAMESPACE, SERVICE_ACCOUNT, seconds=600)
    kubeconfig = tmp_path / "sa.kubeconfig"
    server = {"server": cluster.server, "certificate-authority": str(cluster.ca_file)}
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": server}],
                "users": [{"name": "sa", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "sa"}}],
                "current-context": "c",
            }
        )
    )
    api = Api(load_configuration(str(kubeconfig)), max_attempts=1)

    def forbidden(fn: Callable[[], Any]) -> bool:
        try:
            fn()
        except ApiError as e:
            return e.status == 403
        return False

    # --- the watches: list, then watch from the list's resourceVersion (the server ends it after 1 s)
    watched = [("/api/v1/pods", POD_FIELD_SELECTOR), ("/api/v1/nodes", None)]
    watched += [(path, None) for path, _ in OBJECT_KINDS.values()]

    def list_and_watch(item: tuple[str, str | None]) -> str:
        path, selector = item
        _, rv = api.list(path, field_selector=selector)
        for _ in api.watch(path, rv, field_selector=selector, timeout_seconds=1):
            pass
        return path

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert sorted(pool.map(list_and_watch, watched)) == sorted(p for p, _ in watched)

    # --- leader election in the py-scheduler namespace: get (404), create, update (renew), release
    identity = f"manifest-test-{uuid.uuid4().hex[:6]}"
    elector = LeaderElector(
        api,
        namespace=NAMESPACE,
        name=LEASE,
        identity=identity,
        lease_duration=4.0,
        renew_deadline=3.0,
        retry_period=0.5,
    )
    elector.start()
    try:
        eventually(elector.is_leader, timeout=20)
        first = cluster.api("GET", f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{LEASE}")
        assert first["spec"]["holderIdentity"] == identity

        def renewed() -> bool:
            lease = cluster.api("GET", f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{LEASE}")
            return bool(lease["spec"]["renewTime"] != first["spec"]["renewTime"])

        eventually(renewed, timeout=10)
        assert elector.is_leader()
    finally:
        elector.stop(release=True)
    lease = cluster.api("GET", f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{LEASE}")
    assert not lease["spec"].get("holderIdentity"), "a clean stop releases the lease"
    assert forbidden(lambda: api.get("Lease", NAMESPACE, "some-other-lease"))
    assert forbidden(lambda: api.get("Lease", "kube-system", "kube-scheduler"))
    assert forbidden(
        lambda: api.create(
            "Lease",
            "default",
            {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "x"}, "spec": {}},
        )
    )

    # --- pod writes: status patch, events.k8s.io events, binding, delete (and the refused get, PUT, core events)
    (node,) = cluster.create_nodes(1, prefix=f"mf-{ns}", cpu="2", memory="4Gi", pods=10)
    pv_name = f"mf-{ns}-pv"
    try:
        from pyscheduler.client.events import event_body
        from pyscheduler.framework.types import Pod

        pod_json = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "victim", "namespace": ns},
            "spec": {
                "schedulerName": "manifest-test-nobody",
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
            },
        }
        created = cluster.api("POST", f"/api/v1/namespaces/{ns}/pods", pod_json)
        pod = Pod.from_dict(created)
        cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "test"}
        out = api.patch_pod_status(ns, "victim", condition=cond, nominated_node_name=node)
        assert out is not None and out["status"]["nominatedNodeName"] == node
        current = cluster.api("GET", f"/api/v1/namespaces/{ns}/pods/victim")
        current["status"]["nominatedNodeName"] = None
        # not granted: the daemon never GETs a pod nor PUTs a status
        assert forbidden(lambda: api.get("Pod", ns, "victim"))
        assert forbidden(
            lambda: api.request("PUT", f"/api/v1/namespaces/{ns}/pods/victim/status", body=current)
        )
        api.create_event(
            event_body(
                pod,
                "Warning",
                "FailedScheduling",
                "Scheduling",
                "manifest test",
                reporting_controller="py-scheduler",
                reporting_instance=identity,
                now=time.time(),
            )
        )
        assert forbidden(
            lambda: api.request(
                "POST",
                f"/api/v1/namespaces/{ns}/events",
                body={
                    "apiVersion": "v1",
                    "kind": "Event",
                    "metadata": {"name": f"victim.{uuid.uuid4().hex[:8]}"},
                    "involvedObject": {"kind": "Pod", "namespace": ns, "name": "victim", "uid": pod.uid},
                    "reason": "Test",
                    "message": "manifest test",
                    "type": "Normal",
                    "source": {"component": "py-scheduler"},
                },
            )
        )  # core "" events: the daemon writes events.k8s.io only
        assert api.bind(pod, node) is None
        assert cluster.api("GET", f"/api/v1/namespaces/{ns}/pods/victim")["spec"]["nodeName"] == node
        assert api.delete_pod(ns, "victim", uid=pod.uid, grace_period_seconds=0) is True

        # --- volume binding's writes: PV and PVC patch and update
        cluster.api(
            "POST",
            "/api/v1/persistentvolumes",
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": pv_name},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "mf-test",
                    "hostPath": {"path": "/tmp/mf"},
                },
            },
        )
        cluster.api(
            "POST",
            f"/api/v1/namespaces/{ns}/persistentvolumeclaims",
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "claim"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "mf-test",
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        )
        note = {"metadata": {"annotations": {"pyscheduler.test/manifests": "yes"}}}
        api.patch("PersistentVolume", None, pv_name, note)
        api.patch("PersistentVolumeClaim", ns, "claim", note)
        pv = cluster.api("GET", f"/api/v1/persistentvolumes/{pv_name}")
        assert forbidden(lambda: api.update("PersistentVolume", None, pv_name, pv))
        assert forbidden(lambda: api.get("PersistentVolumeClaim", ns, "claim"))

        # --- and nothing more
        assert forbidden(lambda: api.list("/api/v1/secrets"))
        assert forbidden(lambda: api.get("ConfigMap", NAMESPACE, "py-scheduler-config"))
        assert forbidden(lambda: api.create("Pod", ns, pod_json))
        assert forbidden(lambda: api.patch("Node", None, node, note))
        assert forbidden(lambda: api.delete("PersistentVolumeClaim", ns, "claim"))
    finally:
        api.close()
        # Without the pv/pvc-protection controllers the protection finalizers would keep these forever.
        unfinalize = json.dumps({"metadata": {"finalizers": None}})
        for args in (["pvc", "claim", "-n", ns], ["pv", pv_name], ["node", node]):
            cluster.kubectl("patch", *args, "--type=merge", "-p", unfinalize, check=False)
            cluster.kubectl("delete", *args, "--ignore-not-found", "--wait=false", check=False)
