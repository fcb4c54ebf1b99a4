"""DynamicResources at kube 1.36 semantics: PreEnqueue, PreFilter, Filter, PostFilter, Score, Reserve,
Unreserve, PreBind, queueing hints and args. Expected values are kube's (dynamicresources.go and its
tests), read from the pinned module, not taken from running this code.

The claim cache is the real one (backend.claims.ClaimTracker); the API server is an in-memory fake that
keeps claims, bumps resourceVersions and answers a stale write with 409, as the API server does.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from pyscheduler.backend.claims import ClaimTracker
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.config.defaults import DEFAULT_MULTI_POINT, NOT_IMPLEMENTED
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.framework.interfaces import NodeScore
from pyscheduler.framework.plugin_args import ArgsError, decode_args
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import Node, Pod
from pyscheduler.plugins import registry
from pyscheduler.plugins.dynamic_resources import NAME, DynamicResources, DynamicResourcesArgs, new
from pyscheduler.plugins.dynamic_resources.scoring import compute_score
from pyscheduler.testing import make_handle
from pyscheduler.testing.builders import PodBuilder, make_node, make_node_info, make_pod
from pyscheduler.testing.clock import FakeClock
from pyscheduler.testing.dra import (
    device,
    device_class,
    exactly,
    first_available,
    resource_claim,
    resource_slice,
)

DRIVER = "gpu.example.com"
CLASS = "gpu"
JSON = dict[str, Any]


class FakeClaimApi:
    """The claim writer's view of an API server: stores claims, 409 on a stale resourceVersion."""

    def __init__(self, tracker: ClaimTracker) -> None:
        self.tracker = tracker
        self.stored: dict[str, JSON] = {}
        self.writes: list[tuple[str, JSON]] = []
        self.fail_next: Exception | None = None

    def _store(self, obj: JSON) -> JSON:
        meta = obj["metadata"]
        meta["resourceVersion"] = str(int(meta.get("resourceVersion", "0")) + 1)
        key = f"{meta['namespace']}/{meta['name']}"
        self.stored[key] = copy.deepcopy(obj)
        return copy.deepcopy(obj)

    def reserve(self, claim: JSON, allocation: JSON | None, consumer: JSON) -> JSON:
        if self.fail_next is not None:
            e, self.fail_next = self.fail_next, None
            raise e
        body = copy.deepcopy(dict(claim))
        status = body.setdefault("status", {})
        if allocation is not None:
            status["allocation"] = copy.deepcopy(allocation)
        status.setdefault("reservedFor", []).append(consumer)
        self.writes.append(("reserve", body))
        return self._store(body)

    def deallocate(self, claim: JSON, consumer_uid: str = "") -> JSON:
        body = copy.deepcopy(dict(claim))
        body["status"] = {}
        self.writes.append(("deallocate", body))
        return self._store(body)

    def unreserve(self, claim: JSON, consumer_uid: str) -> JSON | None:
        body = copy.deepcopy(dict(claim))
        status = body.setdefault("status", {})
        status["reservedFor"] = [r for r in status.get("reservedFor") or [] if r["uid"] != consumer_uid]
        self.writes.append(("unreserve", body))
        return self._store(body)


