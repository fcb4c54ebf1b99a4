"""Cache: what is running where, assumed pods included, modelled on kube-scheduler's scheduler cache.

Design
------
The cache aggregates the watch's nodes and assigned pods into one ``NodeInfo`` per node name, and
adds the pods the scheduler has *assumed*: placed on a node by a finished scheduling cycle but not
yet confirmed by the watch. Assuming is what prevents overcommit: the next cycle's snapshot already
counts an assumed pod's requests, long before the bind call returns.

Pod states (keyed by uid)::

                        assume_pod(pod with node_name)
      (not in cache) ------------------------------------> ASSUMED --finish_binding--> ASSUMED
            |    ^                                          |  |                  (binding finished)
            |    |   forget_pod (bind failed)               |  |                         |
            |    +------------------------------------------+  |                         |
            |    |                                             |  add_pod / update_pod   |
            |    |   remove_pod                                |  (the watch confirms;   |
            |    +----------------------------------+          |   moved if the watch    |
            |                                       |          v   shows another node)   |
            +---------- add_pod ------------------> ADDED <----------------------------- +
                                                    ^   |
                                         update_pod +---+ (re-added on its new node if it moved)

    forget_pod of an ADDED pod is refused (it is really bound); assume_pod of a known pod raises.

Node entries (keyed by node name)::

      add_node / update_node            remove_node, pods remain
     -----------------------> PRESENT ---------------------------> GHOST (node=None, kept for its pods,
                                 ^  |                                 |   absent from snapshots)
                                 |  | remove_node, no pods            | last pod removed
                     add_node    |  v                                 v
                                 +-- (gone) <-------------------------+
      add_pod / assume_pod on an unknown node name also creates a GHOST until its node arrives.

Incremental snapshots
---------------------
Every NodeInfo mutation bumps its ``generation`` (a process-wide counter) and moves its name to the
end of ``_nodes`` (an OrderedDict used as kube's "most recently updated first" linked list).
``update_snapshot`` walks that order backwards and stops at the first NodeInfo not newer than the
snapshot, so a cycle after one change copies one NodeInfo, whatever the cluster size. Snapshot
NodeInfos are updated in place (kube's ``*existing = *clone``), so the ordered lists need rebuilding
only when the NodeTree changed (node added, removed, or moved zone) or a node started/stopped
having pods with (anti-)affinity.

Image counts are tracked the same way: ``_image_log`` orders image names by the last change of
their node count (a node update that keeps its image list changes nothing). A snapshot owns one
``ImageStateSummary`` per image, shared by all its NodeInfos' ``image_states``; a refresh applies
only the changed counts, updating each changed image's summary in place, so one changed count costs
O(1) however many nodes have the image. Unlike kube, whose per-node ``num_nodes`` goes stale on
nodes that were not re-cloned, every snapshot NodeInfo carries the current count. (Summaries are
frozen to plugins; only ``update_snapshot`` rewrites their count, between cycles.)

Pod groups (GenericWorkload)
----------------------------
With ``pod_groups=True`` the cache also keeps a ``PodGroupState`` per PodGroup (kube's podGroupStates):
every pod with ``spec.schedulingGroup`` it hears of is a member, unscheduled ones through
``add_pod_group_member`` (the app calls it when our pending pod arrives), assumed and assigned ones
through assume/add; forgetting an assumed member makes it unscheduled again, removing it drops it, and a
group whose last member goes is dropped. ``pod_group_states`` is the plugins' read-only view (copies).

Thread safety: one lock guards everything; ``update_snapshot`` holds it while copying.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from pyscheduler.backend.snapshot import NodeTree, Snapshot
from pyscheduler.framework.node_info import ImageStateSummary, next_generation
from pyscheduler.framework.podgroup import PodGroupState, state_not_found
from pyscheduler.framework.types import Node, NodeInfo, Pod

__all__ = ["Cache", "CacheDump", "CacheError"]

log = logging.getLogger(__name__)

# Keep the image-change log from growing with images no node has any more.
_IMAGE_LOG_SLACK = 1024


class CacheError(RuntimeError):
    """An operation the cache's state does not allow (a scheduler bug, not a cluster condition)."""


class _PodState:
    __slots__ = ("assumed", "binding_finished", "node_name", "pod")

    def __init__(self, pod: Pod, assumed: bool) -> None:
        self.pod = pod
        self.node_name = pod.node_name
        self.assumed = assumed
        self.binding_finished = False


