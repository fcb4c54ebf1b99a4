"""GangScheduling: PreEnqueue, Permit and queueing hints, table by table (kube's gangscheduling_test)."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.framework.events import QueueingHint
from pyscheduler.framework.podgroup import POD_GROUP_CYCLE_KEY, PodGroupState, state_not_found
from pyscheduler.framework.status import Code
from pyscheduler.framework.types import Pod
from pyscheduler.framework.waiting_pods import WaitingPod
from pyscheduler.plugins.gang_scheduling import (
    MSG_NO_POD_GROUP,
    MSG_TOO_FEW_IN_QUEUE,
    MSG_WAITING_FOR_QUORUM,
    NAME,
    PERMIT_TIMEOUT_SECONDS,
    hints,
    new,
)
from pyscheduler.testing import make_cycle_state, make_handle, make_pod, make_pod_group


class _States:
    """In-memory pod group states: (namespace, name) -> PodGroupState."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], PodGroupState] = {}

    def get(self, namespace: str, name: str) -> PodGroupState:
        g = self.groups.get((namespace, name))
        if g is None:
            raise state_not_found(namespace, name)
        return g


def _member(name: str, node: str = "") -> Pod:
    b = make_pod(name).uid(f"uid-{name}").group("pg")
    if node:
        b.node(node)
    return b.obj()


def _setup(
    pod_groups: list[dict[str, Any]], unscheduled: int = 0, assumed: int = 0, assigned: int = 0
) -> tuple[Any, _States, list[list[Pod]]]:
    handle = make_handle(objects=pod_groups)
    states = _States()
    activated: list[list[Pod]] = []
    handle.extra["pod_group_states"] = states
    handle.extra["activate_pods"] = lambda pods: activated.append(list(pods))
    g = PodGroupState()
    for i in range(unscheduled):
        g.add_pod(_member(f"u{i}"))
    for i in range(assumed):
        p = _member(f"a{i}")
        g.add_pod(p)
        g.assume_pod(p.with_node_name("n1"))
    for i in range(assigned):
        g.add_pod(_member(f"b{i}", node="n1"))
    if unscheduled or assumed or assigned:
        states.groups[("default", "pg")] = g
    return handle, states, activated


@pytest.mark.parametrize(
    ("pod_groups", "members", "code", "message"),
    [
        pytest.param(
            [], 3, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, MSG_NO_POD_GROUP.format(name="pg"), id="no-pod-group"
        ),
        pytest.param([make_pod_group("pg")], 1, Code.SUCCESS, "", id="basic-policy"),
        pytest.param(
            [make_pod_group("pg", min_count=3)],
            2,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            MSG_TOO_FEW_IN_QUEUE,
            id="gang-below-min-count",
        ),
        pytest.param([make_pod_group("pg", min_count=3)], 3, Code.SUCCESS, "", id="gang-at-min-count"),
        pytest.param([make_pod_group("pg", min_count=2)], 4, Code.SUCCESS, "", id="gang-above-min-count"),
        pytest.param(
            [make_pod_group("pg", "other", min_count=1)],
            3,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            MSG_NO_POD_GROUP.format(name="pg"),
            id="pod-group-in-another-namespace",
        ),
    ],
)
def test_pre_enqueue(pod_groups: list[dict[str, Any]], members: int, code: Code, message: str) -> None:
    handle, _, _ = _setup(pod_groups, unscheduled=members)
    st = new(None, handle).pre_enqueue(_member("u0"))
    assert (st.code if st else Code.SUCCESS) == code
    assert (st.message() if st else "") == message
    if st is not None:
        assert st.plugin == NAME


def test_pre_enqueue_ignores_pods_without_a_group() -> None:
    handle, _, _ = _setup([])
    assert new(None, handle).pre_enqueue(make_pod("lone").obj()) is None