class World:
    """A cluster for one test: nodes, DRA objects, the claim cache and the plugin."""

    def __init__(
        self,
        *objects: JSON,
        nodes: tuple[str, ...] = ("node-1", "node-2"),
        args: DynamicResourcesArgs | None = None,
        clock: Any = None,
    ) -> None:
        self.nodes: list[Node] = [make_node(n).label("kubernetes.io/hostname", n).obj() for n in nodes]
        self.tracker = ClaimTracker()
        self.api = FakeClaimApi(self.tracker)
        others = []
        for o in objects:
            if o["kind"] == "ResourceClaim":
                self.tracker.on_add(ResourceClaim.from_dict(copy.deepcopy(o)))
            else:
                others.append(o)
        self.handle = make_handle(Snapshot.from_nodes(self.nodes), objects=others, clock=clock or FakeClock())
        self.handle.extra["claims"] = self.tracker
        self.handle.extra["claim_writer"] = self.api
        self.plugin = new(args, self.handle)

    def claim(self, name: str, namespace: str = "default") -> ResourceClaim:
        c = self.tracker.get(namespace, name)
        assert c is not None
        return c

    def node_info(self, name: str) -> Any:
        return make_node_info(next(n for n in self.nodes if n.name == name))

    def cycle(
        self, pod: Pod, batch: bool = False
    ) -> tuple[CycleState, Status | None, dict[str, Status | None]]:
        """PreFilter, then Filter on every node (``batch``: all nodes in one ``filter_nodes`` call, as
        the framework calls it)."""
        state = CycleState()
        _, st = self.plugin.pre_filter(state, pod, [])
        if st is not None and not st.is_success():
            return state, st, {}
        infos = [self.node_info(n.name) for n in self.nodes]
        if batch:
            verdicts = self.plugin.filter_nodes(state, pod, infos)
            return state, st, dict(zip([ni.name for ni in infos], verdicts, strict=True))
        return state, st, {ni.name: self.plugin.filter(state, pod, ni) for ni in infos}

    def schedule(self, pod: Pod, node: str) -> CycleState:
        """A full successful cycle to ``node``: PreFilter, Filter, Reserve and PreBind."""
        state, st, verdicts = self.cycle(pod)
        assert st is None or st.is_success() or st.is_skip(), st
        assert verdicts.get(node) is None, verdicts
        assert self.plugin.reserve(state, pod, node) is None
        assert self.plugin.pre_bind(state, pod, node) is None
        return state


def gpus(node: str, n: int, **attrs: Any) -> JSON:
    return resource_slice(
        f"{node}-gpus", DRIVER, [device(f"gpu-{i}", attrs or None) for i in range(n)], node=node
    )


def pod_with(*claims: str, name: str = "p") -> PodBuilder:
    b = make_pod(name).uid(f"uid-{name}")
    for c in claims:
        b = b.resource_claim(c)
    return b


def gpu_claim(name: str, count: int = 1, **kw: Any) -> JSON:
    return resource_claim(name, exactly("req-0", CLASS, count=count), **kw)


CLASS_OBJ = device_class(CLASS, driver=DRIVER)


def reason(st: Status | None) -> tuple[Code, str] | None:
    return None if st is None else (st.code, st.message())


# ------------------------------------------------------------------------------------------ profile


def test_in_the_default_profile_where_kube_puts_it() -> None:
    names = [p.name for p in DEFAULT_MULTI_POINT]
    assert names.index(NAME) == names.index("DefaultPreemption") - 1
    assert names.index(NAME) == names.index("InterPodAffinity") + 1
    assert next(p.weight for p in DEFAULT_MULTI_POINT if p.name == NAME) == 2
    assert NAME not in NOT_IMPLEMENTED
    assert NAME in registry.in_tree()


# ------------------------------------------------------------------------------------------ PreEnqueue


@pytest.mark.parametrize(
    ("pod", "claims", "want"),
    [
        pytest.param(make_pod("p"), [], None, id="no claims"),
        pytest.param(pod_with("c"), [gpu_claim("c")], None, id="claim exists"),
        pytest.param(
            pod_with("c"),
            [],
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 'resourceclaim.resource.k8s.io "c" not found'),
            id="claim missing",
        ),
        pytest.param(
            make_pod("p").uid("uid-p").resource_claim("gpu", template="gpu-template"),
            [],
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 'pod "default/p": ResourceClaim not created yet'),
            id="template, claim not created yet",
        ),
        pytest.param(
            make_pod("p").uid("uid-p").resource_claim("gpu", template="t").claim_status("gpu", None),
            [],
            None,
            id="template, no claim needed",
        ),
        pytest.param(
            make_pod("p").uid("uid-p").resource_claim("gpu", template="t").claim_status("gpu", "p-gpu-x"),
            [gpu_claim("p-gpu-x")],
            (
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                "ResourceClaim default/p-gpu-x was not created for Pod default/p (Pod is not owner)",
            ),
            id="template claim not owned by the pod",
        ),
        pytest.param(
            make_pod("p").uid("uid-p").resource_claim("gpu", template="t").claim_status("gpu", "p-gpu-x"),
            [gpu_claim("p-gpu-x", owner={"kind": "Pod", "name": "p", "uid": "uid-p", "controller": True})],
            None,
            id="template claim owned by the pod",
        ),
    ],
)
def test_pre_enqueue(pod: PodBuilder, claims: list[JSON], want: tuple[Code, str] | None) -> None:
    w = World(CLASS_OBJ, *claims)
    assert reason(w.plugin.pre_enqueue(pod.obj())) == want


