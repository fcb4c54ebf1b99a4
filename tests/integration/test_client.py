"""The client layer against a real kube-apiserver 1.36: list, watch, reflector, bind, status, events, RBAC.

The last test restarts the shared API server; keep it last.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pyscheduler.client.api import Api
from pyscheduler.client.connection import load_configuration
from pyscheduler.client.errors import ApiConnectionError, ApiError, GoneError, is_conflict, is_forbidden
from pyscheduler.client.events import EventRecorder
from pyscheduler.client.reflector import Reflector
from pyscheduler.client.writer import AsyncWriter
from pyscheduler.framework.types import Pod
from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.cluster import LocalCluster

# ------------------------------------------------------------------------------------------ helpers


def eventually(fn: Callable[[], Any], timeout: float = 30.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last value {last!r})")


@pytest.fixture(scope="module")
def api(cluster: LocalCluster) -> Iterator[Api]:
    a = Api(load_configuration(str(cluster.kubeconfig)), qps=0)
    yield a
    a.close()


def create_pod(api: Api, ns: str, name: str, **labels: str) -> Pod:
    b = make_pod(name, ns).scheduler("nobody").req(cpu="100m")
    for k, v in labels.items():
        b = b.label(k, v)
    return Pod.from_dict(api.create("Pod", ns, b.json()))


class PodState:
    """A handler that mirrors the reflector into a dict and logs calls."""

    def __init__(self) -> None:
        self.pods: dict[str, Pod] = {}
        self.calls: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def on_add(self, p: Pod) -> None:
        with self.lock:
            self.pods[p.name] = p
            self.calls.append(("add", p.name))

    def on_update(self, old: Pod, new: Pod) -> None:
        with self.lock:
            self.pods[new.name] = new
            self.calls.append(("update", new.name))

    def on_delete(self, p: Pod) -> None:
        with self.lock:
            self.pods.pop(p.name, None)
            self.calls.append(("delete", p.name))

    def names(self) -> set[str]:
        with self.lock:
            return set(self.pods)

    def label(self, name: str, key: str) -> str | None:
        with self.lock:
            p = self.pods.get(name)
            return p.labels.get(key) if p else None


class Pausable:
    """Wraps Api for a reflector: while paused, the open watch is cut and new list/watch calls fail as if the
    API server were unreachable (a network partition)."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.paused = threading.Event()
        self.current: Any = None

    def list(self, path: str, **kw: Any) -> tuple[list[dict[str, Any]], str]:
        if self.paused.is_set():
            raise ApiConnectionError(0, "Paused", "partitioned by the test", "GET", path)
        return self.api.list(path, **kw)

    def watch(self, path: str, resource_version: str, **kw: Any) -> Any:
        if self.paused.is_set():
            raise ApiConnectionError(0, "Paused", "partitioned by the test", "WATCH", path)
        self.current = self.api.watch(path, resource_version, **kw)
        return self.current

    def pause(self) -> None:
        self.paused.set()
        if self.current is not None:
            self.current.stop()

    def resume(self) -> None:
        self.paused.clear()


def pod_reflector(source: Any, ns: str, state: PodState, **kw: Any) -> Reflector[Pod]:
    kw.setdefault("backoff_initial", 0.2)
    kw.setdefault("backoff_max", 1.0)
    return Reflector(source, f"/api/v1/namespaces/{ns}/pods", Pod.from_dict, lambda p: p.key, state, **kw)


# ------------------------------------------------------------------------------------------ configuration


def test_kubeconfig_configuration_reaches_the_cluster(cluster: LocalCluster, api: Api) -> None:
    assert api.server == cluster.server
    status, out = api.request("GET", "/version")
    assert status == 200 and out["gitVersion"] == "v1.36.3"


def test_in_cluster_configuration_uses_the_service_account_token(
    cluster: LocalCluster, ns: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster.api(
        "POST",
        f"/api/v1/namespaces/{ns}/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "incluster"}},
    )
    sa_dir = tmp_path / "serviceaccount"
    sa_dir.mkdir()
    (sa_dir / "token").write_text(cluster.create_token(ns, "incluster"))
    shutil.copy(cluster.ca_file, sa_dir / "ca.crt")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(cluster.port))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    cfg = load_configuration(in_cluster_dir=str(sa_dir))
    with Api(cfg) as sa_api:
        _, review = sa_api.request(
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        )
    assert review["status"]["userInfo"]["username"] == f"system:serviceaccount:{ns}:incluster"