@pytest.mark.parametrize(
    ("min_count", "assumed", "assigned", "waits"),
    [
        pytest.param(3, 0, 0, True, id="first-pod-waits"),
        pytest.param(3, 1, 0, True, id="two-of-three-wait"),
        pytest.param(3, 2, 0, False, id="third-completes-quorum"),
        pytest.param(3, 1, 1, False, id="bound-pods-count-too"),
        pytest.param(1, 0, 0, False, id="min-count-one"),
    ],
)
def test_permit(min_count: int, assumed: int, assigned: int, waits: bool) -> None:
    handle, states, activated = _setup(
        [make_pod_group("pg", min_count=min_count)], unscheduled=2, assumed=assumed, assigned=assigned
    )
    pod = _member("u0")
    states.groups[("default", "pg")].assume_pod(pod.with_node_name("n2"))  # the pod being permitted
    for uid in states.groups[("default", "pg")].assumed_uids() - {pod.uid}:
        wp_pod = states.groups[("default", "pg")].assumed[uid]
        handle.waiting_pods.add(WaitingPod(wp_pod, "n1", {NAME: 300.0}, handle.clock))
    st, timeout = new(None, handle).permit(make_cycle_state(), pod, "n2")
    if waits:
        assert st is not None and st.code == Code.WAIT and st.message() == MSG_WAITING_FOR_QUORUM
        assert timeout == PERMIT_TIMEOUT_SECONDS
        assert [p.name for p in activated[0]] == ["u1"]  # the group's unscheduled pods are activated
        assert all(wp.result() is None for wp in handle.waiting_pods)
    else:
        assert st is None and not activated
        assert all(wp.result() is not None and wp.result().is_success() for wp in handle.waiting_pods)


def test_permit_in_a_pod_group_cycle_waits_without_activating_the_members() -> None:
    # the group's simulation has every member in flight already: re-activating them would send the
    # ones no node fits straight back to the queue's active side (a busy loop with PopFromBackoffQ)
    handle, states, activated = _setup([make_pod_group("pg", min_count=3)], unscheduled=2)
    pod = _member("u0")
    states.groups[("default", "pg")].assume_pod(pod.with_node_name("n1"))
    state = make_cycle_state()
    state.write(POD_GROUP_CYCLE_KEY, True)
    st, timeout = new(None, handle).permit(state, pod, "n1")
    assert st is not None and st.code == Code.WAIT and st.message() == MSG_WAITING_FOR_QUORUM
    assert timeout == PERMIT_TIMEOUT_SECONDS and activated == []


def test_permit_without_pod_group_is_an_error_and_basic_policy_passes() -> None:
    handle, _, _ = _setup([], unscheduled=1)
    st, _ = new(None, handle).permit(make_cycle_state(), _member("u0"), "n1")
    assert st is not None and st.code == Code.ERROR
    assert st.message() == 'failed to get podGroup default/pg: podgroup.scheduling.k8s.io "pg" not found'
    handle, _, _ = _setup([make_pod_group("pg")], unscheduled=1)
    assert new(None, handle).permit(make_cycle_state(), _member("u0"), "n1") == (None, 0.0)


@pytest.mark.parametrize(
    ("added", "hint"),
    [
        pytest.param(make_pod("x").group("pg").obj(), QueueingHint.QUEUE, id="same-group"),
        pytest.param(make_pod("x").group("other").obj(), QueueingHint.SKIP, id="other-group"),
        pytest.param(make_pod("x", "ns2").group("pg").obj(), QueueingHint.SKIP, id="other-namespace"),
        pytest.param(make_pod("x").obj(), QueueingHint.SKIP, id="no-group"),
    ],
)
def test_hint_pod_added(added: Pod, hint: QueueingHint) -> None:
    assert hints.is_schedulable_after_pod_added(_member("u0"), None, added) == hint


@pytest.mark.parametrize(
    ("added", "hint"),
    [
        pytest.param(make_pod_group("pg"), QueueingHint.QUEUE, id="its-pod-group"),
        pytest.param(make_pod_group("other"), QueueingHint.SKIP, id="another-pod-group"),
        pytest.param(make_pod_group("pg", "ns2"), QueueingHint.SKIP, id="other-namespace"),
    ],
)
def test_hint_pod_group_added(added: dict[str, Any], hint: QueueingHint) -> None:
    assert hints.is_schedulable_after_pod_group_added(_member("u0"), None, added) == hint