def test_pre_enqueue_claim_being_deleted() -> None:
    c = gpu_claim("c")
    c["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    w = World(CLASS_OBJ, c)
    assert reason(w.plugin.pre_enqueue(pod_with("c").obj())) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        'resourceclaim "c" is being deleted',
    )


# ------------------------------------------------------------------------------------------ PreFilter


def _reserved(n: int) -> list[JSON]:
    return [{"resource": "pods", "name": f"o{i}", "uid": f"o{i}"} for i in range(n)]


ALLOC_NODE1: JSON = {
    "devices": {"results": [{"request": "req-0", "driver": DRIVER, "pool": "node-1", "device": "gpu-0"}]},
    "nodeSelector": {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
        ]
    },
}


@pytest.mark.parametrize(
    ("objects", "want"),
    [
        pytest.param([CLASS_OBJ, gpu_claim("c")], None, id="unallocated claim, class exists"),
        pytest.param(
            [gpu_claim("c")],
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "request req-0: device class gpu does not exist"),
            id="class missing",
        ),
        pytest.param(
            [resource_claim("c", first_available("req-0", ("big", "big-gpu"), ("small", CLASS))), CLASS_OBJ],
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "request req-0/big: device class big-gpu does not exist"),
            id="firstAvailable subrequest class missing",
        ),
        pytest.param(
            [CLASS_OBJ, gpu_claim("c", status={"allocation": ALLOC_NODE1, "reservedFor": _reserved(256)})],
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "resourceclaim in use"),
            id="allocated, reservedFor full",
        ),
        pytest.param(
            [CLASS_OBJ, gpu_claim("c", status={"allocation": ALLOC_NODE1, "reservedFor": _reserved(255)})],
            None,
            id="allocated, room for one more consumer",
        ),
    ],
)
def test_pre_filter(objects: list[JSON], want: tuple[Code, str] | None) -> None:
    w = World(*objects)
    _, st = w.plugin.pre_filter(CycleState(), pod_with("c").obj(), [])
    assert reason(st) == want


def test_pre_filter_skips_pods_without_claims() -> None:
    w = World(CLASS_OBJ)
    _, st = w.plugin.pre_filter(CycleState(), make_pod("p").obj(), [])
    assert st is not None and st.is_skip()


def test_pre_filter_waits_for_an_allocation_in_flight() -> None:
    """A claim shared by two pods: while the first pod's allocation is in flight, the second waits."""
    w = World(CLASS_OBJ, gpu_claim("shared"), gpus("node-1", 1))
    first = pod_with("shared", name="a").obj()
    state, _, verdicts = w.cycle(first)
    assert verdicts["node-1"] is None
    assert w.plugin.reserve(state, first, "node-1") is None
    _, st = w.plugin.pre_filter(CycleState(), pod_with("shared", name="b").obj(), [])
    assert reason(st) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "resource claim default/shared is in the process of being allocated",
    )


# ------------------------------------------------------------------------------------------ Filter


