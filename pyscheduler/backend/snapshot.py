"""Snapshot: the frozen view of the cluster one scheduling cycle reads, and the NodeTree that orders it.

Design
------
At the start of every cycle the scheduler calls ``Cache.update_snapshot(snapshot)``; plugins then read
only the snapshot (``framework.interfaces.SnapshotLister``), never the live cache, so what they see
cannot change under them. The snapshot owns its ``NodeInfo`` clones; the cache refreshes, in place,
only the ones whose ``generation`` moved since the last refresh (see ``cache.py``).

What a snapshot holds::

    node_info_map   name -> NodeInfo (only nodes that exist: a deleted node with leftover pods is not here)
    node_info_list  the same NodeInfos in NodeTree order (zones interleaved round-robin)
    have_pods_with_affinity_list / have_pods_with_required_anti_affinity_list
                    the subsequences of node_info_list whose nodes run such pods
    image counts    image name -> number of nodes that have it; every NodeInfo.image_states entry
                    for that image is the same ImageStateSummary object, with that count

Lifecycle of a Snapshot object (the cache is its only writer; plugins only read)::

                       Snapshot()                       Snapshot.from_nodes(nodes, pods)
                           |                                        |
                           v                                        v
                    +-------------+   Cache.update_snapshot   +-----------+
                    |    empty    | ------------------------> |  current  | <--+
                    | generation=0|                           +-----------+    |
                    +-------------+                              |   ^         |
                                             cluster changes     |   |  Cache.update_snapshot:
                                             (cache mutated)     v   |  re-clone nodes with
                                                           +-----------+ generation > snapshot's,
                                                           |   stale   | drop deleted nodes, rebuild
                                                           +-----------+ the lists if the tree or an
                                                                         affinity flag changed

A snapshot built by ``from_nodes`` (tests, plugin authors) or refreshed by another cache is rebuilt
from scratch the first time a cache refreshes it.

NodeTree
--------
kube-scheduler lists nodes zone by zone, round-robin, so that a cycle that stops after finding
"enough" feasible nodes (percentageOfNodesToScore) still spreads over zones. Zones are keyed by
``topology.kubernetes.io/region`` + ``topology.kubernetes.io/zone`` (falling back to the deprecated
``failure-domain.beta.kubernetes.io`` labels), kept in order of first appearance; nodes within a
zone in insertion order::

    zone a: [a1, a2, a3]        list(): a1, b1, c1, a2, b2, a3
    zone b: [b1, b2]
    zone c: [c1]

    add(node)     unknown name -> append to its zone (creating the zone at the end)
                  known name, same zone -> no-op; known name, new zone -> move (remove + add)
    remove(name)  drop it; an emptied zone is dropped too
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence

import numpy as np

from pyscheduler.framework.node_info import ImageStateSummary
from pyscheduler.framework.node_table import NodeBatch, NodeTable
from pyscheduler.framework.types import Node, NodeInfo, Pod

__all__ = ["NodeTree", "Snapshot", "zone_key"]

LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
LABEL_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
LABEL_REGION_BETA = "failure-domain.beta.kubernetes.io/region"


def zone_key(node: Node) -> str:
    """kube's utilnode.GetZoneKey: ``region:\\x00:zone``, or "" when the node has neither label."""
    labels = node.labels
    zone = labels.get(LABEL_ZONE)
    if zone is None:
        zone = labels.get(LABEL_ZONE_BETA, "")
    region = labels.get(LABEL_REGION)
    if region is None:
        region = labels.get(LABEL_REGION_BETA, "")
    if not zone and not region:
        return ""
    return f"{region}:\x00:{zone}"


