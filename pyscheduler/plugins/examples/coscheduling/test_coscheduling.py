from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pytest

from pyscheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.runtime import Framework, FrameworkHandle, ProfilePlugins
from pyscheduler.framework.status import Code, Status, code_of
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo
from pyscheduler.plugins.examples.coscheduling import (
    MIN_AVAILABLE_KEY,
    NAME,
    PLUGIN,
    POD_GROUP_LABEL,
    Coscheduling,
    CoschedulingArgs,
    PodGroup,
    group_of,
    is_schedulable_after_pod_added,
)
from pyscheduler.testing import make_handle, snapshot_of
from pyscheduler.testing.builders import PodBuilder, make_cycle_state, make_node, make_node_info, make_pod
from pyscheduler.testing.clock import FakeClock

NS = "team"


def member(name: str, group: str = "g", min_available: int | str | None = 3, ns: str = NS) -> PodBuilder:
    b = make_pod(name, ns).label(POD_GROUP_LABEL, group)
    if min_available is not None:
        b.annotation(MIN_AVAILABLE_KEY, str(min_available))
    return b


def nodes(count: int = 3, cpu: str = "4", **labels: str) -> list[NodeInfo]:
    return [
        make_node_info(make_node(f"n{i}").capacity(cpu=cpu, memory="8Gi", pods=110).labels(labels))
        for i in range(count)
    ]


class FakeQueue:
    """The scheduling queue as Coscheduling sees it through ``handle.nominator``: the pending pods, and
    the pods it activates (its nominations are empty)."""

    def __init__(self, pending: Iterable[Pod] = ()) -> None:
        self.pending = list(pending)
        self.activated: list[str] = []

    def pending_pod_list(self) -> dict[str, list[Pod]]:
        return {"active": list(self.pending)}

    def activate(self, uids: Iterable[str]) -> None:
        self.activated.extend(uids)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return []


class Gang:
    """A Coscheduling plugin inside a real Framework (so Permit's WAIT registers real WaitingPods)."""

    def __init__(
        self,
        infos: list[NodeInfo] | None = None,
        pending: list[Pod] | None = None,
        timeout: float = 60.0,
        queue: bool = True,
    ) -> None:
        self.clock = FakeClock()
        self.queue = FakeQueue(pending or []) if queue else None
        self.handle: FrameworkHandle = make_handle(
            snapshot_of(*(infos or nodes())), clock=self.clock, nominator=self.queue
        )
        self.plugin = Coscheduling(CoschedulingArgs(timeout), self.handle)
        points: dict[str, tuple[str, ...]] = {
            p: (NAME,) for p in ("queueSort", "preFilter", "reserve", "permit", "postBind")
        }
        self.fwk = Framework("gang", {NAME: self.plugin}, ProfilePlugins(points=points), self.handle)
        self.states: dict[str, Any] = {}

    def schedule(self, pod: Pod, node: str = "n0") -> Status | None:
        """Reserve then Permit, as the scheduling cycle does."""
        state = self.states.setdefault(pod.uid, make_cycle_state())
        s = self.fwk.run_reserve_plugins_reserve(state, pod, node)
        assert s is None
        return self.fwk.run_permit_plugins(state, pod, node)

    def unreserve(self, pod: Pod, node: str = "n0") -> None:
        self.fwk.run_reserve_plugins_unreserve(self.states[pod.uid], pod, node)

    def result(self, pod: Pod) -> Status | None:
        wp = self.handle.waiting_pods.get(pod.uid)
        assert wp is not None, f"{pod.name} is not waiting"
        return wp.result()

    def pre_filter(self, pod: Pod) -> Status | None:
        _, s, _ = self.fwk.run_pre_filter_plugins(make_cycle_state(), pod, self.handle.snapshot.list())
        return s


# ------------------------------------------------------------------------------------------ Permit


def test_gang_waits_until_min_available_then_all_go() -> None:
    p1, p2, p3 = (member(f"p{i}").obj() for i in (1, 2, 3))
    g = Gang(pending=[p1, p2, p3])
    s = g.schedule(p1)
    assert code_of(s) == Code.WAIT
    assert g.result(p1) is None  # undecided
    assert g.queue is not None and sorted(g.queue.activated) == sorted(
        [p2.uid, p3.uid]
    )  # siblings tried next, not after backoff
    assert code_of(g.schedule(p2)) == Code.WAIT
    assert g.schedule(p3) is None  # the third completes the gang: it goes on at once...
    assert g.result(p1) == Status.success()  # ...and the waiting ones are allowed
    assert g.result(p2) == Status.success()