@pytest.mark.parametrize(
    ("objects", "claim", "want"),
    [
        pytest.param(
            [gpus("node-1", 2)],
            gpu_claim("c"),
            {"node-1": None, "node-2": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims")},
            id="only the node with the device",
        ),
        pytest.param(
            [gpus("node-1", 1), gpus("node-2", 2)],
            gpu_claim("c", count=2),
            {"node-1": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims"), "node-2": None},
            id="count 2 needs two devices",
        ),
        pytest.param(
            [gpus("node-1", 1, model="a100"), gpus("node-2", 1, model="h100")],
            resource_claim(
                "c", exactly("req-0", CLASS, 'device.attributes["gpu.example.com"].model == "h100"')
            ),
            {"node-1": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims"), "node-2": None},
            id="CEL selector on an attribute",
        ),
        pytest.param(
            [gpus("node-1", 1)],
            gpu_claim("c", status={"allocation": ALLOC_NODE1}),
            {
                "node-1": None,
                "node-2": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "resourceclaim not available on the node"),
            },
            id="allocated claim only usable on its node",
        ),
        pytest.param(
            [resource_slice("shared", DRIVER, [device("gpu-0")], all_nodes=True, pool="net")],
            gpu_claim("c"),
            {"node-1": None, "node-2": None},
            id="allNodes slice",
        ),
        pytest.param(
            [gpus("node-1", 1)],
            resource_claim("c", exactly("req-0", CLASS, "device.attributes[")),
            {
                "node-1": Code.ERROR,
                "node-2": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims"),
            },
            id="bad CEL is an error where a device is checked",
        ),
    ],
)
@pytest.mark.parametrize("batch", [False, True], ids=["filter", "filter_nodes"])
def test_filter(objects: list[JSON], claim: JSON, want: dict[str, Any], batch: bool) -> None:
    w = World(CLASS_OBJ, claim, *objects)
    _, st, verdicts = w.cycle(pod_with("c").obj(), batch)
    assert st is None
    got = {
        n: (v.code if isinstance(want[n], Code) else reason(v)) if v is not None else None
        for n, v in verdicts.items()
    }
    assert got == want


def test_bad_cel_error_names_the_claim_and_selector() -> None:
    w = World(
        CLASS_OBJ, gpus("node-1", 1), resource_claim("c", exactly("req-0", CLASS, "device.attributes["))
    )
    _, _, verdicts = w.cycle(pod_with("c").obj())
    st = verdicts["node-1"]
    assert st is not None and st.message().startswith("claim default/c: selector #0: CEL compile error:")


# ------------------------------------------------------------------------------------------ Reserve / PreBind


def test_a_burst_never_gets_a_device_twice() -> None:
    """Three pods, two devices: the second cycle sees the first's devices in flight (Reserve, before any
    write), the third finds nothing; after PreBind the devices stay taken through the assumed claims."""
    w = World(CLASS_OBJ, gpus("node-1", 2), *(gpu_claim(f"c{i}") for i in range(3)))
    pods = [pod_with(f"c{i}", name=f"p{i}").obj() for i in range(3)]
    states = []
    for p in pods[:2]:
        state, _, verdicts = w.cycle(p)
        assert verdicts["node-1"] is None
        assert w.plugin.reserve(state, p, "node-1") is None
        states.append(state)
    _, _, verdicts = w.cycle(pods[2])
    assert reason(verdicts["node-1"]) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims")
    for p, state in zip(pods[:2], states, strict=True):
        assert w.plugin.pre_bind(state, p, "node-1") is None
    taken = [w.claim(f"c{i}").results[0].device for i in range(2)]
    assert sorted(taken) == ["gpu-0", "gpu-1"]
    assert w.tracker.pending_allocation(w.claim("c0").meta.uid) is None  # assumed: no longer in flight
    _, _, verdicts = w.cycle(pods[2])
    assert reason(verdicts["node-1"]) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims")


def test_pre_bind_writes_allocation_and_reservation() -> None:
    w = World(CLASS_OBJ, gpus("node-1", 1), gpu_claim("c"))
    pod = pod_with("c").obj()
    w.schedule(pod, "node-1")
    (kind, body), *_ = w.api.writes
    assert kind == "reserve"
    assert body["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": "uid-p"}]
    results = body["status"]["allocation"]["devices"]["results"]
    assert results == [{"request": "req-0", "driver": DRIVER, "pool": "node-1", "device": "gpu-0"}]
    assert body["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0][
        "values"
    ] == ["node-1"]
    stored = w.claim("c")
    assert stored.allocated and stored.reserved_for[0].uid == "uid-p"


def test_unreserve_frees_the_devices_in_flight() -> None:
    w = World(CLASS_OBJ, gpus("node-1", 1), gpu_claim("a"), gpu_claim("b"))
    pa, pb = pod_with("a", name="pa").obj(), pod_with("b", name="pb").obj()
    state, _, _ = w.cycle(pa)
    assert w.plugin.reserve(state, pa, "node-1") is None
    assert reason(w.cycle(pb)[2]["node-1"]) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "cannot allocate all claims",
    )
    w.plugin.unreserve(state, pa, "node-1")
    w.plugin.unreserve(state, pa, "node-1")  # idempotent
    assert w.cycle(pb)[2]["node-1"] is None
    assert w.api.writes == []