# ------------------------------------------------------------------------------------------ list & watch


def test_serves_tells_a_served_group_version_from_a_missing_one(api: Api) -> None:
    # the daemon watches the resource.k8s.io kinds without DynamicResources in a profile only where served
    assert api.serves("/apis/resource.k8s.io/v1") is True
    assert api.serves("/apis/no-such-group.example.com/v1") is False


def test_list_is_paginated(api: Api, ns: str) -> None:
    for i in range(7):
        api.create(
            "ConfigMap", ns, {"metadata": {"name": f"cm-{i}", "labels": {"t": "page"}}, "data": {"i": str(i)}}
        )
    api.create("ConfigMap", ns, {"metadata": {"name": "other"}})
    before = api.requests_total
    items, rv = api.list(f"/api/v1/namespaces/{ns}/configmaps", label_selector="t=page", page_size=2)
    assert api.requests_total - before == 4  # 2 + 2 + 2 + 1
    assert sorted(i["metadata"]["name"] for i in items) == [f"cm-{i}" for i in range(7)]
    assert int(rv) > 0
    everything, _ = api.list(f"/api/v1/namespaces/{ns}/configmaps", page_size=0)
    assert {"other", "cm-0"} <= {i["metadata"]["name"] for i in everything}


def test_watch_sees_add_update_delete(api: Api, ns: str) -> None:
    path = f"/api/v1/namespaces/{ns}/pods"
    _, rv = api.list(path)
    w = api.watch(path, rv, timeout_seconds=60)
    seen: list[tuple[str, str, str]] = []

    def consume() -> None:
        for etype, obj in w:
            seen.append(
                (
                    etype,
                    obj["metadata"].get("name", ""),
                    obj.get("metadata", {}).get("labels", {}).get("v", ""),
                )
            )
            if etype == "DELETED":
                return

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    create_pod(api, ns, "watched")
    api.patch("Pod", ns, "watched", {"metadata": {"labels": {"v": "2"}}})
    assert api.delete_pod(ns, "watched", grace_period_seconds=0)
    t.join(30)
    w.stop()
    changes = [s for s in seen if s[0] != "BOOKMARK"]
    assert changes[0] == ("ADDED", "watched", "")
    assert ("MODIFIED", "watched", "2") in changes
    assert changes[-1][:2] == ("DELETED", "watched")


def test_watch_ends_at_timeout_and_stop_interrupts_a_blocked_read(api: Api, ns: str) -> None:
    path = f"/api/v1/namespaces/{ns}/pods"
    _, rv = api.list(path)
    t0 = time.monotonic()
    assert [e for e in api.watch(path, rv, timeout_seconds=1) if e[0] != "BOOKMARK"] == []
    assert time.monotonic() - t0 < 10

    w = api.watch(path, rv, timeout_seconds=300)
    done = threading.Event()

    def consume() -> None:
        for _ in w:
            pass
        done.set()

    threading.Thread(target=consume, daemon=True).start()
    time.sleep(0.5)
    t0 = time.monotonic()
    w.stop()
    assert done.wait(5) and time.monotonic() - t0 < 5


def test_reflector_follows_a_namespace(api: Api, ns: str) -> None:
    create_pod(api, ns, "a")
    create_pod(api, ns, "b")
    state = PodState()
    r = pod_reflector(api, ns, state, page_size=1).start()
    try:
        assert r.wait_synced(30)
        assert state.names() == {"a", "b"}
        create_pod(api, ns, "c")
        api.patch("Pod", ns, "a", {"metadata": {"labels": {"v": "1"}}})
        api.delete_pod(ns, "b", grace_period_seconds=0)
        eventually(lambda: state.names() == {"a", "c"} and state.label("a", "v") == "1")
        assert r.lists == 1 and int(r.last_resource_version) > 0
    finally:
        r.stop()


