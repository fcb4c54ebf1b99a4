"""charts/pyscheduler: ``helm lint``, ``helm template | kubectl apply --dry-run=server`` on the local control
plane, the rendered configuration through pyscheduler's own loader, and one source of truth with
``manifests/`` (the same RBAC rules, the same alerts).

helm is built from the module pinned in e2e/tools/helm/go.mod by e2e/tools/build.sh, once, into
~/.cache/pyscheduler/tools/ (its own cache key: changing it never rebuilds the control plane).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyscheduler import KUBERNETES_VERSION
from pyscheduler.config.load import parse_config
from pyscheduler.plugins.registry import full_registry, plugin_extension_points
from pyscheduler.testing.cluster import REPO_ROOT, LocalCluster

CHART = REPO_ROOT / "charts" / "pyscheduler"
MANIFESTS = REPO_ROOT / "manifests"

Doc = dict[str, Any]

# all of it with the integration suite (make test): helm is built from source on first use
pytestmark = [pytest.mark.cluster]

# A profile with plugin changes and args, and top-level fields: what a real values file carries.
CUSTOM = {
    "schedulerName": "default-scheduler",
    "replicas": 3,
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
            "pluginConfig": [
                {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}},
            ],
        },
        {"schedulerName": "batch-scheduler", "percentageOfNodesToScore": 30},
    ],
    "extraConfig": {"podInitialBackoffSeconds": 2, "podMaxBackoffSeconds": 20},
    "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}},
    "podDisruptionBudget": {"enabled": True, "maxUnavailable": 2},
    "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
    "prometheusRule": {"enabled": True},
    "plugins": ["LabelMatch"],
    "image": {"repository": "registry.example.com/pyscheduler-with-plugins", "tag": "0.1.0-1"},
}


@pytest.fixture(scope="module")
def helm() -> str:
    out = subprocess.run(
        ["bash", str(REPO_ROOT / "e2e" / "tools" / "build.sh"), "helm"],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if out.returncode != 0:
        pytest.fail(f"building helm failed (is the Go module proxy reachable?):\n{out.stderr[-3000:]}")
    return out.stdout.strip().splitlines()[-1]


def render(
    helm: str, values: Doc | None = None, namespace: str = "py-scheduler", name: str = "py-scheduler"
) -> str:
    args = [helm, "template", name, str(CHART), "-n", namespace, f"--kube-version={KUBERNETES_VERSION}"]
    if values:
        args += ["--values", "-"]
    out = subprocess.run(args, input=json.dumps(values or {}), capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def docs(text: str) -> list[Doc]:
    return [d for d in yaml.safe_load_all(text) if d]


def find(objs: list[Doc], kind: str, name: str | None = None) -> Doc:
    hits = [d for d in objs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(hits) == 1, f"{kind} {name}: {len(hits)} found"
    return hits[0]


def load(text: str) -> Any:
    registry = full_registry()

    def eps(name: str) -> set[str]:
        spec = registry.get(name)
        return plugin_extension_points(spec) if spec else set()

    return parse_config(yaml.safe_load(text), registry, eps)


@pytest.mark.parametrize("values", [pytest.param(None, id="defaults"), pytest.param(CUSTOM, id="custom")])
def test_helm_lint_passes_strict(helm: str, values: Doc | None, tmp_path: Path) -> None:
    args = [helm, "lint", "--strict", str(CHART), f"--kube-version={KUBERNETES_VERSION}"]
    if values:
        (tmp_path / "values.yaml").write_text(yaml.safe_dump(values))
        args += ["--values", str(tmp_path / "values.yaml")]
    out = subprocess.run(args, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 chart(s) failed" in out.stdout


def test_defaults_install_a_second_scheduler_with_two_replicas_and_a_pdb(helm: str) -> None:
    objs = docs(render(helm))
    config = load(find(objs, "ConfigMap", "py-scheduler-config")["data"]["config.yaml"])
    assert config.scheduler_names == ("py-scheduler",)
    le = config.leader_election
    assert (le.leader_elect, le.resource_namespace, le.resource_name) == (
        True,
        "py-scheduler",
        "py-scheduler",
    )
    dep = find(objs, "Deployment")
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]["spec"]
    assert pod["schedulerName"] == "default-scheduler"
    (c,) = pod["containers"]
    assert c["image"] == "pyscheduler:0.1.0"
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["runAsNonRoot"] is True
    assert find(objs, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1
    assert not [d for d in objs if d["kind"] in ("ServiceMonitor", "PrometheusRule")]


def test_custom_values_reach_the_configuration_and_the_pods(helm: str) -> None:
    objs = docs(render(helm, CUSTOM, namespace="sched", name="main"))
    text = find(objs, "ConfigMap", "main-config")["data"]["config.yaml"]
    config = load(text)  # pyscheduler's own loader accepts it: profiles, plugins, args
    assert config.scheduler_names == ("default-scheduler", "batch-scheduler")
    raw = yaml.safe_load(text)
    assert raw["podInitialBackoffSeconds"] == 2 and raw["podMaxBackoffSeconds"] == 20
    assert raw["leaderElection"]["resourceName"] == "main"
    assert raw["leaderElection"]["resourceNamespace"] == "sched"
    dep = find(objs, "Deployment", "main")
    assert dep["spec"]["replicas"] == 3
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    assert c["image"] == "registry.example.com/pyscheduler-with-plugins:0.1.0-1"
    assert c["resources"]["requests"] == {"cpu": "200m", "memory": "256Mi"}
    assert find(objs, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 2
    sm = find(objs, "ServiceMonitor")
    assert sm["metadata"]["labels"]["release"] == "prom"
    assert sm["spec"]["endpoints"][0]["port"] == "http-metrics"
    test_pod = find(objs, "Pod")
    assert test_pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert 'grep -qw "LabelMatch"' in test_pod["spec"]["containers"][0]["args"][0]
    # a changed configuration rolls the pods
    other = docs(
        render(
            helm, {**CUSTOM, "extraConfig": {"podInitialBackoffSeconds": 3}}, namespace="sched", name="main"
        )
    )
    checksum = "checksum/config"
    assert (
        find(other, "Deployment")["spec"]["template"]["metadata"]["annotations"][checksum]
        != dep["spec"]["template"]["metadata"]["annotations"][checksum]
    )


def _rules(doc: Doc) -> list[Doc]:
    """A role's rules with every list sorted, so order does not matter."""
    return sorted(
        ({k: sorted(v) if isinstance(v, list) else v for k, v in r.items()} for r in doc["rules"]),
        key=json.dumps,
    )