class NodeTree:
    """Node names grouped by zone; ``list()`` interleaves the zones round-robin (kube's nodeTree)."""

    __slots__ = ("_zone_of", "_zones", "generation")

    def __init__(self) -> None:
        self._zones: dict[str, builtins.list[str]] = {}  # zone -> names, zones in order of first appearance
        self._zone_of: dict[str, str] = {}  # name -> zone
        # bumped whenever list() would change; snapshots compare it to know when to rebuild their lists
        self.generation = 0

    @property
    def num_nodes(self) -> int:
        return len(self._zone_of)

    def __contains__(self, name: object) -> bool:
        return name in self._zone_of

    def add(self, node: Node) -> None:
        """Insert the node, or move it if its zone changed; a no-op if it is already there."""
        zone = zone_key(node)
        old = self._zone_of.get(node.name)
        if old is not None:
            if old == zone:
                return
            self._detach(node.name, old)
        self._zones.setdefault(zone, []).append(node.name)
        self._zone_of[node.name] = zone
        self.generation += 1

    def remove(self, name: str) -> bool:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return False
        self._detach(name, zone)
        self.generation += 1
        return True

    def _detach(self, name: str, zone: str) -> None:
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]
        self._zone_of.pop(name, None)

    def list(self) -> builtins.list[str]:
        """All names, zones interleaved: the i-th node of every zone before the (i+1)-th of any."""
        zones = builtins.list(self._zones.values())
        if len(zones) == 1:
            return builtins.list(zones[0])
        out: builtins.list[str] = []
        i = 0
        while zones:  # every zone left has more than i nodes
            out.extend(names[i] for names in zones)
            i += 1
            zones = [names for names in zones if len(names) > i]
        return out


