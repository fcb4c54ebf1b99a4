"""Helpers for the example plugins' unit tests: a real ``FrameworkHandle`` over an in-memory snapshot and
object store, with real ``WaitingPods`` and the clock the test gives (a ``FakeClock`` in practice)::

    handle = make_handle(nodes=[make_node_info(make_node("n1"), make_pod("a"))], objects=[pvc_json],
                         clock=FakeClock())

It imports only the framework (the plugin layer's rule), so it takes the clock instead of making one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pyscheduler.framework.clock import Clock
from pyscheduler.framework.runtime import FrameworkHandle
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo
from pyscheduler.framework.waiting_pods import WaitingPods


class FakeSnapshot:
    def __init__(self, nodes: Sequence[NodeInfo] = ()) -> None:
        self.nodes = list(nodes)

    def list(self) -> Sequence[NodeInfo]:
        return self.nodes

    def get(self, node_name: str) -> NodeInfo | None:
        return next((n for n in self.nodes if n.name == node_name), None)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return [n for n in self.nodes if n.pods_with_affinity]

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return [n for n in self.nodes if n.pods_with_required_anti_affinity]

    def num_nodes_with_image(self, image: str) -> int:
        return sum(1 for n in self.nodes if image in n.image_states)


class FakeObjects:
    """ClusterObjects over a list of API JSON objects (each with ``kind`` and ``metadata``)."""

    def __init__(self, objs: Iterable[Mapping[str, Any]] = ()) -> None:
        self.store: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        for o in objs:
            self.put(o)

    def put(self, obj: Mapping[str, Any]) -> None:
        meta = obj["metadata"]
        self.store[(obj["kind"], meta.get("namespace", ""), meta["name"])] = obj

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.store.get((kind, namespace, name))

    def list(self, kind: str, namespace: str | None = None) -> list[Mapping[str, Any]]:
        return [o for (k, ns, _), o in self.store.items() if k == kind and namespace in (None, ns)]


class FakeQueue:
    """The two queue methods Coscheduling uses when the handle exposes the scheduling queue."""

    def __init__(self, pending: Iterable[Pod] = ()) -> None:
        self.pending = list(pending)
        self.activated: list[str] = []

    def pending_pod_list(self) -> dict[str, list[Pod]]:
        return {"active": list(self.pending)}

    def activate(self, uids: Iterable[str]) -> None:
        self.activated.extend(uids)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return []


class _StoppedClock:
    """A clock that never moves (tests that care pass a FakeClock)."""

    def now(self) -> float:
        return 1000.0

    def wall(self) -> float:
        return 1_700_000_000.0


def make_handle(
    nodes: Sequence[NodeInfo] = (),
    objects: Iterable[Mapping[str, Any]] = (),
    clock: Clock | None = None,
    queue: Any = None,
) -> FrameworkHandle:
    return FrameworkHandle(
        snapshot=FakeSnapshot(nodes),
        objects=FakeObjects(objects),
        client=None,
        waiting_pods=WaitingPods(),
        nominator=queue,
        clock=clock or _StoppedClock(),
    )
