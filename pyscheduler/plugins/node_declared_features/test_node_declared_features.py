"""NodeDeclaredFeatures, against kube 1.36.3's plugin and the nodedeclaredfeatures feature registry.

The expected values come from reading upstream's rules (component-helpers v0.36.3,
nodedeclaredfeatures/features/*), not from running this code.
"""

from __future__ import annotations

import pytest

from pyscheduler.config.defaults import DEFAULT_MULTI_POINT, NOT_IMPLEMENTED
from pyscheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from pyscheduler.framework.status import Code
from pyscheduler.framework.types import MalformedObject, Node, Pod
from pyscheduler.plugins import registry
from pyscheduler.plugins.node_declared_features import (
    ERR_REASON_UNSATISFIED,
    NAME,
    NodeDeclaredFeatures,
    required_features,
)
from pyscheduler.plugins.node_declared_features.features import FEATURES
from pyscheduler.testing.builders import PodBuilder, make_cycle_state, make_node, make_node_info, make_pod

RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS_HOSTNET = "UserNamespacesHostNetworkSupport"


def test_the_registry_is_kube_1_36s() -> None:
    assert [f.name for f in FEATURES] == [
        "ExtendWebSocketsToKubelet",
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers",
        RESTART_ALL,
        USERNS_HOSTNET,
    ]


@pytest.mark.parametrize(
    ("pod", "required"),
    [
        pytest.param(make_pod(), set(), id="plain pod needs nothing"),
        pytest.param(make_pod().restart_rule("RestartAllContainers"), {RESTART_ALL}, id="container rule"),
        pytest.param(make_pod().restart_rule("Restart"), set(), id="Restart action is not RestartAll"),
        pytest.param(
            make_pod()
            .container("c1")
            .restart_rule("Restart")
            .restart_rule("RestartAllContainers", container=1),
            {RESTART_ALL},
            id="rule on the second container",
        ),
        pytest.param(
            make_pod().init_req(cpu="1").restart_rule("RestartAllContainers", init=True),
            {RESTART_ALL},
            id="init container rule",
        ),
        pytest.param(
            make_pod().init_req(sidecar=True, cpu="1").restart_rule("RestartAllContainers", init=True),
            {RESTART_ALL},
            id="sidecar rule",
        ),
        pytest.param(make_pod().host_network().host_users(False), {USERNS_HOSTNET}, id="hostNetwork+userns"),
        pytest.param(make_pod().host_network().host_users(True), set(), id="hostNetwork, host users"),
        pytest.param(make_pod().host_network(), set(), id="hostNetwork, hostUsers unset"),
        pytest.param(make_pod().host_users(False), set(), id="userns without hostNetwork"),
        pytest.param(
            make_pod().host_network().host_users(False).restart_rule("RestartAllContainers"),
            {RESTART_ALL, USERNS_HOSTNET},
            id="both",
        ),
        pytest.param(
            make_pod().req(cpu="1").init_req(cpu="2").res({"cpu": "1"}, limits=True),
            set(),
            id="resources never require a feature to schedule",
        ),
    ],
)
def test_inferred_requirements(pod: PodBuilder, required: set[str]) -> None:
    assert required_features(pod.obj()) == required


def test_a_feature_past_its_max_version_is_not_required() -> None:
    pod = make_pod().restart_rule("RestartAllContainers").obj()
    assert required_features(pod, target=(1, 36, 3)) == {RESTART_ALL}
    # all 1.36 features have no max version: any later target still needs them
    assert required_features(pod, target=(9, 0, 0)) == {RESTART_ALL}


def _filter(pod: Pod, node: Node) -> tuple[Code, str]:
    pl = NodeDeclaredFeatures()
    state = make_cycle_state()
    _, st = pl.pre_filter(state, pod, [])
    if st is not None and st.code == Code.SKIP:
        return Code.SKIP, ""
    out = pl.filter(state, pod, make_node_info(node))
    return (out.code, out.reasons[0]) if out else (Code.SUCCESS, "")