def test_wait_uses_the_configured_timeout_and_reports_progress() -> None:
    p1 = member("p1").obj()
    g = Gang(pending=[p1], timeout=15)
    s, timeout = g.plugin.permit(make_cycle_state(), p1, "n0")
    assert timeout == 15
    assert s is not None and s.code == Code.WAIT
    assert s.reasons == (f'waiting for pod group "{NS}/g": 1 of min-available 3 pod(s) ready',)


def test_timeout_of_one_member_rejects_the_whole_gang() -> None:
    p1, p2 = member("p1").obj(), member("p2").obj()
    g = Gang(pending=[p1, p2])
    g.schedule(p1)
    g.clock.advance(10)
    g.schedule(p2)
    g.clock.advance(50)  # p1 has waited 60s, p2 50s
    r1 = g.result(p1)
    assert r1 is not None and r1.code == Code.UNSCHEDULABLE
    assert r1.reasons == ("rejected due to timeout after waiting 60s at plugin Coscheduling",)
    assert g.result(p2) is None
    g.unreserve(p1)  # the binding cycle's failure path
    r2 = g.result(p2)
    assert r2 is not None and r2.code == Code.UNSCHEDULABLE and r2.plugin == NAME
    assert r2.reasons == (f'pod group "{NS}/g" rejected: member p1 was unreserved',)
    g.unreserve(p2)
    assert g.plugin._reserved == {}  # every reservation released


def test_unreserve_leaves_other_groups_alone_and_is_idempotent() -> None:
    a1, b1 = member("a1", "a").obj(), member("b1", "b").obj()
    other_ns = member("a2", "a", ns="elsewhere").obj()
    g = Gang(pending=[a1, b1, other_ns])
    for p in (a1, b1, other_ns):
        assert code_of(g.schedule(p)) == Code.WAIT
    g.unreserve(b1)
    g.unreserve(b1)
    assert g.result(a1) is None and g.result(other_ns) is None


def test_members_already_on_nodes_count() -> None:
    infos = nodes(2)
    infos[0].add_pod(member("old1").node("n0").obj())
    infos[1].add_pod(member("old2").node("n1").obj())
    infos[1].add_pod(member("stranger", "other").node("n1").obj())
    g = Gang(infos=infos)
    assert g.schedule(member("new").obj()) is None  # 2 placed + itself = 3


def test_pods_without_a_group_or_with_min_one_pass() -> None:
    g = Gang()
    assert g.schedule(make_pod("loner", NS).obj()) is None
    assert g.schedule(member("solo", min_available=1).obj()) is None
    assert g.schedule(member("unsized", min_available=None).obj()) is None
    assert len(g.handle.waiting_pods) == 0


def test_post_bind_forgets_the_member() -> None:
    p1 = member("p1", min_available=1).obj()
    g = Gang()
    g.schedule(p1)
    assert g.plugin._reserved == {f"{NS}/g": {p1.uid}}
    g.fwk.run_post_bind_plugins(g.states[p1.uid], p1, "n0")
    assert g.plugin._reserved == {}


# ------------------------------------------------------------------------------------------ PreFilter


