"""A failed attempt clears the pod's nomination, in memory and in its status, as kube-scheduler 1.36 does
(``clearNominatedNode`` in schedule_one.go): a binding cycle that fails (Permit rejected or timed out,
PreBind, Bind), a Reserve or Permit rejection, a scheduler error. And an assumed pod is no longer counted
as nominated (kube's ``assume``).

The app is built as the daemon builds it (``build_app``); the API is a stand-in that records the status
patches, sent in line by a writer that runs each write at once.
"""

from __future__ import annotations

import threading
from typing import Any

from pyscheduler.app import App, build_app
from pyscheduler.config.load import parse_config
from pyscheduler.event_handlers import NodeHandler, PodHandler
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.registry import full_registry, plugin_extension_points
from pyscheduler.testing.builders import make_node, make_pod

SCHED = "py-scheduler"
GATE = "TestGate"


class Api:
    def __init__(self, bind_error: str | None = None) -> None:
        self.bind_error = bind_error
        self.bound: list[tuple[str, str]] = []
        self.nominations: list[tuple[str, str]] = []  # (pod, nominatedNodeName written; "" = cleared)
        self.lock = threading.Lock()

    def patch_pod_status(self, namespace: str, name: str, **k: Any) -> None:
        if k.get("nominated_node_name") is not None:
            with self.lock:
                self.nominations.append((name, k["nominated_node_name"]))

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        if self.bind_error:
            return Status.as_error(self.bind_error)
        self.bound.append((pod.name, node_name))
        return None

    def delete_pod(self, namespace: str, name: str, **k: Any) -> bool:
        return True


class Recorder:
    def event(self, pod: Pod, type: str, reason: str, action: str, note: str) -> bool:
        return True


class InlineWriter:
    def submit(self, fn: Any, *args: Any, key: str | None = None, **kwargs: Any) -> bool:
        fn(*args, **kwargs)
        return True


class Gate:
    """Permit waits for pods labelled gate=wait (the test rejects or allows them); Reserve rejects pods
    labelled gate=reserve."""

    name = GATE

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if pod.labels.get("gate") == "reserve":
            return Status.unschedulable("reserve says no", plugin=GATE)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        return None

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        if pod.labels.get("gate") == "wait":
            return Status.wait("held by the test", plugin=GATE), 30.0
        return None, 0.0


def _app(api: Api) -> App:
    gate = Gate()
    reg = {**full_registry(), GATE: PluginSpec(GATE, lambda args, handle: gate)}

    def eps(name: str) -> set[str]:
        return {"reserve", "permit"} if name == GATE else plugin_extension_points(reg[name])

    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": SCHED, "plugins": {"multiPoint": {"enabled": [{"name": GATE}]}}}],
    }
    cfg = parse_config(raw, reg, eps)
    return build_app(cfg, reg, api, recorder=Recorder(), writer=InlineWriter())


def _setup(api: Api, preemptor: Pod) -> tuple[App, PodHandler]:
    app = _app(api)
    NodeHandler(app).on_add(make_node("n1").capacity(cpu="2", memory="8Gi", pods=10).obj())
    h = PodHandler(app)
    h.on_add(preemptor)
    assert app.queue.nominated_node_name(preemptor.uid) == "n1"  # as the watch delivered it
    return app, h


def _preemptor(*labels: tuple[str, str]) -> Pod:
    b = make_pod("pre").scheduler(SCHED).priority(100).req(cpu="1").nominated("n1")
    for k, v in labels:
        b.label(k, v)
    return b.obj()


def test_a_nominated_pod_whose_bind_fails_loses_its_nomination() -> None:
    api = Api(bind_error='Operation cannot be fulfilled on pods/binding "pre": 409 Conflict')
    pre = _preemptor()
    app, _ = _setup(api, pre)
    assert app.scheduler.schedule_one(0)
    assert app.scheduler.drain_binds(10)
    assert api.bound == []
    assert app.queue.where(pre.uid) is not None  # handed back
    assert app.queue.nominated_node_name(pre.uid) is None
    assert app.queue.nominated_pods_for_node("n1") == []
    assert api.nominations == [("pre", "")]  # the status's nominatedNodeName cleared


def test_a_nominated_pod_rejected_while_waiting_in_permit_loses_its_nomination() -> None:
    api = Api()
    pre = _preemptor(("gate", "wait"))
    app, _ = _setup(api, pre)
    assert app.scheduler.schedule_one(0)
    assert [wp.pod.name for wp in app.waiting_pods] == ["pre"]
    assert app.waiting_pods.reject(pre.uid, GATE, "the test rejects it")
    assert app.scheduler.drain_binds(10)
    assert app.queue.nominated_node_name(pre.uid) is None
    assert api.nominations == [("pre", "")]


def test_a_nominated_pod_rejected_in_reserve_loses_its_nomination() -> None:
    api = Api()
    pre = _preemptor(("gate", "reserve"))
    app, _ = _setup(api, pre)
    assert app.scheduler.schedule_one(0)
    assert app.queue.nominated_node_name(pre.uid) is None
    assert api.nominations == [("pre", "")]


def test_a_pod_never_nominated_gets_no_nomination_write_when_its_bind_fails() -> None:
    # kube writes nominatedNodeName only when it changes it
    api = Api(bind_error="connection reset")
    app = _app(api)
    NodeHandler(app).on_add(make_node("n1").capacity(cpu="2", memory="8Gi", pods=10).obj())
    p = make_pod("plain").scheduler(SCHED).req(cpu="1").obj()
    PodHandler(app).on_add(p)
    assert app.scheduler.schedule_one(0)
    assert app.scheduler.drain_binds(10)
    assert app.queue.where(p.uid) is not None
    assert api.nominations == []


def test_a_nomination_made_in_memory_is_cleared_in_the_status_too() -> None:
    # The preemption's nominatedNodeName write may still be queued when the pod's next attempt fails:
    # the status does not show it yet, so the clearing write goes too (after it, on the same key).
    api = Api(bind_error="connection reset")
    app = _app(api)
    NodeHandler(app).on_add(make_node("n1").capacity(cpu="2", memory="8Gi", pods=10).obj())
    p = make_pod("pre").scheduler(SCHED).priority(100).req(cpu="1").obj()
    PodHandler(app).on_add(p)
    app.queue.add_nominated_pod(app.queue.get(p.uid).pod_info, "n1")  # type: ignore[union-attr]
    assert app.scheduler.schedule_one(0)
    assert app.scheduler.drain_binds(10)
    assert app.queue.nominated_node_name(p.uid) is None
    assert api.nominations == [("pre", "")]


def test_an_assumed_pod_is_not_also_counted_where_it_was_nominated() -> None:
    # While the preemptor (1 cpu, nominated on n1) is assumed on n1 and waits in Permit, n1 has 1 cpu
    # left: a lower-priority pod of 1 cpu fits there. Counted both as assumed and as nominated, the
    # preemptor filled n1 for it.
    api = Api()
    pre = _preemptor(("gate", "wait"))
    app, h = _setup(api, pre)
    assert app.scheduler.schedule_one(0)
    assert [wp.pod.name for wp in app.waiting_pods] == ["pre"]
    low = make_pod("low").scheduler(SCHED).priority(0).req(cpu="1").obj()
    h.on_add(low)
    assert app.scheduler.schedule_one(0)
    assert app.scheduler.drain_binds(0.5) is False  # pre still waits
    (wp,) = list(app.waiting_pods)
    wp.allow(GATE)
    assert app.scheduler.drain_binds(10)
    assert sorted(api.bound) == [("low", "n1"), ("pre", "n1")]