def test_failed_pre_bind_then_unreserve_leaves_nothing_taken() -> None:
    w = World(CLASS_OBJ, gpus("node-1", 1), gpu_claim("a"), gpu_claim("b"))
    pa, pb = pod_with("a", name="pa").obj(), pod_with("b", name="pb").obj()
    state, _, _ = w.cycle(pa)
    assert w.plugin.reserve(state, pa, "node-1") is None
    w.api.fail_next = RuntimeError("the server is on fire")
    st = w.plugin.pre_bind(state, pa, "node-1")
    assert st is not None and st.code == Code.ERROR and "on fire" in st.message()
    w.plugin.unreserve(state, pa, "node-1")
    assert not w.claim("a").allocated
    assert w.cycle(pb)[2]["node-1"] is None


def test_unreserve_after_pre_bind_removes_the_reservation() -> None:
    w = World(CLASS_OBJ, gpus("node-1", 1), gpu_claim("c"))
    pod = pod_with("c").obj()
    state = w.schedule(pod, "node-1")
    w.plugin.unreserve(state, pod, "node-1")
    kind, body = w.api.writes[-1]
    assert kind == "unreserve" and body["status"]["reservedFor"] == []


def test_an_allocated_claim_is_only_reserved() -> None:
    w = World(CLASS_OBJ, gpus("node-1", 1), gpu_claim("c", status={"allocation": ALLOC_NODE1}))
    pod = pod_with("c").obj()
    w.schedule(pod, "node-1")
    (kind, body), *_ = w.api.writes
    assert kind == "reserve" and body["status"]["allocation"] == ALLOC_NODE1


# ------------------------------------------------------------------------------------------ PostFilter


@pytest.mark.parametrize(
    ("reserved", "want", "deallocated"),
    [
        pytest.param([], "deallocation of ResourceClaim completed", True, id="unused claim is deallocated"),
        pytest.param(
            [{"resource": "pods", "name": "p", "uid": "uid-p"}],
            "deallocation of ResourceClaim completed",
            True,
            id="reserved only for this pod",
        ),
        pytest.param(
            [{"resource": "pods", "name": "o", "uid": "uid-o"}],
            "still not schedulable",
            False,
            id="another pod uses it",
        ),
    ],
)
@pytest.mark.parametrize("batch", [False, True], ids=["filter", "filter_nodes"])
def test_post_filter(reserved: list[JSON], want: str, deallocated: bool, batch: bool) -> None:
    w = World(
        CLASS_OBJ,
        gpus("node-1", 1),
        gpu_claim("c", status={"allocation": ALLOC_NODE1, "reservedFor": reserved}),
    )
    w.nodes = [w.nodes[1]]  # only node-2 is left: the claim is not available there
    pod = pod_with("c").obj()
    state, _, verdicts = w.cycle(pod, batch)
    assert reason(verdicts["node-2"]) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "resourceclaim not available on the node",
    )
    _, st = w.plugin.post_filter(state, pod, {k: v for k, v in verdicts.items() if v is not None})
    assert reason(st) == (Code.UNSCHEDULABLE, want)
    assert [k for k, _ in w.api.writes] == (["deallocate"] if deallocated else [])


def test_post_filter_without_claims_and_without_state() -> None:
    w = World(CLASS_OBJ)
    pod = make_pod("p").obj()
    state = CycleState()
    w.plugin.pre_filter(state, pod, [])
    assert reason(w.plugin.post_filter(state, pod, {})[1]) == (
        Code.UNSCHEDULABLE,
        "no new claims to deallocate",
    )
    # an earlier PreFilter plugin rejected the pod: kube's DRA PostFilter fails reading its state
    assert reason(w.plugin.post_filter(CycleState(), pod, {})[1]) == (Code.ERROR, "not found")


# ------------------------------------------------------------------------------------------ Score


