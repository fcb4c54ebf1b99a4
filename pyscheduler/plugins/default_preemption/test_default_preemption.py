"""DefaultPreemption, driven through a real Framework (NodeResourcesFit plus small inline plugins) so
that every dry-run Filter call is real."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.runtime import Framework, ProfilePlugins
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo
from pyscheduler.framework.waiting_pods import WaitingPod
from pyscheduler.plugins import node_resources_fit
from pyscheduler.plugins.default_preemption import (
    NAME,
    DefaultPreemption,
    DefaultPreemptionArgs,
    disruption_condition,
)
from pyscheduler.testing import FakeClock, make_handle, make_node, make_node_info, make_pod, snapshot_of

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
