"""The differential runner's DRA parts that need no cluster: which devices a claim holds, which claims a
pod has, when devices are compared, which controllers a scenario gets, and that the DRA scenarios are
objects the API server accepts in shape (the scenarios themselves run in ``make differential``)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.differential import (
    CLAIM_CONTROLLER,
    KINDS,
    PV_CONTROLLER,
    Outcome,
    ScenarioRunner,
    allocated_devices,
    controllers_for,
    judge_one,
    uses_dra,
)
from bench.dra_builders import DraScenario, claims, exactly, first_available, sub
from bench.scenarios import SCENARIOS, by_name
from pyscheduler.testing.builders import make_pod

JSON = dict[str, Any]


def _claim(*results: JSON) -> JSON:
    return {"status": {"allocation": {"devices": {"results": list(results)}}}}


def test_allocated_devices_are_sorted_text_with_admin_access_and_consumed_capacity() -> None:
    c = _claim(
        {"request": "gpu", "driver": "d", "pool": "n1", "device": "gpu-1"},
        {
            "request": "gpu",
            "driver": "d",
            "pool": "n1",
            "device": "gpu-0",
            "adminAccess": True,
            "shareID": "0b6c1f5e-random",
            "consumedCapacity": {"memory": "10Gi", "cores": "2"},
        },
    )
    assert allocated_devices(c) == ["gpu d/n1/gpu-0 admin cores=2,memory=10Gi", "gpu d/n1/gpu-1"]
    assert allocated_devices({"status": {}}) == []
    assert allocated_devices({}) == []


def test_pod_claims_resolve_direct_claims_templates_and_the_extended_resource_claim() -> None:
    pod = claims(make_pod("p", "ns"), "gpu=c1", "nic@tmpl").json()
    pod["status"] = {
        "resourceClaimStatuses": [{"name": "nic", "resourceClaimName": "p-nic-x7k2q"}],
        "extendedResourceClaimStatus": {"resourceClaimName": "p-extended-resources-abcde"},
    }
    runner = ScenarioRunner(api=None, sc=by_name()["dra-claim"])  # type: ignore[arg-type]
    assert runner.pod_claims(pod) == {
        "gpu": "c1",
        "nic": "p-nic-x7k2q",
        "extended-resources": "p-extended-resources-abcde",
    }
    # a template claim the controller has not made yet has no name
    pod["status"] = {}
    assert runner.pod_claims(pod) == {"gpu": "c1", "nic": ""}
    assert pod["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}, {"name": "nic"}]


@pytest.mark.parametrize(
    ("kube", "py", "want"),
    [
        pytest.param(
            Outcome(node="n1", devices={"gpu": ["gpu d/n1/a"]}),
            Outcome(node="n1", devices={"gpu": ["gpu d/n1/a"]}),
            True,
            id="same-node-same-devices",
        ),
        pytest.param(
            Outcome(node="n1", devices={"gpu": ["gpu d/n1/a"]}),
            Outcome(node="n1", devices={"gpu": ["gpu d/n1/b"]}),
            False,
            id="same-node-other-device",
        ),
        pytest.param(
            Outcome(node="n1", devices={"gpu": ["gpu d/n1/a"]}),
            Outcome(node="n1", devices={}),
            False,
            id="py-allocated-nothing",
        ),
        pytest.param(
            Outcome(node="n1", devices={"gpu": ["gpu d/n1/a"]}),
            Outcome(node="n2", devices={"gpu": ["gpu d/n2/a"]}),
            None,
            id="other-node-not-compared",
        ),
        pytest.param(Outcome(node="n1"), Outcome(node="n1"), None, id="no-claims"),
        pytest.param(Outcome(reason="Unschedulable"), Outcome(reason="Unschedulable"), None, id="pending"),
    ],
)
def test_devices_are_compared_only_on_the_same_node(kube: Outcome, py: Outcome, want: bool | None) -> None:
    r = judge_one("s", "p", kube, py, None)
    assert r.devices is want
    assert r.disagrees() is (want is False or kube.node != py.node)


def test_dra_scenarios_get_the_resourceclaim_controller_and_others_do_not() -> None:
    dra = [s for s in SCENARIOS if isinstance(s, DraScenario)]
    assert len(dra) >= 15
    for s in dra:
        assert uses_dra(s), s.name
        assert CLAIM_CONTROLLER in controllers_for(s), s.name
    assert controllers_for(by_name()["fit-cpu"]) == ()
    wffc = next(s for s in SCENARIOS if s.needs_pv_controller)
    assert controllers_for(wffc) == (PV_CONTROLLER,)


def test_dra_scenario_objects_are_kinds_the_runner_creates() -> None:
    for s in SCENARIOS:
        if not isinstance(s, DraScenario):
            continue
        for o in s.objects:
            assert o["kind"] in KINDS, (s.name, o["kind"])
            assert o["apiVersion"] == "resource.k8s.io/v1"
        for pod_name, gone in s.delete_before.items():
            names = [p["metadata"]["name"] for p in s.pods]
            assert pod_name in names and all(names.index(g) < names.index(pod_name) for g in gone), s.name


def test_request_builders_follow_the_v1_api_shape() -> None:
    assert exactly("gpu", "c", "x", count=2, admin=True) == {
        "name": "gpu",
        "exactly": {
            "deviceClassName": "c",
            "selectors": [{"cel": {"expression": "x"}}],
            "allocationMode": "ExactCount",
            "count": 2,
            "adminAccess": True,
        },
    }
    assert exactly(all_devices=True)["exactly"]["allocationMode"] == "All"
    fa = first_available("gpu", sub("big"), sub("small", count=2))
    assert fa["firstAvailable"][1] == {
        "name": "small",
        "deviceClassName": "gpu",
        "allocationMode": "ExactCount",
        "count": 2,
    }


class _ClaimApi:
    """What DeviceStatusReporter needs of Api: the status PUTs it makes."""

    def __init__(self) -> None:
        self.puts: list[JSON] = []
        self.cluster = self

    def request(self, method: str, path: str, body: JSON) -> tuple[int, JSON]:
        self.puts.append(body)
        return 200, body


def _allocated(uid: str = "u1", devices: list[JSON] | None = None) -> JSON:
    result = {"request": "gpu", "driver": "d", "pool": "n1", "device": "attach-0"}
    status: JSON = {"allocation": {"devices": {"results": [result]}}}
    if devices is not None:
        status["devices"] = devices
    return {"metadata": {"name": "c1", "uid": uid}, "status": status}


def test_the_stand_in_driver_fails_a_device_s_first_attachment_then_reports_it_attached() -> None:
    from bench.differential.devicestatus import DeviceStatusReporter

    api = _ClaimApi()
    r = DeviceStatusReporter(api, "ns", {"attach-0": ["attached"]}, {"attach-0": ["attach-failed"]})  # type: ignore[arg-type]
    assert r.report(_allocated())
    first = api.puts[-1]["status"]["devices"][0]["conditions"]
    assert [c["type"] for c in first] == ["attach-failed"]
    assert not r.report(_allocated(devices=api.puts[-1]["status"]["devices"]))  # reported: nothing new
    assert r.report(_allocated())  # deallocated (devices cleared), allocated again: now it attaches
    assert [c["type"] for c in api.puts[-1]["status"]["devices"][0]["conditions"]] == ["attached"]
    assert r.report(_allocated(uid="u2"))  # another claim's first attachment fails again
    assert [c["type"] for c in api.puts[-1]["status"]["devices"][0]["conditions"]] == ["attach-failed"]


@pytest.mark.parametrize(
    ("kube", "py", "want"),
    [
        pytest.param(["A: x", "Scheduled: s"], ["A: x", "Scheduled: s"], True, id="same-events"),
        pytest.param(["A: x", "B: y", "Scheduled: s"], ["A: x", "Scheduled: s"], False, id="one-missing"),
        pytest.param([], [], None, id="not-recorded"),
    ],
)
def test_a_bound_pod_s_events_are_judged_when_recorded(
    kube: list[str], py: list[str], want: bool | None
) -> None:
    r = judge_one("s", "p", Outcome(node="n1", history=kube), Outcome(node="n1", history=py), None)
    assert r.message is want
    assert r.disagrees() is (want is False)


def test_a_disabled_entry_in_plugin_config_disables_the_plugin_in_both_profiles() -> None:
    from bench.differential.schedulers import configuration

    args = {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
    profile = configuration(None, [args, {"disabled": ["DynamicResources"]}])["profiles"][0]
    assert profile["pluginConfig"] == [args]
    assert profile["plugins"] == {"multiPoint": {"disabled": [{"name": "DynamicResources"}]}}
    assert "plugins" not in configuration(None, [args])["profiles"][0]
