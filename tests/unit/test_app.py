"""Routing of watch events in the daemon (app.py): which pods reach the queue, the cache, or nothing,
and what a pod the scheduler cannot interpret gets. No network: recorder and writer are fakes."""

from __future__ import annotations

import dataclasses
import gc
import threading
from typing import Any

import pytest

from pyscheduler.app import App, build_app
from pyscheduler.config.load import parse_config
from pyscheduler.event_handlers import NodeHandler, PodHandler
from pyscheduler.framework.types import MalformedObject, Pod
from pyscheduler.plugins.registry import full_registry, plugin_extension_points
from pyscheduler.testing.builders import make_node, make_pod


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def event(self, pod: Pod, type: str, reason: str, action: str, note: str) -> bool:
        self.events.append((pod.key, type, reason, note))
        return True


class Writer:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = []

    def submit(self, fn: Any, *args: Any, **kwargs: Any) -> bool:
        self.calls.append((fn, args, kwargs))
        return True


def _config(reg: Any, **fields: Any) -> Any:
    """A KubeSchedulerConfiguration with kube's defaults and ``fields`` (e.g. ``profiles``), parsed."""
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", **fields}
    return parse_config(doc, reg, lambda n: plugin_extension_points(reg[n]))


class Stream:
    """A watch stream that ends at once (after a short wait), as far as the reflectors are concerned."""

    def __init__(self) -> None:
        self.stopped = threading.Event()

    def __iter__(self) -> Any:
        return self

    def __next__(self) -> Any:
        self.stopped.wait(0.05)
        raise StopIteration

    def stop(self) -> None:
        self.stopped.set()


@pytest.fixture
def app() -> App:
    reg = full_registry()
    cfg = _config(reg)

    class NoApi:
        def patch_pod_status(self, *a: Any, **k: Any) -> None: ...

    return build_app(cfg, reg, NoApi(), recorder=Recorder(), writer=Writer())


def test_unassigned_pod_of_ours_is_queued_foreign_and_terminal_pods_are_not(app: App) -> None:
    h = PodHandler(app)
    h.on_add(make_pod("ours").scheduler("py-scheduler").obj())
    h.on_add(make_pod("theirs").scheduler("default-scheduler").obj())
    h.on_add(make_pod("done").scheduler("py-scheduler").phase("Succeeded").obj())
    assert sum(app.queue.pending_pods().values()) == 1
    assert app.queue.pop(0.1).pod.name == "ours"  # type: ignore[union-attr]


def test_assigned_pods_go_to_the_cache_and_binding_removes_a_pod_from_the_queue(app: App) -> None:
    NodeHandler(app).on_add(make_node("n1").capacity(cpu="4", memory="8Gi", pods=10).obj())
    h = PodHandler(app)
    pending = make_pod("p").scheduler("py-scheduler").obj()
    h.on_add(pending)
    bound = make_pod("p").scheduler("py-scheduler").node("n1").obj()
    h.on_update(pending, bound)
    assert sum(app.queue.pending_pods().values()) == 0
    assert app.cache.pod_count() == 1
    h.on_delete(bound)
    assert app.cache.pod_count() == 0


def test_the_status_writers_view_of_a_pod_bound_assumed_pending_or_gone(app: App) -> None:
    # what decides whether a late PodScheduled=False is dropped (only bound or gone) or written
    latest = app.scheduler.status_writer.latest  # type: ignore[attr-defined]
    NodeHandler(app).on_add(make_node("n1").capacity(cpu="4", memory="8Gi", pods=10).obj())
    h = PodHandler(app)
    pending = make_pod("p").scheduler("py-scheduler").obj()
    pending = dataclasses.replace(pending, resource_version="7")
    h.on_add(pending)
    assert latest(pending.uid) == (False, "7")
    qpi = app.queue.pop(0.1)
    assert qpi is not None
    app.cache.assume_pod(dataclasses.replace(qpi.pod, node_name="n1"))
    assert latest(pending.uid) == (False, "7")  # assumed, waiting in Permit: its binding may yet fail
    bound = dataclasses.replace(pending, node_name="n1", resource_version="9")
    h.on_update(pending, bound)
    assert latest(pending.uid) == (True, "9")  # the watch shows it bound: a late False is dropped
    h.on_delete(bound)
    assert latest(pending.uid) is None