def test_reflector_catches_up_after_a_partition_and_etcd_compaction(
    cluster: LocalCluster, api: Api, ns: str
) -> None:
    for n in ("a", "b", "c"):
        create_pod(api, ns, n)
    state = PodState()
    source = Pausable(api)
    r = pod_reflector(source, ns, state).start()
    try:
        assert r.wait_synced(30)
        eventually(lambda: source.current is not None)
        source.pause()
        eventually(lambda: r.errors >= 1)
        # while the reflector cannot reach the API server:
        create_pod(api, ns, "d")
        api.patch("Pod", ns, "a", {"metadata": {"labels": {"v": "changed"}}})
        api.delete_pod(ns, "b", grace_period_seconds=0)
        cluster.compact_etcd()
        source.resume()
        eventually(lambda: state.names() == {"a", "c", "d"} and state.label("a", "v") == "changed")
        assert ("delete", "b") in state.calls
        # (the watch cache, not etcd, serves the re-watch: compaction alone does not force a relist)
    finally:
        r.stop()


# ------------------------------------------------------------------------------ 410 without a watch cache


@pytest.fixture(scope="module")
def etcd_only(cluster: LocalCluster) -> Iterator[tuple[LocalCluster, Api]]:
    """A second, small control plane whose API server has no watch cache, so watches and paginated lists
    read etcd directly and an etcd compaction really expires old resourceVersions (410)."""
    c = LocalCluster(
        with_kwok=False, name="nocache", apiserver_args=["--watch-cache=false"], bin_dir=cluster.bin_dir
    )
    c.start()
    a = Api(load_configuration(str(c.kubeconfig)), qps=0)
    try:
        yield c, a
    finally:
        a.close()
        c.stop()


def test_compaction_expires_watch_and_continue_tokens_without_watch_cache(
    etcd_only: tuple[LocalCluster, Api],
) -> None:
    c, api = etcd_only
    ns = "gone-raw"
    api.create("Namespace", None, {"metadata": {"name": ns}})
    for i in range(5):
        api.create("ConfigMap", ns, {"metadata": {"name": f"cm-{i}"}})
    path = f"/api/v1/namespaces/{ns}/configmaps"
    _, first = api.request("GET", path, query={"limit": 2})
    old_rv = first["metadata"]["resourceVersion"]
    # (two writes: a watch from exactly the compaction revision is not 410 but a 500 "etcd event received
    # with PrevKv=nil", because the previous value of the key was compacted away)
    api.patch("ConfigMap", ns, "cm-0", {"data": {"x": "1"}})
    api.patch("ConfigMap", ns, "cm-0", {"data": {"x": "2"}})
    c.compact_etcd()
    with pytest.raises(GoneError):
        list(api.watch(path, old_rv, timeout_seconds=5))
    with pytest.raises(GoneError):
        api.request("GET", path, query={"limit": 2, "continue": first["metadata"]["continue"]})

    # Api.list falls back to an unpaginated list when its continue token expires mid-list
    real_request = api.request
    compacted: list[bool] = []

    def compact_after_first_page(method: str, p: str, **kw: Any) -> Any:
        out = real_request(method, p, **kw)
        if (kw.get("query") or {}).get("limit") and not compacted:
            api.patch("ConfigMap", ns, "cm-1", {"data": {"x": "1"}})
            c.compact_etcd()
            compacted.append(True)
        return out

    api.request = compact_after_first_page  # type: ignore[method-assign, assignment]
    try:
        items, rv = api.list(path, page_size=2)
    finally:
        del api.request
    assert compacted and sorted(i["metadata"]["name"] for i in items) == [f"cm-{i}" for i in range(5)]
    assert int(rv) > int(old_rv)


