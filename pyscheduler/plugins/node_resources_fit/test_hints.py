"""NodeResourcesFit events and queueing hints: which pod and node changes make a rejected pod worth retrying."""

import pytest

from pyscheduler.framework.events import Action, QueueingHint
from pyscheduler.framework.events import Resource as EventResource
from pyscheduler.plugins.node_resources_fit import (
    Fit,
    NodeResourcesFitArgs,
)
from pyscheduler.plugins.node_resources_fit._fixtures import (
    FOO,
    node,
)
from pyscheduler.testing.builders import (
    NodeBuilder,
    PodBuilder,
    make_pod,
)

# ----------------------------------------------------------------------------------------- Events


def test_events_to_register() -> None:
    events = {e.event.resource: e for e in Fit().events_to_register()}
    assert events[EventResource.POD].event.action == Action.DELETE | Action.UPDATE_POD_SCALE_DOWN
    assert events[EventResource.NODE].event.action == Action.ADD | Action.UPDATE_NODE_ALLOCATABLE
    assert all(e.hint is not None for e in events.values())


Q, S = QueueingHint.QUEUE, QueueingHint.SKIP
TARGET = make_pod("target").req(cpu="1")


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (make_pod("x").req(cpu="1").node("n1"), None, Q),  # scheduled pod deleted
        (make_pod("x").req(cpu="1"), None, S),  # pending pod deleted
        (make_pod("x").req(cpu="1").nominated("n1"), None, Q),  # nominated pod deleted
        (make_pod("x").req(cpu="2").node("n1"), make_pod("x").req(cpu="1").node("n1"), Q),  # cpu shrank
        # memory shrank, but the target pod does not request memory
        (make_pod("x").req(memory="2Gi").node("n1"), make_pod("x").req(memory="1Gi").node("n1"), S),
        (make_pod("x").req(cpu="2"), make_pod("x").req(cpu="1"), S),  # unscheduled pod shrank
        (make_pod("target").req(cpu="2"), make_pod("target").req(cpu="1"), Q),  # the pod itself
        (make_pod("x").res({FOO: 2}).node("n1"), make_pod("x").res({FOO: 1}).node("n1"), S),
    ],
)
def test_hint_pod_event(old: PodBuilder, new: PodBuilder | None, hint: QueueingHint) -> None:
    plugin = Fit()
    old_p = old.obj() if old is not None else None
    new_p = new.obj() if new is not None else None
    assert plugin.is_schedulable_after_pod_event(TARGET.obj(), old_p, new_p) == hint


def test_hint_pod_event_scalar_shrink() -> None:
    target = make_pod("target").res({FOO: 1}).obj()
    old = make_pod("x").res({FOO: 2}).node("n1").obj()
    new = make_pod("x").res({FOO: 1}).node("n1").obj()
    assert Fit().is_schedulable_after_pod_event(target, old, new) == Q


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (None, node(cpu="2"), Q),  # added and big enough
        (None, node(cpu="500m"), S),  # added but too small
        (None, node(pods=0), S),  # added but takes no pods
        (node(cpu="500m"), node(cpu="2"), Q),  # grew and now fits
        (node(cpu="2"), node(cpu="2").label("x", "y"), S),  # nothing grew
        (node(cpu="2", memory="1Gi"), node(cpu="2", memory="2Gi"), S),  # grew in what the pod does not ask
        (node(cpu="2", pods=10), node(cpu="2", pods=20), Q),  # more pods allowed
    ],
)
def test_hint_node_change(old: NodeBuilder | None, new: NodeBuilder, hint: QueueingHint) -> None:
    plugin = Fit()
    old_n = old.obj() if old is not None else None
    assert plugin.is_schedulable_after_node_change(TARGET.obj(), old_n, new.obj()) == hint


def test_hint_node_change_accepts_json_and_ignored_resources() -> None:
    target = make_pod("target").req(cpu="1").res({FOO: 1}).obj()
    assert Fit().is_schedulable_after_node_change(target, None, node(cpu="2").json()) == S
    ignoring = Fit(NodeResourcesFitArgs(ignored_resources=(FOO,)))
    assert ignoring.is_schedulable_after_node_change(target, None, node(cpu="2").json()) == Q


