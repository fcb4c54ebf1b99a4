"""Structured allocator table tests, modelled on upstream's allocatortesting cases (names kept)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pyscheduler.framework.dra import DeviceClass, ResourceClaim, ResourceSlice
from pyscheduler.plugins.dynamic_resources.allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
    NodeAllocationError,
)
from pyscheduler.plugins.dynamic_resources.cel import SelectorCache

DRIVER_A, DRIVER_B = "driver-a", "driver-b"
NODE1 = "node-1"
LOCAL = {
    "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE1]}]}]
}


def cls(name: str, driver: str, config: list[dict[str, Any]] | None = None) -> DeviceClass:
    return DeviceClass.from_dict(
        {
            "metadata": {"name": name},
            "spec": {
                "selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}],
                "config": config or [],
            },
        }
    )


CLASSES = {"class-a": cls("class-a", DRIVER_A), "class-b": cls("class-b", DRIVER_B)}


def dev(name: str, memory: str | None = None, **attrs: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    if memory:
        d["capacity"] = {"memory": {"value": memory}}
    if attrs:
        d["attributes"] = {k: v for k, v in attrs.items()}
    return d


def slice_(
    name: str,
    pool: str,
    driver: str,
    *devices: dict[str, Any],
    node: str = NODE1,
    gen: int = 1,
    count: int = 1,
    **where: Any,
) -> ResourceSlice:
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": gen, "resourceSliceCount": count},
        "devices": list(devices),
    }
    if where:
        spec.update(where)
    else:
        spec["nodeName"] = node
    return ResourceSlice.from_dict({"metadata": {"name": name}, "spec": spec})


def req(
    name: str,
    klass: str = "class-a",
    count: int = 1,
    *selectors: str,
    mode: str = "ExactCount",
    admin: bool = False,
) -> dict[str, Any]:
    exact: dict[str, Any] = {
        "deviceClassName": klass,
        "allocationMode": mode,
        "count": count,
        "adminAccess": admin,
    }
    if mode == "All":
        del exact["count"]
    exact["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": exact}


def claim(
    name: str,
    *requests: dict[str, Any],
    constraints: list[dict[str, Any]] | None = None,
    config: list[dict[str, Any]] | None = None,
) -> ResourceClaim:
    return ResourceClaim.from_dict(
        {
            "metadata": {"namespace": "default", "name": name, "uid": name},
            "spec": {
                "devices": {
                    "requests": list(requests),
                    "constraints": constraints or [],
                    "config": config or [],
                }
            },
        }
    )


def allocate(
    claims: list[ResourceClaim],
    slices: list[ResourceSlice],
    allocated: set[tuple[str, str, str]] | None = None,
    classes: dict[str, DeviceClass] | None = None,
) -> list[dict[str, Any]] | None:
    a = Allocator((classes or CLASSES).get, slices, allocated or set(), SelectorCache())
    out = a.allocate(NODE1, {"region": "r1"}, claims)
    return None if out is None else list(out)  # the JSON, built (allocate builds it when first read)


def results(allocs: Sequence[dict[str, Any]] | None) -> list[list[tuple[str, str, str, str]]]:
    assert allocs is not None
    return [
        [(r["request"], r["driver"], r["pool"], r["device"]) for r in a["devices"]["results"]] for a in allocs
    ]


def test_simple() -> None:
    out = allocate([claim("c0", req("r0"))], [slice_("s1", "p1", DRIVER_A, dev("d1"))])
    assert results(out) == [[("r0", DRIVER_A, "p1", "d1")]]
    assert out is not None and out[0]["nodeSelector"] == LOCAL


def test_a_past_deadline_fails_at_the_first_step() -> None:
    """filterTimeout: kube looks at its context before every step, so a deadline already past (e.g.
    filterTimeout: 1ns) fails even a one-device search; an open one lets it finish."""
    a = Allocator(CLASSES.get, [slice_("s1", "p1", DRIVER_A, dev("d1"))], set(), SelectorCache())
    with pytest.raises(AllocationTimeout):
        a.allocate(NODE1, {"region": "r1"}, [claim("c0", req("r0"))], expired=lambda: True)
    out = a.allocate(NODE1, {"region": "r1"}, [claim("c0", req("r0"))], expired=lambda: False)
    assert results(out) == [[("r0", DRIVER_A, "p1", "d1")]]


def test_other_node_and_already_allocated_and_not_enough() -> None:
    assert (
        allocate([claim("c0", req("r0"))], [slice_("s1", "p1", DRIVER_A, dev("d1"), node="node-2")]) is None
    )
    assert (
        allocate(
            [claim("c0", req("r0"))], [slice_("s1", "p1", DRIVER_A, dev("d1"))], {(DRIVER_A, "p1", "d1")}
        )
        is None
    )
    assert allocate([claim("c0", req("r0", count=2))], [slice_("s1", "p1", DRIVER_A, dev("d1"))]) is None
    # two claims competing for the one device: the burst case within one pod
    assert (
        allocate([claim("c0", req("r0")), claim("c1", req("r0"))], [slice_("s1", "p1", DRIVER_A, dev("d1"))])
        is None
    )


def test_small_and_large_backtrack_requests() -> None:
    c = claim(
        "c0",
        req("r0", "class-a", 1, f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("1Gi")) >= 0'),
        req("r1", "class-a", 1, f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("2Gi")) >= 0'),
    )
    out = allocate([c], [slice_("s1", "p1", DRIVER_A, dev("d2", "2Gi"), dev("d1", "1Gi"))])
    assert results(out) == [[("r0", DRIVER_A, "p1", "d1"), ("r1", DRIVER_A, "p1", "d2")]]


def test_all_devices_plus_another_reversed() -> None:
    claims = [claim("c1", req("r0", "class-b")), claim("c0", req("r0", mode="All"))]
    out = allocate(claims, [slice_("s1", "p1", DRIVER_A, dev("d1")), slice_("s1", "p1", DRIVER_B, dev("d1"))])
    assert results(out) == [[("r0", DRIVER_B, "p1", "d1")], [("r0", DRIVER_A, "p1", "d1")]]


def test_all_devices_some_allocated_and_admin_access() -> None:
    slices = [slice_("s1", "p1", DRIVER_A, dev("d1"), dev("d2"))]
    taken = {(DRIVER_A, "p1", "d1")}
    assert allocate([claim("c0", req("r0", mode="All"))], slices, taken) is None
    out = allocate([claim("c0", req("r0", mode="All", admin=True))], slices, taken)
    assert results(out) == [[("r0", DRIVER_A, "p1", "d1"), ("r0", DRIVER_A, "p1", "d2")]]
    assert out is not None and all(r["adminAccess"] for r in out[0]["devices"]["results"])
    assert allocate([claim("c0", req("r0", mode="All"))], []) is None  # no devices: All fails


def test_incomplete_and_obsolete_pools() -> None:
    # one of two slices of generation 1 is missing: the pool's devices are not used
    incomplete = [slice_("s1", "p1", DRIVER_A, dev("d1"), count=2)]
    assert allocate([claim("c0", req("r0"))], incomplete) is None
    with pytest.raises(
        AllocationError,
        match="asks for all devices, but resource pool driver-a/p1 is currently being updated",
    ):
        allocate([claim("c0", req("r0", mode="All"))], incomplete)
    # a newer generation replaces the old slice
    out = allocate(
        [claim("c0", req("r0"))],
        [slice_("s1", "p1", DRIVER_A, dev("old")), slice_("s2", "p1", DRIVER_A, dev("new"), gen=2)],
    )
    assert results(out) == [[("r0", DRIVER_A, "p1", "new")]]


def test_network_attached_and_selector_slices() -> None:
    sel = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "region", "operator": "In", "values": ["r1"]}]}]
    }
    out = allocate([claim("c0", req("r0"))], [slice_("s1", "p1", DRIVER_A, dev("d1"), nodeSelector=sel)])
    assert out is not None and out[0]["nodeSelector"] == sel
    out = allocate([claim("c0", req("r0"))], [slice_("s1", "p1", DRIVER_A, dev("d1"), allNodes=True)])
    assert out is not None and "nodeSelector" not in out[0]
    other = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "region", "operator": "In", "values": ["r2"]}]}]
    }
    assert (
        allocate([claim("c0", req("r0"))], [slice_("s1", "p1", DRIVER_A, dev("d1"), nodeSelector=other)])
        is None
    )


def test_pools_in_driver_then_pool_order() -> None:
    slices = [slice_("s9", "p2", DRIVER_A, dev("d1")), slice_("s1", "p1", DRIVER_A, dev("d1"))]
    assert results(allocate([claim("c0", req("r0"))], slices)) == [[("r0", DRIVER_A, "p1", "d1")]]


def test_with_constraint_for_request_retry() -> None:
    c = claim(
        "c0",
        req("r0"),
        req("r1"),
        constraints=[
            {"requests": ["r0"], "matchAttribute": f"{DRIVER_A}/driverVersion"},
            {"matchAttribute": f"{DRIVER_A}/stringAttribute"},
        ],
    )
    s = slice_(
        "s1",
        "p1",
        DRIVER_A,
        dev("d1", driverVersion={"version": "1.0.0"}, stringAttribute={"string": "a"}),
        dev("d2", driverVersion={"version": "2.0.0"}, stringAttribute={"string": "b"}),
        dev("d3", driverVersion={"version": "3.0.0"}, stringAttribute={"string": "b"}),
    )
    assert results(allocate([c], [s])) == [[("r0", DRIVER_A, "p1", "d2"), ("r1", DRIVER_A, "p1", "d3")]]


def test_constraint_on_missing_attribute_fails() -> None:
    c = claim("c0", req("r0"), constraints=[{"matchAttribute": f"{DRIVER_A}/nope"}])
    assert allocate([c], [slice_("s1", "p1", DRIVER_A, dev("d1"))]) is None


def test_prioritized_list_first_unavailable_and_backtracking() -> None:
    big = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("8Gi")) >= 0'
    small = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("4Gi")) >= 0'
    c = claim(
        "c0",
        {
            "name": "r0",
            "firstAvailable": [
                {"name": "big", "deviceClassName": "class-a", "selectors": [{"cel": {"expression": big}}]},
                {
                    "name": "small",
                    "deviceClassName": "class-a",
                    "selectors": [{"cel": {"expression": small}}],
                },
            ],
        },
        req("r1", "class-a", 1, big),
    )
    slices = [slice_("s1", "p1", DRIVER_A, dev("d1", "8Gi")), slice_("s2", "p2", DRIVER_A, dev("d2", "4Gi"))]
    # r0/big would take the only 8Gi device that r1 needs: backtrack to r0/small
    assert results(allocate([c], slices)) == [
        [("r0/small", DRIVER_A, "p2", "d2"), ("r1", DRIVER_A, "p1", "d1")]
    ]


def test_errors_carry_kubes_messages() -> None:
    s = [slice_("s1", "p1", DRIVER_A, dev("d1"))]
    with pytest.raises(
        AllocationError,
        match=r'claim default/c0, request r0: could not retrieve device class class-x: deviceclass.resource.k8s.io "class-x" not found',
    ):
        allocate([claim("c0", req("r0", "class-x"))], s)
    with pytest.raises(
        AllocationError, match=r"claim default/c0: selector #0: CEL runtime error: no such key: nope"
    ):
        allocate([claim("c0", req("r0", "class-a", 1, f'device.attributes["{DRIVER_A}"].nope'))], s)
    with pytest.raises(
        AllocationError, match=r"claim default/c0: selector #0: CEL compile error: compilation failed"
    ):
        allocate([claim("c0", req("r0", "class-a", 1, "device.driver =="))], s)


def test_with_class_device_config_and_claim_config() -> None:
    opaque = {"opaque": {"driver": DRIVER_A, "parameters": {"k": "v"}}}
    classes = {"class-a": cls("class-a", DRIVER_A, [opaque])}
    c = claim("c0", req("r0"), req("r1"), config=[{"requests": ["r1"], **opaque}])
    out = allocate([c], [slice_("s1", "p1", DRIVER_A, dev("d1"), dev("d2"))], classes=classes)
    assert out is not None
    assert out[0]["devices"]["config"] == [
        {"source": "FromClass", "requests": ["r0", "r1"], **opaque},
        {"source": "FromClaim", "requests": ["r1"], **opaque},
    ]


NUMA = f"{DRIVER_A}/numa"


@pytest.mark.parametrize(
    ("requests", "constraint", "devices", "want"),
    [
        pytest.param(
            [req("r0"), req("r1")],
            {"distinctAttribute": NUMA},
            [dev("d1", numa={"int": 0}), dev("d2", numa={"int": 0}), dev("d3", numa={"int": 1})],
            [("r0", "d1"), ("r1", "d3")],
            id="second request skips the device with the same value",
        ),
        pytest.param(
            [req("r0"), req("r1")],
            {"distinctAttribute": NUMA},
            [dev("d1", numa={"int": 0}), dev("d2", numa={"int": 0})],
            None,
            id="no distinct values left",
        ),
        pytest.param(
            [req("r0"), req("r1")],
            {"distinctAttribute": NUMA},
            [dev("d1", numa={"int": 0}), dev("d2")],
            None,
            id="a device without the attribute cannot be added",
        ),
        pytest.param(
            [req("r0"), req("r1"), req("r2")],
            {"requests": ["r0", "r1"], "distinctAttribute": NUMA},
            [dev("d1", numa={"int": 0}), dev("d2", numa={"int": 0}), dev("d3", numa={"int": 1})],
            [("r0", "d1"), ("r1", "d3"), ("r2", "d2")],
            id="only the named requests are constrained",
        ),
        pytest.param(
            [req("r0"), req("r1")],
            {"distinctAttribute": "numa"},
            [dev("d1", numa={"string": "0"}), dev("d2", numa={"int": 0})],
            [("r0", "d1"), ("r1", "d2")],
            id="values of different types are distinct",
        ),
        pytest.param(
            [req("r0", count=3)],
            {"distinctAttribute": NUMA},
            [dev("d1", numa={"int": 0}), dev("d2", numa={"int": 1}), dev("d3", numa={"int": 0})],
            [("r0", "d1"), ("r0", "d2"), ("r0", "d3")],
            id="values are remembered per request name, as kube does (the last device of a request)",
        ),
    ],
)
def test_distinct_attribute(
    requests: list[dict[str, Any]],
    constraint: dict[str, Any],
    devices: list[dict[str, Any]],
    want: list[tuple[str, str]] | None,
) -> None:
    out = allocate(
        [claim("c0", *requests, constraints=[constraint])], [slice_("s1", "p1", DRIVER_A, *devices)]
    )
    if want is None:
        assert out is None
        return
    assert [(r, d) for r, _, _, d in results(out)[0]] == want


def tainted(name: str, *taints: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "taints": list(taints)}


NO_SCHEDULE = {"key": "broken", "value": "yes", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("taints", "tolerations", "allocated"),
    [
        pytest.param([], [], True, id="untainted"),
        pytest.param([NO_SCHEDULE], [], False, id="NoSchedule not tolerated"),
        pytest.param([{"key": "k", "effect": "NoExecute"}], [], False, id="NoExecute not tolerated"),
        pytest.param([{"key": "k", "effect": "None"}], [], True, id="effect None does not keep it"),
        pytest.param([NO_SCHEDULE], [{"key": "broken", "operator": "Exists"}], True, id="Exists on the key"),
        pytest.param(
            [NO_SCHEDULE], [{"key": "broken", "value": "yes"}], True, id="Equal (default) on the value"
        ),
        pytest.param([NO_SCHEDULE], [{"key": "broken", "value": "no"}], False, id="Equal on another value"),
        pytest.param(
            [NO_SCHEDULE], [{"operator": "Exists", "effect": "NoExecute"}], False, id="other effect tolerated"
        ),
        pytest.param([NO_SCHEDULE], [{"operator": "Exists"}], True, id="Exists on everything"),
        pytest.param(
            [NO_SCHEDULE, {"key": "b", "effect": "NoExecute"}],
            [{"key": "broken", "operator": "Exists"}],
            False,
            id="every taint must be tolerated",
        ),
    ],
)
def test_device_taints_and_tolerations(
    taints: list[dict[str, str]], tolerations: list[dict[str, str]], allocated: bool
) -> None:
    r = req("r0")
    r["exactly"]["tolerations"] = tolerations
    out = allocate([claim("c0", r)], [slice_("s1", "p1", DRIVER_A, tainted("d1", *taints))])
    assert (out is not None) == allocated


def test_tainted_device_is_skipped_for_the_next_one() -> None:
    out = allocate(
        [claim("c0", req("r0"))], [slice_("s1", "p1", DRIVER_A, tainted("d1", NO_SCHEDULE), dev("d2"))]
    )
    assert results(out) == [[("r0", DRIVER_A, "p1", "d2")]]


def test_per_device_node_selection() -> None:
    devices = [
        {"name": "elsewhere", "nodeName": "node-2"},
        {
            "name": "by-label",
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "region", "operator": "In", "values": ["r1"]}]}
                ]
            },
        },
        {"name": "mine", "nodeName": NODE1},
    ]
    s = ResourceSlice.from_dict(
        {
            "metadata": {"name": "s1"},
            "spec": {
                "driver": DRIVER_A,
                "pool": {"name": "p1", "generation": 1, "resourceSliceCount": 1},
                "perDeviceNodeSelection": True,
                "devices": devices,
            },
        }
    )
    out = allocate([claim("c0", req("r0", count=2))], [s])
    assert [d for *_, d in results(out)[0]] == ["by-label", "mine"]
    assert out is not None and out[0]["nodeSelector"] == LOCAL  # a node-local device pins the claim
    out = allocate([claim("c0", req("r0"))], [s])
    assert (
        out is not None
        and out[0]["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == "region"
    )


# ------------------------------------------------------------------------ binding conditions


def test_devices_with_binding_conditions_come_last_and_are_copied_into_results() -> None:
    waiting = {
        "name": "d1",
        "bindingConditions": ["attached"],
        "bindingFailureConditions": ["failed"],
        "bindsToNode": True,
    }
    slices = [
        slice_("s-a", "a-pool", DRIVER_A, waiting, allNodes=True),
        slice_("s-b", "b-pool", DRIVER_A, dev("d2"), allNodes=True),
    ]
    out = allocate([claim("c0", req("r0"))], slices)
    assert results(out) == [[("r0", DRIVER_A, "b-pool", "d2")]]  # "a-pool" sorts first, but must wait
    out = allocate([claim("c0", req("r0", count=2))], slices)
    assert out is not None
    [first, second] = out[0]["devices"]["results"]
    assert "bindingConditions" not in first
    assert (second["bindingConditions"], second["bindingFailureConditions"]) == (["attached"], ["failed"])
    assert out[0]["nodeSelector"] == LOCAL  # bindsToNode pins the claim even on an allNodes slice


def test_tolerations_are_copied_into_results() -> None:
    r = req("r0")
    r["exactly"]["tolerations"] = [{"key": "broken", "operator": "Exists", "effect": "NoSchedule"}]
    out = allocate([claim("c0", r)], [slice_("s1", "p1", DRIVER_A, tainted("d1", NO_SCHEDULE))])
    assert out is not None
    assert out[0]["devices"]["results"][0]["tolerations"] == r["exactly"]["tolerations"]


def test_all_devices_with_a_constraint_they_cannot_meet_is_an_error() -> None:
    c = claim("c0", req("r0", mode="All"), constraints=[{"matchAttribute": f"{DRIVER_A}/numa"}])
    s = slice_("s1", "p1", DRIVER_A, dev("d1", numa={"int": 0}), dev("d2", numa={"int": 1}))
    with pytest.raises(
        AllocationError,
        match=f"claim default/c0, request r0: cannot add device {DRIVER_A}/p1/d2 because a claim constraint "
        "would not be satisfied",
    ):
        allocate([c], [s])
    same = slice_("s1", "p1", DRIVER_A, dev("d1", numa={"int": 0}), dev("d2", numa={"int": 0}))
    assert len(results(allocate([c], [same]))[0]) == 2


def test_admin_access_takes_an_allocated_device() -> None:
    """Admin access does not need the device free (the claim cache does not count it as taken either:
    tests/unit/backend/test_claim_tracker.py). Within one attempt the device is still marked, as kube does."""
    s = [slice_("s1", "p1", DRIVER_A, dev("d1"))]
    taken = {(DRIVER_A, "p1", "d1")}
    assert allocate([claim("c0", req("r0"))], s, taken) is None
    out = allocate([claim("c0", req("r0", admin=True))], s, taken)
    assert results(out) == [[("r0", DRIVER_A, "p1", "d1")]]
    assert out is not None and out[0]["devices"]["results"][0]["adminAccess"] is True
    assert allocate([claim("c0", req("r0", admin=True)), claim("c1", req("r0"))], s) is None


def test_the_first_path_shortcut_answers_as_the_full_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """_Search.run takes the search's first path without backtracking and only searches after a dead end
    that followed a choice. On random nodes (memory sizes, NUMA attributes, devices in use) and claims
    (counts, All, memory selectors, matchAttribute / distinctAttribute, admin access, several claims)
    the allocations, None, and errors are those of the full search."""
    import random

    from pyscheduler.plugins.dynamic_resources import allocator as alloc_mod

    rng = random.Random(1436)
    mem = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("2Gi")) >= 0'

    def outcome(claims: list[ResourceClaim], slices: list[ResourceSlice], used: set[Any]) -> Any:
        try:
            return allocate(claims, slices, used)
        except (AllocationError, NodeAllocationError) as e:
            return ("error", str(e))

    for _ in range(300):
        devices = [
            dev(f"d{i}", rng.choice(["1Gi", "2Gi", "4Gi"]), numa={"int": rng.randint(0, 1)})
            for i in range(rng.randint(0, 6))
        ]
        slices = [slice_("s1", "p1", DRIVER_A, *devices)]
        used = {(DRIVER_A, "p1", d["name"]) for d in devices if rng.random() < 0.25}
        claims = []
        for ci in range(rng.randint(1, 2)):
            reqs = []
            for ri in range(rng.randint(1, 2)):
                mode = "All" if rng.random() < 0.1 else "ExactCount"
                sels = (mem,) if rng.random() < 0.4 else ()
                reqs.append(
                    req(f"r{ri}", "class-a", rng.randint(1, 3), *sels, mode=mode, admin=rng.random() < 0.1)
                )
            constraints = []
            if len(reqs) > 1 and rng.random() < 0.6:
                key = "matchAttribute" if rng.random() < 0.5 else "distinctAttribute"
                constraints.append({"requests": [], key: f"{DRIVER_A}/numa"})
            claims.append(claim(f"c{ci}", *reqs, constraints=constraints))
        got = outcome(claims, slices, used)
        with monkeypatch.context() as m:
            m.setattr(alloc_mod._Search, "run", lambda self: self.step(0, 0, None, 0))
            want = outcome(claims, slices, used)
        assert got == want
