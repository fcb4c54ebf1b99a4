"""Test helpers for pyscheduler and for plugin authors: ``from pyscheduler.testing import ...``.

Design
------
The public names are re-exported lazily (PEP 562 module ``__getattr__``): importing
``pyscheduler.testing`` loads nothing but this file, and ``make_pod`` pulls in only the builders and the
framework records. Nothing here starts or imports the local control plane (``pyscheduler.testing.cluster``)
or the daemon runner: a plugin's unit tests stay pure and fast.

    name                                  from                                 what
    make_pod / PodBuilder                 pyscheduler.testing.builders         a pod: .obj() record, .json() manifest
    make_node / NodeBuilder               pyscheduler.testing.builders         a node, the same way
    make_node_info, make_cycle_state      pyscheduler.testing.builders         a NodeInfo with pods; an empty CycleState
    FakeClock                             pyscheduler.testing.clock            time that moves only when told
    Snapshot                              pyscheduler.backend.snapshot         Snapshot.from_nodes(nodes, pods)
    make_handle                           here                                 a FrameworkHandle for a plugin factory
    snapshot_of                           here                                 a Snapshot of NodeInfos built with make_node_info
    plain_snapshot                        here                                 those NodeInfos as they are, without a NodeTable
    score_list                            here                                 score_nodes' result with a list of ints
    filter_all, score_all                 here                                 one plugin's PreFilter+Filter / PreScore+Score+Normalize
    schedule                              pyscheduler.engine                   the real scheduler in process (no cluster)

Submodules (``pyscheduler.testing.cluster``, ``.daemon``, ``.kube``...) are imported by name as usual;
an unknown attribute raises AttributeError so that ``from pyscheduler.testing import cluster`` still
falls through to the submodule import.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyscheduler.backend.snapshot import Snapshot
    from pyscheduler.engine import schedule
    from pyscheduler.framework.clock import Clock
    from pyscheduler.framework.handle import FrameworkHandle, Nominator
    from pyscheduler.framework.interfaces import ClusterObjects, SnapshotLister
    from pyscheduler.framework.status import Code, Status
    from pyscheduler.framework.types import NodeInfo, Pod, PodInfo
    from pyscheduler.testing.builders import (
        NodeBuilder,
        PodBuilder,
        make_cycle_state,
        make_node,
        make_node_info,
        make_pod,
        make_pod_group,
    )
    from pyscheduler.testing.clock import FakeClock

__all__ = [
    "FakeClock",
    "NodeBuilder",
    "PodBuilder",
    "Snapshot",
    "filter_all",
    "make_cycle_state",
    "make_handle",
    "make_node",
    "make_node_info",
    "make_pod",
    "make_pod_group",
    "plain_snapshot",
    "schedule",
    "score_all",
    "score_list",
    "snapshot_of",
]

_LAZY = {
    "FakeClock": "pyscheduler.testing.clock",
    "NodeBuilder": "pyscheduler.testing.builders",
    "PodBuilder": "pyscheduler.testing.builders",
    "Snapshot": "pyscheduler.backend.snapshot",
    "make_cycle_state": "pyscheduler.testing.builders",
    "make_node": "pyscheduler.testing.builders",
    "make_node_info": "pyscheduler.testing.builders",
    "make_pod": "pyscheduler.testing.builders",
    "make_pod_group": "pyscheduler.testing.builders",
    "schedule": "pyscheduler.engine",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup does not come here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def score_list(result: tuple[Any, Status | None]) -> tuple[list[int], Status | None]:
    """``score_nodes``' result with the scores as a list of Python ints (plugins may return an int64
    array, which ``==`` would compare element by element): ``assert score_list(pl.score_nodes(...)) ==
    ([...], None)``."""
    values, status = result
    return [int(v) for v in values], status


def filter_all(plugin: Any, pod: Pod, nodes: Sequence[NodeInfo]) -> dict[str, Code]:
    """One plugin's PreFilter, then its Filter on each node, as the framework runs them: node name -> the
    Filter's code (every node SUCCESS when PreFilter says Skip). Any other PreFilter status fails."""
    from pyscheduler.framework.cycle_state import CycleState
    from pyscheduler.framework.status import Code, code_of

    state = CycleState()
    _, status = plugin.pre_filter(state, pod, nodes)
    if status is not None and status.is_skip():
        return {n.name: Code.SUCCESS for n in nodes}
    assert status is None, status
    return {n.name: code_of(plugin.filter(state, pod, n)) for n in nodes}


def score_all(plugin: Any, pod: Pod, nodes: Sequence[NodeInfo]) -> dict[str, int] | None:
    """One plugin's PreScore, Score on each node and NormalizeScore, as the framework runs them: node name
    -> the normalized score; None when PreScore says Skip. Any other non-success status fails."""
    from pyscheduler.framework.cycle_state import CycleState
    from pyscheduler.framework.interfaces import NodeScore

    state = CycleState()
    status = plugin.pre_score(state, pod, nodes)
    if status is not None and status.is_skip():
        return None
    assert status is None, status
    scores = []
    for n in nodes:
        value, score_status = plugin.score(state, pod, n)
        assert score_status is None, score_status
        scores.append(NodeScore(n.name, value))
    assert plugin.normalize_score(state, pod, scores) is None
    return {s.name: s.score for s in scores}


