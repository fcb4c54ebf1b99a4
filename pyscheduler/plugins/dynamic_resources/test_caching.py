"""What DynamicResources keeps across scheduling cycles (selector verdicts per device version, the slice
index with each node's pools) must never outlive the objects it was computed from."""

from __future__ import annotations

import copy
from typing import Any

from pyscheduler.backend.objects import ObjectStore
from pyscheduler.framework.status import Code
from pyscheduler.plugins.dynamic_resources.test_dynamic_resources import DRIVER, World, gpu_claim, pod_with
from pyscheduler.testing.dra import device, device_class, exactly, resource_claim, resource_slice

MODEL_A = f'device.attributes["{DRIVER}"].model == "a"'


def model_slice(node: str, model: str, version: str = "1") -> dict[str, Any]:
    s = resource_slice(f"{node}-gpus", DRIVER, [device("gpu-0", {"model": model})], node=node)
    s["metadata"]["resourceVersion"] = version
    return s


def store(w: World) -> ObjectStore:
    objects = w.handle.objects
    assert isinstance(objects, ObjectStore)
    return objects


def verdicts(w: World, claim: str) -> dict[str, Code | None]:
    _, st, per_node = w.cycle(pod_with(claim).obj())
    assert st is None or st.is_success(), st
    return {n: (None if s is None else s.code) for n, s in per_node.items()}


def test_a_changed_device_is_judged_again() -> None:
    w = World(
        device_class("gpu", driver=DRIVER),
        model_slice("node-1", "b"),
        resource_claim("c1", exactly("req-0", "gpu", MODEL_A)),
        resource_claim("c2", exactly("req-0", "gpu", MODEL_A)),
    )
    unresolvable = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert verdicts(w, "c1") == {"node-1": unresolvable, "node-2": unresolvable}
    # the driver republishes the device as model "a" (a new resourceVersion): the kept verdict goes
    store(w).put("ResourceSlice", model_slice("node-1", "a", version="2"))
    assert verdicts(w, "c2") == {"node-1": None, "node-2": unresolvable}


def test_a_new_slice_is_seen_by_the_next_cycle() -> None:
    w = World(
        device_class("gpu", driver=DRIVER), model_slice("node-1", "a"), gpu_claim("c1"), gpu_claim("c2")
    )
    unresolvable = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert verdicts(w, "c1") == {"node-1": None, "node-2": unresolvable}
    store(w).put("ResourceSlice", model_slice("node-2", "a"))
    assert verdicts(w, "c2") == {"node-1": None, "node-2": None}
    # and a slice that goes takes its node's pools with it
    store(w).remove("ResourceSlice", copy.deepcopy(model_slice("node-1", "a")))
    assert verdicts(w, "c2") == {"node-1": unresolvable, "node-2": None}
