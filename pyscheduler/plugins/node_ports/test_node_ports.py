from typing import Any

import pytest

from pyscheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.node_ports import (
    ERR_REASON,
    NAME,
    PLUGIN,
    PRE_FILTER_STATE_KEY,
    NodePorts,
    fits,
    host_ports,
)
from pyscheduler.testing import make_handle
from pyscheduler.testing.builders import PodBuilder, make_cycle_state, make_node, make_node_info, make_pod

# A port: (hostPort, protocol, hostIP)
Port = tuple[int, str, str]


def pod_with(ports: list[Port], name: str = "p") -> PodBuilder:
    b = make_pod(name)
    for port, protocol, ip in ports:
        b.host_port(port, protocol, ip)
    return b


def code_of(status: Status | None) -> Code:
    return status.code if status else Code.SUCCESS


def run(pod: Pod, *existing: PodBuilder) -> Status | None:
    pl = NodePorts()
    state = make_cycle_state()
    info = make_node_info(make_node("n1"), *existing)
    _, st = pl.pre_filter(state, pod, [info])
    if st is not None:
        assert st.is_skip()
        return None
    return pl.filter(state, pod, info)


@pytest.mark.parametrize(
    ("wanted", "used", "code"),
    [
        pytest.param([], [], Code.SUCCESS, id="no ports"),
        pytest.param([], [(8080, "TCP", "")], Code.SUCCESS, id="pod wants no ports"),
        pytest.param([(8080, "TCP", "")], [], Code.SUCCESS, id="free node"),
        pytest.param([(8080, "TCP", "")], [(8080, "TCP", "")], Code.UNSCHEDULABLE, id="same port"),
        pytest.param([(8080, "TCP", "")], [(8081, "TCP", "")], Code.SUCCESS, id="other port"),
        pytest.param([(53, "UDP", "")], [(53, "TCP", "")], Code.SUCCESS, id="other protocol"),
        pytest.param([(53, "UDP", "")], [(53, "UDP", "")], Code.UNSCHEDULABLE, id="same UDP port"),
        pytest.param([(9, "SCTP", "")], [(9, "SCTP", "")], Code.UNSCHEDULABLE, id="same SCTP port"),
        pytest.param(
            [(8080, "TCP", "10.0.0.1")], [(8080, "TCP", "10.0.0.2")], Code.SUCCESS, id="different host IPs"
        ),
        pytest.param(
            [(8080, "TCP", "10.0.0.1")], [(8080, "TCP", "10.0.0.1")], Code.UNSCHEDULABLE, id="same host IP"
        ),
        pytest.param(
            [(8080, "TCP", "10.0.0.1")], [(8080, "TCP", "")], Code.UNSCHEDULABLE, id="used on all IPs (empty)"
        ),
        pytest.param(
            [(8080, "TCP", "10.0.0.1")], [(8080, "TCP", "0.0.0.0")], Code.UNSCHEDULABLE, id="used on 0.0.0.0"
        ),
        pytest.param(
            [(8080, "TCP", "0.0.0.0")], [(8080, "TCP", "10.0.0.1")], Code.UNSCHEDULABLE, id="wants all IPs"
        ),
        pytest.param(
            [(8080, "TCP", "")], [(8080, "TCP", "10.0.0.1")], Code.UNSCHEDULABLE, id="wants all (empty)"
        ),
        pytest.param(
            [(8080, "UDP", "0.0.0.0")],
            [(8080, "TCP", "10.0.0.1")],
            Code.SUCCESS,
            id="wildcard, other protocol",
        ),
        pytest.param(
            [(8080, "TCP", ""), (9090, "TCP", "")],
            [(9090, "TCP", "")],
            Code.UNSCHEDULABLE,
            id="second port taken",
        ),
    ],
)
def test_filter(wanted: list[Port], used: list[Port], code: Code) -> None:
    existing = [pod_with(used, "existing")] if used else []
    status = run(pod_with(wanted).obj(), *existing)
    assert code_of(status) == code
    if status:
        assert status.reasons == (ERR_REASON,)
        assert status.plugin == NAME


