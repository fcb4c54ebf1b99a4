"""The scheduling thread keeps in step with the binding cycles (``Scheduler.wait_for_binders``).

With one GIL, a scheduling thread that never waits starves the binder threads: 10,000 pods found pending
at start-up were all assumed before a tenth of them were bound. With ``bind_backlog`` binding cycles in
flight the scheduling thread waits for one to finish, unless binding cycles are held (Permit, a slow
PreBind, a hung API call): then it must go on scheduling.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyscheduler.app import App, build_app
from pyscheduler.config.load import parse_config
from pyscheduler.event_handlers import NodeHandler, PodHandler
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.registry import full_registry, plugin_extension_points
from pyscheduler.testing.builders import make_node, make_pod

SCHED = "py-scheduler"


class GatedApi:
    """Binds succeed, each only once the test lets one through (``release``)."""

    def __init__(self) -> None:
        self.gate = threading.Semaphore(0)
        self.bound: list[str] = []
        self._lock = threading.Lock()

    def release(self, n: int = 1) -> None:
        self.gate.release(n)

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        self.gate.acquire()
        with self._lock:
            self.bound.append(pod.name)
        return None

    def patch_pod_status(self, *a: Any, **k: Any) -> None: ...

    def delete_pod(self, *a: Any, **k: Any) -> bool:
        return True


class Recorder:
    def event(self, *a: Any) -> bool:
        return True


class Writer:
    def submit(self, *a: Any, **k: Any) -> bool:
        return True


def _app(api: GatedApi, pods: int) -> App:
    reg = full_registry()
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    cfg = parse_config(raw, reg, lambda n: plugin_extension_points(reg[n]))
    app = build_app(cfg, reg, api, recorder=Recorder(), writer=Writer())
    NodeHandler(app).on_add(make_node("n1").capacity(cpu="100", memory="100Gi", pods=200).obj())
    for i in range(pods):
        PodHandler(app).on_add(make_pod(f"p{i}").scheduler(SCHED).req(cpu="100m").obj())
    return app


def _eventually(cond: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.005)
    return cond()


@pytest.fixture
def running() -> Iterator[Callable[[App], None]]:
    started: list[tuple[App, threading.Event, threading.Thread]] = []

    def start(app: App) -> None:
        stop = threading.Event()
        t = threading.Thread(target=app.scheduler.run, args=(stop, 0.05), daemon=True)
        t.start()
        started.append((app, stop, t))

    yield start
    for app, stop, t in started:
        stop.set()
        app.queue.close()
        t.join(5)
        app.scheduler.shutdown()


def test_with_the_backlog_full_a_pod_is_scheduled_only_when_a_binding_cycle_finishes(
    running: Callable[[App], None],
) -> None:
    api = GatedApi()
    app = _app(api, pods=10)
    app.scheduler.bind_backlog = 4
    app.scheduler.bind_backlog_wait = 30.0  # binds that finish: the wait always ends with one
    running(app)
    assert _eventually(lambda: app.scheduler.binding_cycles_in_flight() == 4)
    time.sleep(0.3)  # a scheduler that does not wait would have assumed all 10 by now
    assert app.scheduler.binding_cycles_in_flight() == 4
    assert app.queue.pending_pods()["active"] == 6

    api.release(1)  # one Binding goes through: exactly one more pod is scheduled
    assert _eventually(lambda: len(api.bound) == 1 and app.queue.pending_pods()["active"] == 5)
    time.sleep(0.2)
    assert app.queue.pending_pods()["active"] == 5
    assert app.scheduler.binding_cycles_in_flight() == 4

    api.release(100)  # the rest: every pod bound, once
    assert _eventually(lambda: len(api.bound) == 10)
    assert sorted(api.bound) == sorted(f"p{i}" for i in range(10))
    assert app.scheduler.drain_binds(10)


def test_binding_cycles_that_do_not_finish_do_not_hold_the_scheduling_thread(
    running: Callable[[App], None],
) -> None:
    api = GatedApi()  # nothing is released: every binding cycle hangs
    app = _app(api, pods=10)
    app.scheduler.bind_backlog = 4
    app.scheduler.bind_backlog_wait = 0.05
    running(app)
    # one wait of 50 ms that ends with no binding cycle finished; then every pod is scheduled
    assert _eventually(lambda: app.scheduler.binding_cycles_in_flight() == 10, timeout=5.0)
    assert app.queue.pending_pods()["active"] == 0
    api.release(100)
    assert _eventually(lambda: len(api.bound) == 10)
    assert app.scheduler.drain_binds(10)


def test_below_the_backlog_and_with_it_off_the_scheduling_thread_never_waits() -> None:
    api = GatedApi()
    app = _app(api, pods=3)
    s = app.scheduler
    s.bind_backlog = 4
    s.bind_backlog_wait = 30.0
    for _ in range(3):
        assert not s.wait_for_binders()  # 0, 1, 2 in flight: no wait
        assert s.schedule_one(0)
    assert s.binding_cycles_in_flight() == 3
    s.bind_backlog = 0
    s.bind_backlog_wait = 30.0
    assert not s.wait_for_binders()
    api.release(3)
    assert s.drain_binds(10)
    s.shutdown()