def test_first_available_scores_the_preferred_subrequest_higher() -> None:
    big = device_class("big", 'device.attributes["gpu.example.com"].model == "h100"', driver=DRIVER)
    small = device_class("small", driver=DRIVER)
    claim = resource_claim("c", first_available("req-0", ("big", "big"), ("small", "small")))
    w = World(big, small, claim, gpus("node-1", 1, model="a100"), gpus("node-2", 1, model="h100"))
    pod = pod_with("c").obj()
    state, _, verdicts = w.cycle(pod)
    assert verdicts == {"node-1": None, "node-2": None}
    scores = [NodeScore(n, w.plugin.score(state, pod, w.node_info(n))[0]) for n in ("node-1", "node-2")]
    assert [s.score for s in scores] == [7, 8]  # 8 - index of the subrequest
    w.plugin.normalize_score(state, pod, scores)
    assert [s.score for s in scores] == [87, 100]
    batch, st = w.plugin.score_nodes(state, pod, [w.node_info("node-1"), w.node_info("node-2")])
    assert st is None and list(batch) == [7, 8]


def test_score_counts_every_claim() -> None:
    claims = [
        ResourceClaim.from_dict(resource_claim("a", first_available("r", ("x", "c1"), ("y", "c2")))),
        ResourceClaim.from_dict(resource_claim("b", exactly("r", "c1"))),
    ]
    allocs = [
        {"devices": {"results": [{"request": "r/y", "driver": "d", "pool": "p", "device": "0"}]}},
        {"devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": "1"}]}},
    ]
    assert compute_score(claims, allocs) == 7


# ------------------------------------------------------------------------------------------ args


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        pytest.param({}, None, id="defaults"),
        pytest.param({"filterTimeout": "0s", "bindingTimeout": "1s"}, None, id="zero filter timeout"),
        pytest.param(
            {"filterTimeout": "-1s"},
            "args.filterTimeout: Invalid value: -1s: must be zero or positive",
            id="negative filter timeout",
        ),
        pytest.param(
            {"bindingTimeout": "500ms"},
            "args.bindingTimeout: Invalid value: 500ms: must be at least 1 second",
            id="binding timeout under a second",
        ),
        pytest.param(
            {"filterTimeout": "10"}, 'args.filterTimeout: time: missing unit in duration "10"', id="no unit"
        ),
        pytest.param({"timeout": "1s"}, "args.timeout: unknown field", id="unknown field"),
    ],
)
def test_args(raw: JSON, error: str | None) -> None:
    if error is None:
        a = decode_args(DynamicResourcesArgs, raw)
        assert a.filter_timeout_seconds == (0.0 if raw else 10.0)
        return
    with pytest.raises(ArgsError) as e:
        decode_args(DynamicResourcesArgs, raw)
    assert str(e.value).startswith(error)


class SlowClock(FakeClock):
    """Every look at the clock takes a second: the allocator's search runs out of time."""

    def now(self) -> float:
        return self.advance(1.0)


def test_filter_timeout_is_an_error_for_the_node() -> None:
    claim = gpu_claim("c", count=8)
    w = World(
        CLASS_OBJ, claim, gpus("node-1", 7), args=DynamicResourcesArgs(filter_timeout="5s"), clock=SlowClock()
    )
    _, _, verdicts = w.cycle(pod_with("c").obj())
    assert reason(verdicts["node-1"]) == (Code.ERROR, "node node-1: timed out trying to allocate devices")


def test_plugin_type() -> None:
    assert isinstance(new(None, make_handle()), DynamicResources)


# ------------------------------------------------------------------------------------------ binding conditions

WAITING_DEVICE = {
    "name": "gpu-0",
    "bindingConditions": ["attached"],
    "bindingFailureConditions": ["failed"],
}


def _bc_alloc(timestamp: str) -> JSON:
    alloc: JSON = copy.deepcopy(ALLOC_NODE1)
    r = alloc["devices"]["results"][0]
    r["bindingConditions"], r["bindingFailureConditions"] = ["attached"], ["failed"]
    alloc["allocationTimestamp"] = timestamp
    return alloc


