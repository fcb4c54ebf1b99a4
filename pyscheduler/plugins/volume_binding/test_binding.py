"""VolumeBinding Reserve, PreBind and Unreserve: the PV/PVC patches written and rolled back."""

from __future__ import annotations

from pyscheduler.framework.status import Code
from pyscheduler.plugins.volume_binding import (
    ERR_REASON_BIND_CONFLICT,
    STATE_KEY,
)
from pyscheduler.plugins.volume_binding._fixtures import (
    BOUND_A,
    DYN,
    WAIT,
    FakeClient,
    code,
    node,
    plugin_for,
    pod_with,
    pv,
    pvc,
    schedule,
)
from pyscheduler.testing import make_cycle_state, make_pod

# ----------------------------------------------------------------------- Reserve / PreBind


def test_static_binding_reserve_prebind_unreserve() -> None:
    pl, _, client = plugin_for(WAIT, pvc("a"), pvc("b"), pv("pv1"))
    n = node()
    state, status = schedule(pl, pod_with("a", name="p1"), n)
    assert status is None
    assert state.read(STATE_KEY).all_bound is False

    # the PV is now assumed taken: a second pod's claim finds nothing
    _, status2 = schedule(pl, pod_with("b", name="p2"), n)
    assert status2 is not None and status2.reasons == (ERR_REASON_BIND_CONFLICT,)

    assert pl.pre_bind(state, pod_with("a", name="p1"), n.name) is None
    assert client.patches == [
        (
            "PersistentVolume",
            "",
            "pv1",
            {
                "metadata": {
                    "resourceVersion": "5",
                    "annotations": {"pv.kubernetes.io/bound-by-controller": "yes"},
                },
                "spec": {
                    "claimRef": {
                        "kind": "PersistentVolumeClaim",
                        "apiVersion": "v1",
                        "namespace": "default",
                        "name": "a",
                        "uid": "uid-a",
                        "resourceVersion": "10",
                    }
                },
            },
        )
    ]

    # the binding failed later on: Unreserve makes the PV available again
    pl.unreserve(state, pod_with("a", name="p1"), n.name)
    _, status3 = schedule(pl, pod_with("b", name="p2"), n)
    assert status3 is None


def test_assumed_pv_dropped_when_api_object_changes() -> None:
    pl, objects, _ = plugin_for(WAIT, pvc("a"), pvc("b"), pv("pv1"))
    n = node()
    schedule(pl, pod_with("a", name="p1"), n)
    assert pl.pv_cache.assumed_keys() == ["pv1"]
    # the informer delivers a newer version of the PV (here: released again, e.g. claim deleted)
    newer = pv("pv1")
    newer["metadata"]["resourceVersion"] = "6"
    objects.put("PersistentVolume", newer)
    _, status = schedule(pl, pod_with("b", name="p2"), n)
    assert status is None
    assert pl.pv_cache.assumed_keys() == ["pv1"]  # now assumed for p2's claim


def test_dynamic_provisioning_reserve_prebind() -> None:
    pl, _, client = plugin_for(DYN, pvc("data", cls="dyn"))
    n1, n2 = node("n1"), node("n2")
    state, status = schedule(pl, pod_with("data", name="p1"), n1)
    assert status is None
    # the claim is assumed placed on n1: another pod using it fits only there
    _, other = schedule(pl, pod_with("data", name="p2"), n2)
    assert other is not None and other.reasons == (ERR_REASON_BIND_CONFLICT,)
    assert pl.pre_bind(state, pod_with("data", name="p1"), "n1") is None
    assert client.patches == [
        (
            "PersistentVolumeClaim",
            "default",
            "data",
            {
                "metadata": {
                    "annotations": {"volume.kubernetes.io/selected-node": "n1"},
                    "resourceVersion": "10",
                }
            },
        )
    ]
    pl.unreserve(state, pod_with("data", name="p1"), "n1")
    _, again = schedule(pl, pod_with("data", name="p2"), n2)
    assert again is None


def test_all_bound_pod_needs_no_prebind() -> None:
    pl, _, client = plugin_for(*BOUND_A)
    state, status = schedule(pl, pod_with("data"), node(zone="a"))
    assert status is None
    assert state.read(STATE_KEY).all_bound is True
    assert pl.pre_bind(state, pod_with("data"), "n1") is None
    assert client.patches == []


def test_pod_without_claims_passes_every_point() -> None:
    pl, _, client = plugin_for()
    pod = make_pod("p").obj()
    state = make_cycle_state()
    _, status = pl.pre_filter(state, pod, [])
    assert code(status) == Code.SKIP
    assert pl.reserve(state, pod, "n1") is None
    assert pl.pre_bind(state, pod, "n1") is None
    pl.unreserve(state, pod, "n1")
    # no state at all (PreFilter never ran) is fine for such a pod
    fresh = make_cycle_state()
    assert pl.reserve(fresh, pod, "n1") is None
    assert pl.pre_bind(fresh, pod, "n1") is None
    pl.unreserve(fresh, pod, "n1")
    assert client.patches == []


def test_prebind_failure_is_an_error_and_reverts() -> None:
    pl, _, _ = plugin_for(WAIT, pvc("a"), pvc("b"), pv("pv1"), client=FakeClient(fail_on="pv1"))
    n = node()
    state, _ = schedule(pl, pod_with("a", name="p1"), n)
    status = pl.pre_bind(state, pod_with("a", name="p1"), n.name)
    assert status is not None and status.code == Code.ERROR
    assert "conflict on pv1" in status.message()
    assert pl.pv_cache.assumed_keys() == []
    pl.unreserve(state, pod_with("a", name="p1"), n.name)  # idempotent after the revert


def test_prebind_on_unfiltered_node_is_an_error() -> None:
    pl, _, _ = plugin_for(WAIT, pvc("a"), pv("pv1"))
    state, _ = schedule(pl, pod_with("a"), node("n1"))
    state.read(STATE_KEY).all_bound = False
    status = pl.pre_bind(state, pod_with("a"), "elsewhere")
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == ('no pod volumes found for node "elsewhere"',)


def test_unreserve_without_state_or_node_is_noop() -> None:
    pl, _, _ = plugin_for(WAIT, pvc("a"), pv("pv1"))
    pl.unreserve(make_cycle_state(), pod_with("a"), "n1")
    state, _ = schedule(pl, pod_with("a"), node("n1"))
    pl.unreserve(state, pod_with("a"), "n9")
    assert pl.pv_cache.assumed_keys() == ["pv1"]
