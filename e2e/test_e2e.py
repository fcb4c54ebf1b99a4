"""End to end: workloads a user would apply, scheduled by pyscheduler in a cluster where it is deployed.

The same tests run against the local control plane (``make e2e``) and against kind (``make e2e-kind``);
only the ``kube`` fixture differs (see conftest.py). They use the shipped examples (manifests/examples/)
wherever one fits, each in a fresh namespace:

- the example Deployment (10 replicas, ``schedulerName: py-scheduler``), given a required node affinity the
  worker nodes satisfy: every pod Running, on a node that satisfies it, placed by py-scheduler;
- the LabelMatch example workload: only on nodes labelled ``scheduler.pyscheduler.io/filter=gpu`` (skipped
  when the deployed configuration has no ``py-scheduler-label-match`` profile);
- the too-big example pod: stays Pending with a FailedScheduling event and PodScheduled=False;
- a Deployment scaled down to 3 and up to 8: the new pods are scheduled and all 8 run.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from pyscheduler.testing.cluster import REPO_ROOT

pytestmark = pytest.mark.cluster

EXAMPLES = REPO_ROOT / "manifests" / "examples"
LABEL_MATCH_PROFILE = "py-scheduler-label-match"
RUNNING_TIMEOUT = 120.0  # kind pulls nothing (pause is on the nodes) but real kubelets take a while

Doc = dict[str, Any]
Kube = Any  # e2e/conftest.py's Kube (not importable by name: the repository root has a conftest too)
GPU_LABEL = "scheduler.pyscheduler.io/filter"

# Satisfied by kind's workers and by the local KWOK nodes; excludes a control-plane node.
WORKER_AFFINITY: Doc = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                        {"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"},
                    ]
                }
            ],
        },
    },
}


def example(path: str) -> Doc:
    doc: Doc = yaml.safe_load((EXAMPLES / path).read_text())
    return doc


def deployment(
    ns: str,
    path: str = "deployment.yaml",
    *,
    name: str | None = None,
    replicas: int | None = None,
    affinity: Doc | None = None,
) -> Doc:
    d = copy.deepcopy(example(path))
    if name:
        d["metadata"]["name"] = name
    if replicas is not None:
        d["spec"]["replicas"] = replicas
    if affinity is not None:
        d["spec"]["template"]["spec"]["affinity"] = affinity
    d["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 0
    d["metadata"]["namespace"] = ns
    return d


def apply_deployment(kube: Kube, ns: str, d: Doc) -> str:
    kube.api("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", d)
    labels = d["spec"]["selector"]["matchLabels"]
    return ",".join(f"{k}={v}" for k, v in labels.items())


def running(kube: Kube, ns: str, selector: str, count: int) -> list[Doc]:
    """The selector's pods once exactly ``count`` exist, all Running on a node and none terminating."""
    pods = [p for p in kube.pods(ns, selector) if not p["metadata"].get("deletionTimestamp")]
    total = kube.pods(ns, selector)
    if len(pods) != count or len(total) != count:
        return []
    if all(p["spec"].get("nodeName") and p["status"].get("phase") == "Running" for p in pods):
        return pods
    return []


def placed_by_pyscheduler(kube: Kube, ns: str, pods: list[Doc]) -> None:
    def all_have_events() -> bool:
        scheduled = {e["regarding"]["name"]: e for e in kube.events(ns, reason="Scheduled")}
        return all(p["metadata"]["name"] in scheduled for p in pods)

    kube.eventually(all_have_events, ns, "a Scheduled event for every pod", timeout=30)
    for e in kube.events(ns, reason="Scheduled"):
        assert e["reportingController"] == "py-scheduler", e
        pod = next((p for p in pods if p["metadata"]["name"] == e["regarding"]["name"]), None)
        if pod is not None:
            assert (
                e["note"]
                == f"Successfully assigned {ns}/{pod['metadata']['name']} to {pod['spec']['nodeName']}"
            )


def matches(node: Doc, expressions: list[Doc]) -> bool:
    labels = node["metadata"].get("labels") or {}
    for ex in expressions:
        key, op = ex["key"], ex["operator"]
        if op == "In" and labels.get(key) not in ex["values"]:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


# ------------------------------------------------------------------------------------------- tests