def test_a_malformed_pod_of_ours_gets_failed_scheduling_once_and_the_loop_goes_on(app: App) -> None:
    obj = make_pod("bad", "ns1").scheduler("py-scheduler").json()
    obj["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    with pytest.raises(MalformedObject) as e:
        Pod.from_dict(obj)
    app._on_malformed_pod(obj, e.value)
    app._on_malformed_pod(obj, e.value)  # the same problem again: no second event
    rec: Recorder = app.recorder
    assert len(rec.events) == 1
    key, type_, reason, note = rec.events[0]
    assert (key, type_, reason) == ("ns1/bad", "Warning", "FailedScheduling")
    assert "cpu" in note and "lots" in note
    writer: Writer = app.writer
    (_, args, kwargs) = writer.calls[0]
    assert args[:2] == ("ns1", "bad")
    assert kwargs["condition"]["reason"] == "SchedulerError"
    # A malformed pod of another scheduler is none of our business.
    other = dict(obj, spec={**obj["spec"], "schedulerName": "someone-else"})
    app._on_malformed_pod(other, e.value)
    assert len(rec.events) == 1


def test_a_node_heartbeat_leaves_the_cache_alone_but_a_label_change_reaches_the_snapshot(app: App) -> None:
    h = NodeHandler(app)
    n1 = make_node("n1").capacity(cpu="4", memory="8Gi", pods=10).label("zone", "a").obj()
    h.on_add(n1)
    app.cache.update_snapshot(app.scheduler.snapshot)
    info = app.scheduler.snapshot.get("n1")
    assert info is not None
    generation, epoch = info.generation, app.scheduler.snapshot.node_table().node_epoch

    heartbeat = dataclasses.replace(n1, resource_version="99")  # only conditions' times moved
    h.on_update(n1, heartbeat)
    app.cache.update_snapshot(app.scheduler.snapshot)
    assert info.generation == generation
    assert app.scheduler.snapshot.node_table().node_epoch == epoch

    relabelled = dataclasses.replace(heartbeat, labels={"zone": "b"}, resource_version="100")
    h.on_update(heartbeat, relabelled)
    app.cache.update_snapshot(app.scheduler.snapshot)
    assert info.generation > generation
    assert info.node is not None and info.node.labels == {"zone": "b"}
    assert app.scheduler.snapshot.node_table().node_epoch > epoch


def test_watched_claims_reach_the_tracker_shared_with_plugins(app: App) -> None:
    from pyscheduler.event_handlers import ClaimHandler
    from pyscheduler.framework.dra import ResourceClaim

    def claim(rv: int, allocated: bool) -> ResourceClaim:
        status = {
            "allocation": {
                "devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": "g0"}]}
            }
        }
        return ResourceClaim.from_dict(
            {
                "metadata": {"namespace": "ns", "name": "c", "uid": "u", "resourceVersion": str(rv)},
                "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
                "status": status if allocated else {},
            }
        )

    assert app.scheduler.profiles["py-scheduler"].handle.extra["claims"] is app.claims
    assert app.dra_enabled  # the default profile runs DynamicResources (kube 1.36): the DRA kinds are watched
    assert (
        app.scheduler.profiles["py-scheduler"].handle.extra["claim_writer"] is None
    )  # NoApi cannot write claims
    h = ClaimHandler(app)
    h.on_add(claim(1, False))
    h.on_update(claim(1, False), claim(2, True))
    assert app.claims.allocated_devices() == {("d", "p", "g0")}
    h.on_update(claim(2, True), claim(2, False))  # not newer: ignored
    assert app.claims.allocated_devices() == {("d", "p", "g0")}
    h.on_delete(claim(2, True))
    assert app.claims.get("ns", "c") is None


