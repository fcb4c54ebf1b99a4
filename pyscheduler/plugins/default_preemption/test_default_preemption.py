"""DefaultPreemption, driven through a real Framework (NodeResourcesFit plus small inline plugins) so
that every dry-run Filter call is real."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import Action, QueueingHint
from pyscheduler.framework.events import Resource as Ev
from pyscheduler.framework.interfaces import PostFilterPlugin, PreEnqueuePlugin
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.runtime import Framework, ProfilePlugins
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo
from pyscheduler.framework.waiting_pods import WaitingPod
from pyscheduler.plugins import node_resources_fit
from pyscheduler.plugins.default_preemption import (
    MSG_NOT_ELIGIBLE_NEVER,
    MSG_NOT_ELIGIBLE_TERMINATING,
    MSG_WAITING_FOR_PREEMPTION,
    NAME,
    PDB,
    PLUGIN,
    Candidate,
    DefaultPreemption,
    DefaultPreemptionArgs,
    disruption_condition,
    filter_pods_with_pdb_violation,
    pick_one_node_for_preemption,
)
from pyscheduler.testing import FakeClock, make_handle, make_node, make_node_info, make_pod, snapshot_of
from pyscheduler.testing.builders import make_pod_group

# ------------------------------------------------------------------------------------------ fakes


@dataclass
class FakeClient:
    """The API client: records status patches and deletes; ``fail_on`` deletes raise, ``gone`` ones 404."""

    fail_on: set[str] = field(default_factory=set)  # pod names whose delete raises
    gone: set[str] = field(default_factory=set)  # pod names already deleted (404)
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    on_delete: Any = None

    def patch_pod_status(self, namespace: str, name: str, *, condition: dict[str, str]) -> None:
        self.calls.append(("patch", f"{namespace}/{name}", condition))

    def delete_pod(self, namespace: str, name: str, *, uid: str) -> bool:
        self.calls.append(("delete", f"{namespace}/{name}", uid))
        if self.on_delete is not None:
            self.on_delete(name)
        if name in self.fail_on:
            raise RuntimeError(f"HTTP 500 deleting {name}")
        return name not in self.gone

    def deleted(self) -> list[str]:
        names = [c[1].split("/", 1)[1] for c in self.calls if c[0] == "delete"]
        return [n for n in names if n not in self.gone]


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str, str]] = []

    def event(self, pod: Pod, type: str, reason: str, action: str, note: str) -> None:
        self.events.append((pod.name, type, reason, action, note))


class StatusWriter:
    def __init__(self) -> None:
        self.nominations: list[tuple[str, str]] = []

    def nominated_node(self, pod: Pod, node_name: str) -> None:
        self.nominations.append((pod.name, node_name))


class Counter:
    def __init__(self) -> None:
        self.n = 0
        self.observed: list[float] = []

    def inc(self) -> None:
        self.n += 1

    def observe(self, v: float) -> None:
        self.observed.append(v)


class Metrics:
    def __init__(self) -> None:
        self.preemption_attempts = Counter()
        self.preemption_victims = Counter()


class Deferred:
    """A preemption runner that keeps jobs until the test runs them."""

    def __init__(self) -> None:
        self.jobs: list[Any] = []

    def __call__(self, job: Any) -> None:
        self.jobs.append(job)

    def run(self) -> None:
        jobs, self.jobs = self.jobs, []
        for j in jobs:
            j()


def inline(job: Any) -> None:
    job()


# -------------------------------------------------------------------------------- inline plugins

BLOCKED_REASON = "node(s) are blocked for this test"
BLOCKER_REASON = "node(s) have a blocker pod"
BLOCKER_KEY = "PreFilterBlockers"


class Blocked:
    """Filter: nodes labelled blocked=true are UnschedulableAndUnresolvable (preemption cannot help)."""

    name = "Blocked"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        assert node_info.node is not None
        if node_info.node.labels.get("blocked") == "true":
            return Status.unresolvable(BLOCKED_REASON)
        return None


class _Counts:
    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def clone(self) -> _Counts:
        return _Counts(dict(self.counts))


class Blockers:
    """PreFilter counts pods labelled blocker=true per node; Filter reads only that count, so removing
    a blocker helps only if preemption tells the PreFilter extensions (RemovePod / AddPod)."""

    name = "Blockers"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[None, None]:
        counts = {ni.name: sum(1 for pi in ni.pods if pi.pod.labels.get("blocker") == "true") for ni in nodes}
        state.write(BLOCKER_KEY, _Counts(counts))
        return None, None

    def pre_filter_extensions(self) -> Blockers:
        return self

    def _change(self, state: CycleState, pi: PodInfo, node_info: NodeInfo, delta: int, op: str) -> None:
        self.calls.append((op, pi.pod.name))
        if pi.pod.labels.get("blocker") == "true":
            c: _Counts = state.read(BLOCKER_KEY)
            c.counts[node_info.name] = c.counts.get(node_info.name, 0) + delta

    def add_pod(self, state: CycleState, pod: Pod, pi: PodInfo, node_info: NodeInfo) -> None:
        self._change(state, pi, node_info, 1, "add")

    def remove_pod(self, state: CycleState, pod: Pod, pi: PodInfo, node_info: NodeInfo) -> None:
        self._change(state, pi, node_info, -1, "remove")

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        c: _Counts = state.read(BLOCKER_KEY)
        return Status.unschedulable(BLOCKER_REASON) if c.counts.get(node_info.name, 0) else None


# ------------------------------------------------------------------------------------------ env


def vpod(name: str, prio: int, cpu: str = "1", created: float = 0, ns: str = "default", **labels: str) -> Any:
    b = make_pod(name, ns).priority(prio).req(cpu=cpu)
    if created:
        b.created(created)
    for k, v in labels.items():
        b.label(k, v)
    return b


def node(name: str, cpu: str = "4", *pods: Any, blocked: bool = False) -> NodeInfo:
    nb = make_node(name).capacity(cpu=cpu, memory="16Gi", pods=110)
    if blocked:
        nb.label("blocked", "true")
    return make_node_info(nb, *pods)


def pdb(
    name: str, labels: dict[str, str], allowed: int, ns: str = "default", disrupted: tuple[str, ...] = ()
) -> Any:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": {"matchLabels": labels}},
        "status": {
            "disruptionsAllowed": allowed,
            "disruptedPods": {p: "2024-01-01T00:00:00Z" for p in disrupted},
        },
    }


class Env:
    def __init__(
        self,
        nodes: list[NodeInfo],
        *,
        pdbs: list[dict[str, Any]] | None = None,
        nominated: dict[str, list[Pod]] | None = None,
        args: DefaultPreemptionArgs | None = None,
        seed: int = 0,
        runner: Any = inline,
        async_preemption: bool | None = None,
        client: FakeClient | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.client = client or FakeClient()
        self.recorder = Recorder()
        self.writer = StatusWriter()
        self.metrics = Metrics()
        self.clock = FakeClock()
        snapshot = snapshot_of(*nodes)
        handle = make_handle(
            snapshot, objects=pdbs or [], nominated=nominated, client=self.client, clock=self.clock
        )
        handle.extra.update(
            {
                "recorder": self.recorder,
                "status_writer": self.writer,
                "metrics": self.metrics,
                "preemption_runner": runner,
                **(extra or {}),
            }
        )
        self.waiting = handle.waiting_pods
        # the snapshot's NodeInfos, in the order given: what the scheduling cycle would filter
        self.nodes = [ni for ni in (snapshot.get(n.name) for n in nodes) if ni is not None]
        self.fit = node_resources_fit.PLUGIN.new(node_resources_fit.PLUGIN.decode(None, "args"), handle)
        self.blockers = Blockers()
        self.plugin = DefaultPreemption(
            args, handle, rng=random.Random(seed), async_preemption=async_preemption
        )
        plugins = {p.name: p for p in (self.fit, self.blockers, Blocked(), self.plugin)}
        points = {
            "preEnqueue": (NAME,),
            "preFilter": ("NodeResourcesFit", "Blockers"),
            "filter": ("Blocked", "NodeResourcesFit", "Blockers"),
            "postFilter": (NAME,),
        }
        self.framework = Framework("default-scheduler", plugins, ProfilePlugins(points=points), handle)
        assert self.framework.handle is handle  # the framework binds the handle the plugins were given

    def statuses(self, pod: Pod) -> tuple[CycleState, dict[str, Status]]:
        state = CycleState()
        _, s, _ = self.framework.run_pre_filter_plugins(state, pod, self.nodes)
        assert s is None
        out = {}
        for ni in self.nodes:
            st = self.framework.run_filter_plugins_with_nominated_pods(state, pod, ni)
            assert st is not None and not st.is_success(), f"{pod.name} fits {ni.name}: a bad test"
            out[ni.name] = st
        return state, out

    def post_filter(self, pod: Pod) -> tuple[Any, Status | None]:
        state, statuses = self.statuses(pod)
        return self.plugin.post_filter(state, pod, statuses)


def code(s: Status | None) -> Code:
    return Code.SUCCESS if s is None else s.code


# ------------------------------------------------------------------------------------------ PostFilter


@dataclass
class Case:
    name: str
    nodes: list[NodeInfo]
    preemptor: Any
    want_node: str = ""
    want_victims: tuple[str, ...] = ()
    want_code: Code = Code.SUCCESS
    want_msg: str = ""
    pdbs: list[dict[str, Any]] = field(default_factory=list)
    nominated: dict[str, list[Pod]] = field(default_factory=dict)


CASES = [
    Case(
        "no lower-priority pods anywhere",
        [node("n1", "2", vpod("a", 10, "2")), node("n2", "2", vpod("b", 20, "2"))],
        vpod("p", 10, "2"),
        want_code=Code.UNSCHEDULABLE,
        want_msg="preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
    ),
    Case(
        "the node whose victim has the lowest priority",
        [
            node("n1", "2", vpod("a", 5, "2")),
            node("n2", "2", vpod("b", 1, "2")),
            node("n3", "2", vpod("c", 3, "2")),
        ],
        vpod("p", 10, "2"),
        want_node="n2",
        want_victims=("b",),
    ),
    Case(
        "fewer PDB violations beat lower priority",
        [node("n1", "2", vpod("a", 1, "2", app="db")), node("n2", "2", vpod("b", 5, "2", app="web"))],
        vpod("p", 10, "2"),
        pdbs=[pdb("db", {"app": "db"}, 0)],
        want_node="n2",
        want_victims=("b",),
    ),
    Case(
        "a PDB with room left is no violation",
        [node("n1", "2", vpod("a", 1, "2", app="db")), node("n2", "2", vpod("b", 5, "2", app="web"))],
        vpod("p", 10, "2"),
        pdbs=[pdb("db", {"app": "db"}, 1)],
        want_node="n1",
        want_victims=("a",),
    ),
    Case(
        "a PDB of another namespace does not protect the pod",
        [node("n1", "2", vpod("a", 1, "2", app="db")), node("n2", "2", vpod("b", 5, "2", app="web"))],
        vpod("p", 10, "2"),
        pdbs=[pdb("db", {"app": "db"}, 0, ns="other")],
        want_node="n1",
        want_victims=("a",),
    ),
    Case(
        "when every node violates a PDB, the fewest violations win",
        [
            node("n1", "2", vpod("a1", 1, "1", app="db"), vpod("a2", 1, "1", app="db")),
            node("n2", "2", vpod("b1", 5, "1", app="db"), vpod("b2", 5, "1", app="web")),
        ],
        vpod("p", 10, "2"),
        pdbs=[pdb("db", {"app": "db"}, 0)],
        want_node="n2",
        want_victims=("b1", "b2"),
    ),
    Case(
        "reprieve keeps the more important pods that still leave room",
        [node("n1", "4", vpod("a", 1, "2"), vpod("b", 2, "1"), vpod("c", 3, "1"))],
        vpod("p", 10, "2"),
        want_node="n1",
        want_victims=("a",),
    ),
    Case(
        "reprieve is greedy by importance: a big important pod goes, a small unimportant one stays",
        [node("n1", "4", vpod("a", 1, "1"), vpod("b", 2, "2"), vpod("c", 3, "1"))],
        vpod("p", 10, "2"),
        want_node="n1",
        want_victims=("b",),
    ),
    Case(
        "same priority: the earlier-started pod is reprieved first",
        [
            node(
                "n1",
                "3",
                vpod("old", 1, "1", created=100),
                vpod("new", 1, "1", created=200),
                vpod("x", 9, "1"),
            )
        ],
        vpod("p", 10, "1"),
        want_node="n1",
        want_victims=("new",),
    ),
    Case(
        "PDB-violating pods are reprieved before the others",
        [node("n1", "3", vpod("plain", 2, "1"), vpod("guarded", 1, "1", app="db"), vpod("x", 9, "1"))],
        vpod("p", 10, "1"),
        pdbs=[pdb("db", {"app": "db"}, 0)],
        want_node="n1",
        want_victims=("plain",),
    ),
    Case(
        "equal and higher priority pods are never victims",
        [node("n1", "4", vpod("eq", 10, "2"), vpod("hi", 11, "1"), vpod("lo", 1, "1"))],
        vpod("p", 10, "2"),
        want_code=Code.UNSCHEDULABLE,
        want_msg="preemption: 0/1 nodes are available: 1 Insufficient cpu.",
    ),
    Case(
        "UnschedulableAndUnresolvable nodes are not candidates",
        [node("n1", "2", vpod("a", 1, "2"), blocked=True), node("n2", "2", vpod("b", 5, "2"))],
        vpod("p", 10, "2"),
        want_node="n2",
        want_victims=("b",),
    ),
    Case(
        "only unresolvable nodes: preemption is not helpful",
        [node("n1", "2", vpod("a", 1, "2"), blocked=True), node("n2", "2", vpod("b", 1, "2"), blocked=True)],
        vpod("p", 10, "2"),
        want_code=Code.UNSCHEDULABLE,
        want_msg="preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
    ),
    Case(
        "kube's mixed message",
        [
            node("n1", "2", vpod("a", 20, "2")),
            node("n2", "2", vpod("b", 1, "2"), blocked=True),
            node("n3", "2", vpod("c", 1, "2"), blocked=True),
        ],
        vpod("p", 10, "2"),
        want_code=Code.UNSCHEDULABLE,
        want_msg="preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling.",
    ),
    Case(
        "a pod too big for any node even when emptied",
        [node("n1", "2", vpod("a", 1, "1"), vpod("b", 20, "1"))],
        vpod("p", 10, "2"),
        want_code=Code.UNSCHEDULABLE,
        want_msg="preemption: 0/1 nodes are available: 1 Insufficient cpu.",
    ),
    Case(
        "fewer victims: a smaller sum of priorities",
        [node("n1", "2", vpod("a1", 1, "1"), vpod("a2", 1, "1")), node("n2", "2", vpod("b", 1, "2"))],
        vpod("p", 10, "2"),
        want_node="n2",
        want_victims=("b",),
    ),
    Case(
        "ties up to the start time: the node whose victims started last",
        [
            node("n1", "2", vpod("a", 1, "2", created=100)),
            node("n2", "2", vpod("b", 1, "2", created=300)),
            node("n3", "2", vpod("c", 1, "2", created=200)),
        ],
        vpod("p", 10, "2"),
        want_node="n2",
        want_victims=("b",),
    ),
    Case(
        "a higher-priority pod nominated to a node keeps its room",
        [node("n1", "2", vpod("a", 1, "1")), node("n2", "2", vpod("b", 5, "2"))],
        vpod("p", 10, "2"),
        nominated={"n1": [vpod("nom", 50, "1").nominated("n1").obj()]},
        want_node="n2",
        want_victims=("b",),
    ),
    Case(
        "PreFilter extensions learn about removed victims",
        [node("n1", "2", vpod("blk", 1, "1", blocker="true")), node("n2", "2", vpod("b", 5, "2"))],
        vpod("p", 10, "1"),
        want_node="n1",
        want_victims=("blk",),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_post_filter(case: Case) -> None:
    env = Env(case.nodes, pdbs=case.pdbs, nominated=case.nominated)
    pod = case.preemptor.obj()
    result, status = env.post_filter(pod)
    assert code(status) == case.want_code, status
    if case.want_code == Code.SUCCESS:
        assert result is not None and result.nominated_node_name == case.want_node
        assert sorted(env.client.deleted()) == sorted(case.want_victims)
        assert sorted(e[0] for e in env.recorder.events) == sorted(case.want_victims)
    else:
        assert status is not None and status.reasons == (case.want_msg,)
        assert status.plugin == NAME
        assert result is not None and result.nominated_node_name == "" and result.mode == "clear"
        assert env.client.calls == []


def test_victims_free_their_pod_level_requests() -> None:
    # "a" asks 100m per container but 3 CPU at pod level: kube counts (and frees) the 3 CPU. With
    # every lower-priority pod removed (4 free) the reprieve keeps "b" (1 + 2.5 <= 4), not "a".
    big = vpod("a", 1, "100m").pod_requests(cpu="3")
    env = Env([node("n1", "4", big, vpod("b", 1, "1"))])
    result, status = env.post_filter(vpod("p", 10, "2500m").obj())
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"
    assert env.client.deleted() == ["a"]


def test_victim_resized_in_place_frees_what_it_holds() -> None:
    # "a" wants 1 CPU but its kubelet still holds 3 (allocated): only evicting it makes room for 2.
    resized = vpod("a", 1, "1").resized(cpu="3", allocated={"cpu": "3"})
    env = Env([node("n1", "4", resized, vpod("b", 5, "500m"))])
    result, status = env.post_filter(vpod("p", 10, "2").obj())
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"
    assert env.client.deleted() == ["a"]


def test_victim_is_marked_deleted_and_told() -> None:
    env = Env([node("n1", "2", vpod("a", 1, "2"))])
    p = make_pod("p").priority(10).req(cpu="2").scheduler("my-scheduler").obj()
    result, status = env.post_filter(p)
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"
    assert env.client.calls == [
        (
            "patch",
            "default/a",
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "PreemptionByScheduler",
                "message": "my-scheduler: preempting to accommodate a higher priority pod",
            },
        ),
        ("delete", "default/a", "uid-default-a"),
    ]
    note = f"Preempted by pod {p.uid} on node n1"
    assert env.recorder.events == [("a", "Normal", "Preempted", "Preempting", note)]
    assert disruption_condition(p)["reason"] == "PreemptionByScheduler"
    assert env.metrics.preemption_attempts.n == 1
    assert env.metrics.preemption_victims.observed == [1]


def test_waiting_pod_is_rejected_not_deleted() -> None:
    a, b = vpod("a", 1, "1").node("n1").obj(), vpod("b", 2, "1").node("n1").obj()
    env = Env([make_node_info(make_node("n1").capacity(cpu="2", pods=110), a, b)])
    wp = WaitingPod(a, "n1", {"Gang": 30.0}, env.clock)
    env.waiting.add(wp)
    p = vpod("p", 10, "2").obj()
    _, status = env.post_filter(p)
    assert code(status) == Code.SUCCESS
    res = wp.result()
    assert res is not None and res.code == Code.UNSCHEDULABLE
    assert res.reasons == ("preempted",) and res.plugin == NAME
    assert env.client.deleted() == ["b"]  # the waiting pod costs no API call
    assert (
        "a",
        "Normal",
        "Preempted",
        "Preempting",
        f"Preempted by pod {p.uid} on node n1 (in kube-scheduler memory).",
    ) in env.recorder.events


def test_terminating_victims_are_not_deleted_again() -> None:
    env = Env([node("n1", "2", vpod("a", 1, "1").terminating(), vpod("b", 1, "1"))])
    result, status = env.post_filter(vpod("p", 10, "2").obj())
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"
    assert env.client.deleted() == ["b"]


def test_victim_already_gone_is_fine() -> None:
    env = Env([node("n1", "2", vpod("a", 1, "2"))], client=FakeClient(gone={"a"}))
    result, status = env.post_filter(vpod("p", 10, "2").obj())
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"
    assert env.recorder.events == []  # nothing was preempted by us


def test_lower_priority_nominations_on_the_node_are_cleared() -> None:
    low = vpod("low", 1, "0").nominated("n1").obj()
    high = vpod("high", 50, "0").nominated("n1").obj()
    env = Env([node("n1", "2", vpod("a", 1, "2"))], nominated={"n1": [low, high]})
    _, status = env.post_filter(vpod("p", 10, "2").obj())
    assert code(status) == Code.SUCCESS
    assert env.writer.nominations == [("low", "")]


def test_nothing_to_clear_when_no_victim_needs_deleting() -> None:
    low = vpod("low", 1, "0").nominated("n1").obj()
    env = Env([node("n1", "2", vpod("a", 1, "2").terminating())], nominated={"n1": [low]})
    p = vpod("p", 10, "2").obj()
    result, status = env.post_filter(p)
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"
    assert env.client.calls == [] and env.writer.nominations == []  # kube's async path returns early


def test_through_the_framework() -> None:
    env = Env([node("n1", "2", vpod("a", 1, "2"))])
    p = vpod("p", 10, "2").obj()
    state, statuses = env.statuses(p)
    result, status = env.framework.run_post_filter_plugins(state, p, statuses)
    assert status.is_success() and result is not None and result.nominated_node_name == "n1"


# ------------------------------------------------------------------------------------------ eligibility


@pytest.mark.parametrize(
    ("policy", "nominated", "terminating", "nominated_blocked", "want"),
    [
        pytest.param("PreemptLowerPriority", "", False, False, "", id="eligible"),
        pytest.param("Never", "", False, False, MSG_NOT_ELIGIBLE_NEVER, id="policy Never"),
        pytest.param(
            "PreemptLowerPriority",
            "n1",
            True,
            False,
            MSG_NOT_ELIGIBLE_TERMINATING,
            id="nominated node has terminating victims",
        ),
        pytest.param(
            "PreemptLowerPriority", "n1", False, False, "", id="nothing terminating"
        ),  # nothing terminating: try again
        pytest.param(
            "PreemptLowerPriority", "n1", True, True, "", id="nominated node blocked"
        ),  # nominated node cannot help any more
        pytest.param(
            "PreemptLowerPriority", "gone", True, False, "", id="nominated node gone"
        ),  # nominated node no longer exists
    ],
)
def test_eligibility(
    policy: str, nominated: str, terminating: bool, nominated_blocked: bool, want: str
) -> None:
    dying = vpod("dying", 1, "1")
    if terminating:
        dying.terminating()
    n1 = node("n1", "2", dying, vpod("x", 20, "1"), blocked=nominated_blocked)
    n2 = node("n2", "2", vpod("b", 1, "2"))
    env = Env([n1, n2])
    b = vpod("p", 10, "2").preemption_policy(policy)
    if nominated:
        b.nominated(nominated)
    result, status = env.post_filter(b.obj())
    if want:
        assert code(status) == Code.UNSCHEDULABLE and status is not None
        assert status.reasons == ("preemption: " + want,)
        assert result is None  # the nomination is kept
        assert env.client.calls == []
    else:
        assert code(status) == Code.SUCCESS and result is not None and result.nominated_node_name


def test_terminating_higher_priority_pod_does_not_block() -> None:
    env = Env([node("n1", "2", vpod("dying", 50, "1").terminating(), vpod("a", 1, "1"))])
    result, status = env.post_filter(vpod("p", 10, "1").nominated("n1").obj())
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"


# ------------------------------------------------------------------------------------------ errors


def test_zero_victims_on_an_unschedulable_node_is_an_error() -> None:
    env = Env([node("n1", "4", vpod("a", 1, "1"))])
    p = vpod("p", 10, "1").obj()
    state = CycleState()
    env.framework.run_pre_filter_plugins(state, p, env.nodes)
    result, status = env.plugin.post_filter(state, p, {"n1": Status.unschedulable("stale")})
    assert code(status) == Code.ERROR and result is None
    assert status is not None
    assert status.reasons == ('preemption: expected at least one victim pod on node "n1"',)


def test_sync_preemption_api_error_is_an_error() -> None:
    env = Env([node("n1", "2", vpod("a", 1, "2"))], client=FakeClient(fail_on={"a"}), async_preemption=False)
    result, status = env.post_filter(vpod("p", 10, "2").obj())
    assert code(status) == Code.ERROR and result is None
    assert status is not None and status.reasons == ("preemption: HTTP 500 deleting a",)


def test_async_preemption_failure_spares_the_last_victim_and_activates() -> None:
    activated: list[list[Pod]] = []
    env = Env(
        [node("n1", "3", vpod("a", 1, "1"), vpod("b", 2, "1"), vpod("c", 3, "1"))],
        client=FakeClient(fail_on={"b"}),
        extra={"activate": activated.append},
    )
    p = vpod("p", 10, "3").obj()
    result, status = env.post_filter(p)
    # the result comes back at once; the API calls run on the (here inline) preemption runner
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"
    victims = sorted(c[1] for c in env.client.calls if c[0] == "delete")
    assert victims == ["default/b", "default/c"]  # evicted together; "a" (the last) is spared
    assert [[x.name for x in pods] for pods in activated] == [["p"]]
    assert not env.plugin.is_pod_running_preemption(p.uid)


def test_async_preemption_evicts_all_but_the_last_victim_at_once() -> None:
    both_in_flight = threading.Barrier(2, timeout=5)  # broken (an error) if b and c go one after the other
    activated: list[list[Pod]] = []

    def on_delete(name: str) -> None:
        if name in ("b", "c"):
            both_in_flight.wait()

    env = Env(
        [node("n1", "3", vpod("a", 1, "1"), vpod("b", 2, "1"), vpod("c", 3, "1"))],
        client=FakeClient(on_delete=on_delete),
        extra={"activate": activated.append},
    )
    p = vpod("p", 10, "3").obj()
    result, status = env.post_filter(p)
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"
    assert sorted(env.client.deleted()) == ["a", "b", "c"] and env.client.deleted()[-1] == "a"
    assert activated == []


def test_no_object_store_means_no_pdbs() -> None:
    env = Env([node("n1", "2", vpod("a", 1, "2", app="db"))], pdbs=[pdb("db", {"app": "db"}, 0)])
    env.plugin.handle._objects = None  # a handle without an object store
    result, status = env.post_filter(vpod("p", 10, "2").obj())
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"


def test_missing_client_recorder_and_writer_are_tolerated() -> None:
    low = vpod("low", 1, "0").nominated("n1").obj()
    env = Env([node("n1", "2", vpod("a", 1, "2"))], nominated={"n1": [low]})
    env.plugin.handle._client = None
    env.plugin.handle.extra.clear()
    result, status = env.post_filter(vpod("p", 10, "2").obj())
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"


# ------------------------------------------------------------------------------------------ async


def test_pre_enqueue_holds_the_preemptor_until_its_victims_are_evicted() -> None:
    runner = Deferred()
    env = Env([node("n1", "2", vpod("a", 1, "1"), vpod("b", 1, "1"))], runner=runner)
    p = vpod("p", 10, "2").obj()
    result, status = env.post_filter(p)
    assert code(status) == Code.SUCCESS and result.nominated_node_name == "n1"
    assert env.client.calls == []  # nothing happened yet
    st = env.framework.run_pre_enqueue_plugins(p)
    assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == (MSG_WAITING_FOR_PREEMPTION,) and st.plugin == NAME
    assert env.plugin.pre_enqueue(vpod("other", 10).obj()) is None
    runner.run()
    assert sorted(env.client.deleted()) == ["a", "b"]
    assert env.framework.run_pre_enqueue_plugins(p) is None


@pytest.mark.parametrize(
    ("lister_says", "held"),
    [
        pytest.param(None, True, id="no pod lister"),  # no pod lister: held until the delete call returns
        pytest.param("present", True, id="victim still present"),
        pytest.param("deleting", False, id="victim deleting"),
        pytest.param("gone", False, id="victim gone"),
        pytest.param("replaced", False, id="victim replaced"),
    ],
)
def test_pre_enqueue_while_the_last_victim_is_deleted(lister_says: str | None, held: bool) -> None:
    a = vpod("a", 1, "1").node("n1").obj()
    b = vpod("b", 2, "1").node("n1").obj()  # more important: evicted first; "a" is the last victim
    seen: list[Status | None] = []
    client = FakeClient()
    extra: dict[str, Any] = {}
    if lister_says is not None:

        def lister(ns: str, name: str) -> Any:
            assert (ns, name) == ("default", "a")
            return {
                "present": a,
                "deleting": vpod("a", 1, "1").node("n1").terminating().obj(),
                "gone": None,
                "replaced": {"metadata": {"name": "a", "uid": "another"}},
            }[lister_says]

        extra["pod_lister"] = lister
    env = Env([make_node_info(make_node("n1").capacity(cpu="2", pods=110), a, b)], client=client, extra=extra)
    p = vpod("p", 10, "2").obj()
    client.on_delete = lambda name: seen.append(env.plugin.pre_enqueue(p)) if name == "a" else None
    env.post_filter(p)
    assert [c[1] for c in client.calls if c[0] == "delete"] == ["default/b", "default/a"]
    assert len(seen) == 1 and (seen[0] is not None) == held
    assert env.plugin.pre_enqueue(p) is None


@pytest.mark.parametrize(
    ("cache_says", "held"),
    [
        pytest.param("present", True, id="victim still in the cache"),
        pytest.param("deleting", False, id="victim terminating"),
        pytest.param("gone", False, id="victim removed from the cache"),
    ],
)
def test_pre_enqueue_reads_the_last_victim_from_the_schedulers_cache(cache_says: str, held: bool) -> None:
    # the daemon gives extra["assigned_pod"] (uid -> bound pod in its cache); the delete event of the
    # last victim must find the preemptor no longer "running preemption", or it stays gated
    a = vpod("a", 1, "1").node("n1").obj()
    b = vpod("b", 2, "1").node("n1").obj()
    states: dict[str, Pod | None] = {
        "present": a,
        "deleting": vpod("a", 1, "1").node("n1").terminating().obj(),
        "gone": None,
    }
    asked: list[str] = []

    def assigned_pod(uid: str) -> Pod | None:
        asked.append(uid)
        return states[cache_says]

    seen: list[Status | None] = []
    client = FakeClient()
    env = Env(
        [make_node_info(make_node("n1").capacity(cpu="2", pods=110), a, b)],
        client=client,
        extra={"assigned_pod": assigned_pod},
    )
    p = vpod("p", 10, "2").obj()
    client.on_delete = lambda name: seen.append(env.plugin.pre_enqueue(p)) if name == "a" else None
    env.post_filter(p)
    assert asked == [a.uid]
    assert len(seen) == 1 and (seen[0] is not None) == held


def test_sync_preemption_never_gates() -> None:
    env = Env([node("n1", "2", vpod("a", 1, "2"))], async_preemption=False, runner=Deferred())
    p = vpod("p", 10, "2").obj()
    _, status = env.post_filter(p)
    assert code(status) == Code.SUCCESS and env.client.deleted() == ["a"]
    assert env.plugin.pre_enqueue(p) is None
    assert list(env.plugin.events_to_register()) == []


def test_feature_gate_from_the_handle() -> None:
    h = make_handle()
    h.extra["feature_gates"] = {"SchedulerAsyncPreemption": False}
    assert DefaultPreemption(None, h).async_preemption is False
    h.extra.clear()
    assert DefaultPreemption(None, h).async_preemption is True


@pytest.mark.parametrize(
    ("gates", "pod_groups", "want"),
    [
        pytest.param(
            {"TopologyAwareWorkloadScheduling": True},
            [],
            "preemption: pod group for pod not found",
            id="no-pod-group",
        ),
        pytest.param(
            {"TopologyAwareWorkloadScheduling": True},
            [make_pod_group("pg", min_count=2, topology_key="zone")],
            "preemption: not eligible due to placement-based pod group scheduling limitation",
            id="topology-constraint",
        ),
        pytest.param(
            {"TopologyAwareWorkloadScheduling": True},
            [make_pod_group("pg", min_count=2)],
            None,
            id="no-constraint",
        ),
        pytest.param({}, [make_pod_group("pg", min_count=2, topology_key="zone")], None, id="gate-off"),
    ],
)
def test_pod_group_with_topology_constraints_does_not_preempt(
    gates: dict[str, bool], pod_groups: list[dict[str, Any]], want: str | None
) -> None:
    """kube 1.36 with TopologyAwareWorkloadScheduling: a pod group placed by topology is not preempted for
    pod by pod (its placements would each preempt); other pods and groups go on to the evaluator."""
    from pyscheduler.testing import make_handle

    h = make_handle(objects=pod_groups)
    h.extra["feature_gates"] = gates
    pl = DefaultPreemption(None, h)
    got = pl._pod_group_not_eligible(make_pod("p").group("pg").obj())
    assert (got.message() if got is not None else None) == want
    if got is not None:
        assert got.code == Code.UNSCHEDULABLE and got.plugin == "DefaultPreemption"
    assert pl._pod_group_not_eligible(make_pod("lone").obj()) is None


def test_events_to_register() -> None:
    env = Env([node("n1")])
    evs = list(env.plugin.events_to_register())
    assert len(evs) == 1
    assert evs[0].event.resource == Ev.ASSIGNED_POD and evs[0].event.action == Action.DELETE
    assert evs[0].hint is not None and evs[0].hint(None, vpod("x", 1).obj(), None) == QueueingHint.SKIP


# ------------------------------------------------------------------------------------------ candidates


def test_dry_run_stops_once_enough_candidates_are_found() -> None:
    nodes = [node(f"n{i}", "2", vpod(f"v{i}", 1, "2")) for i in range(5)]
    env = Env(nodes, args=DefaultPreemptionArgs(0, 2))
    p = vpod("p", 10, "2").obj()
    state, _ = env.statuses(p)
    cands, statuses, errors = env.plugin.dry_run_preemption(state, p, nodes, [], offset=3, num_candidates=2)
    assert [c.name for c in cands] == ["n3", "n4"] and statuses == {} and errors == []
    cands, _, _ = env.plugin.dry_run_preemption(state, p, nodes, [], offset=4, num_candidates=2)
    assert [c.name for c in cands] == ["n4", "n0"]


def test_dry_run_goes_on_until_a_non_violating_candidate() -> None:
    nodes = [
        node("n0", "2", vpod("a", 1, "2", app="db")),
        node("n1", "2", vpod("b", 1, "2", app="db")),
        node("n2", "2", vpod("c", 1, "2")),
        node("n3", "2", vpod("d", 1, "2")),
    ]
    env = Env(nodes)
    p = vpod("p", 10, "2").obj()
    state, _ = env.statuses(p)
    pdbs = [PDB.from_dict(pdb("db", {"app": "db"}, 0))]
    cands, _, _ = env.plugin.dry_run_preemption(state, p, nodes, pdbs, offset=0, num_candidates=1)
    # two violating nodes were tried (only one kept), then the first non-violating one ends the search
    assert [(c.name, c.num_pdb_violations) for c in cands] == [("n2", 0), ("n0", 1)]


def test_random_offset_is_seeded() -> None:
    nodes = [node(f"n{i}", "2", vpod(f"v{i}", 1, "2")) for i in range(6)]
    picks = set()
    for seed in range(20):
        env = Env(nodes, args=DefaultPreemptionArgs(0, 1), seed=seed)
        offset = random.Random(seed).randrange(len(nodes))
        result, _ = env.post_filter(vpod("p", 10, "2").obj())
        assert result.nominated_node_name == f"n{offset}"
        picks.add(offset)
    assert len(picks) > 1


@pytest.mark.parametrize(
    ("nodes", "pct", "absolute", "want"),
    [
        pytest.param(50, 10, 100, 50, id="never more than the nodes"),  # never more than the nodes
        pytest.param(5000, 10, 100, 500, id="percentage of many nodes"),
        pytest.param(500, 10, 100, 100, id="absolute minimum"),
        pytest.param(1000, 0, 1, 1, id="zero percent one absolute"),
        pytest.param(1000, 100, 0, 1000, id="hundred percent"),
        pytest.param(999, 1, 0, 9, id="integer division"),  # integer division
    ],
)
def test_num_candidates(nodes: int, pct: int, absolute: int, want: int) -> None:
    assert DefaultPreemptionArgs(pct, absolute).num_candidates(nodes) == want


def _cand(name: str, prios_starts: list[tuple[int, float]], pdb_violations: int = 0) -> Candidate:
    victims = tuple(
        vpod(f"{name}-{i}", prio, created=start).obj() for i, (prio, start) in enumerate(prios_starts)
    )
    return Candidate(name, victims, pdb_violations)


@pytest.mark.parametrize(
    ("cands", "want"),
    [
        pytest.param([], None, id="no candidates"),
        pytest.param([_cand("a", [(5, 0)])], "a", id="one candidate"),
        pytest.param(
            [_cand("a", [(1, 0)], 1), _cand("b", [(9, 0)], 0)], "b", id="fewest PDB violations first"
        ),  # PDB violations first
        pytest.param(
            [_cand("a", [(5, 0)]), _cand("b", [(3, 0), (3, 0)])], "b", id="lower highest priority"
        ),  # lower highest priority
        pytest.param(
            [_cand("a", [(5, 0), (1, 0)]), _cand("b", [(5, 0), (2, 0)])], "a", id="smaller priority sum"
        ),  # smaller sum
        # negative priorities: the MaxInt32+1 offset keeps more victims from looking cheaper
        pytest.param(
            [_cand("a", [(-5, 0), (-5, 0)]), _cand("b", [(-5, 0)])], "b", id="negative priorities offset"
        ),
        pytest.param(
            [_cand("a", [(5, 0), (-(2**31), 0)]), _cand("b", [(5, 0)])], "b", id="same sum fewer victims"
        ),  # same sum: fewer victims
        pytest.param(
            [_cand("a", [(5, 100)]), _cand("b", [(5, 200)])], "b", id="latest start of top victims"
        ),  # latest start of top victims
        pytest.param(
            [_cand("a", [(5, 300), (1, 900)]), _cand("b", [(5, 200), (1, 999)])],
            "a",
            id="only top victims' start counts",
        ),  # only top ones count
        pytest.param(
            [_cand("a", [(5, 100)]), _cand("b", [(5, 100)])], "a", id="full tie the first"
        ),  # full tie: the first
    ],
)
def test_pick_one_node(cands: list[Candidate], want: str | None) -> None:
    got = pick_one_node_for_preemption(cands)
    assert (got.name if got else None) == want


# ------------------------------------------------------------------------------------------ PDBs


@pytest.mark.parametrize(
    ("pods", "pdbs", "violating"),
    [
        pytest.param(
            [("a", {"app": "db"})], [pdb("x", {"app": "db"}, 0)], ["a"], id="PDB with no disruptions left"
        ),
        pytest.param(
            [("a", {"app": "db"}), ("b", {"app": "db"})],
            [pdb("x", {"app": "db"}, 1)],
            ["b"],
            id="second pod over the budget",
        ),
        pytest.param(
            [("a", {"app": "db"})],
            [pdb("x", {"app": "db"}, 0, disrupted=("a",))],
            [],
            id="already disrupted pod",
        ),
        pytest.param([("a", {})], [pdb("x", {}, 0)], [], id="pod without labels"),  # no labels: no PDB
        pytest.param(
            [("a", {"app": "db"})], [pdb("x", {}, 0)], [], id="empty selector"
        ),  # empty selector matches nothing
        pytest.param(
            [("a", {"app": "db"})],
            [pdb("x", {"app": "db"}, 0, ns="other")],
            [],
            id="PDB in another namespace",
        ),
        pytest.param(
            [("a", {"app": "db", "t": "1"})],
            [pdb("x", {"app": "db"}, 5), pdb("y", {"t": "1"}, 0)],
            ["a"],
            id="one of two PDBs violated",
        ),
        pytest.param([("a", {"app": "web"})], [pdb("x", {"app": "db"}, 0)], [], id="PDB not matching"),
    ],
)
def test_filter_pods_with_pdb_violation(
    pods: list[tuple[str, dict[str, str]]], pdbs: list[dict[str, Any]], violating: list[str]
) -> None:
    infos = [PodInfo(make_pod(n).labels(lb).obj()) for n, lb in pods]
    v, nv = filter_pods_with_pdb_violation(infos, [PDB.from_dict(p) for p in pdbs])
    assert [pi.pod.name for pi in v] == violating
    assert [pi.pod.name for pi in nv] == [n for n, _ in pods if n not in violating]


def test_pdb_with_invalid_selector_matches_nothing() -> None:
    bad = pdb("x", {}, 0)
    bad["spec"]["selector"] = {"matchExpressions": [{"key": "app", "operator": "Bogus"}]}
    assert PDB.from_dict(bad).selector is None


def test_prefilter_extensions_see_removals_and_reprieves() -> None:
    env = Env([node("n1", "3", vpod("blk", 1, "1", blocker="true"), vpod("keep", 2, "1"))])
    env.post_filter(vpod("p", 10, "1").obj())
    assert env.blockers.calls == [
        ("remove", "blk"),
        ("remove", "keep"),
        ("add", "keep"),
        ("add", "blk"),
        ("remove", "blk"),
    ]


# ------------------------------------------------------------------------------------------ args & spec


def test_default_args() -> None:
    args = PLUGIN.decode(None, "args")
    assert args == DefaultPreemptionArgs(10, 100)
    assert PLUGIN.decode({"minCandidateNodesPercentage": 5, "minCandidateNodesAbsolute": 0}, "args") == (
        DefaultPreemptionArgs(5, 0)
    )


PCT, ABS = "minCandidateNodesPercentage", "minCandidateNodesAbsolute"


@pytest.mark.parametrize(
    ("raw", "path", "fragment"),
    [
        pytest.param(
            {PCT: -1},
            f"args.{PCT}",
            "Invalid value: -1: not in valid range [0, 100]",
            id="percentage below 0",
        ),
        pytest.param(
            {PCT: 101},
            f"args.{PCT}",
            "Invalid value: 101: not in valid range [0, 100]",
            id="percentage above 100",
        ),
        pytest.param(
            {ABS: -1}, f"args.{ABS}", "Invalid value: -1: not in valid range [0, inf)", id="absolute below 0"
        ),
        pytest.param(
            {PCT: 0, ABS: 0},
            f"args.{PCT}",
            "Invalid value: 0: cannot be zero at the same time as " + ABS,
            id="both zero",
        ),
        pytest.param({PCT: "10"}, f"args.{PCT}", "must be an integer", id="percentage as a string"),
        pytest.param({"minCandidateNodes": 1}, "args.minCandidateNodes", "unknown field", id="unknown field"),
    ],
)
def test_args_validation(raw: dict[str, Any], path: str, fragment: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert e.value.path == path and fragment in str(e.value)


def test_plugin_spec() -> None:
    assert PLUGIN.name == "DefaultPreemption" == NAME
    pl = PLUGIN.new(PLUGIN.decode(None, "args"), Env([node("n1")]).plugin.handle)
    assert isinstance(pl, PostFilterPlugin) and isinstance(pl, PreEnqueuePlugin)


@pytest.mark.parametrize(
    ("n1_status", "want"),
    [
        pytest.param(Status.unschedulable("Insufficient cpu"), "n1", id="unschedulable node is tried"),
        pytest.param(
            Status.unresolvable("node(s) didn't match Pod's node affinity/selector"),
            "n2",
            id="unresolvable node is not",
        ),
        pytest.param(
            None, "n2", id="node without a status is not"
        ),  # a node without a status (excluded by PreFilter) cannot help either
    ],
)
def test_only_unschedulable_nodes_are_tried(n1_status: Status | None, want: str) -> None:
    env = Env([node("n1", "2", vpod("a", 1, "2")), node("n2", "2", vpod("b", 5, "2"))])
    p = vpod("p", 10, "2").obj()
    state, statuses = env.statuses(p)
    if n1_status is None:
        del statuses["n1"]
    else:
        statuses["n1"] = n1_status
    result, status = env.plugin.post_filter(state, p, statuses)
    assert code(status) == Code.SUCCESS and result is not None and result.nominated_node_name == want


# ------------------------------------------------------------------------------------------ resource precheck


def _too_small() -> NodeInfo:
    # 1 of its 2 CPUs is held by a pod the preemptor cannot evict: it cannot fit a 2-CPU pod
    return node("small", "2", vpod("hi", 20, "1"), vpod("lo", 1, "1"))


def test_nodes_too_small_even_without_victims_are_not_dry_run() -> None:
    env = Env([_too_small(), node("ok", "2", vpod("v", 1, "2"))])
    p = vpod("p", 10, "2").obj()
    state, _ = env.statuses(p)
    before = sum(env.framework.evaluations.values())
    cands, _, errors = env.plugin.dry_run_preemption(state, p, env.nodes, [], offset=0, num_candidates=2)
    assert [(c.name, [v.name for v in c.victims]) for c in cands] == [("ok", ["v"])] and errors == []
    # only "ok" was dry-run: a Filter pass with its victim gone (Blocked, NodeResourcesFit, Blockers)
    # and one with it put back (rejected by NodeResourcesFit); "small" would have added 2 more
    assert sum(env.framework.evaluations.values()) - before == 5


def test_nodes_too_small_keep_their_reasons_when_no_node_can_help() -> None:
    env = Env([_too_small(), node("none", "2", vpod("hi2", 20, "2"))])
    p = vpod("p", 10, "2").obj()
    result, status = env.post_filter(p)
    assert result is not None and result.mode == "clear"
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.message() == (
        "preemption: 0/2 nodes are available: 1 Insufficient cpu, "
        "1 No preemption victims found for incoming pod."
    )


def test_nominated_pods_count_in_the_precheck_as_in_the_dry_run() -> None:
    # "nom" frees 2 CPUs, but a higher-priority pod nominated there takes 1: the preemptor cannot fit
    q = vpod("q", 20, "1").obj()
    env = Env(
        [node("nom", "2", vpod("lo", 1, "2")), node("ok", "2", vpod("v", 1, "2"))], nominated={"nom": [q]}
    )
    p = vpod("p", 10, "2").obj()
    result, status = env.post_filter(p)
    assert status is not None and status.is_success() and result is not None
    assert result.nominated_node_name == "ok"
    env = Env([node("nom", "2", vpod("lo", 1, "2"))], nominated={"nom": [q]})
    result, status = env.post_filter(p)
    assert (
        status is not None and status.message() == "preemption: 0/1 nodes are available: 1 Insufficient cpu."
    )