NEEDS_RESTART_ALL = make_pod().restart_rule("RestartAllContainers")


@pytest.mark.parametrize(
    ("pod", "declared", "expected"),
    [
        pytest.param(make_pod(), None, (Code.SKIP, ""), id="pod needing nothing skips"),
        pytest.param(NEEDS_RESTART_ALL, [RESTART_ALL], (Code.SUCCESS, ""), id="node declares it"),
        pytest.param(
            NEEDS_RESTART_ALL,
            [USERNS_HOSTNET, RESTART_ALL, "SomethingNew"],
            (Code.SUCCESS, ""),
            id="superset",
        ),
        pytest.param(
            NEEDS_RESTART_ALL,
            None,
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSATISFIED),
            id="older kubelet declares nothing",
        ),
        pytest.param(
            NEEDS_RESTART_ALL,
            [USERNS_HOSTNET],
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSATISFIED),
            id="node declares another feature",
        ),
        pytest.param(
            make_pod().host_network().host_users(False).restart_rule("RestartAllContainers"),
            [RESTART_ALL],
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSATISFIED),
            id="needs two, node has one",
        ),
    ],
)
def test_filter(pod: PodBuilder, declared: list[str] | None, expected: tuple[Code, str]) -> None:
    node = make_node("n1")
    if declared is not None:
        node.declared_features(*declared)
    assert _filter(pod.obj(), node.obj()) == expected


def test_filter_without_pre_filter_state_infers_again() -> None:
    pl = NodeDeclaredFeatures()
    st = pl.filter(make_cycle_state(), NEEDS_RESTART_ALL.obj(), make_node_info(make_node("n1")))
    assert st is not None and st.reasons == (ERR_REASON_UNSATISFIED,)


def test_node_declared_features_parse_and_reject_garbage() -> None:
    assert make_node("n").declared_features("A", "B").obj().declared_features == ("A", "B")
    assert make_node("n").obj().declared_features == ()
    bad = make_node("n").json()
    bad["status"]["declaredFeatures"] = "A"
    with pytest.raises(MalformedObject, match="declaredFeatures"):
        Node.from_dict(bad)
    bad["status"]["declaredFeatures"] = [1]
    with pytest.raises(MalformedObject, match="declaredFeatures"):
        Node.from_dict(bad)


def test_host_users_must_be_a_boolean() -> None:
    bad = make_pod("p").json()
    bad["spec"]["hostUsers"] = "false"
    with pytest.raises(MalformedObject, match="hostUsers"):
        Pod.from_dict(bad)


# ---------------------------------------------------------------------------------------- queueing


def test_events_to_register() -> None:
    events = [e.event for e in NodeDeclaredFeatures().events_to_register()]
    assert events == [
        ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_DECLARED_FEATURE),
        ClusterEvent(Resource.POD, Action.UPDATE),
    ]
    assert ClusterEvent(Resource.NODE, Action.UPDATE_NODE_DECLARED_FEATURE).matches(events[0])
    assert not ClusterEvent(Resource.NODE, Action.UPDATE_NODE_LABEL).matches(events[0])


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, [RESTART_ALL], QueueingHint.QUEUE, id="node added"),
        pytest.param(None, None, QueueingHint.QUEUE, id="node added declaring nothing"),
        pytest.param([], [RESTART_ALL], QueueingHint.QUEUE, id="feature declared later"),
        pytest.param([RESTART_ALL], [], QueueingHint.QUEUE, id="feature dropped"),
        pytest.param(
            [RESTART_ALL, USERNS_HOSTNET], [USERNS_HOSTNET, RESTART_ALL], QueueingHint.QUEUE, id="order"
        ),
        pytest.param([RESTART_ALL], [RESTART_ALL], QueueingHint.SKIP, id="unchanged"),
    ],
)
def test_node_change_hint(old: list[str] | None, new: list[str] | None, hint: QueueingHint) -> None:
    def node(declared: list[str] | None) -> Node:
        b = make_node("n1")
        if declared:
            b.declared_features(*declared)
        return b.obj()

    pod = NEEDS_RESTART_ALL.obj()
    old_node = node(old) if old is not None else None
    if old is None and new is None:
        assert NodeDeclaredFeatures.is_schedulable_after_node_change(pod, None, node(None)) == hint
        return
    assert NodeDeclaredFeatures.is_schedulable_after_node_change(pod, old_node, node(new)) == hint