# ------------------------------------------------------- a preemptor waiting for its victims to go


class _Nominations:
    """The queue's in-memory nominations, as the handle reads them."""

    def __init__(self, of: dict[str, str]) -> None:
        self.of = of

    def nominated_pods_for_node(self, node_name: str) -> list:  # type: ignore[type-arg]
        return []

    def nominated_node_name(self, uid: str) -> str | None:
        return self.of.get(uid)


class _PostFilter:
    """Another PostFilter plugin; ``helps``: None when it does not say."""

    def __init__(self, helps: bool | None) -> None:
        if helps is not None:
            self.post_filter_cannot_help = lambda pod: not helps


def _waiting_preemptor_env(*, terminating: bool = True, others: tuple = (), live: bool = True):  # type: ignore[no-untyped-def,type-arg]
    """n1: the preemptor's nominated node, one victim still terminating (or gone); n2: three 1-CPU pods
    of 4 CPU; n3: two. The preemptor needs 3 CPU."""
    from types import SimpleNamespace

    from pyscheduler.backend.cache import Cache
    from pyscheduler.plugins.default_preemption import DefaultPreemption
    from pyscheduler.testing import make_handle, make_node

    cache = Cache()
    for name in ("n1", "n2", "n3"):
        cache.add_node(make_node(name).capacity(cpu="4", pods=110).obj())
    victim = make_pod("victim").req(cpu="1").priority(1).node("n1")
    cache.add_pod((victim.terminating() if terminating else victim).obj())
    on_n2 = [make_pod(f"a{i}").req(cpu="1").priority(1).node("n2").obj() for i in range(3)]
    on_n3 = [make_pod(f"b{i}").req(cpu="1").priority(1).node("n3").obj() for i in range(2)]
    for p in on_n2 + on_n3:
        cache.add_pod(p)
    pod = make_pod("preemptor").req(cpu="3").priority(10).obj()
    handle = make_handle(nominator=_Nominations({pod.uid: "n1"}))
    if live:
        handle.extra["live_node"] = cache.read_node
    handle.framework = SimpleNamespace(  # type: ignore[assignment]
        post_filter_plugins=[DefaultPreemption(None, handle), *others]
    )
    fit = Fit(None, handle)

    def deleted(p):  # type: ignore[no-untyped-def]
        cache.remove_pod(p)  # the watch updates the cache before the queue asks the hints
        return fit.is_schedulable_after_pod_event(pod, p, None)

    return deleted, on_n2, on_n3


@pytest.mark.parametrize(
    "others",
    [
        pytest.param((), id="DefaultPreemption alone"),
        pytest.param((_PostFilter(helps=False),), id="with a PostFilter plugin that cannot help"),
    ],
)
def test_a_preemptor_waiting_for_its_victims_is_not_asked_again_for_a_node_it_still_does_not_fit(
    others: tuple,  # type: ignore[type-arg]
) -> None:
    deleted, on_n2, on_n3 = _waiting_preemptor_env(others=others)
    assert deleted(on_n2[0]) == S  # n2 keeps 2 CPU of 4 in use: 3 do not fit
    assert deleted(on_n3[0]) == Q  # n3 now has 3 free


def test_a_deletion_on_the_nominated_node_asks_again() -> None:
    deleted, _, _ = _waiting_preemptor_env()
    assert deleted(make_pod("other").req(cpu="1").priority(1).node("n1").obj()) == Q


@pytest.mark.parametrize(
    "setup",
    [
        pytest.param({"terminating": False}, id="no terminating victim: it may preempt again"),
        pytest.param({"others": (_PostFilter(helps=True),)}, id="another PostFilter plugin might help"),
        pytest.param({"others": (_PostFilter(helps=None),)}, id="another PostFilter plugin does not say"),
        pytest.param({"live": False}, id="no view of the cluster as it is now"),
    ],
)
def test_a_preemptor_that_may_be_helped_otherwise_is_asked_again(setup: dict[str, object]) -> None:
    deleted, on_n2, _ = _waiting_preemptor_env(**setup)  # type: ignore[arg-type]
    assert deleted(on_n2[0]) == Q
