"""Extended resources backed by DRA (DRAExtendedResource): the hand-off from NodeResourcesFit, the special
claim's requests per node, and the claim PreBind creates. Expected values follow kube 1.36
(extendeddynamicresources.go and its tests, noderesources/fit.go's shouldDelegateResourceToDRA)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, cast

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.dra import ResourceClaim, extended_resource_class
from pyscheduler.framework.status import Code
from pyscheduler.framework.types import Pod
from pyscheduler.metrics import SchedulerMetrics
from pyscheduler.plugins.dynamic_resources.extended import ANNOTATION, requests_and_mappings
from pyscheduler.plugins.dynamic_resources.test_dynamic_resources import (
    CLASS_OBJ,
    DRIVER,
    JSON,
    WAITING_DEVICE,
    FakeClaimApi,
    World,
    _device_status,
    gpu_claim,
    gpus,
    pod_with,
)
from pyscheduler.plugins.node_resources_fit import Fit
from pyscheduler.testing.builders import PodBuilder, make_node, make_node_info, make_pod
from pyscheduler.testing.clock import FakeClock
from pyscheduler.testing.dra import device_class, resource_slice

GPU = "example.com/gpu"


def gpu_class(name: str = "gpu", extended: str = GPU, created: str = "2026-01-01T00:00:00Z") -> JSON:
    c = device_class(name, driver=DRIVER)
    c["spec"]["extendedResourceName"] = extended
    c["metadata"]["creationTimestamp"] = created
    return c


class CreatingApi(FakeClaimApi):
    """FakeClaimApi plus what extended resources need: create (the watch delivers the new claim at once),
    delete, and the pod status patch."""

    def __init__(self, tracker: Any) -> None:
        super().__init__(tracker)
        self.pod_status: list[tuple[str, str, JSON]] = []
        self.deleted: list[str] = []
        self.created = 0

    def create(self, claim: Mapping[str, Any]) -> JSON:
        body = copy.deepcopy(dict(claim))
        self.created += 1
        meta = body["metadata"]
        meta["name"] = f"{meta['generateName']}{self.created}"
        meta["uid"] = f"uid-created-{self.created}"
        meta["resourceVersion"] = "0"
        stored = self._store(body)
        self.tracker.on_add(ResourceClaim.from_dict(copy.deepcopy(stored)))
        return stored

    def reserve(self, claim: JSON, allocation: JSON | None, consumer: JSON) -> JSON:
        old = self.tracker.get(claim["metadata"]["namespace"], claim["metadata"]["name"])
        stored = super().reserve(claim, allocation, consumer)
        if old is not None:
            self.tracker.on_update(old, ResourceClaim.from_dict(copy.deepcopy(stored)))
        return stored

    def delete(self, claim: Mapping[str, Any]) -> None:
        self.deleted.append(claim["metadata"]["name"])

    def set_pod_extended_resource_claim_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> None:
        self.pod_status.append((namespace, name, dict(status)))


class ExtWorld(World):
    api: CreatingApi


def world(*objects: JSON, nodes: tuple[str, ...] = ("node-1", "node-2")) -> ExtWorld:
    w = ExtWorld(*objects, nodes=nodes)
    w.api = CreatingApi(w.tracker)
    w.handle.extra["claim_writer"] = w.api
    w.plugin.deps.writer = cast(Any, w.api)  # the fake is duck-typed like the one it extends
    return w


def wants(name: str, count: int, resource: str = GPU) -> PodBuilder:
    return make_pod(name).uid(f"uid-{name}").res({resource: str(count), "cpu": "1"})


def test_class_resolution_newest_wins_then_lower_name() -> None:
    old = gpu_class("b-old", created="2026-01-01T00:00:00Z")
    new = gpu_class("c-new", created="2026-02-01T00:00:00Z")
    tie = gpu_class("a-new", created="2026-02-01T00:00:00Z")
    assert extended_resource_class([old, new], GPU) == "c-new"
    assert extended_resource_class([old, new, tie], GPU) == "a-new"
    assert extended_resource_class([old], "deviceclass.resource.kubernetes.io/b-old") == "b-old"
    assert extended_resource_class([old], "example.com/other") is None


def test_requests_one_per_container_and_init_containers_reuse_devices() -> None:
    spec = make_pod("p").res({GPU: "2", "cpu": "1"}).container("c1").res({GPU: "1"}, container=1).json()
    spec["spec"]["initContainers"] = [
        {"name": f"init{i}", "image": "pause", "resources": {"requests": {GPU: n}}}
        for i, n in enumerate("41")
    ]
    pod = Pod.from_dict(spec)
    reqs, maps = requests_and_mappings(pod, [GPU], {GPU: "gpu"})
    # the two init containers come first (indices 0, 1); in container 2 the gpu is request 1 of its
    # sorted names (cpu, example.com/gpu). init0 reuses the 2 + 1 devices of the containers after it and
    # asks for one more; init1 makes do with container 2's.
    assert [(r["name"], r["exactly"]["count"], r["exactly"]["deviceClassName"]) for r in reqs] == [
        ("container-0-request-0", 1, "gpu"),
        ("container-2-request-1", 2, "gpu"),
        ("container-3-request-0", 1, "gpu"),
    ]
    by_container: dict[str, list[str]] = {}
    for m in maps:
        assert m["resourceName"] == GPU
        by_container.setdefault(m["containerName"], []).append(m["requestName"])
    first = pod.containers[0].name
    assert by_container == {
        first: ["container-2-request-1"],
        "c1": ["container-3-request-0"],
        "init0": ["container-2-request-1", "container-3-request-0", "container-0-request-0"],
        "init1": ["container-2-request-1"],
    }


def test_pod_gets_devices_of_the_mapped_class_and_a_created_claim() -> None:
    w = world(gpu_class(), gpus("node-1", 3))
    pod = wants("p1", 2).obj()
    state, st, verdicts = w.cycle(pod)
    assert st is None
    assert verdicts["node-1"] is None
    assert verdicts["node-2"] is not None
    assert (verdicts["node-2"].code, verdicts["node-2"].message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "cannot allocate all claims",
    )
    assert w.plugin.reserve(state, pod, "node-1") is None
    assert w.plugin.pre_bind(state, pod, "node-1") is None
    claim = w.claim("p1-extended-resources-1")
    raw = claim.raw
    assert raw["metadata"]["annotations"] == {ANNOTATION: "true"}
    assert raw["metadata"]["ownerReferences"][0]["uid"] == "uid-p1"
    assert [r.uid for r in claim.reserved_for] == ["uid-p1"]
    results = claim.allocation["devices"]["results"]  # type: ignore[index]
    assert len(results) == 2 and {r["request"] for r in results} == {"container-0-request-1"}
    assert w.api.pod_status == [
        (
            "default",
            "p1",
            {
                "requestMappings": [
                    {
                        "containerName": pod.containers[0].name,
                        "resourceName": GPU,
                        "requestName": "container-0-request-1",
                    }
                ],
                "resourceClaimName": "p1-extended-resources-1",
            },
        )
    ]
    # one device left: a pod wanting two is refused everywhere, one wanting one gets the last
    _, _, verdicts = w.cycle(wants("p2", 2).obj())
    assert {n: v.message() for n, v in verdicts.items() if v is not None} == {
        "node-1": "cannot allocate all claims",
        "node-2": "cannot allocate all claims",
    }
    w.schedule(wants("p3", 1).obj(), "node-1")
    used = {r["device"] for c in w.tracker.list() for r in c.allocation["devices"]["results"]}  # type: ignore[index]
    assert used == {"gpu-0", "gpu-1", "gpu-2"}


def test_node_advertising_the_resource_is_left_to_node_resources_fit() -> None:
    w = world(gpu_class(), gpus("node-2", 3))
    w.nodes[0] = make_node("node-1").res({GPU: "4"}).label("kubernetes.io/hostname", "node-1").obj()
    state, st, verdicts = w.cycle(wants("p", 2).obj())
    assert st is None and verdicts == {"node-1": None, "node-2": None}
    pod = wants("p", 2).obj()
    assert w.plugin.reserve(state, pod, "node-1") is None
    assert w.plugin.pre_bind(state, pod, "node-1") is None
    assert w.api.created == 0 and w.api.pod_status == []


def test_resource_neither_advertised_nor_backed_cannot_fit() -> None:
    w = world(gpu_class(), gpus("node-1", 3))
    pod = wants("p", 1).res({"example.com/fpga": "1"}).obj()
    _, _, verdicts = w.cycle(pod)
    assert {n: (v.code, v.message()) for n, v in verdicts.items() if v is not None} == {
        n: (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot fit resource") for n in ("node-1", "node-2")
    }


def test_no_class_maps_the_resource_plugin_skips() -> None:
    w = world(device_class("gpu", driver=DRIVER), gpus("node-1", 3))
    _, st = w.plugin.pre_filter(CycleState(), wants("p", 1).obj(), [])
    assert st is not None and st.is_skip()


def test_unreserve_after_failed_bind_deletes_the_created_claim_and_frees_devices() -> None:
    w = world(gpu_class(), gpus("node-1", 2))
    pod = wants("p1", 2).obj()
    state, _, _ = w.cycle(pod)
    assert w.plugin.reserve(state, pod, "node-1") is None
    _, _, verdicts = w.cycle(wants("p2", 1).obj())
    assert verdicts["node-1"] is not None  # in flight: taken
    w.plugin.unreserve(state, pod, "node-1")
    _, _, verdicts = w.cycle(wants("p2", 1).obj())
    assert verdicts["node-1"] is None


def test_fit_leaves_mapped_resources_to_dra_only_where_allocatable_lacks_them() -> None:
    w = world(gpu_class())
    fit = Fit(None, w.handle)
    pod = wants("p", 2).obj()
    bare = make_node_info(make_node("bare").capacity(cpu="4", pods="10").obj())
    has = make_node_info(make_node("has").capacity(cpu="4", pods="10").res({GPU: "1"}).obj())
    state = CycleState()
    fit.pre_filter(state, pod, [])
    assert fit.filter(state, pod, bare) is None
    st = fit.filter(state, pod, has)
    assert st is not None and st.message() == f"Insufficient {GPU}"
    unmapped = World()
    fit2 = Fit(None, unmapped.handle)
    state2 = CycleState()
    fit2.pre_filter(state2, pod, [])
    st2 = fit2.filter(state2, pod, bare)
    assert st2 is not None and st2.message() == f"Insufficient {GPU}"


def _sample(m: SchedulerMetrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


def test_metrics_count_claim_creates_and_binding_condition_waits() -> None:
    m = SchedulerMetrics()
    w = world(gpu_class(), gpus("node-1", 3))
    w.handle.extra["metrics"] = m
    w.schedule(wants("p1", 1).obj(), "node-1")
    assert _sample(m, "scheduler_resourceclaim_creates_total", status="success") == 1.0

    clock = FakeClock()
    slice_ = resource_slice("node-1-gpus", DRIVER, [WAITING_DEVICE], node="node-1")
    bc = World(CLASS_OBJ, gpu_claim("c"), slice_, clock=clock)
    bc.handle.extra["metrics"] = m
    pod = pod_with("c").obj()
    state, _, _ = bc.cycle(pod)
    assert bc.plugin.reserve(state, pod, "node-1") is None

    def sleep(seconds: float) -> None:
        clock.advance(seconds)
        stored = bc.claim("c")
        raw = copy.deepcopy(stored.raw)
        raw["status"]["devices"] = _device_status(attached="True")
        raw["metadata"]["resourceVersion"] = str(stored.meta.resource_version + 1)
        bc.tracker.on_update(stored, ResourceClaim.from_dict(raw))

    bc.plugin.sleep = sleep
    assert bc.plugin.pre_bind(state, pod, "node-1") is None
    labels = {"profile": pod.scheduler_name, "driver": DRIVER, "status": "success"}
    assert _sample(m, "scheduler_dra_bindingconditions_allocations_total", **labels) == 1.0
    assert _sample(m, "scheduler_dra_bindingconditions_wait_duration_seconds_count", **labels) == 1.0
    assert _sample(m, "scheduler_dra_bindingconditions_wait_duration_seconds_sum", **labels) == 5.0


def test_a_pod_tried_again_finds_the_claim_made_for_it() -> None:
    """A pod whose special claim was written (PreBind) but which is scheduled again finds that claim by
    its controller owner, and, as kube's filterExtendedResources, is refused until the claim is gone
    rather than given a second one."""
    w = world(gpu_class(), gpus("node-1", 3))
    pod = wants("p1", 1).obj()
    state, st, _ = w.cycle(pod)
    assert st is None
    assert w.plugin.reserve(state, pod, "node-1") is None
    assert w.plugin.pre_bind(state, pod, "node-1") is None
    assert w.api.created == 1
    assert [c.meta.name for c in w.tracker.owned_by("uid-p1")] == ["p1-extended-resources-1"]
    assert w.tracker.owned_by("uid-p2") == []
    _, st, verdicts = w.cycle(pod)
    assert st is None
    assert {n: (v.code, v.message()) for n, v in verdicts.items() if v is not None} == {
        n: (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot schedule extended resource claim")
        for n in ("node-1", "node-2")
    }
    assert w.api.created == 1