def test_reflector_relists_after_410_and_reports_deletions_it_missed(
    etcd_only: tuple[LocalCluster, Api],
) -> None:
    c, api = etcd_only
    ns = "gone-reflector"
    api.create("Namespace", None, {"metadata": {"name": ns}})
    for n in ("a", "b", "c"):
        create_pod(api, ns, n)
    state = PodState()
    source = Pausable(api)
    r = pod_reflector(source, ns, state).start()
    try:
        assert r.wait_synced(30) and state.names() == {"a", "b", "c"}
        eventually(lambda: source.current is not None)
        source.pause()
        eventually(lambda: r.errors >= 1)
        create_pod(api, ns, "d")
        api.patch("Pod", ns, "a", {"metadata": {"labels": {"v": "changed"}}})
        api.delete_pod(ns, "b", grace_period_seconds=0)
        c.compact_etcd()
        source.resume()
        eventually(lambda: state.names() == {"a", "c", "d"} and state.label("a", "v") == "changed")
        assert r.lists == 2  # the re-watch got 410 and the reflector relisted
        after_sync = state.calls[3:]
        assert ("delete", "b") in after_sync and ("add", "d") in after_sync and ("update", "a") in after_sync
        assert ("update", "c") not in after_sync  # unchanged resourceVersion: no spurious update
    finally:
        r.stop()


# ------------------------------------------------------------------------------------------ scheduler verbs


def test_bind_once_then_conflict_without_retry(cluster: LocalCluster, api: Api, ns: str) -> None:
    (node,) = cluster.create_nodes(1, prefix="client-bind")
    pod = create_pod(api, ns, "to-bind")
    assert api.bind(pod, node) is None
    assert api.get("Pod", ns, "to-bind")["spec"]["nodeName"] == node

    retries, requests = api.retries_total, api.requests_total
    st = api.bind(pod, node)
    assert st is not None and st.is_error()
    assert is_conflict(st.error) and "already assigned" in st.message()
    assert api.retries_total == retries and api.requests_total == requests + 1

    # a stale uid (pod deleted and recreated under the same name) is a 409 precondition failure
    other = create_pod(api, ns, "recreated")
    api.delete_pod(ns, "recreated", grace_period_seconds=0)
    create_pod(api, ns, "recreated")
    st = api.bind(other, node)
    assert st is not None and is_conflict(st.error) and "Precondition failed" in st.message()
    # a pod that is gone
    api.delete_pod(ns, "recreated", grace_period_seconds=0)
    st = api.bind(other, node)
    assert st is not None and isinstance(st.error, ApiError) and st.error.is_not_found()


def test_patch_pod_status_writes_condition_and_nomination(api: Api, ns: str) -> None:
    create_pod(api, ns, "unschedulable")
    cond = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient cpu.",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    out = api.patch_pod_status(ns, "unschedulable", condition=cond, nominated_node_name="node-7")
    assert out is not None
    got = api.get("Pod", ns, "unschedulable")["status"]
    (c,) = [c for c in got["conditions"] if c["type"] == "PodScheduled"]
    assert {k: c[k] for k in cond} == cond
    assert got["nominatedNodeName"] == "node-7"
    assert Pod.from_dict(api.get("Pod", ns, "unschedulable")).scheduled_condition == (
        "False",
        "Unschedulable",
        "0/3 nodes are available: 3 Insufficient cpu.",
    )

    # preemption: DisruptionTarget is merged next to PodScheduled; "" clears the nomination
    with AsyncWriter(api, workers=2) as writer:
        writer.submit(
            api.add_pod_condition,
            ns,
            "unschedulable",
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler", "message": "m"},
            key=f"{ns}/unschedulable",
        )
        writer.patch_pod_status(ns, "unschedulable", nominated_node_name="")
        assert writer.flush(30) and writer.failed == 0
    got = api.get("Pod", ns, "unschedulable")["status"]
    assert {c["type"] for c in got["conditions"]} >= {"PodScheduled", "DisruptionTarget"}
    assert "nominatedNodeName" not in got


def _scheduled(api: Api, ns: str, name: str) -> str:
    conds = api.get("Pod", ns, name)["status"].get("conditions") or []
    return next((c["status"] for c in conds if c["type"] == "PodScheduled"), "")


