from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.status import Code, code_of
from pyscheduler.plugins.examples.volume_ready import (
    NAME,
    PLUGIN,
    VolumeReady,
    is_schedulable_after_pvc_change,
)
from pyscheduler.testing import make_handle
from pyscheduler.testing.builders import PodBuilder, make_cycle_state, make_pod

Obj = dict[str, Any]


def pvc(name: str, phase: str | None = "Bound", ns: str = "default") -> Obj:
    obj: Obj = {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns}, "spec": {}}
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


@pytest.mark.parametrize(
    ("pod", "objects", "code", "reason"),
    [
        pytest.param(make_pod("p"), [], Code.SUCCESS, None, id="no volumes"),
        pytest.param(
            make_pod("p").volume({"name": "tmp", "emptyDir": {}}), [], Code.SUCCESS, None, id="no claims"
        ),
        pytest.param(make_pod("p").pvc("data"), [pvc("data")], Code.SUCCESS, None, id="bound"),
        pytest.param(
            make_pod("p").pvc("data").pvc("logs"),
            [pvc("data"), pvc("logs")],
            Code.SUCCESS,
            None,
            id="all bound",
        ),
        pytest.param(
            make_pod("p").pvc("data"),
            [],
            Code.UNSCHEDULABLE,
            'persistentvolumeclaim "data" not found',
            id="missing",
        ),
        pytest.param(
            make_pod("p").pvc("data"),
            [pvc("data", ns="other")],
            Code.UNSCHEDULABLE,
            'persistentvolumeclaim "data" not found',
            id="same name in another namespace",
        ),
        pytest.param(
            make_pod("p").pvc("data"),
            [pvc("data", "Pending")],
            Code.UNSCHEDULABLE,
            'persistentvolumeclaim "data" is not bound (phase Pending)',
            id="pending",
        ),
        pytest.param(
            make_pod("p").pvc("data"),
            [pvc("data", "Lost")],
            Code.UNSCHEDULABLE,
            'persistentvolumeclaim "data" is not bound (phase Lost)',
            id="lost",
        ),
        pytest.param(
            make_pod("p").pvc("data"),
            [pvc("data", None)],
            Code.UNSCHEDULABLE,
            'persistentvolumeclaim "data" is not bound (phase unknown)',
            id="no status yet",
        ),
        pytest.param(
            make_pod("p").pvc("data").pvc("logs"),
            [pvc("data"), pvc("logs", "Pending")],
            Code.UNSCHEDULABLE,
            'persistentvolumeclaim "logs" is not bound (phase Pending)',
            id="second claim pending",
        ),
    ],
)
def test_pre_bind(pod: PodBuilder, objects: list[Obj], code: Code, reason: str | None) -> None:
    pl = VolumeReady(make_handle(objects=objects))
    status = pl.pre_bind(make_cycle_state(), pod.obj(), "n1")
    assert code_of(status) == code
    if reason is not None:
        assert status is not None
        assert status.reasons == (reason,)
        assert status.plugin == NAME


def test_events_registered() -> None:
    (reg,) = VolumeReady(make_handle()).events_to_register()
    assert ClusterEvent(Resource.PVC, Action.ADD).matches(reg.event)
    assert ClusterEvent(Resource.PVC, Action.UPDATE_OTHER).matches(reg.event)
    assert not ClusterEvent(Resource.PVC, Action.DELETE).matches(reg.event)
    assert not ClusterEvent(Resource.NODE, Action.ADD).matches(reg.event)


@pytest.mark.parametrize(
    ("new", "hint"),
    [
        pytest.param(pvc("data"), QueueingHint.QUEUE, id="its claim"),
        pytest.param(pvc("other"), QueueingHint.SKIP, id="another claim"),
        pytest.param(pvc("data", ns="other"), QueueingHint.SKIP, id="its claim's name in another namespace"),
        pytest.param(None, QueueingHint.QUEUE, id="unknown object: queue"),
    ],
)
def test_pvc_change_hint(new: Obj | None, hint: QueueingHint) -> None:
    pod = make_pod("p").pvc("data").obj()
    assert is_schedulable_after_pvc_change(pod, None, new) == hint


def test_takes_no_args() -> None:
    assert PLUGIN.decode(None, "args") is None
    with pytest.raises(ArgsError, match="takes no arguments"):
        PLUGIN.decode({"x": 1}, "args")
    assert isinstance(PLUGIN.new(None, make_handle()), VolumeReady)
