"""The chaos checker's own request and fit arithmetic (bench/chaos/checker.py), without a cluster."""

from __future__ import annotations

from bench.chaos.checker import misfit, pod_requests


def c(cpu: str, mem: str = "0", **kw: str) -> dict[str, object]:
    return {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}}, **kw}


def test_requests_take_the_larger_of_containers_and_init_containers_plus_overhead() -> None:
    spec = {
        "containers": [c("500m", "1Gi"), c("250m")],
        "initContainers": [c("2", "10Mi")],
        "overhead": {"cpu": "100m", "memory": "1Mi"},
    }
    assert pod_requests(spec) == {"cpu": 2100, "memory": 2**30 + 2**20, "pods": 1}


def test_sidecars_add_to_containers_and_to_later_init_containers() -> None:
    spec = {"containers": [c("1")], "initContainers": [c("500m", restartPolicy="Always"), c("1200m")]}
    assert pod_requests(spec)["cpu"] == 1700  # init 1200m + sidecar 500m > 1 + 500m


def node(
    labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None
) -> dict[str, object]:
    return {"metadata": {"name": "n1", "labels": labels or {}}, "spec": {"taints": taints or []}}


def test_misfit_taints_selector_and_required_affinity() -> None:
    tainted = node(taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}])
    assert misfit({"spec": {}}, tainted) == "untolerated taint gpu=yes:NoSchedule"
    assert misfit({"spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}]}}, tainted) is None
    assert misfit({"spec": {"tolerations": [{"key": "gpu", "value": "no"}]}}, tainted) is not None
    assert misfit({"spec": {}}, node(taints=[{"key": "x", "effect": "PreferNoSchedule"}])) is None
    assert misfit({"spec": {"nodeSelector": {"zone": "a"}}}, node({"zone": "b"})) == "nodeSelector zone=a"
    aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                ]
            }
        }
    }
    assert misfit({"spec": {"affinity": aff}}, node({"zone": "b"})) is None  # second term: by name
    aff["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"].pop()
    assert misfit({"spec": {"affinity": aff}}, node({"zone": "b"})) == "required node affinity"