def test_a_node_declaring_a_feature_is_an_update_plugins_are_told_of(app: App) -> None:
    from pyscheduler.event_handlers import node_action
    from pyscheduler.framework.events import Action

    h = NodeHandler(app)
    n1 = make_node("n1").capacity(cpu="4", memory="8Gi", pods=10).obj()
    h.on_add(n1)
    upgraded = dataclasses.replace(n1, declared_features=("RestartAllContainersOnContainerExits",))
    assert node_action(n1, upgraded) == Action.UPDATE_NODE_DECLARED_FEATURE
    h.on_update(n1, upgraded)
    app.cache.update_snapshot(app.scheduler.snapshot)
    info = app.scheduler.snapshot.get("n1")
    assert info is not None and info.node is not None
    assert info.node.declared_features == ("RestartAllContainersOnContainerExits",)


def test_a_cluster_without_resource_k8s_io_v1_is_refused_with_a_hint() -> None:
    """DynamicResources is in the default profile: on a cluster that does not serve resource.k8s.io/v1
    (older than 1.34) its watches never sync, and the error says how to run without it."""
    from pyscheduler.client.api import ApiError

    reg = full_registry()
    cfg = _config(reg)

    class OldCluster:
        def patch_pod_status(self, *a: Any, **k: Any) -> None: ...

        def list(self, path: str, **kw: Any) -> tuple[list[Any], str]:
            if path.startswith("/apis/resource.k8s.io/"):
                raise ApiError(
                    404, "NotFound", "the server could not find the requested resource", "GET", path
                )
            return [], "1"

        def watch(self, path: str, rv: str, **kw: Any) -> Stream:
            return Stream()

    a = build_app(cfg, reg, OldCluster(), recorder=Recorder(), writer=Writer())
    try:
        with pytest.raises(
            TimeoutError, match=r"did not sync within 1s \(DynamicResources, .* resource.k8s.io/v1"
        ):
            a.start_informers(sync_timeout=1.0)
    finally:
        for r in a.reflectors:
            r.stop(timeout=1.0)


@pytest.mark.parametrize("served", [True, False], ids=["served", "not-served"])
def test_without_dynamic_resources_the_dra_kinds_are_watched_where_served(served: bool) -> None:
    """A profile disabling DynamicResources: kube-scheduler still watches the resource.k8s.io kinds (its
    shared DRA manager, for NodeResourcesFit's DRA-backed extended resources), so pyscheduler does where
    the cluster serves resource.k8s.io/v1; an older cluster still starts. Fit gets the device counts."""
    from pyscheduler.client.api import ApiError
    from pyscheduler.framework.dra import EXTENDED_SCORES_KEY

    reg = full_registry()
    cfg = _config(reg, profiles=[{"plugins": {"multiPoint": {"disabled": [{"name": "DynamicResources"}]}}}])
    listed: list[str] = []

    class Cluster:
        def patch_pod_status(self, *a: Any, **k: Any) -> None: ...

        def serves(self, path: str) -> bool:
            return served

        def list(self, path: str, **kw: Any) -> tuple[list[Any], str]:
            if path.startswith("/apis/resource.k8s.io/") and not served:
                raise ApiError(404, "NotFound", "not found", "GET", path)
            listed.append(path)
            return [], "1"

        def watch(self, path: str, rv: str, **kw: Any) -> Stream:
            return Stream()

    a = build_app(cfg, reg, Cluster(), recorder=Recorder(), writer=Writer())
    try:
        assert not a.dra_enabled
        a.start_informers(sync_timeout=5.0)
        dra = sorted(p for p in listed if p.startswith("/apis/resource.k8s.io/"))
        assert dra == (
            [
                "/apis/resource.k8s.io/v1/deviceclasses",
                "/apis/resource.k8s.io/v1/resourceclaims",
                "/apis/resource.k8s.io/v1/resourceslices",
            ]
            if served
            else []
        )
        assert EXTENDED_SCORES_KEY in next(iter(a.scheduler.profiles.values())).handle.extra
    finally:
        for r in a.reflectors:
            r.stop(timeout=1.0)