def test_pod_update_hint() -> None:
    hint = NodeDeclaredFeatures.is_schedulable_after_pod_update
    target = make_pod("p").restart_rule("RestartAllContainers").obj()
    same = make_pod("p").restart_rule("RestartAllContainers").label("x", "y").obj()
    changed = make_pod("p").obj()
    other = make_pod("q").obj()
    assert hint(target, target, same) == QueueingHint.SKIP  # requirements unchanged
    assert hint(target, target, changed) == QueueingHint.QUEUE
    assert hint(target, make_pod("q").restart_rule("RestartAllContainers").obj(), other) == QueueingHint.SKIP


# ---------------------------------------------------------------------------------------- wiring


def test_in_the_default_profile_last_and_without_weight() -> None:
    assert DEFAULT_MULTI_POINT[-1].name == NAME
    assert DEFAULT_MULTI_POINT[-1].weight is None
    assert NAME not in NOT_IMPLEMENTED
    assert NAME in registry.in_tree()


def test_explain_shows_the_verdict_node_by_node() -> None:
    from pyscheduler.config.load import load_config
    from pyscheduler.explain import explain

    reg = registry.in_tree()
    config = load_config(None, reg, lambda name: registry.plugin_extension_points(reg[name]))
    nodes = [
        make_node("old").capacity(cpu="4", memory="8Gi", pods=110).json(),
        make_node("new").capacity(cpu="4", memory="8Gi", pods=110).declared_features(RESTART_ALL).json(),
    ]
    pod = make_pod("p").scheduler("py-scheduler").restart_rule("RestartAllContainers").json()
    ex = explain(pod, nodes, [], {}, config, reg)
    assert ex.fits == ["new"]
    assert list(ex.rejected) == ["old"]
    assert ex.rejected["old"].plugin == NAME
    assert f"1 x {NAME}: {ERR_REASON_UNSATISFIED}   [old]" in ex.render()


def test_a_parked_pod_is_retried_only_when_a_node_declares_features() -> None:
    from pyscheduler.backend.queue import UNSCHEDULABLE, SchedulingQueue
    from pyscheduler.testing.clock import FakeClock

    pl = NodeDeclaredFeatures()
    q = SchedulingQueue(
        lambda a, b: a.timestamp < b.timestamp, FakeClock(), events_map={NAME: pl.events_to_register()}
    )
    q.add(NEEDS_RESTART_ALL.obj())
    qpi = q.pop(timeout=0)
    assert qpi is not None
    qpi.unschedulable_plugins = {NAME}
    q.add_unschedulable_if_not_present(qpi)
    assert q.pending_pods()[UNSCHEDULABLE] == 1

    old = make_node("n1").obj()
    relabelled = make_node("n1").label("a", "b").obj()
    q.move_all_to_active_or_backoff(ClusterEvent(Resource.NODE, Action.UPDATE_NODE_LABEL), old, relabelled)
    assert q.pending_pods()[UNSCHEDULABLE] == 1  # not an event the plugin registered

    declaring = make_node("n1").declared_features(RESTART_ALL).obj()
    q.move_all_to_active_or_backoff(
        ClusterEvent(Resource.NODE, Action.UPDATE_NODE_DECLARED_FEATURE), old, declaring
    )
    assert q.pending_pods()[UNSCHEDULABLE] == 0