@dataclass
class PF:
    pod: PodBuilder
    pending: tuple[PodBuilder, ...] = ()
    placed: tuple[PodBuilder, ...] = ()
    cpu: str = "4"
    node_count: int = 3
    queue: bool = True
    reason: str | None = None  # None: passes


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(PF(make_pod("loner", NS)), id="no group"),
        pytest.param(PF(member("p", min_available=1)), id="min 1"),
        pytest.param(
            PF(
                member("p", min_available="x"),
                reason=f'invalid {MIN_AVAILABLE_KEY} "x": must be a positive integer',
            ),
            id="min not a number",
        ),
        pytest.param(
            PF(
                member("p", min_available=0),
                reason=f'invalid {MIN_AVAILABLE_KEY} "0": must be a positive integer',
            ),
            id="min zero",
        ),
        pytest.param(
            PF(
                member("p"),
                pending=(member("p"), member("q")),
                reason=f'pod group "{NS}/g" has 2 pod(s), fewer than its min-available 3',
            ),
            id="too few pods",
        ),
        pytest.param(
            PF(
                member("p"),
                pending=(member("p"), member("q"), member("x", "other"), member("y", ns="other")),
                reason=f'pod group "{NS}/g" has 2 pod(s), fewer than its min-available 3',
            ),
            id="other groups and namespaces do not count",
        ),
        pytest.param(PF(member("p"), pending=(member("p"), member("q"), member("r"))), id="enough pending"),
        pytest.param(
            PF(member("p"), pending=(member("p"),), placed=(member("a"), member("b"))),
            id="placed members count",
        ),
        pytest.param(PF(member("p"), queue=False), id="queue not visible: count not checked"),
        pytest.param(
            PF(
                member("p").req(cpu="800m"),
                pending=(member("p"), member("q"), member("r")),
                cpu="1",
                node_count=2,
                reason=f'pod group "{NS}/g" needs 2400m cpu for 3 more pod(s) of 800m, '
                "but the nodes it may use have 2000m free",
            ),
            id="not enough cpu in the cluster",
        ),
        pytest.param(
            PF(
                member("p").req(cpu="800m"),
                pending=(member("p"), member("q"), member("r")),
                cpu="1",
                node_count=3,
            ),
            id="just enough cpu",
        ),
        pytest.param(
            PF(
                member("p").req(cpu="800m"),
                pending=(member("p"), member("q")),
                placed=(member("a").req(cpu="800m"),),
                cpu="1",
                node_count=2,
                reason=f'pod group "{NS}/g" needs 1600m cpu for 2 more pod(s) of 800m, '
                "but the nodes it may use have 1200m free",
            ),
            id="cpu is counted for the members still to place",
        ),
        pytest.param(
            PF(
                member("p").req(cpu="800m"),
                pending=(member("p"), member("q")),
                placed=(member("a").req(cpu="800m"),),
                cpu="1",
                node_count=3,
            ),
            id="placed members reduce what is still needed",
        ),
        pytest.param(
            PF(
                member("p").req(cpu="800m").node_selector({"pool": "none"}),
                pending=(member("p"), member("q"), member("r")),
                reason=f'pod group "{NS}/g" needs 2400m cpu for 3 more pod(s) of 800m, '
                "but the nodes it may use have 0m free",
            ),
            id="only nodes the pod may use count",
        ),
        pytest.param(
            PF(
                member("p").req(cpu="800m").node_affinity_in("kubernetes.io/hostname", ["n0"]),
                pending=(member("p"), member("q"), member("r")),
                cpu="2",
                reason=f'pod group "{NS}/g" needs 2400m cpu for 3 more pod(s) of 800m, '
                "but the nodes it may use have 2000m free",
            ),
            id="required node affinity narrows the nodes",
        ),
    ],
)
def test_pre_filter(case: PF) -> None:
    infos = nodes(case.node_count, cpu=case.cpu)
    for i, p in enumerate(case.placed):
        infos[i % len(infos)].add_pod(p.node(infos[i % len(infos)].name).obj())
    g = Gang(infos=infos, pending=[p.obj() for p in case.pending], queue=case.queue)
    s = g.pre_filter(case.pod.obj())
    if case.reason is None:
        assert s is None
    else:
        assert s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and s.plugin == NAME
        assert s.reasons == (case.reason,)


def test_pre_filter_counts_waiting_members() -> None:
    p1, p2, p3 = (member(f"p{i}").obj() for i in (1, 2, 3))
    g = Gang(pending=[p3])
    g.schedule(p1)
    g.schedule(p2)
    assert len(g.handle.waiting_pods) == 2
    assert g.pre_filter(p3) is None


def test_members_rejected_for_too_few_pods_are_retried_when_the_group_grows() -> None:
    p1, p2, p3 = (member(f"p{i}").obj() for i in (1, 2, 3))
    g = Gang(pending=[p1])
    assert g.queue is not None
    assert code_of(g.pre_filter(p1)) == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    g.queue.pending.append(p2)
    assert code_of(g.pre_filter(p2)) == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert g.queue.activated == []
    g.queue.pending.append(p3)  # the third member is created
    assert g.pre_filter(p3) is None
    assert sorted(g.queue.activated) == sorted([p1.uid, p2.uid])  # out of the unschedulable pool, now
    g.queue.activated.clear()
    assert g.pre_filter(p1) is None
    assert g.queue.activated == []  # only once


