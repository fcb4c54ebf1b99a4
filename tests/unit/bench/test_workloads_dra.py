"""The benchmark's DRA workloads as data: sizes that fit the devices, pods and their claims, the
preallocated claims of the steady state (the runs themselves are ``make bench``)."""

from __future__ import annotations

import pytest

from bench.workloads import (
    DRA_CLASS,
    DRA_DRIVER,
    DRA_TEMPLATE,
    dra_claim,
    dra_claim_name,
    dra_slice,
    workloads,
)

DRA = (
    "SchedulingWithResourceClaimTemplate",
    "SchedulingWithResourceClaim",
    "SteadyStateClusterResourceClaimTemplate",
)


@pytest.mark.parametrize(("nodes", "pods"), [(20, 100), (100, 500), (500, 1000), (10, 1000)])
def test_dra_workloads_never_need_more_devices_than_the_nodes_publish(nodes: int, pods: int) -> None:
    wls = workloads(nodes, pods)
    for name in DRA:
        wl = wls[name]
        assert wl.dra is not None
        devices = nodes * wl.dra.devices_per_node
        per_pod = 1 / wl.dra.pods_per_claim if wl.dra.pods_per_claim else 1
        assert (wl.init_pods + wl.measured_pods) * per_pod + wl.dra.preallocated <= devices, name
        assert wl.measured_pods > 0
    assert all(wls[n].dra is None for n in wls if n not in DRA)


def test_pods_ask_for_one_device_through_a_template_or_a_claim_shared_by_five() -> None:
    wls = workloads(20, 100)
    templated = wls["SchedulingWithResourceClaimTemplate"].template("t-k0-m3")
    assert templated["spec"]["resourceClaims"] == [
        {"name": "resource", "resourceClaimTemplateName": DRA_TEMPLATE}
    ]
    assert templated["spec"]["containers"][0]["resources"]["claims"] == [{"name": "resource"}]
    shared = [wls["SchedulingWithResourceClaim"].template(f"c-k0-m{k}") for k in range(11)]
    names = [p["spec"]["resourceClaims"][0]["resourceClaimName"] for p in shared]
    assert names[:5] == ["c-k0-m-claim-0"] * 5
    assert names[5:10] == ["c-k0-m-claim-1"] * 5
    assert names[10] == "c-k0-m-claim-2"
    assert dra_claim_name("c-k0-i7") == "c-k0-i-claim-1"
    with pytest.raises(ValueError, match="not an indexed pod name"):
        dra_claim_name("no-index")


def test_slices_and_preallocated_claims_name_the_same_devices() -> None:
    s = dra_slice("node-3", 4)
    assert s["spec"]["nodeName"] == s["spec"]["pool"]["name"] == "node-3"
    assert [d["name"] for d in s["spec"]["devices"]] == [f"instance-{i}" for i in range(4)]
    assert s["spec"]["driver"] == DRA_DRIVER
    c = dra_claim("x", allocated=("node-3", "instance-3"))
    (result,) = c["status"]["allocation"]["devices"]["results"]
    assert result == {"request": "req-0", "driver": DRA_DRIVER, "pool": "node-3", "device": "instance-3"}
    assert c["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == DRA_CLASS


def test_preallocated_claims_take_distinct_devices_from_the_top_of_each_node() -> None:
    from types import SimpleNamespace

    from bench.dra_run import DraRun

    wl = workloads(3, 10)["SteadyStateClusterResourceClaimTemplate"]
    assert wl.dra is not None and wl.dra.preallocated == 15  # half of 3 x 10
    run = DraRun(SimpleNamespace(nodes=["a", "b", "c"]), wl, "s-k0", "bench")  # type: ignore[arg-type]
    held = [
        (r["pool"], r["device"])
        for c in run._preallocated()
        for r in c["status"]["allocation"]["devices"]["results"]
    ]
    assert len(held) == len(set(held)) == 15
    assert held[:4] == [("a", "instance-9"), ("b", "instance-9"), ("c", "instance-9"), ("a", "instance-8")]