def test_the_initial_lists_are_taken_in_without_full_collections_of_the_growing_heap() -> None:
    """At the default gc thresholds every growth of the heap by a quarter while the caches fill set off a
    full collection over all of it: half the CPU of taking in 11,000 pods. The lists run at the daemon's
    thresholds; the pods all reach the queue; the thresholds stay the daemon's after the sync."""
    from pyscheduler.app import DAEMON_GC_THRESHOLD

    reg = full_registry()
    cfg = _config(reg)
    pods = [make_pod(f"p{i}").scheduler("py-scheduler").req(cpu="100m").json() for i in range(2000)]
    at_list: list[tuple[int, int, int]] = []

    class Cluster:
        def patch_pod_status(self, *a: Any, **k: Any) -> None: ...

        def list(self, path: str, **kw: Any) -> tuple[list[Any], str]:
            if path == "/api/v1/pods":
                at_list.append(gc.get_threshold())
                return pods, "7"
            return [], "7"

        def watch(self, path: str, rv: str, **kw: Any) -> Stream:
            return Stream()

    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # CPython's defaults, as a fresh daemon starts
    a = build_app(cfg, reg, Cluster(), recorder=Recorder(), writer=Writer())
    try:
        a.start_informers(sync_timeout=10.0)
        assert at_list == [DAEMON_GC_THRESHOLD]
        assert a.queue.pending_pods()["active"] == 2000
        assert gc.get_threshold() == DAEMON_GC_THRESHOLD
    finally:
        for r in a.reflectors:
            r.stop(timeout=1.0)
        gc.unfreeze()
        gc.set_threshold(*before)


def _park(app: App, name: str, priority: int) -> None:
    """Queue a pending pod of ours and park it as NodeResourcesFit left it (Insufficient cpu)."""
    PodHandler(app).on_add(make_pod(name).scheduler("py-scheduler").priority(priority).req(cpu="2").obj())
    qpi = app.queue.pop(0.1)
    assert qpi is not None and qpi.pod.name == name
    qpi.unschedulable_plugins = {"NodeResourcesFit"}
    app.queue.add_unschedulable_if_not_present(qpi)


@pytest.mark.parametrize("how", ["cleared", "deleted"])
def test_a_lost_nomination_requeues_the_lower_and_equal_priority_pods_it_held_back(
    app: App, how: str
) -> None:
    # kube-scheduler's updatePodInSchedulingQueue / deletePodFromSchedulingQueue: a nominated pending pod
    # counts on its node for pods of lower or equal priority; when its nomination goes, they retry at once
    NodeHandler(app).on_add(make_node("n1").capacity(cpu="4", memory="8Gi", pods=10).obj())
    _park(app, "low", 1)
    _park(app, "equal", 5)
    _park(app, "high", 10)
    h = PodHandler(app)
    nominee = make_pod("nominee").scheduler("py-scheduler").priority(5).req(cpu="2").nominated("n1").obj()
    h.on_add(nominee)
    assert app.queue.pending_pods() == {"active": 1, "backoff": 0, "unschedulable": 3, "gated": 0}
    if how == "cleared":
        h.on_update(nominee, dataclasses.replace(nominee, nominated_node_name=""))
    else:
        h.on_delete(nominee)
    pending = app.queue.pending_pods()
    assert pending["unschedulable"] == 1  # "high" stays: the nominee never held it back
    requeued = pending["active"] + pending["backoff"] - (1 if how == "cleared" else 0)
    assert requeued == 2


def test_an_unchanged_nomination_requeues_nobody(app: App) -> None:
    _park(app, "low", 1)
    h = PodHandler(app)
    nominee = make_pod("nominee").scheduler("py-scheduler").priority(5).nominated("n1").obj()
    h.on_add(nominee)
    h.on_update(nominee, dataclasses.replace(nominee, labels={"a": "b"}))
    assert app.queue.pending_pods()["unschedulable"] == 1


