"""The harness's DRA driver for the upstream course: the slices it publishes are what upstream's test
driver publishes, and a claim of the course's DeviceClass is allocated from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.upstream import dra
from pyscheduler.framework.dra import DeviceClass, ResourceClaim, ResourceSlice
from pyscheduler.plugins.dynamic_resources.allocator import Allocator
from pyscheduler.plugins.dynamic_resources.cel import SelectorCache

DRIVER = "test-driver.cdi.k8s.io"
CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "test-class"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}


def _claim(name: str) -> ResourceClaim:
    return ResourceClaim.from_dict(
        {
            "metadata": {"namespace": "init", "name": name, "uid": name},
            "spec": {
                "devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class"}}]}
            },
        }
    )


def test_the_driver_slice_offers_max_claims_per_node_devices_on_that_node() -> None:
    s = dra.driver_slice(DRIVER, "scheduler-perf-dra-7", 3)
    assert s["metadata"]["name"] == "scheduler-perf-dra-7"
    assert s["spec"]["nodeName"] == "scheduler-perf-dra-7"
    assert [d["name"] for d in s["spec"]["devices"]] == ["instance-0", "instance-1", "instance-2"]
    assert s["spec"]["devices"][2]["attributes"]["dra.example.com/numa"] == {"int": 2}
    # three claims of the class fit on the node, a fourth does not
    slices = [ResourceSlice.from_dict(s)]
    classes = {"test-class": DeviceClass.from_dict(CLASS)}
    taken: set[tuple[str, str, str]] = set()
    for k in range(3):
        out = Allocator(classes.get, slices, taken, SelectorCache()).allocate(
            "scheduler-perf-dra-7", {}, [_claim(f"c{k}")]
        )
        assert out is not None
        taken |= {(r["driver"], r["pool"], r["device"]) for r in out[0]["devices"]["results"]}
    assert len(taken) == 3
    assert (
        Allocator(classes.get, slices, taken, SelectorCache()).allocate(
            "scheduler-perf-dra-7", {}, [_claim("c3")]
        )
        is None
    )


def test_a_workload_making_claim_templates_needs_the_claim_controller(tmp_path: Path) -> None:
    (tmp_path / "rct.yaml").write_text("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n")
    (tmp_path / "rc.yaml").write_text("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n")
    with_template: list[dict[str, Any]] = [{"opcode": "createAny", "templatePath": "rct.yaml"}]
    without: list[dict[str, Any]] = [
        {"opcode": "createAny", "templatePath": "rc.yaml"},
        {"opcode": "createPods", "count": 1},
    ]
    assert dra.needs_claim_controller(with_template, tmp_path)
    assert not dra.needs_claim_controller(without, tmp_path)
