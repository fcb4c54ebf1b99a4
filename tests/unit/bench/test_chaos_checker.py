"""The chaos checker's own request and fit arithmetic (bench/chaos/checker.py), without a cluster."""

from __future__ import annotations

from bench.chaos.checker import Checker, misfit, pod_requests


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


def _pod(uid: str, priority: int, node: str = "", nominated: str = "") -> dict[str, object]:
    return {
        "metadata": {"name": uid, "namespace": "ns", "uid": uid},
        "spec": {"priority": priority, "nodeName": node, "containers": [c("1")]},
        "status": {"nominatedNodeName": nominated} if nominated else {},
    }


def _preempted(victim: str, preemptor: str) -> dict[str, object]:
    return {
        "involvedObject": {"uid": victim},
        "reason": "Preempted",
        "message": f"Preempted by pod {preemptor} on node n1",
    }


def _checker() -> Checker:
    return Checker("https://127.0.0.1:1", "token", None, "ns")  # never started: fed by hand


def test_a_victim_of_lower_priority_whose_preemptor_is_nominated_then_bound_is_no_violation() -> None:
    chk = _checker()
    chk._handle("nodes", "ADDED", {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}})
    chk._handle("pods", "ADDED", _pod("victim", 1000, node="n1"))
    chk._handle("pods", "ADDED", _pod("preemptor", 3000))
    chk._handle("preempted", "ADDED", _preempted("victim", "preemptor"))
    chk._handle("pods", "DELETED", _pod("victim", 1000, node="n1"))
    chk._handle("pods", "MODIFIED", _pod("preemptor", 3000, nominated="n1"))
    chk._handle("pods", "MODIFIED", _pod("preemptor", 3000, node="n1", nominated="n1"))
    chk.check_preemptions(final=True)
    assert chk.summary()["preempted"] == 1 and chk.judged_preemptions() == 1
    assert chk.summary()["preemption_violations"] == 0, chk.violations


def test_a_victim_of_equal_priority_is_a_violation() -> None:
    chk = _checker()
    chk._handle("pods", "ADDED", _pod("victim", 2000, node="n1"))
    chk._handle("pods", "ADDED", _pod("preemptor", 2000, nominated="n1"))
    chk._handle("preempted", "ADDED", _preempted("victim", "preemptor"))
    chk.check_preemptions()
    assert [(v.kind, v.subject) for v in chk.violations] == [("preemption", "ns/victim")]
    assert "priority 2000 preempted on n1 by ns/preemptor of priority 2000" in chk.violations[0].detail
    chk.check_preemptions(final=True)  # judged once
    assert chk.summary()["preemption_violations"] == 1


def test_a_preemptor_never_bound_nominated_or_deleted_is_a_violation_at_the_end_only() -> None:
    chk = _checker()
    chk._handle("pods", "ADDED", _pod("victim", 0, node="n1"))
    chk._handle("pods", "ADDED", _pod("preemptor", 3000))
    chk._handle("preempted", "ADDED", _preempted("victim", "preemptor"))
    chk.check_preemptions()
    assert chk.violations == []  # it may still be nominated or bound
    chk.check_preemptions(final=True)
    assert [v.kind for v in chk.violations] == ["preemption"]
    assert "never bound, nominated or deleted" in chk.violations[0].detail


def test_a_preemptor_deleted_before_it_was_placed_is_no_violation() -> None:
    chk = _checker()
    chk._handle("pods", "ADDED", _pod("victim", 0, node="n1"))
    chk._handle("pods", "ADDED", _pod("preemptor", 3000))
    chk._handle("preempted", "ADDED", _preempted("victim", "preemptor"))
    chk._handle("pods", "DELETED", _pod("preemptor", 3000))
    chk.check_preemptions(final=True)
    assert chk.violations == []


def test_pending_pods_the_scheduler_marked_unschedulable_without_an_event_are_counted() -> None:
    ch = Checker("https://127.0.0.1:1", "t", None, "ns")
    unschedulable = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    for uid in ("quiet", "explained"):
        ch._handle("pods", "ADDED", {**_pod(uid, 0), "status": unschedulable})
    ch._handle("pods", "ADDED", _pod("bound", 0, node="n1"))
    ch._handle("events", "ADDED", {"reason": "FailedScheduling", "involvedObject": {"uid": "explained"}})
    now = ch.pods["quiet"].unschedulable_seen or 0.0
    assert ch.silent_pending(now + 1.0) == 0  # the event may still be on its way
    assert ch.silent_pending(now + 11.0) == 1  # "quiet": no reason a user could read
    ch._handle("events", "ADDED", {"reason": "FailedScheduling", "involvedObject": {"uid": "quiet"}})
    assert ch.silent_pending(now + 11.0) == 0
