import pytest

from pyscheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from pyscheduler.framework.interfaces import PreEnqueuePlugin
from pyscheduler.framework.status import Code
from pyscheduler.plugins.scheduling_gates import NAME, PLUGIN, SchedulingGates
from pyscheduler.testing import make_handle
from pyscheduler.testing.builders import make_pod


@pytest.mark.parametrize(
    ("gates", "message"),
    [
        pytest.param([], None, id="no gates: enqueue"),
        pytest.param(
            ["example.com/quota"], "waiting for scheduling gates: [example.com/quota]", id="one gate"
        ),
        pytest.param(["b", "a"], "waiting for scheduling gates: [b a]", id="two gates, in spec order"),
    ],
)
def test_pre_enqueue(gates: list[str], message: str | None) -> None:
    b = make_pod("p")
    for g in gates:
        b.gate(g)
    status = SchedulingGates().pre_enqueue(b.obj())
    if message is None:
        assert status is None
        return
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (message,)
    assert status.plugin == NAME


def test_events() -> None:
    (registered,) = SchedulingGates().events_to_register()
    assert ClusterEvent(Resource.POD, Action.UPDATE_POD_SCHEDULING_GATES_ELIMINATED).matches(registered.event)
    assert not ClusterEvent(Resource.POD, Action.UPDATE_POD_LABEL).matches(registered.event)
    assert registered.hint is not None
    pod = make_pod("p").obj()
    assert registered.hint(pod, make_pod("p").gate("g").obj(), pod) == QueueingHint.QUEUE


def test_spec() -> None:
    assert PLUGIN.name == "SchedulingGates"
    assert PLUGIN.decode(None, "args") is None
    assert isinstance(PLUGIN.new(None, make_handle()), PreEnqueuePlugin)