def test_rbac_is_the_same_as_the_manifests(helm: str) -> None:
    chart = docs(render(helm, {"explainRole": {"create": True}}, namespace="elsewhere", name="sched"))
    manifests = [
        d
        for f in ("clusterrole.yaml", "explain-clusterrole.yaml", "lease-role.yaml")
        for d in docs((MANIFESTS / f).read_text())
    ]
    assert _rules(find(chart, "ClusterRole", "sched")) == _rules(
        find(manifests, "ClusterRole", "py-scheduler")
    )
    assert _rules(find(chart, "ClusterRole", "sched-explain")) == _rules(
        find(manifests, "ClusterRole", "py-scheduler-explain")
    )
    # the lease Role names the release's own Lease where manifests/ name py-scheduler
    lease = json.loads(
        json.dumps(_rules(find(chart, "Role", "sched-leader-election"))).replace('"sched"', '"py-scheduler"')
    )
    assert lease == _rules(find(manifests, "Role", "py-scheduler-leader-election"))
    for kind, name in (("ClusterRoleBinding", "sched"), ("RoleBinding", "sched-leader-election")):
        (subject,) = find(chart, kind, name)["subjects"]
        assert subject == {"kind": "ServiceAccount", "name": "sched", "namespace": "elsewhere"}


def test_alerts_are_the_same_as_the_manifests(helm: str) -> None:
    chart = find(docs(render(helm, {"prometheusRule": {"enabled": True}}, name="sched")), "PrometheusRule")
    text = (
        (MANIFESTS / "monitoring" / "prometheusrule.yaml")
        .read_text()
        .replace("py-scheduler-metrics", "sched-metrics")
    )
    assert chart["spec"] == yaml.safe_load(text)["spec"]


# ---------------------------------------------------------------------------------------- on the cluster

_CRDS = [("servicemonitors", "ServiceMonitor"), ("prometheusrules", "PrometheusRule")]


@pytest.fixture(scope="module")
def monitoring_crds(cluster: LocalCluster) -> Iterator[None]:
    """Minimal stand-ins for the Prometheus Operator's CRDs (any spec accepted), so the dry run checks the
    chart's ServiceMonitor and PrometheusRule objects get as far as admission."""
    created = []
    for plural, kind in _CRDS:
        crd: Doc = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.monitoring.coreos.com"},
            "spec": {
                "group": "monitoring.coreos.com",
                "scope": "Namespaced",
                "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                ],
            },
        }
        status, _ = cluster.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        if status == 201:
            created.append(f"{plural}.monitoring.coreos.com")

    def established() -> bool:
        out = cluster.kubectl("api-resources", "--api-group=monitoring.coreos.com", "-o", "name", check=False)
        return all(f"{p}.monitoring.coreos.com" in out.stdout for p, _ in _CRDS)

    from pyscheduler.testing.kube import eventually

    eventually(established, timeout=30, what="monitoring CRDs served")
    yield
    for name in created:
        cluster.request("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")


@pytest.mark.parametrize("values", [pytest.param(None, id="defaults"), pytest.param(CUSTOM, id="custom")])
def test_rendered_chart_passes_server_side_dry_run(
    helm: str, cluster: LocalCluster, monitoring_crds: None, values: Doc | None
) -> None:
    ns = f"helm-{uuid.uuid4().hex[:6]}"
    cluster.api(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    )
    try:
        text = render(helm, values, namespace=ns, name=f"r{uuid.uuid4().hex[:5]}")
        out = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=text, check=False)
        assert out.returncode == 0, out.stderr
        kinds = [line.split("/")[0] for line in out.stdout.splitlines()]
        expected = {
            "serviceaccount",
            "configmap",
            "clusterrole.rbac.authorization.k8s.io",
            "deployment.apps",
            "service",
        }
        assert expected <= set(kinds), out.stdout
        assert all("(server dry run)" in line for line in out.stdout.splitlines()), out.stdout
    finally:
        cluster.request("DELETE", f"/api/v1/namespaces/{ns}")