def _device_status(**conditions: str) -> list[JSON]:
    return [
        {
            "driver": DRIVER,
            "pool": "node-1",
            "device": "gpu-0",
            "conditions": [
                {"type": k, "status": v, "reason": "Test", "message": f"{k} is {v}"}
                for k, v in conditions.items()
            ],
        }
    ]


@pytest.mark.parametrize(
    ("conditions", "age", "available"),
    [
        pytest.param({}, 10.0, True, id="waiting, within the binding timeout"),
        pytest.param({"attached": "True"}, 10.0, True, id="ready"),
        pytest.param({}, 601.0, False, id="waiting past the binding timeout"),
        pytest.param({"failed": "True"}, 10.0, False, id="binding failed"),
        pytest.param({"attached": "True"}, 601.0, True, id="ready, however long it took"),
    ],
)
@pytest.mark.parametrize("batch", [False, True], ids=["filter", "filter_nodes"])
def test_allocated_claim_with_binding_conditions(
    conditions: dict[str, str], age: float, available: bool, batch: bool
) -> None:
    clock = FakeClock(wall_start=1_800_000_000.0)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_800_000_000.0 - age))
    status = {"allocation": _bc_alloc(stamp), "devices": _device_status(**conditions)}
    w = World(CLASS_OBJ, gpu_claim("c", status=status), clock=clock)
    _, _, verdicts = w.cycle(pod_with("c").obj(), batch)
    want = (
        None
        if available
        else (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "resourceclaim not available on the node")
    )
    assert reason(verdicts["node-1"]) == want


def test_pre_bind_waits_for_binding_conditions() -> None:
    clock = FakeClock()
    slice_ = resource_slice("node-1-gpus", DRIVER, [WAITING_DEVICE], node="node-1")
    w = World(CLASS_OBJ, gpu_claim("c"), slice_, clock=clock)
    pod = pod_with("c").obj()
    state, _, verdicts = w.cycle(pod)
    assert verdicts["node-1"] is None
    assert w.plugin.reserve(state, pod, "node-1") is None
    polls: list[float] = []

    def sleep(seconds: float) -> None:
        polls.append(seconds)
        clock.advance(seconds)
        if len(polls) == 2:  # the driver reports the device attached
            stored = w.claim("c")
            raw = copy.deepcopy(stored.raw)
            raw["status"]["devices"] = _device_status(attached="True")
            raw["metadata"]["resourceVersion"] = str(stored.meta.resource_version + 1)
            w.tracker.on_update(stored, ResourceClaim.from_dict(raw))

    w.plugin.sleep = sleep
    assert w.plugin.pre_bind(state, pod, "node-1") is None
    assert polls == [5.0, 5.0]
    written = w.claim("c").allocation
    assert written is not None and written["devices"]["results"][0]["bindingConditions"] == ["attached"]


def test_pre_bind_binding_failure_and_timeout_are_errors() -> None:
    for conditions, want in (
        ({"failed": "True"}, 'device binding failed: claim=c, reason=Test, message="failed is True"'),
        ({}, "device binding timeout: claim=c"),
    ):
        clock = FakeClock()
        slice_ = resource_slice("node-1-gpus", DRIVER, [WAITING_DEVICE], node="node-1")
        w = World(CLASS_OBJ, gpu_claim("c"), slice_, clock=clock)
        pod = pod_with("c").obj()
        state, _, _ = w.cycle(pod)
        w.plugin.reserve(state, pod, "node-1")

        def sleep(
            seconds: float, w: World = w, conditions: dict[str, str] = conditions, clock: FakeClock = clock
        ) -> None:
            clock.advance(seconds)
            stored = w.claim("c")
            raw = copy.deepcopy(stored.raw)
            raw["status"]["devices"] = _device_status(**conditions)
            raw["status"]["allocation"]["allocationTimestamp"] = "2000-01-01T00:00:00Z"
            raw["metadata"]["resourceVersion"] = str(stored.meta.resource_version + 1)
            w.tracker.on_update(stored, ResourceClaim.from_dict(raw))

        w.plugin.sleep = sleep
        st = w.plugin.pre_bind(state, pod, "node-1")
        assert st is not None and st.code == Code.ERROR and st.message() == want