def test_unschedulable_nodes_do_not_count_for_cpu() -> None:
    infos = [
        make_node_info(make_node("n0").capacity(cpu="4").unschedulable()),
        make_node_info(make_node("n1").capacity(cpu="1")),
    ]
    g = Gang(infos=infos, pending=[member(f"p{i}").obj() for i in range(3)])
    s = g.pre_filter(member("p0").req(cpu="500m").obj())
    assert s is not None and "the nodes it may use have 1000m free" in s.message()


# ------------------------------------------------------------------------------------------ group_of


@pytest.mark.parametrize(
    ("pod", "group", "error"),
    [
        pytest.param(make_pod("p", NS), None, "", id="no group"),
        pytest.param(member("p", min_available=None), PodGroup(NS, "g", 1), "", id="group of one"),
        pytest.param(
            member("p", min_available=4), PodGroup(NS, "g", 4), "", id="min available from the annotation"
        ),
        pytest.param(
            member("p", min_available=None).label(MIN_AVAILABLE_KEY, "5"),
            PodGroup(NS, "g", 5),
            "",
            id="min available from the label",
        ),
        pytest.param(
            member("p", min_available=2).label(MIN_AVAILABLE_KEY, "5"),
            PodGroup(NS, "g", 2),
            "",
            id="annotation wins over label",
        ),  # annotation wins
        pytest.param(member("p", min_available=" 2 "), PodGroup(NS, "g", 2), "", id="spaces trimmed"),
        pytest.param(
            member("p", min_available="-1"),
            None,
            f'invalid {MIN_AVAILABLE_KEY} "-1": must be a positive integer',
            id="negative",
        ),
        pytest.param(
            member("p", min_available="2.5"),
            None,
            f'invalid {MIN_AVAILABLE_KEY} "2.5": must be a positive integer',
            id="not an integer",
        ),
    ],
)
def test_group_of(pod: PodBuilder, group: PodGroup | None, error: str) -> None:
    assert group_of(pod.obj()) == (group, error)


# ------------------------------------------------------------------------------------------ QueueSort


@dataclass
class Q:
    pod: Pod
    timestamp: float = 0.0
    attempts: int = 0


T0 = 1_700_000_000.0


@pytest.mark.parametrize(
    ("a", "b", "a_first"),
    [
        pytest.param(
            Q(make_pod("a").priority(10).obj()),
            Q(make_pod("b").priority(5).obj()),
            True,
            id="higher priority first",
        ),
        pytest.param(
            Q(member("a").priority(1).created(T0 + 9).obj()),
            Q(make_pod("b").priority(5).obj()),
            False,
            id="priority beats everything",
        ),
        pytest.param(
            Q(member("a", "g1").created(T0).obj(), 9),
            Q(member("b", "g2").created(T0 + 1).obj(), 1),
            True,
            id="older group first",
        ),
        pytest.param(
            Q(member("a", "g2").created(T0).obj()),
            Q(member("b", "g1").created(T0).obj()),
            False,
            id="same creation time: group name",
        ),
        pytest.param(
            Q(member("a").created(T0).obj(), 2),
            Q(member("b").created(T0).obj(), 1),
            False,
            id="same group: queue timestamp",
        ),
        pytest.param(
            Q(make_pod("a").created(T0 + 5).obj(), 1),
            Q(make_pod("b").created(T0).obj(), 9),
            False,
            id="lone pods: creation time",
        ),
        pytest.param(
            Q(make_pod("a", "x").created(T0).obj(), 1),
            Q(make_pod("b", "x").created(T0).obj(), 9),
            True,
            id="lone pods, same time: name",
        ),
    ],
)
def test_less(a: Q, b: Q, a_first: bool) -> None:
    pl = Coscheduling(CoschedulingArgs(), make_handle())
    assert pl.less(a, b) is a_first
    assert pl.less(b, a) is (not a_first)


