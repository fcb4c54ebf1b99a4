"""PreBind of pods sharing one claim: each write starts from the newest copy of the claim the cache has
(the reservations other pods' PreBinds wrote since this pod's PreFilter), and concurrent binding
threads write one claim one at a time, so none starts from a copy the API server would refuse (409)."""

from __future__ import annotations

import copy
import threading
from typing import Any

from pyscheduler.plugins.dynamic_resources import new
from pyscheduler.plugins.dynamic_resources.test_dynamic_resources import (
    ALLOC_NODE1,
    CLASS_OBJ,
    JSON,
    FakeClaimApi,
    World,
    gpu_claim,
    gpus,
    pod_with,
)


def _reserved_uids(body: JSON) -> list[str]:
    return [r["uid"] for r in body["status"].get("reservedFor") or []]


def test_second_sharer_writes_on_top_of_the_first_reservation() -> None:
    """Both pods pass PreFilter and Reserve before either PreBind: the second write still carries the
    first pod's reservation (from the copy the first PreBind assumed), under its resourceVersion."""
    w = World(CLASS_OBJ, gpus("node-1", 1), gpu_claim("c", status={"allocation": ALLOC_NODE1}))
    a, b = pod_with("c", name="a").obj(), pod_with("c", name="b").obj()
    sa, _, va = w.cycle(a)
    sb, _, vb = w.cycle(b)
    assert va["node-1"] is None and vb["node-1"] is None
    assert w.plugin.reserve(sa, a, "node-1") is None and w.plugin.reserve(sb, b, "node-1") is None
    assert w.plugin.pre_bind(sa, a, "node-1") is None
    after_a = w.claim("c").meta.resource_version
    assert w.plugin.pre_bind(sb, b, "node-1") is None
    (_, first), (_, second) = w.api.writes
    assert _reserved_uids(first) == ["uid-a"]
    assert _reserved_uids(second) == ["uid-a", "uid-b"]
    assert second["metadata"]["resourceVersion"] != "1"  # not the copy PreFilter saw
    assert w.claim("c").meta.resource_version != after_a
    assert _reserved_uids(w.claim("c").raw) == ["uid-a", "uid-b"]


class _SlowApi(FakeClaimApi):
    """Holds the first write until released, and notes when each write starts and ends."""

    def __init__(self, tracker: Any) -> None:
        super().__init__(tracker)
        self.events: list[str] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def reserve(self, claim: JSON, allocation: JSON | None, consumer: JSON) -> JSON:
        self.events.append(f"start {consumer['name']}")
        if len(self.events) == 1:
            self.entered.set()
            assert self.release.wait(10)
        out = super().reserve(copy.deepcopy(claim), allocation, consumer)
        self.events.append(f"end {consumer['name']}")
        return out


def test_concurrent_pre_binds_of_one_claim_write_one_after_the_other() -> None:
    w = World(CLASS_OBJ, gpus("node-1", 1), gpu_claim("c", status={"allocation": ALLOC_NODE1}))
    api = _SlowApi(w.tracker)
    w.handle.extra["claim_writer"] = api
    w.plugin = new(None, w.handle)
    a, b = pod_with("c", name="a").obj(), pod_with("c", name="b").obj()
    (sa, _, _), (sb, _, _) = w.cycle(a), w.cycle(b)
    got: dict[str, Any] = {}
    ta = threading.Thread(target=lambda: got.update(a=w.plugin.pre_bind(sa, a, "node-1")))
    tb = threading.Thread(target=lambda: got.update(b=w.plugin.pre_bind(sb, b, "node-1")))
    ta.start()
    assert api.entered.wait(10)
    tb.start()
    tb.join(0.2)  # b waits for a's write to return
    assert api.events == ["start a"]
    api.release.set()
    ta.join(10)
    tb.join(10)
    assert got == {"a": None, "b": None}
    assert api.events == ["start a", "end a", "start b", "end b"]
    assert _reserved_uids(w.claim("c").raw) == ["uid-a", "uid-b"]
    assert len(w.plugin.claim_writes) == 0  # no lock left behind