class Snapshot:
    """The cycle's view of the cluster (``SnapshotLister``). Written only by ``Cache.update_snapshot``
    (or ``from_nodes``); read by plugins. Not thread-safe: one scheduling thread owns it."""

    __slots__ = (
        "_cache_token",
        "_have_affinity",
        "_have_required_anti_affinity",
        "_image_counts",
        "_image_epoch",
        "_image_generation",
        "_image_summaries",
        "_node_info_list",
        "_node_info_map",
        "_table",
        "_tree_generation",
        "generation",
    )

    def __init__(self) -> None:
        self._node_info_map: dict[str, NodeInfo] = {}
        self._node_info_list: builtins.list[NodeInfo] = []
        # the nodes with pods with (anti-)affinity, in list order, as batches that know their rows
        self._have_affinity: Sequence[NodeInfo] = []
        self._have_required_anti_affinity: Sequence[NodeInfo] = []
        self._image_counts: dict[str, int] = {}
        # one summary per image, shared by every NodeInfo.image_states entry for that image
        self._image_summaries: dict[str, ImageStateSummary] = {}
        # What the last refresh saw, so the next one copies only what changed since (see cache.py).
        self.generation = 0  # highest NodeInfo generation copied
        self._image_generation = 0  # highest image-count change applied
        self._image_epoch = -1
        self._tree_generation = -1
        self._cache_token: object | None = None  # the cache that last refreshed this snapshot
        self._table = NodeTable()  # node_info_list as NumPy columns, for batch Filter/Score

    # ------------------------------------------------------------------------ construction

    @classmethod
    def from_nodes(cls, nodes: Iterable[Node], pods: Iterable[Pod] = ()) -> Snapshot:
        """A snapshot of ``nodes`` running ``pods`` (each on its ``node_name``; unassigned pods and pods
        on unknown nodes are ignored). Nodes are listed in NodeTree order, as the cache would."""
        snap = cls()
        tree = NodeTree()
        infos: dict[str, NodeInfo] = {}
        for node in nodes:
            info = NodeInfo(node)
            infos[node.name] = info
            tree.add(node)
        for pod in pods:
            if pod.node_name:
                target = infos.get(pod.node_name)
                if target is not None:
                    target.add_pod(pod)
        # image counts over all nodes, and the same counts in every NodeInfo.image_states
        sizes: dict[str, int] = {}
        holders: dict[str, set[str]] = {}
        for info in infos.values():
            assert info.node is not None
            for img in info.node.images:
                for name in img.names:
                    sizes.setdefault(name, img.size_bytes)
                    holders.setdefault(name, set()).add(info.node.name)
        summaries = {name: ImageStateSummary(sizes[name], len(h)) for name, h in holders.items()}
        for info in infos.values():
            assert info.node is not None
            info.image_states = {n: summaries[n] for img in info.node.images for n in img.names}
        snap._image_counts = {name: len(h) for name, h in holders.items()}
        snap._image_summaries = summaries
        snap._node_info_map = {name: infos[name] for name in tree.list()}
        snap._rebuild_lists(tree.list())
        snap.generation = max((i.generation for i in infos.values()), default=0)
        return snap

    def _rebuild_lists(self, order: Sequence[str] | None = None) -> None:
        """Recompute node_info_list (when ``order`` is given) and the two affinity sublists."""
        if order is not None:
            m = self._node_info_map
            self._node_info_list = [m[name] for name in order if name in m]
            self._table.rebuild(self._node_info_list)
        nodes = self._node_info_list
        self._have_affinity = self._sublist([i for i, ni in enumerate(nodes) if ni.pods_with_affinity])
        self._have_required_anti_affinity = self._sublist(
            [i for i, ni in enumerate(nodes) if ni.pods_with_required_anti_affinity]
        )

    def _sublist(self, idx: builtins.list[int]) -> NodeBatch:
        """The nodes at list positions ``idx`` (= their table rows), as a batch that knows its rows."""
        nodes = self._node_info_list
        return NodeBatch([nodes[i] for i in idx], self._table, np.array(idx, dtype=np.int64))

    def _update_lists(self, flipped: Iterable[NodeInfo]) -> None:
        """Insert or drop the listed nodes (whose pods with affinity or with required anti-affinity
        came or went) in the two sublists, in list order, without rescanning every node."""
        for ni in flipped:
            for attr, has in (
                ("_have_affinity", bool(ni.pods_with_affinity)),
                ("_have_required_anti_affinity", bool(ni.pods_with_required_anti_affinity)),
            ):
                old = getattr(self, attr)
                rows = old.rows() if isinstance(old, NodeBatch) and old.table is self._table else None
                if rows is None or not 0 <= ni.row < len(self._node_info_list):
                    self._rebuild_lists()
                    return
                # the array methods, not numpy's module functions: those wrap them in Python (a tenth of
                # this function's time for one flipped node a cycle)
                pos = int(rows.searchsorted(ni.row))
                present = pos < len(rows) and int(rows[pos]) == ni.row
                if has and not present:
                    at = np.array((ni.row,), dtype=rows.dtype)
                    new = NodeBatch(
                        [*old[:pos], ni, *old[pos:]],
                        self._table,
                        np.concatenate((rows[:pos], at, rows[pos:])),
                    )
                elif present and not has:
                    new = NodeBatch(
                        [*old[:pos], *old[pos + 1 :]],
                        self._table,
                        np.concatenate((rows[:pos], rows[pos + 1 :])),
                    )
                else:
                    continue
                setattr(self, attr, new)

    def _reset(self) -> None:
        """Forget everything (the next refresh rebuilds from scratch)."""
        self._node_info_map = {}
        self._node_info_list = []
        self._table = NodeTable()
        self._have_affinity = []
        self._have_required_anti_affinity = []
        self._image_counts = {}
        self._image_summaries = {}
        self.generation = 0
        self._image_generation = 0
        self._image_epoch = -1
        self._tree_generation = -1
        self._cache_token = None

    # ------------------------------------------------------------------------ SnapshotLister

    def get(self, node_name: str) -> NodeInfo | None:
        return self._node_info_map.get(node_name)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return self._have_affinity

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return self._have_required_anti_affinity

    def num_nodes_with_image(self, image: str) -> int:
        return self._image_counts.get(image, 0)

    # ------------------------------------------------------------------------ extras

    def num_nodes(self) -> int:
        return len(self._node_info_list)

    def __len__(self) -> int:
        return len(self._node_info_list)

    def node_names(self) -> builtins.list[str]:
        return [ni.name for ni in self._node_info_list]

    def __repr__(self) -> str:
        return f"Snapshot(nodes={len(self._node_info_list)}, generation={self.generation})"

    def list(self) -> Sequence[NodeInfo]:
        """Every node with its pods (assumed ones included), in NodeTree order."""
        return self._node_info_list

    def node_table(self) -> NodeTable:
        """The same nodes as NumPy columns, row i = list()[i] (see framework.node_table)."""
        return self._table
