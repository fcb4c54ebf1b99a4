"""The shared signature fragments (framework/helpers/signers.py): equal exactly where kube-scheduler 1.36's
signers.go makes them equal, so the same pods are batched together."""

from __future__ import annotations

from typing import Any

from pyscheduler.framework.helpers import signers
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.image_locality import ImageLocality
from pyscheduler.testing.builders import make_pod


def pod_with(**spec: Any) -> Pod:
    d = make_pod("p").json()
    d["spec"].update(spec)
    return Pod.from_dict(d)


def test_host_ports_are_the_distinct_sorted_numbers_only() -> None:
    a = make_pod("a").host_port(80).host_port(443, protocol="UDP").obj()
    b = make_pod("b").host_port(443, host_ip="10.0.0.1").host_port(80).host_port(80, protocol="UDP").obj()
    assert signers.host_ports(a) == signers.host_ports(b) == (80, 443)
    assert signers.host_ports(make_pod("c").obj()) == ()


def test_tolerations_in_any_order() -> None:
    t1 = {"key": "a", "operator": "Equal", "value": "1", "effect": "NoSchedule"}
    t2 = {"key": "b", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    assert signers.tolerations(pod_with(tolerations=[t1, t2])) == signers.tolerations(
        pod_with(tolerations=[t2, t1])
    )
    assert signers.tolerations(pod_with(tolerations=[t1])) != signers.tolerations(pod_with(tolerations=[t2]))


def test_volumes_leave_out_config_maps_secrets_and_names() -> None:
    cm = {"name": "cfg", "configMap": {"name": "app-config"}}
    sec = {"name": "s", "secret": {"secretName": "token-abc"}}
    pvc1 = {"name": "data", "persistentVolumeClaim": {"claimName": "c1"}}
    pvc1_renamed = {"name": "other-name", "persistentVolumeClaim": {"claimName": "c1"}}
    pvc2 = {"name": "data", "persistentVolumeClaim": {"claimName": "c2"}}
    base = signers.volumes(pod_with(volumes=[pvc1, cm]))
    assert base == signers.volumes(pod_with(volumes=[sec, pvc1_renamed]))
    assert base != signers.volumes(pod_with(volumes=[pvc2]))
    assert signers.volumes(pod_with(volumes=[cm, sec])) == ()


def test_node_affinity_ignores_the_order_of_terms_and_values() -> None:
    def aff(values: list[str], terms_reversed: bool = False) -> dict[str, Any]:
        terms = [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": values}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
        ]
        if terms_reversed:
            terms.reverse()
        return {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 3, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}
                ],
            }
        }

    a = signers.node_affinity(pod_with(affinity=aff(["a", "b"])))
    assert a == signers.node_affinity(pod_with(affinity=aff(["b", "a"], terms_reversed=True)))
    assert a != signers.node_affinity(pod_with(affinity=aff(["a", "c"])))
    assert signers.node_affinity(make_pod("x").obj()) is None


def test_requests_include_overhead_not_the_container_layout() -> None:
    one = make_pod("a").res({"cpu": "1", "memory": "1Gi"}).obj()
    d = make_pod("b").res({"cpu": "500m", "memory": "512Mi"}).json()
    d["spec"]["containers"].append(
        {"name": "c2", "image": "x", "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}
    )
    assert signers.resources(one) == signers.resources(Pod.from_dict(d))
    assert signers.resources(one) != signers.resources(make_pod("c").res({"cpu": "2", "memory": "1Gi"}).obj())


def test_image_names_are_normalised_and_deduplicated() -> None:
    pl = ImageLocality()
    d1 = make_pod("a").json()
    d1["spec"]["containers"][0]["image"] = "nginx"
    d2 = make_pod("b").json()
    d2["spec"]["containers"][0]["image"] = "nginx:latest"
    d2["spec"]["initContainers"] = [{"name": "i", "image": "nginx"}]
    f1, s1 = pl.sign_pod(Pod.from_dict(d1))
    f2, s2 = pl.sign_pod(Pod.from_dict(d2))
    assert s1 is None and s2 is None and f1 == f2


def test_combine_keeps_one_value_per_key_and_the_scheduler_name() -> None:
    sig = signers.combine(
        "s1", [[(signers.TOLERATIONS, ())], [(signers.TOLERATIONS, ()), (signers.NODE_NAME, "")]]
    )
    assert dict(sig)[signers.SCHEDULER_NAME] == "s1"
    assert len(dict(sig)) == 3
    assert sig != signers.combine("s2", [[(signers.TOLERATIONS, ())], [(signers.NODE_NAME, "")]])
