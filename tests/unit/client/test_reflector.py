"""Reflector against a scripted list/watch source: diffing, 410 relists, malformed objects, handler errors."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyscheduler.client.errors import ApiConnectionError, ApiError, GoneError
from pyscheduler.client.reflector import THROTTLED_RETRIES, Reflector
from pyscheduler.framework.types import MalformedObject, Pod


def pod(name: str, rv: str, uid: str | None = None, cpu: str = "100m", ns: str = "ns") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "uid": uid or f"uid-{name}", "resourceVersion": rv},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
    }


class ScriptedWatch:
    """A watch fed from a queue: items are (type, obj), an exception to raise, or None to end."""

    def __init__(self, q: queue.Queue[Any]) -> None:
        self.q = q
        self.stopped = False

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        return self

    def __next__(self) -> tuple[str, dict[str, Any]]:
        while not self.stopped:
            try:
                item = self.q.get(timeout=0.05)
            except queue.Empty:
                continue
            if item is None:
                raise StopIteration
            if isinstance(item, BaseException):
                raise item
            return item  # type: ignore[no-any-return]
        raise StopIteration

    def stop(self) -> None:
        self.stopped = True


class FakeSource:
    def __init__(self) -> None:
        self.lists: list[Any] = []  # (items, rv) or exception, consumed in order; the last one repeats
        self.watch_queues: list[queue.Queue[Any]] = []
        self.watch_rvs: list[str] = []
        self.watch_errors: list[BaseException] = []
        self.list_calls = 0
        self.watch_opened = threading.Event()

    def list(self, path: str, **kw: Any) -> tuple[list[dict[str, Any]], str]:
        self.list_calls += 1
        r = self.lists.pop(0) if len(self.lists) > 1 else self.lists[0]
        if isinstance(r, BaseException):
            raise r
        items, rv = r
        return list(items), rv

    def watch(self, path: str, resource_version: str, **kw: Any) -> ScriptedWatch:
        self.watch_rvs.append(resource_version)
        if self.watch_errors:
            raise self.watch_errors.pop(0)
        q: queue.Queue[Any] = queue.Queue()
        self.watch_queues.append(q)
        self.watch_opened.set()
        return ScriptedWatch(q)

    def send(self, *items: Any) -> None:
        for it in items:
            self.watch_queues[-1].put(it)


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.fail_on: str | None = None

    def on_add(self, p: Pod) -> None:
        self.calls.append(("add", p.name, p.resource_version))
        if self.fail_on == p.name:
            raise RuntimeError("handler bug")

    def on_update(self, old: Pod, new: Pod) -> None:
        self.calls.append(("update", new.name, old.resource_version, new.resource_version))

    def on_delete(self, p: Pod) -> None:
        self.calls.append(("delete", p.name, p.resource_version))


def eventually(fn: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return
        time.sleep(0.01)
    raise AssertionError("condition not met")


def make(src: FakeSource, rec: Recorder, **kw: Any) -> Reflector[Pod]:
    kw.setdefault("backoff_initial", 0.01)
    kw.setdefault("backoff_max", 0.05)
    kw.setdefault("watch_timeout", 60)
    return Reflector(src, "/api/v1/pods", Pod.from_dict, lambda p: p.key, rec, **kw)


@pytest.fixture
def src() -> FakeSource:
    return FakeSource()


def test_initial_list_then_watch_events(src: FakeSource) -> None:
    src.lists = [([pod("a", "1"), pod("b", "2")], "10")]
    rec = Recorder()
    r = make(src, rec).start()
    try:
        assert r.wait_synced(5) and r.has_synced
        assert rec.calls == [("add", "a", "1"), ("add", "b", "2")]
        eventually(src.watch_opened.is_set)
        assert src.watch_rvs == ["10"]
        src.send(
            ("ADDED", pod("c", "11")),
            ("MODIFIED", pod("a", "12")),
            ("DELETED", pod("b", "13")),
            ("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "20"}}),
        )
        eventually(lambda: r.last_resource_version == "20")
        assert rec.calls[2:] == [("add", "c", "11"), ("update", "a", "1", "12"), ("delete", "b", "13")]
        assert sorted(p.name for p in r.items()) == ["a", "c"]
        assert r.get("ns/a") is not None and r.get("ns/a").resource_version == "12"  # type: ignore[union-attr]
        # the stream ends (server timeout): re-watch from the bookmark's resourceVersion
        src.send(None)
        eventually(lambda: len(src.watch_rvs) == 2)
        assert src.watch_rvs[1] == "20" and src.list_calls == 1
    finally:
        r.stop()
    assert not r.running


def test_gone_relists_and_diffs_against_the_store(src: FakeSource) -> None:
    src.lists = [
        ([pod("a", "1"), pod("b", "2"), pod("c", "3")], "10"),
        # while we were not watching: a changed, b deleted, c unchanged, d created, e recreated
        ([pod("a", "15"), pod("c", "3"), pod("d", "16")], "20"),
    ]
    rec = Recorder()
    r = make(src, rec).start()
    try:
        assert r.wait_synced(5)
        eventually(lambda: len(src.watch_queues) == 1)
        src.send(GoneError(410, "Expired", "too old resource version: 10 (14)", "WATCH", "/api/v1/pods"))
        eventually(lambda: len(src.watch_queues) == 2)
        assert src.list_calls == 2 and r.lists == 2
        assert rec.calls[3:] == [("delete", "b", "2"), ("update", "a", "1", "15"), ("add", "d", "16")]
        assert src.watch_rvs[-1] == "20"
    finally:
        r.stop()


def test_recreated_object_is_delete_then_add(src: FakeSource) -> None:
    src.lists = [([pod("a", "1", uid="u1")], "10"), ([pod("a", "30", uid="u2")], "30")]
    rec = Recorder()
    r = make(src, rec).start()
    try:
        eventually(lambda: len(src.watch_queues) == 1)
        src.send(("ADDED", pod("b", "11", uid="ub")), ("ADDED", pod("b", "12", uid="ub2")))
        eventually(lambda: len(rec.calls) == 4)
        assert rec.calls[1:] == [("add", "b", "11"), ("delete", "b", "11"), ("add", "b", "12")]
        src.send(GoneError(410, "Expired", "x", "WATCH", "/"))
        eventually(lambda: len(src.watch_queues) == 2)
        assert ("delete", "a", "1") in rec.calls and ("add", "a", "30") in rec.calls
        assert rec.calls.index(("delete", "a", "1")) < rec.calls.index(("add", "a", "30"))
    finally:
        r.stop()


def test_connection_errors_back_off_and_rewatch_without_relisting(src: FakeSource) -> None:
    src.lists = [([pod("a", "1")], "10")]
    rec = Recorder()
    r = make(src, rec).start()
    try:
        eventually(lambda: len(src.watch_queues) == 1)
        src.watch_errors = [ApiConnectionError(0, "NewConnectionError", "refused", "WATCH", "/")] * 3
        src.send(("MODIFIED", pod("a", "11")), ApiConnectionError(0, "ProtocolError", "broken", "WATCH", "/"))
        eventually(lambda: len(src.watch_queues) == 2)
        assert src.watch_rvs == ["10", "11", "11", "11", "11"]
        assert src.list_calls == 1 and r.errors == 4
    finally:
        r.stop()


def test_other_api_errors_relist(src: FakeSource) -> None:
    src.lists = [([pod("a", "1")], "10"), ApiError(500, "InternalError", "etcd", "GET", "/"), ([], "30")]
    rec = Recorder()
    r = make(src, rec).start()
    try:
        eventually(lambda: len(src.watch_queues) == 1)
        src.send(ApiError(500, "InternalError", "boom", "WATCH", "/"))
        eventually(lambda: len(src.watch_queues) == 2)
        assert src.list_calls == 3 and rec.calls[-1] == ("delete", "a", "1")
    finally:
        r.stop()


def test_malformed_objects_go_to_on_malformed_and_are_not_stored(src: FakeSource) -> None:
    bad = pod("bad", "2", cpu="lots")
    src.lists = [([pod("a", "1"), bad], "10")]
    rec = Recorder()
    seen: list[tuple[str, str]] = []
    r = make(src, rec, on_malformed=lambda obj, e: seen.append((obj["metadata"]["name"], type(e).__name__)))
    r.start()
    try:
        assert r.wait_synced(5)
        assert seen == [("bad", "MalformedObject")]
        assert [p.name for p in r.items()] == ["a"]
        eventually(lambda: len(src.watch_queues) == 1)
        # a stored object that becomes malformed keeps its last good record; its deletion is delivered
        src.send(("MODIFIED", pod("a", "11", cpu="x")), ("DELETED", pod("a", "12", cpu="x")))
        eventually(lambda: len(rec.calls) == 2)
        assert rec.calls == [("add", "a", "1"), ("delete", "a", "1")]
        assert seen == [("bad", "MalformedObject"), ("a", "MalformedObject")] and len(r) == 0
        # deleting a never-stored malformed object calls nothing
        src.send(("DELETED", bad), ("BOOKMARK", {"metadata": {"resourceVersion": "50"}}))
        eventually(lambda: r.last_resource_version == "50")
        assert len(rec.calls) == 2
    finally:
        r.stop()


def test_handler_exception_does_not_kill_the_loop(src: FakeSource) -> None:
    src.lists = [([pod("a", "1")], "10")]
    rec = Recorder()
    rec.fail_on = "a"
    r = make(src, rec).start()
    try:
        eventually(lambda: len(src.watch_queues) == 1)
        src.send(("ADDED", pod("b", "11")))
        eventually(lambda: len(rec.calls) == 2)
        assert r.handler_errors == 1 and r.running
    finally:
        r.stop()


def test_on_malformed_is_called_with_the_exception(src: FakeSource) -> None:
    def parse(obj: dict[str, Any]) -> Pod:
        raise MalformedObject("nope")

    got: list[Exception] = []
    src.lists = [([pod("a", "1")], "10")]
    r = Reflector(src, "/p", parse, lambda p: p.key, Recorder(), on_malformed=lambda o, e: got.append(e))
    r.start()
    try:
        assert r.wait_synced(5)
        assert len(got) == 1 and str(got[0]) == "nope"
    finally:
        r.stop()


def test_list_failures_retry_until_success_and_stop_interrupts_backoff(src: FakeSource) -> None:
    err = ApiConnectionError(0, "NewConnectionError", "refused", "GET", "/")
    src.lists = [err, err, ([pod("a", "1")], "10")]
    rec = Recorder()
    r = make(src, rec).start()
    try:
        assert r.wait_synced(5) and src.list_calls == 3
    finally:
        r.stop()
    # a long backoff does not delay stop()
    src2 = FakeSource()
    src2.lists = [err]
    r2 = make(src2, Recorder(), backoff_initial=30, backoff_max=60).start()
    eventually(lambda: src2.list_calls >= 1)
    t = time.monotonic()
    r2.stop()
    assert time.monotonic() - t < 2 and not r2.running and not r2.has_synced
    assert not r2.wait_synced(0.01)


def test_throttled_watch_is_retried_without_relisting(src: FakeSource) -> None:
    src.lists = [([pod("a", "1")], "10")]
    r = make(src, Recorder()).start()
    try:
        eventually(lambda: len(src.watch_queues) == 1)
        src.watch_errors = [ApiError(429, "TooManyRequests", "storage is (re)initializing", "WATCH", "/")]
        src.send(None)  # the stream ends; the next watch is throttled once, then succeeds
        eventually(lambda: len(src.watch_queues) == 2)
        assert src.list_calls == 1 and src.watch_rvs == ["10", "10", "10"]
    finally:
        r.stop()


def test_a_watch_throttled_with_retry_after_comes_back_then_not_later(src: FakeSource) -> None:
    # The reflector's own backoff here starts at 5 s: a reflector that grew it on every 429 would take
    # 5 s, then 10 s... for these throttled watches; the server asked for 0.02 s each time.
    src.lists = [([pod("a", "1")], "10")]
    r = make(src, Recorder(), backoff_initial=5, backoff_max=60).start()
    try:
        eventually(lambda: len(src.watch_queues) == 1)
        throttled = ApiError(429, "TooManyRequests", "too many requests", "WATCH", "/", retry_after=0.02)
        src.watch_errors = [throttled] * 5
        src.send(("MODIFIED", pod("a", "11")), None)  # an event, then the stream ends
        eventually(lambda: len(src.watch_queues) == 2, timeout=3)
        assert src.list_calls == 1 and src.watch_rvs == ["10"] + ["11"] * 6
    finally:
        r.stop()


def test_a_watch_throttled_again_and_again_falls_back_to_the_backoff(src: FakeSource) -> None:
    src.lists = [([pod("a", "1")], "10")]
    r = make(src, Recorder(), backoff_initial=5, backoff_max=60).start()
    try:
        eventually(lambda: len(src.watch_queues) == 1)
        throttled = ApiError(429, "TooManyRequests", "too many requests", "WATCH", "/", retry_after=0.01)
        src.watch_errors = [throttled] * (THROTTLED_RETRIES + 2)
        src.send(("MODIFIED", pod("a", "11")), None)
        # the first THROTTLED_RETRIES + 1 attempts come at Retry-After; then the 5 s backoff holds it back
        eventually(lambda: len(src.watch_rvs) == THROTTLED_RETRIES + 2, timeout=3)
        time.sleep(0.5)
        assert len(src.watch_rvs) == THROTTLED_RETRIES + 2 and len(src.watch_queues) == 1
    finally:
        r.stop()


def test_a_list_answering_410_backs_off(src: FakeSource) -> None:
    gone = GoneError(410, "Expired", "x", "GET", "/")
    src.lists = [gone, gone, gone, ([], "5")]
    r = make(src, Recorder(), backoff_initial=0.05, backoff_max=0.1).start()
    try:
        t = time.monotonic()
        assert r.wait_synced(5)
        assert src.list_calls == 4 and r.errors == 3 and time.monotonic() - t >= 0.1
    finally:
        r.stop()


def test_an_object_whose_key_cannot_be_made_is_reported_once_and_never_re_lists(src: FakeSource) -> None:
    # A parse that lets a map through as the uid (the slim parser for other kinds does no checks): the
    # store key is then unhashable. It must be reported as malformed, not abort the list again and again.
    class Rec:
        def __init__(self, obj: dict[str, Any]) -> None:
            self.name = obj["metadata"]["name"]
            self.resource_version = obj["metadata"]["resourceVersion"]
            self.uid = obj["metadata"]["uid"]

    bad = pod("bad", "2")
    bad["metadata"]["uid"] = {"not": "a string"}
    src.lists = [([pod("a", "1"), bad], "10")]
    rec = Recorder()
    seen: list[str] = []
    r: Reflector[Any] = Reflector(
        src,
        "/p",
        Rec,
        lambda p: p.uid,
        rec,
        backoff_initial=0.01,
        on_malformed=lambda obj, e: seen.append(obj["metadata"]["name"]),
    )
    r.start()
    try:
        assert r.wait_synced(5)
        eventually(lambda: len(src.watch_queues) == 1)
        time.sleep(0.1)
        assert src.list_calls == 1
        assert seen == ["bad"]
        assert [c[1] for c in rec.calls] == ["a"]
    finally:
        r.stop()


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("metadata", "uid"), {"a": 1}, "metadata.uid"),
        (("metadata", "name"), 7, "metadata.name"),
        (("metadata", "labels"), ["a"], "metadata.labels"),
        (("metadata", "labels"), {"a": 1}, "metadata.labels"),
        (("metadata", "annotations"), "x", "metadata.annotations"),
        (("spec", "priority"), 2**31, "spec.priority"),
        (("spec", "priority"), "high", "spec.priority"),
    ],
)
def test_pod_from_dict_names_the_bad_field(path: tuple[str, str], value: Any, field: str) -> None:
    obj = pod("p", "1", uid="u1")
    obj.setdefault(path[0], {})[path[1]] = value
    with pytest.raises(MalformedObject, match=field.replace(".", r"\.")):
        Pod.from_dict(obj)


def test_negative_requests_are_malformed_but_wrapped_ones_are_go_numbers() -> None:
    with pytest.raises(MalformedObject, match="greater than or equal to 0"):
        Pod.from_dict(pod("p", "1", cpu="-1"))
    assert Pod.from_dict(pod("p", "1", cpu="-0")).name == "p"


def test_node_from_dict_rejects_bad_metadata_and_negative_allocatable() -> None:
    from pyscheduler.framework.types import Node

    good = {"metadata": {"name": "n1", "uid": "u"}, "status": {"allocatable": {"cpu": "4"}}}
    assert Node.from_dict(good).name == "n1"
    with pytest.raises(MalformedObject, match=r"metadata\.uid"):
        Node.from_dict({"metadata": {"name": "n1", "uid": 5}})
    with pytest.raises(MalformedObject, match=r"metadata\.labels"):
        Node.from_dict({"metadata": {"name": "n1", "labels": "zone=a"}})
    with pytest.raises(MalformedObject, match="greater than or equal to 0"):
        Node.from_dict({"metadata": {"name": "n1"}, "status": {"allocatable": {"memory": "-1Gi"}}})