def test_events_have_a_rate_limiter_of_their_own() -> None:
    """kube-scheduler posts events through a client of its own: a flood of events (a namespace being torn
    down refuses each with 403) must not queue binds and status writes behind it, nor wait behind them."""
    from kubernetes import client as k8s_client

    from pyscheduler.client.api import Api

    reg = full_registry()
    cfg = _config(reg)
    api = Api(k8s_client.Configuration(host="https://api.example:6443"), qps=1, burst=1, pool=object())
    app = build_app(cfg, reg, api, writer=Writer())
    try:
        assert api.limiter.reserve() == 0  # the daemon's one token: its next request would wait a second
        assert api.limiter.reserve() > 0.5
        events_api = app.recorder.api
        assert events_api.limiter.reserve() == 0, "an event would wait behind the daemon's own requests"
    finally:
        app.recorder.stop(timeout=1.0)


def test_a_preemptors_nomination_and_condition_go_out_in_one_patch() -> None:
    """kube's updatePod writes a failed attempt's PodScheduled=False and the nomination preemption made
    in one status patch; two writes in a row made the second meet the first's resourceVersion as a 409
    every time (and waited for the watch before retrying)."""
    from pyscheduler.app import ApiStatusWriter
    from pyscheduler.framework.clock import RealClock

    patches: list[dict[str, Any]] = []

    class Api:
        def patch_pod_status(self, namespace: str, name: str, **kw: Any) -> None:
            patches.append(kw)

    class InLine:
        def submit(self, fn: Any, *args: Any, key: str | None = None, **kwargs: Any) -> bool:
            fn(*args, **kwargs)
            return True

    pod = make_pod("pre").obj()
    pod = dataclasses.replace(pod, resource_version="7")
    latest = {pod.uid: (False, "7")}
    status = ApiStatusWriter(Api(), InLine(), RealClock(), latest=latest.get)
    status.pod_scheduled_condition(pod, "False", "Unschedulable", "0/3 nodes are available.", "n2")
    assert len(patches) == 1
    (p,) = patches
    assert p["nominated_node_name"] == "n2" and p["condition"]["status"] == "False"
    assert p["resource_version"] == "7"
    # the condition already says so: only the nomination is written
    patches.clear()
    same = dataclasses.replace(
        pod, scheduled_condition=("False", "Unschedulable", "0/3 nodes are available.")
    )
    status.pod_scheduled_condition(same, "False", "Unschedulable", "0/3 nodes are available.", "n3")
    assert patches == [{"nominated_node_name": "n3"}]


def test_a_nomination_is_written_even_when_its_condition_keeps_conflicting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The condition's write gives up after repeated 409s (the pod kept changing); the nomination,
    which needs no precondition, still goes out, alone."""
    from pyscheduler.app import ApiStatusWriter
    from pyscheduler.client.errors import ApiError
    from pyscheduler.framework.clock import RealClock

    patches: list[dict[str, Any]] = []

    class Api:
        def patch_pod_status(self, namespace: str, name: str, **kw: Any) -> None:
            patches.append(kw)
            if "resource_version" in kw:
                raise ApiError(409, "Conflict", "the object has been modified", "PATCH", name)

    class InLine:
        def submit(self, fn: Any, *args: Any, key: str | None = None, **kwargs: Any) -> bool:
            fn(*args, **kwargs)
            return True

    monkeypatch.setattr("time.sleep", lambda s: None)
    pod = dataclasses.replace(make_pod("pre").obj(), resource_version="7")
    status = ApiStatusWriter(Api(), InLine(), RealClock(), latest={pod.uid: (False, "7")}.get)
    status.pod_scheduled_condition(pod, "False", "Unschedulable", "0/3 nodes are available.", "n2")
    assert len(patches) == 1 + ApiStatusWriter.CONFLICT_RETRIES + 1
    assert patches[-1] == {"nominated_node_name": "n2"}
