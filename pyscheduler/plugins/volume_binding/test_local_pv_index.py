"""VolumeBinding's local PVs (node affinity naming hosts) found per node, and the plugin over a store that
serves only the four kinds its contract names."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from pyscheduler.backend.objects import ObjectStore
from pyscheduler.plugins.volume_binding import (
    ERR_REASON_BIND_CONFLICT,
    STATE_KEY,
    VolumeBinding,
    VolumeBindingArgs,
)
from pyscheduler.plugins.volume_binding._fixtures import (
    DYN,
    WAIT,
    FakeClient,
    Obj,
    node,
    plugin_for,
    pod_with,
    pv,
    pvc,
    schedule,
    store_of,
)
from pyscheduler.testing import make_cycle_state, make_handle, make_node, make_node_info

# --------------------------------------------------------------------------- local PV index


def host_pv(name: str, *hosts: str, operator: str = "In", capacity: str = "1Gi", claim: str = "") -> Obj:
    expr: Obj = {"key": "kubernetes.io/hostname", "operator": operator}
    if operator in ("In", "NotIn"):
        expr["values"] = list(hosts)
    return pv(
        name,
        capacity=capacity,
        claim=claim,
        node_affinity={"nodeSelectorTerms": [{"matchExpressions": [expr]}]},
    )


@pytest.mark.parametrize(
    ("pvs", "node_name", "want"),
    [
        pytest.param([host_pv("pv1", "n1"), host_pv("pv2", "n2")], "n1", "pv1", id="local PV of this node"),
        pytest.param(
            [host_pv("pv1", "n1"), host_pv("pv2", "n2")], "n2", "pv2", id="local PV of the other node"
        ),
        pytest.param([host_pv("pv1", "n1"), host_pv("pv2", "n2")], "n3", None, id="no local PV here"),
        pytest.param(
            [host_pv("big", "n1", capacity="5Gi"), host_pv("any", "n9", operator="NotIn")],
            "n1",
            "any",
            id="non-indexable affinity is checked everywhere",
        ),
        pytest.param(
            [host_pv("pv1", "n1", "n2", capacity="5Gi"), host_pv("pv2", "n2")],
            "n2",
            "pv2",
            id="several hosts",
        ),
        pytest.param(
            [
                pv("empty", node_affinity={"nodeSelectorTerms": [{}]}),
                pv(
                    "multi",
                    node_affinity={
                        "nodeSelectorTerms": [
                            {},
                            {
                                "matchExpressions": [
                                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}
                                ]
                            },
                        ]
                    },
                ),
            ],
            "n1",
            "multi",
            id="empty terms match nothing",
        ),
        pytest.param(
            [host_pv("free", "n1"), host_pv("pre", "n2", claim="data")],
            "n1",
            None,
            id="pre-bound elsewhere decides",
        ),
    ],
)
def test_local_volumes(pvs: list[Obj], node_name: str, want: str | None) -> None:
    pl, _, _ = plugin_for(WAIT, pvc("data"), *pvs)
    pod = pod_with("data")
    state = make_cycle_state()
    pl.pre_filter(state, pod, [])
    status = pl.filter(state, pod, make_node_info(make_node(node_name)))
    if want is None:
        assert status is not None and status.reasons == (ERR_REASON_BIND_CONFLICT,)
    else:
        assert status is None
        bindings = state.read(STATE_KEY).pod_volumes_by_node[node_name].static_bindings
        assert [v["metadata"]["name"] for _, v in bindings] == [want]


class StrictObjects(ObjectStore):
    """The real store, serving only the four kinds the contract names."""

    KINDS = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode")

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        if kind not in self.KINDS:
            raise KeyError(kind)
        return super().get(kind, namespace, name)

    def list(self, kind: str, namespace: str | None = None) -> Iterable[Mapping[str, Any]]:
        if kind not in self.KINDS:
            raise KeyError(kind)
        return super().list(kind, namespace)


def test_objects_without_csi_driver_kinds() -> None:
    store = store_of(DYN, pvc("data", cls="dyn"), store=StrictObjects())
    pl = VolumeBinding(VolumeBindingArgs(), make_handle(object_store=store, client=FakeClient()))
    _, status = schedule(pl, pod_with("data"), node())
    assert status is None