def test_a_late_unschedulable_condition_or_nomination_never_lands_on_a_bound_pod(
    cluster: LocalCluster, api: Api, ns: str
) -> None:
    """A failed attempt's PodScheduled=False waits in the writer's queue while the next attempt binds the
    pod: written late it would mark a running pod unscheduled (kube's e2e specs fail on that). The patch
    carries the attempt's resourceVersion; the 409 it meets is resolved from the daemon's own view."""
    from pyscheduler.app import ApiStatusWriter
    from pyscheduler.framework.clock import RealClock

    (node,) = cluster.create_nodes(1, prefix="late-cond")
    seen: dict[str, tuple[bool, str] | None] = {}
    with AsyncWriter(api, workers=1) as writer:
        status = ApiStatusWriter(api, writer, RealClock(), latest=lambda uid: seen.get(uid))
        # 1. bound meanwhile, and the daemon's watch has not shown it yet (its view: unbound, old version)
        pod = create_pod(api, ns, "late-bound")
        seen[pod.uid] = (False, pod.resource_version)
        assert api.bind(pod, node) is None
        status.pod_scheduled_condition(pod, "False", "Unschedulable", "0/1 nodes are available: late.")
        assert writer.flush(30) and writer.failed == 0
        assert _scheduled(api, ns, "late-bound") == "True"
        # 2. the watch has shown the pod bound: nothing is sent at all
        pod2 = create_pod(api, ns, "late-assumed")
        seen[pod2.uid] = (True, pod2.resource_version)
        requests = api.requests_total
        status.pod_scheduled_condition(pod2, "False", "Unschedulable", "m")
        assert writer.flush(30) and api.requests_total == requests
        # 3. changed but not bound (a label): the write goes through on the newer version
        pod3 = create_pod(api, ns, "relabelled")
        newer = api.patch("Pod", ns, "relabelled", {"metadata": {"labels": {"x": "y"}}})
        seen[pod3.uid] = (False, newer["metadata"]["resourceVersion"])
        status.pod_scheduled_condition(pod3, "False", "Unschedulable", "0/1 nodes are available: no.")
        assert writer.flush(30) and writer.failed == 0
        assert _scheduled(api, ns, "relabelled") == "False"
        # 4. a preemptor's nomination, late: the watch shows it bound, so nothing is sent (the API server
        # refuses nominatedNodeName on a bound pod); an unbound pod gets it
        requests = api.requests_total
        status.nominated_node(pod2, node)
        assert writer.flush(30) and api.requests_total == requests and writer.failed == 0
        status.nominated_node(pod3, node)
        assert writer.flush(30) and writer.failed == 0
        assert api.get("Pod", ns, "relabelled")["status"]["nominatedNodeName"] == node
    # the precondition itself, on the real API server
    with pytest.raises(ApiError) as err:
        api.patch_pod_status(
            ns, "relabelled", condition={"type": "X", "status": "True"}, resource_version="1"
        )
    assert err.value.status == 409


def test_events_are_posted_to_events_k8s_io(api: Api, ns: str) -> None:
    pod = create_pod(api, ns, "evented")
    with EventRecorder(api, reporting_instance="py-scheduler-test") as rec:
        assert rec.event(pod, "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available")
        assert rec.event(pod, "Normal", "Scheduled", "Binding", "x" * 3000)  # cut to the API's 1 KiB limit
        assert rec.flush(30)
        assert rec.posted == 2 and rec.failed == 0
    items, _ = api.list(f"/apis/events.k8s.io/v1/namespaces/{ns}/events")
    by_reason = {e["reason"]: e for e in items}
    e = by_reason["FailedScheduling"]
    assert e["type"] == "Warning" and e["action"] == "Scheduling" and e["note"] == "0/1 nodes are available"
    assert e["regarding"] == {
        "kind": "Pod",
        "namespace": ns,
        "name": "evented",
        "uid": pod.uid,
        "apiVersion": "v1",
        "resourceVersion": pod.resource_version,  # client-go's object reference holds it too
    }
    assert e["reportingController"] == "py-scheduler" and e["reportingInstance"] == "py-scheduler-test"
    assert e["metadata"]["name"].startswith("evented.")
    assert len(e["eventTime"]) == len("2026-01-01T00:00:00.000000Z")
    assert len(by_reason["Scheduled"]["note"]) == 1024
    # the same event through the core/v1 view (what `kubectl describe pod` shows)
    core, _ = api.list(f"/api/v1/namespaces/{ns}/events")
    assert any(c["reason"] == "FailedScheduling" and c["involvedObject"]["name"] == "evented" for c in core)


