"""NodeResourcesFit's DeviceClass queueing hint (DRAExtendedResource): which class events can make a pod
that asks for an extended resource schedulable."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.framework import events as ev
from pyscheduler.plugins.node_resources_fit import Fit
from pyscheduler.testing import make_handle
from pyscheduler.testing.builders import make_pod

QUEUE, SKIP = ev.QueueingHint.QUEUE, ev.QueueingHint.SKIP


def device_class(name: str, extended: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    }


def gpu_pod(resource: str = "example.com/gpu") -> Any:
    return make_pod("p").res({resource: "1"}).res({resource: "1"}, limits=True).obj()


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(gpu_pod(), None, device_class("gpu", "example.com/gpu"), QUEUE, id="added, names it"),
        pytest.param(
            gpu_pod(), None, device_class("gpu", "example.com/tpu"), SKIP, id="added, names another"
        ),
        pytest.param(gpu_pod(), None, device_class("gpu"), SKIP, id="added without a name"),
        pytest.param(
            gpu_pod("deviceclass.resource.kubernetes.io/gpu"),
            None,
            device_class("gpu"),
            QUEUE,
            id="added, the implicit name of a resource the pod asks for",
        ),
        pytest.param(
            gpu_pod("deviceclass.resource.kubernetes.io/gpu"),
            device_class("gpu"),
            device_class("gpu"),
            SKIP,
            id="updated: the implicit name does not change",
        ),
        pytest.param(
            gpu_pod(),
            device_class("gpu"),
            device_class("gpu", "example.com/gpu"),
            QUEUE,
            id="updated to name it",
        ),
        pytest.param(
            gpu_pod(),
            device_class("gpu", "example.com/gpu"),
            device_class("gpu", "example.com/gpu"),
            SKIP,
            id="updated, the same name",
        ),
        pytest.param(
            make_pod("p").req(cpu="1").obj(),
            device_class("gpu"),
            device_class("gpu", "example.com/gpu"),
            SKIP,
            id="a pod without extended resources",
        ),
        pytest.param(gpu_pod(), None, "not a class", QUEUE, id="not an object: queue, to be safe"),
    ],
)
def test_device_class_hint(pod: Any, old: Any, new: Any, want: ev.QueueingHint) -> None:
    fit = Fit(handle=make_handle())
    assert fit.is_schedulable_after_device_class_event(pod, old, new) == want


def test_registered_only_with_the_gate() -> None:
    def registers(gates: dict[str, bool] | None) -> bool:
        handle = make_handle()
        if gates is not None:
            handle.extra["feature_gates"] = gates
        events = Fit(handle=handle).events_to_register()
        return any(e.event.resource == ev.Resource.DEVICE_CLASS for e in events)

    assert registers(None)  # on by default in 1.36
    assert registers({"DRAExtendedResource": True})
    assert not registers({"DRAExtendedResource": False})
