"""resource.k8s.io/v1 records: what scheduling reads, and a clear error for a malformed object."""

from __future__ import annotations

import pytest

from pyscheduler.framework.dra import (
    ALLOCATION_MODE_ALL,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from pyscheduler.framework.types import MalformedObject


def claim_json(requests: list[dict[str, object]], **status: object) -> dict[str, object]:
    return {
        "metadata": {"namespace": "ns", "name": "c", "uid": "u1", "resourceVersion": "42"},
        "spec": {"devices": {"requests": requests}},
        "status": status,
    }


def test_claim_with_exactly_first_available_constraints_and_allocation() -> None:
    obj = claim_json(
        [
            {
                "name": "gpu",
                "exactly": {
                    "deviceClassName": "gpu.example.com",
                    "count": 2,
                    "selectors": [{"cel": {"expression": "device.driver == 'x'"}}],
                },
            },
            {
                "name": "all",
                "exactly": {"deviceClassName": "nic", "allocationMode": "All", "adminAccess": True},
            },
            {
                "name": "pick",
                "firstAvailable": [
                    {"name": "big", "deviceClassName": "a"},
                    {"name": "small", "deviceClassName": "b"},
                ],
            },
        ],
        allocation={
            "devices": {"results": [{"request": "gpu", "driver": "d", "pool": "p", "device": "dev-0"}]}
        },
        reservedFor=[{"resource": "pods", "name": "pod-a", "uid": "pu"}],
    )
    obj["spec"]["devices"]["constraints"] = [{"requests": ["gpu"], "matchAttribute": "d/numa"}]  # type: ignore[index]
    c = ResourceClaim.from_dict(obj)
    assert c.key == "ns/c" and c.meta.resource_version == 42
    gpu, all_, pick = c.requests
    assert (
        gpu.exactly is not None
        and gpu.exactly.count == 2
        and gpu.exactly.selectors == ("device.driver == 'x'",)
    )
    assert (
        all_.exactly is not None
        and all_.exactly.allocation_mode == ALLOCATION_MODE_ALL
        and all_.exactly.admin_access
    )
    assert pick.exactly is None and [s.name for s in pick.first_available] == ["pick/big", "pick/small"]
    assert c.constraints[0].match_attribute == "d/numa"
    assert c.allocated and c.results[0].device_id == ("d", "p", "dev-0")
    assert c.reserved_for[0].uid == "pu"


def test_claim_record_keeps_its_object_without_managed_fields() -> None:
    """The record's ``raw`` (what PreBind's PUT sends back) drops the field manager's entries, which are most
    of a claim's JSON and which nothing reads; the object handed in is left as it was."""
    obj = claim_json([{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}])
    managed = [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}]
    obj["metadata"]["managedFields"] = managed  # type: ignore[index]
    obj["metadata"]["labels"] = {"app": "a"}  # type: ignore[index]
    c = ResourceClaim.from_dict(obj)
    assert "managedFields" not in c.raw["metadata"]
    assert c.raw["metadata"]["labels"] == {"app": "a"} and c.raw["spec"] is obj["spec"]
    assert obj["metadata"]["managedFields"] is managed  # type: ignore[index]
    plain = claim_json([{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}])
    assert ResourceClaim.from_dict(plain).raw is plain


@pytest.mark.parametrize(
    ("requests", "message"),
    [
        ([{"name": "r"}], r"spec.devices.requests\[0\]: exactly one of exactly or firstAvailable"),
        (
            [{"name": "r", "exactly": {"deviceClassName": "c", "count": 0}}],
            r"requests\[0\].exactly.count: must be greater than zero",
        ),
        (
            [{"name": "r", "exactly": {"deviceClassName": "c", "allocationMode": "Some"}}],
            "unsupported value 'Some'",
        ),
        (
            [{"name": "r", "exactly": {"deviceClassName": "c", "count": "2"}}],
            r"exactly.count: expected an integer",
        ),
        (
            [{"name": "r", "exactly": {"deviceClassName": "c", "selectors": [{"cel": {}}]}}],
            r"selectors\[0\].cel.expression: required",
        ),
        ("nope", "spec.devices.requests: expected a list"),
    ],
)
def test_malformed_claim(requests: object, message: str) -> None:
    with pytest.raises(MalformedObject, match=message):
        ResourceClaim.from_dict(claim_json(requests))  # type: ignore[arg-type]


def test_template_is_validated_like_a_claim() -> None:
    ok = {
        "metadata": {"namespace": "ns", "name": "t"},
        "spec": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}},
    }
    assert ResourceClaimTemplate.from_dict(ok).spec["devices"]["requests"][0]["name"] == "r"
    bad = {"metadata": {"name": "t"}, "spec": {"spec": {"devices": {"requests": [{"name": "r"}]}}}}
    with pytest.raises(MalformedObject):
        ResourceClaimTemplate.from_dict(bad)


def test_device_class_and_slice() -> None:
    dc = DeviceClass.from_dict(
        {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": "true"}}]}}
    )
    assert dc.name == "gpu" and dc.selectors == ("true",)
    s = ResourceSlice.from_dict(
        {
            "metadata": {"name": "s", "resourceVersion": "7"},
            "spec": {
                "driver": "gpu.example.com",
                "pool": {"name": "node-1", "generation": 3, "resourceSliceCount": 2},
                "nodeName": "node-1",
                "devices": [
                    {
                        "name": "gpu-0",
                        "attributes": {"model": {"string": "a100"}},
                        "capacity": {"memory": {"value": "16Gi"}},
                    }
                ],
            },
        }
    )
    assert (s.driver, s.pool, s.pool_generation, s.pool_slice_count, s.node_name) == (
        "gpu.example.com",
        "node-1",
        3,
        2,
        "node-1",
    )
    assert s.devices[0].attributes["model"] == {"string": "a100"} and s.devices[0].capacity == {
        "memory": "16Gi"
    }
    with pytest.raises(MalformedObject, match="at most one of nodeName, nodeSelector, allNodes"):
        ResourceSlice.from_dict(
            {
                "metadata": {"name": "s"},
                "spec": {"driver": "d", "pool": {"name": "p"}, "nodeName": "n", "allNodes": True},
            }
        )
    with pytest.raises(MalformedObject, match=r"metadata.resourceVersion: not a number"):
        DeviceClass.from_dict({"metadata": {"name": "gpu", "resourceVersion": "abc"}})
