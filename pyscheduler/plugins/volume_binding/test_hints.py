"""VolumeBinding events and queueing hints: which object changes make a rejected pod worth retrying."""

from __future__ import annotations

import copy

import pytest

from pyscheduler.framework.events import Action, QueueingHint, Resource
from pyscheduler.plugins.volume_binding import (
    is_schedulable_after_csi_node_change,
    is_schedulable_after_pvc_change,
    is_schedulable_after_storage_class_change,
)
from pyscheduler.plugins.volume_binding._fixtures import (
    ZONE,
    Obj,
    plugin_for,
    pod_with,
    pvc,
    sc,
)

# ------------------------------------------------------------------------------------ events


def test_events() -> None:
    pl, _, _ = plugin_for()
    events = {(e.event.resource, e.event.action): e.hint for e in pl.events_to_register()}
    assert (Resource.PV, Action.ADD | Action.UPDATE) in events
    assert events[(Resource.PV, Action.ADD | Action.UPDATE)] is None
    assert (Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL) in events
    assert events[(Resource.PVC, Action.ADD | Action.UPDATE)] is is_schedulable_after_pvc_change
    assert (
        events[(Resource.STORAGE_CLASS, Action.ADD | Action.UPDATE)]
        is is_schedulable_after_storage_class_change
    )
    assert events[(Resource.CSI_NODE, Action.ADD | Action.UPDATE)] is is_schedulable_after_csi_node_change


@pytest.mark.parametrize(
    ("claim", "want"),
    [
        pytest.param(pvc("data"), QueueingHint.QUEUE, id="the pod's claim"),
        pytest.param(pvc("p-scratch"), QueueingHint.QUEUE, id="the pod's ephemeral claim"),
        pytest.param(pvc("data", ns="other"), QueueingHint.SKIP, id="same name in another namespace"),
        pytest.param(pvc("unrelated"), QueueingHint.SKIP, id="another claim"),
    ],
)
def test_pvc_hint(claim: Obj, want: QueueingHint) -> None:
    pod = pod_with("data", ephemeral="scratch")
    assert is_schedulable_after_pvc_change(pod, None, claim) == want


def test_storage_class_hint() -> None:
    pod = pod_with("data")
    topo = [{"matchLabelExpressions": [{"key": ZONE, "values": ["a"]}]}]
    assert is_schedulable_after_storage_class_change(pod, None, sc("x")) == QueueingHint.QUEUE
    assert (
        is_schedulable_after_storage_class_change(pod, sc("x"), sc("x", topologies=topo))
        == QueueingHint.QUEUE
    )
    assert (
        is_schedulable_after_storage_class_change(pod, sc("x", topologies=[]), sc("x")) == QueueingHint.SKIP
    )
    relabelled = sc("x")
    relabelled["metadata"]["labels"] = {"a": "b"}
    assert is_schedulable_after_storage_class_change(pod, sc("x"), relabelled) == QueueingHint.SKIP


def test_csi_node_hint() -> None:
    pod = pod_with("data")
    ann = "storage.alpha.kubernetes.io/migrated-plugins"
    plain = {"kind": "CSINode", "metadata": {"name": "n1"}, "spec": {"drivers": []}}
    migrated = {"kind": "CSINode", "metadata": {"name": "n1", "annotations": {ann: "kubernetes.io/gce-pd"}}}
    assert is_schedulable_after_csi_node_change(pod, None, plain) == QueueingHint.QUEUE
    assert is_schedulable_after_csi_node_change(pod, plain, migrated) == QueueingHint.QUEUE
    assert is_schedulable_after_csi_node_change(pod, plain, copy.deepcopy(plain)) == QueueingHint.SKIP