def test_forbidden_error_names_verb_and_resource(
    cluster: LocalCluster, api: Api, ns: str, tmp_path: Path
) -> None:
    cluster.api(
        "POST",
        f"/api/v1/namespaces/{ns}/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nobody"}},
    )
    token = cluster.create_token(ns, "nobody")
    # (setting cfg.api_key on the admin Configuration would not do: the kubeconfig loader's
    # refresh_api_key_hook puts the kubeconfig's token back on every read)
    kubeconfig = json.loads(cluster.kubeconfig.read_text())
    kubeconfig["users"][0]["user"] = {"token": token}
    (tmp_path / "kubeconfig").write_text(json.dumps(kubeconfig))
    cfg = load_configuration(str(tmp_path / "kubeconfig"))
    pod = create_pod(api, ns, "not-mine")
    user = f'User "system:serviceaccount:{ns}:nobody"'
    with Api(cfg) as weak:
        st = weak.bind(pod, "node-0")
        assert st is not None and is_forbidden(st.error)
        assert f'pods "not-mine" is forbidden: {user} cannot create resource "pods/binding"' in st.message()
        with pytest.raises(ApiError) as ei:
            weak.list(f"/api/v1/namespaces/{ns}/pods")
        assert ei.value.is_forbidden() and f'{user} cannot list resource "pods"' in str(ei.value)
        with pytest.raises(ApiError) as ei:
            weak.patch_pod_status(ns, "not-mine", nominated_node_name="n")
        assert f'{user} cannot patch resource "pods/status"' in ei.value.message
        assert weak.retries_total == 0


# ------------------------------------------------------------------------------------------ last: restart


def crash_restart_apiserver(cluster: LocalCluster, down_seconds: float) -> None:
    """kill -9 the API server, then ``cluster.restart_apiserver``.

    A graceful stop (SIGTERM, what ``restart_apiserver`` sends) closes the listener at once but then
    waits up to the API server's 60 s ShutdownTimeout for open watch streams (the controller manager's,
    KWOK's) to end, longer than ``restart_apiserver`` waits for the process (20 s): it would raise and
    leave the session without an API server a minute later. After SIGKILL, its SIGTERM and wait find a
    process that is already dead."""
    p = next(p for p in cluster.procs if p.name == "kube-apiserver")
    os.killpg(p.popen.pid, signal.SIGKILL)
    cluster.restart_apiserver(down_seconds=down_seconds)


def test_reflector_survives_an_apiserver_restart(cluster: LocalCluster, api: Api, ns: str) -> None:
    """Runs last: restarts the shared API server."""
    for n in ("a", "b"):
        create_pod(api, ns, n)
    state = PodState()
    r = pod_reflector(api, ns, state, backoff_max=2.0).start()
    # a second reflector is cut off across the restart and reconnects only once the new API server has
    # settled: its resourceVersion is then older than the new watch cache, which answers 410
    late_state = PodState()
    late_source = Pausable(api)
    late = pod_reflector(late_source, ns, late_state).start()
    try:
        assert r.wait_synced(30) and late.wait_synced(30)
        eventually(lambda: late_source.current is not None)
        late_source.pause()
        # any write moves etcd's (global) revision past the reflectors' resourceVersion, so the new watch
        # cache, which starts at the revision it lists at, cannot serve a watch from it
        api.create("ConfigMap", ns, {"metadata": {"name": "bump"}})
        crash_restart_apiserver(cluster, down_seconds=2)
        # the API server is back; the reflector is still backing off or re-watching
        create_pod(api, ns, "born-after-restart")
        api.delete_pod(ns, "a", grace_period_seconds=0)
        eventually(lambda: state.names() == {"b", "born-after-restart"}, timeout=60)
        assert r.errors >= 1 and r.running  # it did notice the outage
        # (whether a re-watch gets 410 depends on whether etcd's revision moved on between the reflector's
        # last event and the restart: the new watch cache starts at the revision it lists at)

        time.sleep(2)
        late_source.resume()
        eventually(lambda: late_state.names() == {"b", "born-after-restart"}, timeout=60)
        assert late.lists == 2 and ("delete", "a") in late_state.calls
    finally:
        r.stop()
        late.stop()
    assert cluster.request("GET", "/readyz")[0] == 200
    assert api.request("GET", "/version")[0] == 200