def test_example_deployment_of_10_runs_on_nodes_satisfying_its_affinity(kube: Kube, ns: str) -> None:
    d = deployment(ns, affinity=WORKER_AFFINITY)
    assert d["spec"]["replicas"] == 10 and d["spec"]["template"]["spec"]["schedulerName"] == "py-scheduler"
    selector = apply_deployment(kube, ns, d)
    pods = kube.eventually(
        lambda: running(kube, ns, selector, 10), ns, "10 pods Running", timeout=RUNNING_TIMEOUT
    )
    nodes = kube.nodes()
    terms = WORKER_AFFINITY["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    for p in pods:
        node = nodes.get(p["spec"]["nodeName"])
        assert node is not None, f"{p['metadata']['name']} on {p['spec']['nodeName']}, not a worker"
        assert matches(node, terms[0]["matchExpressions"])
    if len(nodes) > 1:
        assert len({p["spec"]["nodeName"] for p in pods}) > 1, (
            "10 small pods are spread, not piled on one node"
        )
    placed_by_pyscheduler(kube, ns, pods)


def test_label_match_workload_lands_only_on_matching_nodes(kube: Kube, ns: str) -> None:
    if LABEL_MATCH_PROFILE not in kube.profiles:
        pytest.skip(
            f"the deployed configuration has no {LABEL_MATCH_PROFILE} profile "
            "(LabelMatch not registered, or manifests/examples/label-match/configmap.yaml not applied)"
        )
    gpu = kube.gpu_nodes()
    if not gpu:
        pytest.skip(f"no schedulable node is labelled {GPU_LABEL}=gpu")
    d = deployment(ns, "label-match/workload.yaml")
    template = d["spec"]["template"]
    assert template["spec"]["schedulerName"] == LABEL_MATCH_PROFILE
    assert template["metadata"]["labels"][GPU_LABEL] == "gpu"
    selector = apply_deployment(kube, ns, d)
    count = d["spec"]["replicas"]
    pods = kube.eventually(
        lambda: running(kube, ns, selector, count),
        ns,
        f"{count} label-match pods Running",
        timeout=RUNNING_TIMEOUT,
    )
    assert {p["spec"]["nodeName"] for p in pods} <= gpu, f"pods outside the labelled nodes {sorted(gpu)}"
    placed_by_pyscheduler(kube, ns, pods)


def test_pod_that_fits_nowhere_stays_pending_with_failed_scheduling(kube: Kube, ns: str) -> None:
    pod = example("too-big-pod.yaml")
    pod["metadata"]["namespace"] = ns
    kube.api("POST", f"/api/v1/namespaces/{ns}/pods", pod)
    name = pod["metadata"]["name"]
    ev = kube.eventually(lambda: kube.events(ns, name, "FailedScheduling"), ns, "a FailedScheduling event")[0]
    assert ev["type"] == "Warning" and ev["reportingController"] == "py-scheduler"
    total = len(kube.api("GET", "/api/v1/nodes")["items"])
    assert ev["note"].startswith(f"0/{total} nodes are available: ")
    assert "Insufficient cpu" in ev["note"]

    def condition() -> Doc | None:
        conds = kube.pod(ns, name)["status"].get("conditions") or []
        return next((c for c in conds if c["type"] == "PodScheduled" and c["status"] == "False"), None)

    cond = kube.eventually(condition, ns, "PodScheduled=False")
    assert cond["reason"] == "Unschedulable" and "Insufficient cpu" in cond["message"]
    p = kube.pod(ns, name)
    assert p["status"].get("phase") == "Pending" and not p["spec"].get("nodeName")


def test_scaling_down_to_3_and_up_to_8_reschedules(kube: Kube, ns: str) -> None:
    d = deployment(ns, name="scaled", replicas=5, affinity=WORKER_AFFINITY)
    d["spec"]["selector"]["matchLabels"] = {"app": "scaled"}
    d["spec"]["template"]["metadata"]["labels"] = {"app": "scaled"}
    selector = apply_deployment(kube, ns, d)
    kube.eventually(lambda: running(kube, ns, selector, 5), ns, "5 pods Running", timeout=RUNNING_TIMEOUT)
    scale = f"/apis/apps/v1/namespaces/{ns}/deployments/scaled/scale"

    kube.merge_patch(scale, {"spec": {"replicas": 3}})
    kept = kube.eventually(
        lambda: running(kube, ns, selector, 3), ns, "3 pods after scaling down", timeout=RUNNING_TIMEOUT
    )
    kube.merge_patch(scale, {"spec": {"replicas": 8}})
    pods = kube.eventually(
        lambda: running(kube, ns, selector, 8), ns, "8 pods Running after scaling up", timeout=RUNNING_TIMEOUT
    )
    assert {p["metadata"]["uid"] for p in kept} < {p["metadata"]["uid"] for p in pods}
    placed_by_pyscheduler(kube, ns, pods)