class _Nominations:
    """A fixed nominator: node name -> the pods nominated to run there."""

    def __init__(self, nominated: Mapping[str, Sequence[Pod]]) -> None:
        from pyscheduler.framework.types import PodInfo

        self._by_node = {node: [PodInfo(p) for p in pods] for node, pods in nominated.items()}

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self._by_node.get(node_name, ()))

    def nominated_node_name(self, uid: str) -> str | None:
        return next((n for n, pis in self._by_node.items() if any(pi.pod.uid == uid for pi in pis)), None)


def make_handle(
    snapshot: SnapshotLister | None = None,
    *,
    objects: Iterable[Mapping[str, Any]] = (),
    nominated: Mapping[str, Sequence[Pod]] | None = None,
    clock: Clock | None = None,
    client: Any = None,
    nominator: Nominator | None = None,
    object_store: ClusterObjects | None = None,
) -> FrameworkHandle:
    """The handle a plugin factory gets, for a unit test.

    ``snapshot``: what ``handle.snapshot`` lists (an empty ``Snapshot`` by default; build one with
    ``Snapshot.from_nodes``). ``objects``: API objects (each with its ``kind``) that ``handle.objects``
    serves, e.g. PersistentVolumeClaims as JSON. ``nominated``: node name -> pods nominated there, for
    ``nominated_pods_for_node``. ``clock``: a ``FakeClock`` by default (``handle.now()``). ``client``: what
    ``handle.client`` returns (None: a plugin that writes to the API needs a fake of its own).
    ``nominator``: the handle's nominator itself, instead of ``nominated`` (e.g. a fake scheduling queue).
    ``object_store``: the store itself, instead of one filled from ``objects`` (e.g. one that serves fewer
    kinds, to check a plugin copes).
    """
    from pyscheduler.backend.objects import ObjectStore
    from pyscheduler.backend.snapshot import Snapshot
    from pyscheduler.framework.handle import FrameworkHandle
    from pyscheduler.framework.waiting_pods import WaitingPods
    from pyscheduler.testing.clock import FakeClock

    if object_store is None:
        store = ObjectStore()
        for obj in objects:
            store.put(str(obj["kind"]), dict(obj))
        object_store = store
    elif objects:
        raise ValueError("make_handle: pass objects or object_store, not both")
    if nominator is None:
        nominator = _Nominations(nominated or {})
    elif nominated:
        raise ValueError("make_handle: pass nominated or nominator, not both")
    return FrameworkHandle(
        snapshot=snapshot if snapshot is not None else Snapshot(),
        objects=object_store,
        client=client,
        waiting_pods=WaitingPods(),
        nominator=nominator,
        clock=clock if clock is not None else FakeClock(),
    )


def snapshot_of(*infos: NodeInfo) -> Snapshot:
    """A ``Snapshot`` of the nodes and pods of ``infos`` (as ``make_node_info`` builds them), listed in
    NodeTree order as the cache would, with image counts and affinity lists computed by the snapshot.
    A pod whose ``node_name`` is not its NodeInfo's node is an error (the snapshot places pods by it)."""
    from pyscheduler.backend.snapshot import Snapshot

    nodes, pods = [], []
    for info in infos:
        if info.node is None:
            raise ValueError("snapshot_of: a NodeInfo without a node")
        nodes.append(info.node)
        for pi in info.pods:
            if pi.pod.node_name != info.node.name:
                raise ValueError(
                    f"snapshot_of: pod {pi.pod.key} is on NodeInfo {info.node.name!r} but its nodeName is "
                    f"{pi.pod.node_name!r}"
                )
            pods.append(pi.pod)
    return Snapshot.from_nodes(nodes, pods)


class PlainSnapshot:
    """A ``SnapshotLister`` over NodeInfos exactly as given (same objects, same order) and without a
    ``NodeTable``: a plugin with a batch path over the snapshot's table takes its node-by-node path with
    it. The reference side of a test that checks a batch path against the node-by-node one, and the view
    for a test whose hand-built NodeInfos must be the ones the plugin reads."""

    def __init__(self, infos: Iterable[NodeInfo]) -> None:
        self._infos = list(infos)

    def list(self) -> Sequence[NodeInfo]:
        return self._infos

    def get(self, node_name: str) -> NodeInfo | None:
        return next((n for n in self._infos if n.name == node_name), None)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return [n for n in self._infos if n.pods_with_affinity]

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return [n for n in self._infos if n.pods_with_required_anti_affinity]

    def num_nodes_with_image(self, image: str) -> int:
        return sum(
            1 for n in self._infos if n.node is not None and any(image in i.names for i in n.node.images)
        )


def plain_snapshot(infos: Iterable[NodeInfo]) -> PlainSnapshot:
    """``infos`` as a snapshot without a NodeTable (see ``PlainSnapshot``): ``make_handle(plain_snapshot(
    infos))`` for a plugin that must read the NodeInfos a test built, node by node."""
    return PlainSnapshot(infos)