def test_group_creation_time_is_its_first_seen_member() -> None:
    pl = Coscheduling(CoschedulingArgs(), make_handle())
    early_loner = Q(make_pod("loner", NS).created(T0 + 5).obj())
    first = Q(member("m1").created(T0 + 10).obj(), 1)
    late = Q(member("m2").created(T0 + 20).obj(), 2)
    assert pl.less(early_loner, first)
    # m2 sorts with its group (created T0+10, as first seen), not by its own later time
    other = Q(make_pod("other", NS).created(T0 + 15).obj())
    assert pl.less(late, other)
    assert pl.less(first, late)


def test_pods_of_a_group_leave_the_queue_together() -> None:
    import functools

    pl = Coscheduling(CoschedulingArgs(), make_handle())
    items = [
        Q(member("a1", "a").created(T0).obj(), 1),
        Q(make_pod("x", NS).created(T0 + 1).obj(), 2),
        Q(member("b1", "b").created(T0 + 2).obj(), 3),
        Q(member("a2", "a").created(T0 + 3).obj(), 4),
        Q(member("b2", "b").created(T0 + 4).obj(), 5),
        Q(member("a3", "a").created(T0 + 5).obj(), 6),
    ]

    def cmp(p: Q, q: Q) -> int:
        return -1 if pl.less(p, q) else 1

    order = sorted(items, key=functools.cmp_to_key(cmp))
    assert [q.pod.name for q in order] == ["a1", "a2", "a3", "x", "b1", "b2"]


# ------------------------------------------------------------------------------------------ events


def test_events_registered() -> None:
    regs = Coscheduling(CoschedulingArgs(), make_handle()).events_to_register()
    events = [r.event for r in regs]
    for ev, wanted in [
        (ClusterEvent(Resource.ASSIGNED_POD, Action.ADD), True),
        (ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE), True),
        (ClusterEvent(Resource.NODE, Action.ADD), True),
        (ClusterEvent(Resource.NODE, Action.UPDATE_NODE_ALLOCATABLE), True),
        (ClusterEvent(Resource.NODE, Action.UPDATE_NODE_TAINT), False),
        (ClusterEvent(Resource.PVC, Action.ADD), False),
    ]:
        assert any(ev.matches(e) for e in events) is wanted, ev


@pytest.mark.parametrize(
    ("new", "hint"),
    [
        pytest.param(member("sib").obj(), QueueingHint.QUEUE, id="a sibling"),
        pytest.param(member("other", "h").obj(), QueueingHint.SKIP, id="another group"),
        pytest.param(member("sib", ns="elsewhere").obj(), QueueingHint.SKIP, id="same group name elsewhere"),
        pytest.param(make_pod("loner", NS).obj(), QueueingHint.SKIP, id="a pod without a group"),
        pytest.param(None, QueueingHint.QUEUE, id="no object"),
    ],
)
def test_pod_added_hint(new: Pod | None, hint: QueueingHint) -> None:
    assert is_schedulable_after_pod_added(member("me").obj(), None, new) == hint


def test_pod_added_hint_for_a_pod_without_group() -> None:
    assert (
        is_schedulable_after_pod_added(make_pod("p", NS).obj(), None, member("x").obj()) == QueueingHint.SKIP
    )


# ------------------------------------------------------------------------------------------ args


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        pytest.param(
            {"permitWaitingTimeSeconds": 0},
            "args.permitWaitingTimeSeconds: must be in (0, 900]",
            id="timeout zero",
        ),
        pytest.param(
            {"permitWaitingTimeSeconds": 901},
            "args.permitWaitingTimeSeconds: must be in (0, 900]",
            id="timeout over 900",
        ),
        pytest.param(
            {"permitWaitingTimeSeconds": "60"},
            "args.permitWaitingTimeSeconds: must be a number",
            id="timeout as a string",
        ),
        pytest.param({"permitWaitingTime": 60}, "args.permitWaitingTime: unknown field", id="unknown field"),
    ],
)
def test_bad_args(raw: dict[str, Any], error: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert str(e.value).startswith(error)


def test_args_and_factory() -> None:
    assert PLUGIN.decode(None, "args") == CoschedulingArgs(60.0)
    assert PLUGIN.decode({"permitWaitingTimeSeconds": 5}, "args") == CoschedulingArgs(5.0)
    pl = PLUGIN.new(PLUGIN.decode(None, "args"), make_handle())
    assert isinstance(pl, Coscheduling) and pl.name == NAME
