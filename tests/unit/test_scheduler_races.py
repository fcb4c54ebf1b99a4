"""Races between a pod's deletion and its own scheduling attempt, found by the chaos suite's
``gang-permit-deletes`` scenario (bench/chaos): each left capacity or a deleted pod behind.

The app is built as the daemon builds it (``build_app``) with the default profile; the API is a stand-in
that records what it is asked, and the moments the race needs (a second pop, a deletion mid-cycle) are
injected through the hooks the scheduler calls at those moments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyscheduler.app import App, build_app
from pyscheduler.config.load import parse_config
from pyscheduler.event_handlers import NodeHandler, PodHandler
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.registry import full_registry, plugin_extension_points
from pyscheduler.testing.builders import make_node, make_pod

SCHED = "py-scheduler"


class Api:
    def __init__(self, bind_error: str | None = None) -> None:
        self.bind_error = bind_error
        self.bound: list[tuple[str, str]] = []
        self.deleted: list[str] = []

    def patch_pod_status(self, *a: Any, **k: Any) -> None: ...

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        if self.bind_error:
            return Status.as_error(self.bind_error)
        self.bound.append((pod.name, node_name))
        return None

    def delete_pod(self, namespace: str, name: str, **k: Any) -> bool:
        self.deleted.append(name)
        return True


class Recorder:
    """Events; ``on_failed`` runs when a FailedScheduling event is recorded (inside handle_failure, after
    the pod was handed back to the queue)."""

    def __init__(self) -> None:
        self.on_failed: Callable[[Pod], None] | None = None

    def event(self, pod: Pod, type: str, reason: str, action: str, note: str) -> bool:
        if reason == "FailedScheduling" and self.on_failed is not None:
            hook, self.on_failed = self.on_failed, None
            hook(pod)
        return True


class Writer:
    def submit(self, fn: Any, *args: Any, **kwargs: Any) -> bool:
        return True


GANGS = {  # the chaos suite's gang profile: Coscheduling (Permit waits for the gang) as the queue sort
    "schedulerName": SCHED,
    "plugins": {
        "multiPoint": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "PrioritySort"}]}
    },
    "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 60}}],
}


def _app(
    api: Api, recorder: Recorder, extra: dict[str, Any] | None = None, profile: dict[str, Any] | None = None
) -> App:
    reg = full_registry()
    raw: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
    }
    if profile is not None:
        raw["profiles"] = [profile]
    cfg = parse_config(raw, reg, lambda n: plugin_extension_points(reg[n]))
    return build_app(cfg, reg, api, recorder=recorder, writer=Writer(), extra=extra)


def _gang_member(name: str, cpu: str) -> Pod:
    return (
        make_pod(name)
        .scheduler(SCHED)
        .label("scheduling.x-k8s.io/pod-group", "g")
        .annotation("scheduling.x-k8s.io/min-available", "2")
        .req(cpu=cpu)
        .obj()
    )


def test_a_pod_popped_again_while_its_failed_binding_cycle_ends_is_still_dropped_when_deleted() -> None:
    # The binding cycle hands a pod whose bind failed back to the queue; the scheduling thread can pop it
    # again at once. The old binding cycle then ended with queue.done(uid), which ended the tracking of
    # the *new* attempt: the pod's deletion during that attempt went unnoticed, the attempt handed it back
    # and the deleted pod was retried for ever (gang-permit-deletes: 287 attempts of one deleted pod).
    api, recorder = Api(bind_error="connection reset"), Recorder()
    app = _app(api, recorder)
    NodeHandler(app).on_add(make_node("n1").capacity(cpu="4", memory="8Gi", pods=10).obj())
    pod = make_pod("p").scheduler(SCHED).req(cpu="1").obj()
    PodHandler(app).on_add(pod)
    again: list[Any] = []

    def pop_again(p: Pod) -> None:  # the scheduling thread, meanwhile (a gang sibling activated it)
        app.queue.activate([p.uid])
        again.append(app.queue.pop(0))

    recorder.on_failed = pop_again
    assert app.scheduler.schedule_one(0)
    assert app.scheduler.drain_binds(10)
    assert len(again) == 1 and again[0] is not None and again[0].pod.uid == pod.uid
    assert app.queue.in_flight_count() == 1  # the second attempt is still tracked

    PodHandler(app).on_delete(pod)  # deleted during the second attempt
    app.queue.add_unschedulable_if_not_present(again[0])  # which then fails and hands it back
    assert app.queue.pending_pods() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert app.queue.in_flight_count() == 0


def test_a_preemptor_deleted_during_its_preemption_is_not_nominated() -> None:
    # A pod that preempts and is deleted before its cycle ends: the queue drops it when it is handed back,
    # so nothing would ever remove a nomination added after that. kube's nominator refuses pods its
    # lister no longer has; a nomination left behind held the node for every pod of lower priority.
    api, recorder = Api(), Recorder()
    holder: dict[str, App] = {}
    preemptor = make_pod("preemptor").scheduler(SCHED).priority(100).req(cpu="2").obj()

    def runner(job: Callable[[], None]) -> None:  # DefaultPreemption's eviction, mid-cycle
        PodHandler(holder["app"]).on_delete(preemptor)
        job()

    app = holder["app"] = _app(api, recorder, extra={"preemption_runner": runner})
    h = PodHandler(app)
    NodeHandler(app).on_add(make_node("n1").capacity(cpu="2", memory="8Gi", pods=10).obj())
    victim = make_pod("victim").node("n1").priority(0).req(cpu="2").obj()
    h.on_add(victim)
    h.on_add(preemptor)
    assert app.scheduler.schedule_one(0)
    assert api.deleted == ["victim"]  # the preemption did happen
    assert app.queue.nominated_pods_for_node("n1") == []
    assert app.queue.pending_pods() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}

    h.on_delete(victim)  # the eviction lands: n1 is free for anyone, a priority-0 pod included
    later = make_pod("later").scheduler(SCHED).priority(0).req(cpu="2").obj()
    h.on_add(later)
    assert app.scheduler.schedule_one(0)
    assert app.scheduler.drain_binds(10)
    assert api.bound == [("later", "n1")]


def test_a_preemptor_still_queued_is_nominated() -> None:
    # the same preemption without the deletion: the nomination is made (the check above is not vacuous)
    api, recorder = Api(), Recorder()
    app = _app(api, recorder, extra={"preemption_runner": lambda job: job()})
    h = PodHandler(app)
    NodeHandler(app).on_add(make_node("n1").capacity(cpu="2", memory="8Gi", pods=10).obj())
    h.on_add(make_pod("victim").node("n1").priority(0).req(cpu="2").obj())
    h.on_add(make_pod("preemptor").scheduler(SCHED).priority(100).req(cpu="2").obj())
    assert app.scheduler.schedule_one(0)
    assert [pi.pod.name for pi in app.queue.nominated_pods_for_node("n1")] == ["preemptor"]


def test_a_pod_turned_away_by_a_gang_member_waiting_in_permit_is_retried_when_that_member_is_deleted() -> (
    None
):
    # A gang member waiting in Permit holds its node. A pod tried meanwhile is parked (Insufficient cpu).
    # When the member's wait ends (deleted here; a timeout or a sibling's failure does the same) its
    # capacity is free again: kube requeues the parked pods (AssignedPodDelete). Without it they waited
    # for an unrelated event or the 5-minute flush (gang-permit-deletes: the capacity probe's pods).
    api, recorder = Api(), Recorder()
    app = _app(api, recorder, profile=GANGS)
    h = PodHandler(app)
    NodeHandler(app).on_add(make_node("n1").capacity(cpu="2", memory="8Gi", pods=10).obj())
    gang = [_gang_member("a", "1"), _gang_member("b", "1")]
    for p in gang:
        h.on_add(p)
    assert app.scheduler.schedule_one(0)  # one member: assumed on n1, waiting in Permit for the other
    (held,) = [wp.pod.uid for wp in app.waiting_pods]
    (waiting,) = [p for p in gang if p.uid == held]  # as the API has it: no node
    (pending,) = [p for p in gang if p.uid != held]
    h.on_delete(pending)  # the gang will never be complete: the member waits (60 s here)

    other = make_pod("other").scheduler(SCHED).req(cpu="2").obj()
    h.on_add(other)
    assert app.scheduler.schedule_one(0)
    assert app.queue.where(other.uid) == "unschedulable"  # n1 is half held by the waiting member

    h.on_delete(waiting)
    assert app.scheduler.drain_binds(10)
    assert app.queue.where(other.uid) in ("active", "backoff")
    assert app.queue.where(waiting.uid) is None
    assert app.scheduler.schedule_one(0)
    assert app.scheduler.drain_binds(10)
    assert api.bound == [("other", "n1")]


def test_a_pod_turned_away_by_a_pod_whose_bind_failed_is_retried() -> None:
    # the same for a binding cycle that fails in Bind (an API error): the node's capacity is free again
    api, recorder = Api(bind_error="connection reset"), Recorder()
    app = _app(api, recorder)
    h = PodHandler(app)
    NodeHandler(app).on_add(make_node("n1").capacity(cpu="2", memory="8Gi", pods=10).obj())
    first = make_pod("first").scheduler(SCHED).priority(10).req(cpu="2").obj()
    other = make_pod("other").scheduler(SCHED).req(cpu="1").obj()
    h.on_add(first)
    h.on_add(other)
    real_bind = api.bind

    def bind(pod: Pod, node_name: str) -> Status | None:
        if pod.name == "first":  # while "first" is assumed, "other" is tried and turned away
            assert app.scheduler.schedule_one(0)
            assert app.queue.where(other.uid) == "unschedulable"
        return real_bind(pod, node_name)

    api.bind = bind  # type: ignore[method-assign]
    assert app.scheduler.schedule_one(0)
    assert app.scheduler.drain_binds(10)
    assert app.queue.where(other.uid) in ("active", "backoff")