def test_pre_filter_skips_pod_without_host_ports() -> None:
    state = make_cycle_state()
    d = make_pod("p").json()  # a container port without hostPort does not count
    d["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    result, status = NodePorts().pre_filter(state, Pod.from_dict(d), [])
    assert result is None
    assert status is not None and status.is_skip()
    assert state.get(PRE_FILTER_STATE_KEY) is None


def test_filter_without_pre_filter_state() -> None:
    pod = pod_with([(8080, "TCP", "")]).obj()
    info = make_node_info(make_node("n1"), pod_with([(8080, "TCP", "")], "existing"))
    status = NodePorts().filter(make_cycle_state(), pod, info)
    assert code_of(status) == Code.UNSCHEDULABLE
    assert NodePorts().filter(make_cycle_state(), make_pod("q").obj(), info) is None


def sidecar_pod(restart_policy: str | None, name: str = "p") -> Pod:
    d = make_pod(name).json()
    init: dict[str, Any] = {"name": "init", "ports": [{"containerPort": 7000, "hostPort": 7000}]}
    if restart_policy:
        init["restartPolicy"] = restart_policy
    d["spec"]["initContainers"] = [init]
    return Pod.from_dict(d)


@pytest.mark.parametrize(
    ("restart_policy", "counted"),
    [
        pytest.param("Always", True, id="sidecar ports count"),
        pytest.param(None, False, id="plain init container ports do not"),
    ],
)
def test_init_container_ports(restart_policy: str | None, counted: bool) -> None:
    pod = sidecar_pod(restart_policy)
    assert [p.host_port for p in host_ports(pod)] == ([7000] if counted else [])
    info = make_node_info(make_node("n1"), pod_with([(7000, "TCP", "")], "existing"))
    assert code_of(run(pod, pod_with([(7000, "TCP", "")], "existing"))) == (
        Code.UNSCHEDULABLE if counted else Code.SUCCESS
    )
    assert fits(pod, info) is not counted


def test_events_registered() -> None:
    registered = NodePorts().events_to_register()
    assert ClusterEvent(Resource.POD, Action.DELETE).matches(registered[0].event)
    assert ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE).matches(registered[0].event)
    assert registered[0].hint is not None
    assert ClusterEvent(Resource.NODE, Action.ADD).matches(registered[1].event)
    assert registered[1].hint is None


@pytest.mark.parametrize(
    ("deleted_ports", "bound", "nominated", "hint"),
    [
        pytest.param([(8080, "TCP", "")], True, False, QueueingHint.QUEUE, id="bound pod freed our port"),
        pytest.param([(8080, "TCP", "")], False, True, QueueingHint.QUEUE, id="nominated pod freed our port"),
        pytest.param([(8080, "TCP", "")], False, False, QueueingHint.SKIP, id="unscheduled pod held nothing"),
        pytest.param([], True, False, QueueingHint.SKIP, id="deleted pod had no host ports"),
        pytest.param([(9090, "TCP", "")], True, False, QueueingHint.SKIP, id="no port in common"),
        pytest.param([(8080, "UDP", "")], True, False, QueueingHint.SKIP, id="other protocol"),
        pytest.param([(8080, "TCP", "10.0.0.1")], True, False, QueueingHint.QUEUE, id="specific IP vs all"),
    ],
)
def test_pod_deleted_hint(
    deleted_ports: list[Port], bound: bool, nominated: bool, hint: QueueingHint
) -> None:
    pod = pod_with([(8080, "TCP", "")]).obj()
    b = pod_with(deleted_ports, "deleted")
    if bound:
        b.node("n1")
    if nominated:
        b.nominated("n1")
    assert NodePorts.is_schedulable_after_pod_deleted(pod, b.obj(), None) == hint


def test_spec_takes_no_args() -> None:
    assert PLUGIN.name == "NodePorts"
    assert PLUGIN.decode(None, "args") is None
    with pytest.raises(ValueError, match=r"args\.ports"):
        PLUGIN.decode({"ports": 1}, "args")
    assert isinstance(PLUGIN.new(None, make_handle()), NodePorts)