class _Image:
    """Which nodes report an image, and its size (as first reported, like kube)."""

    __slots__ = ("nodes", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.nodes: set[str] = set()


def _image_sizes(node: Node | None) -> dict[str, int]:
    """Image name -> size for every name the node reports."""
    if node is None:
        return {}
    return {name: img.size_bytes for img in node.images for name in img.names}


def _set_num_nodes(summary: ImageStateSummary, num_nodes: int) -> None:
    # The snapshot's own summary object, shared by its NodeInfos; frozen for plugins.
    object.__setattr__(summary, "num_nodes", num_nodes)


@dataclass(frozen=True)
class CacheDump:
    """A deep-enough copy of the cache for debugging (``Cache.dump()``)."""

    nodes: dict[str, NodeInfo]
    assumed_pods: frozenset[str]
    binding_finished: frozenset[str]
    zones_order: list[str] = field(default_factory=list)


class Cache:
    """Nodes and assigned/assumed pods, thread-safe. See the module docstring for the state machines."""

    def __init__(self, *, pod_groups: bool = False) -> None:
        self.pod_groups_enabled = pod_groups
        self._groups: dict[tuple[str, str], PodGroupState] = {}
        self._lock = threading.Lock()
        self._nodes: OrderedDict[str, NodeInfo] = OrderedDict()  # last = most recently changed
        self._tree = NodeTree()
        self._pods: dict[str, _PodState] = {}
        self._assumed: set[str] = set()
        self._images: dict[str, _Image] = {}
        self._image_log: OrderedDict[str, int] = OrderedDict()  # image -> generation of last count change
        self._image_epoch = 0  # bumped when _image_log is pruned
        self._token = object()

    # ============================================================================ nodes

    def add_node(self, node: Node) -> None:
        """A node appeared (or re-appeared; the same as ``update_node``)."""
        with self._lock:
            self._set_node(node)

    def update_node(self, old: Node | None, new: Node) -> None:
        with self._lock:
            self._set_node(new)

    def remove_node(self, node: Node | str) -> bool:
        """The node is gone. Its NodeInfo stays (node=None, not in snapshots) until its pods are removed.
        False if the node was not known."""
        name = node if isinstance(node, str) else node.name
        with self._lock:
            info = self._nodes.get(name)
            if info is None or info.node is None:
                return False
            self._update_node_images(name, _image_sizes(info.node), {})
            info.node = None
            info.image_states = {}
            info.generation = next_generation()
            self._tree.remove(name)
            if info.pods:
                self._touch(name)
            else:
                del self._nodes[name]
            return True

    def _set_node(self, node: Node) -> None:
        info = self._nodes.get(node.name)
        if info is None:
            info = NodeInfo(journal=True)
            self._nodes[node.name] = info
        self._update_node_images(node.name, _image_sizes(info.node), _image_sizes(node))
        info.set_node(node)  # bumps the generation
        images = self._images
        info.image_states = {  # counts as of now; snapshots keep theirs current
            name: ImageStateSummary(images[name].size, len(images[name].nodes)) for name in _image_sizes(node)
        }
        self._tree.add(node)
        self._touch(node.name)

    def _touch(self, name: str) -> None:
        """Record that ``name``'s NodeInfo just changed (its generation was bumped)."""
        self._nodes.move_to_end(name)

    # ---------------------------------------------------------------------------- images

    def _update_node_images(self, node_name: str, old: dict[str, int], new: dict[str, int]) -> None:
        """Count ``node_name`` for the images it now reports and not for those it no longer does."""
        gen = 0
        for name in old.keys() - new.keys():
            entry = self._images.get(name)
            if entry is None or node_name not in entry.nodes:
                continue
            entry.nodes.discard(node_name)
            if not entry.nodes:
                del self._images[name]
            gen = gen or next_generation()
            self._log_image(name, gen)
        for name in new.keys() - old.keys():
            entry = self._images.get(name)
            if entry is None:
                entry = self._images[name] = _Image(new[name])
            if node_name not in entry.nodes:
                entry.nodes.add(node_name)
                gen = gen or next_generation()
                self._log_image(name, gen)

    def _log_image(self, name: str, gen: int) -> None:
        self._image_log[name] = gen
        self._image_log.move_to_end(name)

    # ============================================================================ pods

    def assume_pod(self, pod: Pod) -> None:
        """Count ``pod`` (``node_name`` set by the caller) on its node now, before binding.
        Raises CacheError if the pod is already in the cache."""
        if not pod.node_name:
            raise CacheError(f"pod {pod.key} has no node_name; set it before assuming")
        with self._lock:
            if pod.uid in self._pods:
                raise CacheError(f"pod {pod.key} is in the cache, so it can't be assumed")
            self._add_pod(pod, assumed=True)

    def finish_binding(self, pod: Pod) -> None:
        """The bind call for an assumed pod returned successfully; the watch will confirm it."""
        with self._lock:
            st = self._pods.get(pod.uid)
            if st is not None and st.assumed:
                st.binding_finished = True

    def forget_pod(self, pod: Pod) -> bool:
        """Undo ``assume_pod`` (binding failed): the pod's requests leave the node. Returns False when
        there is nothing to forget: the pod is unknown, or the watch already confirmed it (it is bound,
        whatever the bind call said) and it stays."""
        with self._lock:
            st = self._pods.get(pod.uid)
            if st is None:
                return False
            if not st.assumed:
                log.warning("forget_pod: pod %s is not assumed (already confirmed); keeping it", pod.key)
                return False
            if pod.node_name and pod.node_name != st.node_name:
                log.warning(
                    "forget_pod: pod %s was assumed on %s, not %s; forgetting it from %s",
                    pod.key,
                    st.node_name,
                    pod.node_name,
                    st.node_name,
                )
            self._remove_pod(st, forget=True)
            return True

    def add_pod(self, pod: Pod) -> None:
        """The watch shows an assigned pod. Confirms it if it was assumed (moving it if the watch shows
        another node than assumed); otherwise adds it."""
        if not pod.node_name:
            log.warning("add_pod: pod %s has no node_name; ignored", pod.key)
            return
        with self._lock:
            st = self._pods.get(pod.uid)
            if st is None:
                self._add_pod(pod, assumed=False)
                return
            if not st.assumed:
                log.debug("add_pod: pod %s was already added; updating it", pod.key)
            elif st.node_name != pod.node_name:
                log.info(
                    "pod %s was added on node %s, not the assumed %s", pod.key, pod.node_name, st.node_name
                )
            self._replace_pod(st, pod)

    def update_pod(self, old: Pod | None, new: Pod) -> None:
        """An assigned pod changed. Unknown or assumed pods are handled as ``add_pod(new)``; a pod that
        moved node (kube treats this as a corrupted cache and exits) is moved."""
        if not new.node_name:
            log.warning("update_pod: pod %s has no node_name; removing it", new.key)
            self.remove_pod(new)
            return
        with self._lock:
            st = self._pods.get(new.uid)
            if st is None:
                self._add_pod(new, assumed=False)
                return
            if not st.assumed and st.node_name != new.node_name:
                log.error("pod %s updated on node %s, previously on %s", new.key, new.node_name, st.node_name)
            self._replace_pod(st, new)

    def remove_pod(self, pod: Pod) -> bool:
        """The pod is gone (or no longer assigned). Removed from the node the cache has it on."""
        with self._lock:
            st = self._pods.get(pod.uid)
            if st is None:
                return False
            if pod.node_name and pod.node_name != st.node_name:
                log.error(
                    "remove_pod: pod %s is on %s in the cache, not %s", pod.key, st.node_name, pod.node_name
                )
            self._remove_pod(st)
            return True

    def is_assumed(self, uid: str) -> bool:
        with self._lock:
            return uid in self._assumed

    def get_pod(self, uid: str) -> Pod | None:
        """The cached version of the pod (assumed or added), even if its node was deleted."""
        with self._lock:
            st = self._pods.get(uid)
            return st.pod if st is not None else None

    # -- internals (lock held) ---------------------------------------------------------

    def _add_pod(self, pod: Pod, assumed: bool) -> None:
        name = pod.node_name
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo(journal=True)  # a ghost until its node arrives
        info.add_pod(pod)
        self._touch(name)
        st = _PodState(pod, assumed)
        self._pods[pod.uid] = st
        if assumed:
            self._assumed.add(pod.uid)
        if self.pod_groups_enabled and pod.scheduling_group:
            if assumed:
                g = self._groups.get((pod.namespace, pod.scheduling_group))
                if g is not None:
                    g.assume_pod(pod)
            else:
                self._add_member(pod)

    def _remove_pod(self, st: _PodState, forget: bool = False) -> None:
        name = st.node_name
        info = self._nodes.get(name)
        if info is not None:
            info.remove_pod(st.pod)
            if not info.pods and info.node is None:
                del self._nodes[name]
            else:
                self._touch(name)
        self._pods.pop(st.pod.uid, None)
        self._assumed.discard(st.pod.uid)
        pod = st.pod
        if self.pod_groups_enabled and pod.scheduling_group:
            key = (pod.namespace, pod.scheduling_group)
            g = self._groups.get(key)
            if g is not None:
                if forget:
                    g.forget_pod(pod.uid)
                else:
                    g.delete_pod(pod.uid)
                    if g.empty():
                        del self._groups[key]

    # -- pod groups (lock held) ----------------------------------------------------------

    def _add_member(self, pod: Pod) -> None:
        key = (pod.namespace, pod.scheduling_group)
        g = self._groups.get(key)
        if g is None:
            g = self._groups[key] = PodGroupState()
        g.add_pod(pod)

    # ============================================================================ pod groups

    def add_pod_group_member(self, pod: Pod) -> None:
        """A pending pod of a pod group arrived (kube's AddPodGroupMember)."""
        if not (self.pod_groups_enabled and pod.scheduling_group):
            return
        with self._lock:
            self._add_member(pod)

    def update_pod_group_member(self, old: Pod | None, new: Pod) -> None:
        if not (self.pod_groups_enabled and new.scheduling_group):
            return
        with self._lock:
            g = self._groups.get((new.namespace, new.scheduling_group))
            if g is None:
                log.warning("pod group state of %s not found on update; adding it", new.key)
                self._add_member(new)
                return
            g.update_pod(old, new)

    def remove_pod_group_member(self, pod: Pod) -> None:
        """A pending member was deleted (kube's RemovePodGroupMember)."""
        if not (self.pod_groups_enabled and pod.scheduling_group):
            return
        with self._lock:
            key = (pod.namespace, pod.scheduling_group)
            g = self._groups.get(key)
            if g is None:
                return
            g.delete_pod(pod.uid)
            if g.empty():
                del self._groups[key]

    @property
    def pod_group_states(self) -> _PodGroupStates:
        return _PodGroupStates(self)

    def pod_group_state(self, namespace: str, name: str) -> PodGroupState:
        """A copy of the group's state; raises PodGroupStateNotFound (kube's message) if unknown."""
        with self._lock:
            g = self._groups.get((namespace, name))
            if g is None:
                raise state_not_found(namespace, name)
            return g.copy()

    def _replace_pod(self, st: _PodState, pod: Pod) -> None:
        """Swap the cached version for ``pod`` (now confirmed: not assumed)."""
        self._remove_pod(st)
        self._add_pod(pod, assumed=False)

    # ============================================================================ queries

    def node_count(self) -> int:
        """NodeInfos held, ghosts included (kube's scheduler_cache_size{type="nodes"})."""
        with self._lock:
            return len(self._nodes)

    def pod_count(self) -> int:
        """Pods held, assumed ones and those on deleted nodes included (every pod a NodeInfo holds has its
        state by uid: a count, not a walk of the nodes, which at 15,000 nodes the flusher paid each second)."""
        with self._lock:
            return len(self._pods)

    def assumed_pod_count(self) -> int:
        with self._lock:
            return len(self._assumed)

    def node_info(self, name: str) -> NodeInfo | None:
        """A copy of the cache's NodeInfo for ``name`` (ghosts included); for tests and debugging."""
        with self._lock:
            info = self._nodes.get(name)
            return info.clone() if info is not None else None

    def dump(self) -> CacheDump:
        with self._lock:
            return CacheDump(
                nodes={name: info.clone() for name, info in self._nodes.items()},
                assumed_pods=frozenset(self._assumed),
                binding_finished=frozenset(uid for uid, st in self._pods.items() if st.binding_finished),
                zones_order=self._tree.list(),
            )

    # ============================================================================ snapshot

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring ``snapshot`` up to date, copying only what changed since its last refresh."""
        with self._lock:
            if snapshot._cache_token is not self._token:
                snapshot._reset()
                snapshot._cache_token = self._token
            if not self._copy_changed(snapshot):
                # should not happen: recover by rebuilding from scratch
                log.error(
                    "snapshot inconsistent: %d listed, %d nodes in the tree; rebuilding",
                    len(snapshot._node_info_list),
                    self._tree.num_nodes,
                )
                snapshot._reset()
                snapshot._cache_token = self._token
                self._copy_changed(snapshot)

    def _copy_changed(self, snap: Snapshot) -> bool:
        """Copy what changed into ``snap``; False if the result is inconsistent with the tree."""
        self._copy_image_counts(snap)  # first: the clones below use the snapshot's summaries
        summaries = snap._image_summaries
        m = snap._node_info_map
        update_all = snap._tree_generation != self._tree.generation
        flipped: list[NodeInfo] = []  # nodes whose pods with (anti-)affinity came or went
        changed: list[NodeInfo] = []
        snap_gen = snap.generation
        nodes = self._nodes
        for name in reversed(nodes):
            info = nodes[name]
            if info.generation <= snap_gen:
                break  # everything before this is older than the snapshot
            if info.node is None:
                continue  # a ghost: not listed (dropped below if the snapshot has it)
            existing = m.get(name)
            if existing is None:
                clone = info.clone()
                clone.image_states = {n: summaries[n] for n in _image_sizes(info.node) if n in summaries}
                m[name] = clone
                update_all = True
                continue
            had_affinity = bool(existing.pods_with_affinity)
            had_anti = bool(existing.pods_with_required_anti_affinity)
            # in place either way: the snapshot's lists keep pointing at `existing`
            if not existing.catch_up(info):  # the few pod changes replayed, or else a full copy
                existing.copy_from(info)
            existing.image_states = {n: summaries[n] for n in _image_sizes(info.node) if n in summaries}
            flip = had_affinity != bool(existing.pods_with_affinity) or had_anti != bool(
                existing.pods_with_required_anti_affinity
            )
            changed.append(existing)
            if flip:
                flipped.append(existing)
        if nodes:
            snap.generation = max(snap.generation, nodes[next(reversed(nodes))].generation)

        if len(m) > self._tree.num_nodes:  # nodes were deleted since
            tree = self._tree
            for name in [n for n in m if n not in tree]:
                del m[name]
            update_all = True

        if update_all:
            snap._rebuild_lists(self._tree.list())
            snap._tree_generation = self._tree.generation
        else:
            if flipped:
                snap._update_lists(flipped)
            snap._table.update(changed)

        return len(snap._node_info_list) == self._tree.num_nodes

    def _copy_image_counts(self, snap: Snapshot) -> None:
        """Apply the image-count changes since the snapshot's last refresh to its counts and summaries."""
        images = self._images
        counts = snap._image_counts
        summaries = snap._image_summaries
        if snap._image_epoch != self._image_epoch:
            # new snapshot, or the log was pruned since it last looked: recount everything
            snap._image_counts = {name: len(e.nodes) for name, e in images.items()}
            summaries = snap._image_summaries = {
                name: ImageStateSummary(e.size, len(e.nodes)) for name, e in images.items()
            }
            for info in snap._node_info_map.values():
                info.image_states = {n: summaries[n] for n in _image_sizes(info.node) if n in summaries}
            snap._image_epoch = self._image_epoch
            snap._image_generation = next(reversed(self._image_log.values()), 0)
            return
        last = snap._image_generation
        newest = last
        for name in reversed(self._image_log):
            gen = self._image_log[name]
            if gen <= last:
                break
            newest = max(newest, gen)
            entry = images.get(name)
            if entry is None:
                counts.pop(name, None)
                summaries.pop(name, None)  # the nodes that had it changed, so they are re-cloned
                continue
            n = counts[name] = len(entry.nodes)
            summary = summaries.get(name)
            if summary is None or summary.size != entry.size:
                summaries[name] = ImageStateSummary(entry.size, n)
            elif summary.num_nodes != n:
                _set_num_nodes(summary, n)
        snap._image_generation = newest
        if len(self._image_log) > 2 * len(images) + _IMAGE_LOG_SLACK:
            # forget images no node has; snapshots that have not seen the pruned entries recount
            for name in [n for n in self._image_log if n not in images]:
                del self._image_log[name]
            self._image_epoch += 1
            snap._image_epoch = self._image_epoch

    def __repr__(self) -> str:
        with self._lock:
            return f"Cache(nodes={len(self._nodes)}, pods={len(self._pods)}, assumed={len(self._assumed)})"


class _PodGroupStates:
    """The cache's pod group states as plugins read them (the ``PodGroupStates`` protocol)."""

    __slots__ = ("_cache",)

    def __init__(self, cache: Cache) -> None:
        self._cache = cache

    def get(self, namespace: str, name: str) -> PodGroupState:
        return self._cache.pod_group_state(namespace, name)
