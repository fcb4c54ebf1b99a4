"""Workload expansion: the pods a controller would make, admitted as the API server would."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.whatif.workloads import WorkloadError, expand

CLASSES = {
    "high": {"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"},
    "standard": {"metadata": {"name": "standard"}, "value": 10, "globalDefault": True},
}


def template(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
            **spec,
        },
    }


def one(doc: dict[str, Any], classes: dict[str, Any] | None = None) -> Any:
    (w,) = expand(
        [("w.yaml", doc)], classes if classes is not None else CLASSES, created="2026-01-01T00:00:00Z"
    )
    return w


def test_a_deployment_becomes_its_replicas_owned_by_a_replicaset() -> None:
    w = one(
        {
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template()},
        }
    )
    assert [p["metadata"]["name"] for p in w.pods] == ["web-whatif-0", "web-whatif-1", "web-whatif-2"]
    pod = w.pods[0]
    assert pod["metadata"]["namespace"] == "shop"
    assert pod["metadata"]["labels"]["app"] == "web"
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    (rs,) = w.objects
    assert (
        rs["kind"] == "ReplicaSet" and rs["metadata"]["uid"] == pod["metadata"]["ownerReferences"][0]["uid"]
    )
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": "whatif"}
    # no class named: the global default's priority, as admission gives it
    assert pod["spec"]["priority"] == 10 and pod["spec"]["priorityClassName"] == "standard"


def test_priority_class_gives_priority_and_preemption_policy() -> None:
    w = one({"kind": "Pod", "metadata": {"name": "p"}, "spec": template(priorityClassName="high")["spec"]})
    assert w.pods[0]["spec"]["priority"] == 1000
    assert w.pods[0]["spec"]["preemptionPolicy"] == "Never"
    assert w.pods[0]["metadata"]["namespace"] == "default"


def test_system_classes_are_known_without_the_snapshot_listing_them() -> None:
    w = one(
        {
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": template(priorityClassName="system-node-critical")["spec"],
        },
        {},
    )
    assert w.pods[0]["spec"]["priority"] == 2000001000


def test_an_unknown_priority_class_is_refused_as_admission_would() -> None:
    with pytest.raises(
        WorkloadError, match=r"w.yaml: Pod default/p: no PriorityClass 'gold' in the snapshot"
    ):
        one({"kind": "Pod", "metadata": {"name": "p"}, "spec": template(priorityClassName="gold")["spec"]})


def test_a_statefulset_gets_ordinal_names_and_its_claims() -> None:
    w = one(
        {
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "data"},
            "spec": {
                "replicas": 2,
                "template": template(),
                "volumeClaimTemplates": [
                    {"metadata": {"name": "pgdata"}, "spec": {"storageClassName": "fast"}}
                ],
            },
        }
    )
    assert [p["metadata"]["name"] for p in w.pods] == ["db-0", "db-1"]
    assert w.pods[1]["spec"]["volumes"] == [
        {"name": "pgdata", "persistentVolumeClaim": {"claimName": "pgdata-db-1"}}
    ]
    kinds = sorted((o["kind"], o["metadata"]["name"]) for o in w.objects)
    assert kinds == [
        ("PersistentVolumeClaim", "pgdata-db-0"),
        ("PersistentVolumeClaim", "pgdata-db-1"),
        ("StatefulSet", "db"),
    ]


@pytest.mark.parametrize(
    ("spec", "pods"),
    [
        pytest.param({}, 1, id="defaults"),
        pytest.param({"parallelism": 5, "completions": 3}, 3, id="completions-cap"),
        pytest.param({"parallelism": 4}, 4, id="parallel"),
    ],
)
def test_a_job_runs_min_of_parallelism_and_completions(spec: dict[str, Any], pods: int) -> None:
    w = one({"kind": "Job", "metadata": {"name": "j"}, "spec": {**spec, "template": template()}})
    assert len(w.pods) == pods
    assert w.pods[0]["metadata"]["ownerReferences"][0]["kind"] == "Job"


def test_a_list_expands_each_item() -> None:
    pod = {"kind": "Pod", "metadata": {"name": "a"}, "spec": template()["spec"]}
    ws = expand([("l.yaml", {"kind": "List", "items": [pod, {**pod, "metadata": {"name": "b"}}]})])
    assert [w.name for w in ws] == ["a", "b"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(
            {"kind": "DaemonSet", "metadata": {"name": "d"}, "spec": {}},
            "DaemonSets are not expanded",
            id="daemonset",
        ),
        pytest.param(
            {"kind": "Service", "metadata": {"name": "s"}, "spec": {}},
            "cannot expand a Service",
            id="other-kind",
        ),
        pytest.param(
            {
                "kind": "Deployment",
                "metadata": {"name": "d"},
                "spec": {"replicas": -1, "template": template()},
            },
            "spec.replicas must be an integer from 0",
            id="negative",
        ),
        pytest.param(
            {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 1}},
            "no spec.template.spec",
            id="no-template",
        ),
        pytest.param({"kind": "Pod", "metadata": {}}, "Pod without metadata.name", id="no-name"),
    ],
)
def test_what_cannot_be_expanded_is_an_error_naming_the_object(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        expand([("w.yaml", doc)])


def test_two_workloads_making_the_same_pod_are_refused() -> None:
    pod = {"kind": "Pod", "metadata": {"name": "a"}, "spec": template()["spec"]}
    with pytest.raises(WorkloadError, match="pod default/a is also made by"):
        expand([("1.yaml", pod), ("2.yaml", pod)])
