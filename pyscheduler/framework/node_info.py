"""PodInfo and NodeInfo: a pod with what plugins derive from it once, and a node with the pods on it.

``NodeInfo`` is the cache's unit: a node, the pods assigned or assumed to it, and running totals
(requested and non-zero requested resources, host ports in use, PVC references, the pods with
(anti-)affinity terms, image states). It is mutable and copied into each cycle's snapshot; every change
stamps ``generation`` with ``next_generation()`` so the snapshot copies only what changed, and each
``row`` points into the snapshot's NodeTable. The cache's NodeInfos also keep a journal of their pod
changes, so that a snapshot's copy of a busy node catches up by replaying a few of them (``catch_up``)
rather than copying thousands of pods. ``PodInfo`` is built once per pod version and shared by
the queue, the cache and the snapshot. Nothing here does I/O or reads a clock.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyscheduler.framework.resource import Resource

if TYPE_CHECKING:
    from pyscheduler.framework.types import Node, Pod

_generation = itertools.count(1)


def next_generation() -> int:
    """A process-wide increasing number; NodeInfo stamps each change with one."""
    return next(_generation)


class PodInfo:
    """A pod plus what plugins derive from it once (``memo``: a per-pod cache plugins may fill, keyed
    by plugin name). Built once per pod version and shared by the queue, the cache and the snapshot."""

    __slots__ = ("has_affinity", "has_required_anti_affinity", "host_ports", "memo", "pod", "pvc_keys")

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.memo: dict[str, Any] = {}
        # what a NodeInfo counts when the pod is added or removed (preemption's dry runs do that a lot)
        self.host_ports = pod.host_ports
        self.pvc_keys = tuple(f"{pod.namespace}/{claim}" for claim in pod.pvc_names) if pod.volumes else ()
        aff = pod.affinity or {}
        pa = aff.get("podAffinity") or {}
        paa = aff.get("podAntiAffinity") or {}
        self.has_affinity = bool(pa or paa)
        self.has_required_anti_affinity = bool(paa.get("requiredDuringSchedulingIgnoredDuringExecution"))

    def __repr__(self) -> str:
        return f"PodInfo({self.pod.key})"


_NEAR_END = 32
_WINDOWS = (512, 8192)  # then the whole list
_REPLAY_MIN_PODS = 256  # nodes with fewer pods keep no journal entries: their copy is cheap
_REPLAY_FRACTION = 8  # replay a copy's missed changes only when there are <= 1/8 as many as pods


def _position(pods: list[PodInfo], pi: PodInfo) -> int:
    """Where ``pi`` (this very object, known to be there) is in ``pods``. The last few places first: a
    bind confirmation replaces a pod assumed moments ago, a few binds back at most; then ``list.index``
    over the last 512 and 8,192 places (C speed, identity compares), then from the front: a pod deleted
    long after it was added is near the front. While binds run ahead of the watch, the assumed pod can be
    hundreds of places from the end; on a node with 30,000 pods (upstream's SchedulingDaemonset) a scan
    from the front on every confirmation was a sixth of the scheduler's CPU."""
    n = len(pods)
    for i in range(n - 1, max(n - 1 - _NEAR_END, -1), -1):
        if pods[i] is pi:
            return i
    for window in _WINDOWS:
        if window >= n:
            break
        try:
            return pods.index(pi, n - window)
        except ValueError:
            pass
    return pods.index(pi)


WILDCARD_IP = "0.0.0.0"


class HostPortInfo:
    """Host ports in use on a node: ip -> {(protocol, port)}. 0.0.0.0 conflicts with every ip."""

    __slots__ = ("_ports",)

    def __init__(self) -> None:
        self._ports: dict[str, set[tuple[str, int]]] = {}

    @staticmethod
    def _norm(ip: str, protocol: str) -> tuple[str, str]:
        return (ip or WILDCARD_IP, protocol or "TCP")

    def add(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._norm(ip, protocol)
        self._ports.setdefault(ip, set()).add((protocol, port))

    def remove(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._norm(ip, protocol)
        s = self._ports.get(ip)
        if s is not None:
            s.discard((protocol, port))
            if not s:
                del self._ports[ip]

    def check_conflict(self, ip: str, protocol: str, port: int) -> bool:
        if port <= 0:
            return False
        ip, protocol = self._norm(ip, protocol)
        pp = (protocol, port)
        if ip == WILDCARD_IP:
            return any(pp in s for s in self._ports.values())
        return pp in self._ports.get(ip, ()) or pp in self._ports.get(WILDCARD_IP, ())

    def __len__(self) -> int:
        return sum(len(s) for s in self._ports.values())

    def clone(self) -> HostPortInfo:
        h = HostPortInfo()
        h._ports = {k: set(v) for k, v in self._ports.items()}
        return h


@dataclass(frozen=True, slots=True)
class ImageStateSummary:
    size: int
    num_nodes: int


class NodeInfo:
    """A node and the pods assigned (or assumed) to it, with running totals.

    ``requested`` counts each pod's effective requests (init containers, sidecars and overhead
    included); ``non_zero_requested`` the same with scoring's defaults for pods that request no cpu or
    memory. ``image_states`` maps every image name on the node to its size and the number of nodes in
    the cluster that have it (filled by the snapshot).
    """

    __slots__ = (
        "_by_uid",
        "_journal",
        "_journal_base",
        "_seen",
        "allocatable",
        "generation",
        "image_states",
        "node",
        "non_zero_requested",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "pvc_ref_counts",
        "requested",
        "row",
        "used_ports",
    )

    def __init__(
        self, node: Node | None = None, pods: Iterable[PodInfo | Pod] = (), *, journal: bool = False
    ) -> None:
        self.node: Node | None = None
        self.allocatable = Resource()
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports = HostPortInfo()
        self.image_states: dict[str, ImageStateSummary] = {}
        self.pvc_ref_counts: dict[str, int] = {}
        self.generation = next_generation()
        self.row = -1  # this node's row in its snapshot's NodeTable (framework.node_table); -1: none
        # uid -> the PodInfo in ``pods``, so that remove_pod need not scan the pods for the uid. Kept by
        # the NodeInfos the cache owns (built here); clones (snapshot rows, preemption's dry runs) do not
        # copy it (None), and a NodeInfo given the same uid twice drops it: then remove_pod scans.
        self._by_uid: dict[str, PodInfo] | None = {}
        # The latest pod changes in order, (added, PodInfo), kept by the cache's NodeInfos (journal=True)
        # so that a snapshot's copy of a busy node can catch up by replaying the few it missed
        # (``catch_up``) instead of copying thousands of pods each cycle. Positions are absolute:
        # ``_journal_base`` is the position of ``_journal[0]``; older entries are dropped (at most 1/8 as
        # many entries as pods are kept, none below _REPLAY_MIN_PODS pods, so removed pods are not held
        # for long). ``_seen`` is a copy's place in its source's journal: (that list, position applied);
        # a copy whose place was dropped takes a full copy.
        self._journal: list[tuple[bool, PodInfo]] | None = [] if journal else None
        self._journal_base = 0
        self._seen: tuple[list[tuple[bool, PodInfo]], int] | None = None
        if node is not None:
            self.set_node(node)
        for p in pods:
            self.add_pod(p)

    @property
    def name(self) -> str:
        return self.node.name if self.node else ""

    def set_node(self, node: Node) -> None:
        self.node = node
        self.allocatable = node.allocatable.clone()
        if not self.image_states:
            self.image_states = {
                n: ImageStateSummary(img.size_bytes, 1) for img in node.images for n in img.names
            }
        self.generation = next_generation()

    def add_pod(self, p: PodInfo | Pod) -> PodInfo:
        pi = p if isinstance(p, PodInfo) else PodInfo(p)
        pod = pi.pod
        self.pods.append(pi)
        by_uid = self._by_uid
        if by_uid is not None:
            if pod.uid in by_uid:
                self._by_uid = None  # the same uid twice: remove_pod takes the first by scanning
            else:
                by_uid[pod.uid] = pi
        if pi.has_affinity:
            self.pods_with_affinity.append(pi)
        if pi.has_required_anti_affinity:
            self.pods_with_required_anti_affinity.append(pi)
        self.requested.add(pod.requests)
        self.requested.allowed_pod_number += 1
        self.non_zero_requested.milli_cpu += pod.non_zero_requests.milli_cpu
        self.non_zero_requested.memory += pod.non_zero_requests.memory
        for port in pi.host_ports:
            self.used_ports.add(port.host_ip, port.protocol, port.host_port)
        for key in pi.pvc_keys:
            self.pvc_ref_counts[key] = self.pvc_ref_counts.get(key, 0) + 1
        if self._journal is not None:
            self._note(True, pi)
        self.generation = next_generation()
        return pi

    def remove_pod(self, pod: Pod) -> bool:
        """Remove the pod with this uid; False if it is not here. The other pods keep their order.

        With the uid index, finding the pod is a dict lookup and its place in ``pods`` an identity
        search (``_position``); without it (a clone), a scan of the pods for the uid."""
        pods = self.pods
        by_uid = self._by_uid
        if by_uid is not None:
            found = by_uid.pop(pod.uid, None)
            if found is None:
                return False
            pi = found
            i = _position(pods, pi)
        else:
            for i, pi in enumerate(pods):  # noqa: B007 - i and pi are used after the loop
                if pi.pod.uid == pod.uid:
                    break
            else:
                return False
        del pods[i]
        old = pi.pod
        self._drop_from_term_lists(pi)
        self.requested.sub(old.requests)
        self.requested.allowed_pod_number -= 1
        self.non_zero_requested.milli_cpu -= old.non_zero_requests.milli_cpu
        self.non_zero_requested.memory -= old.non_zero_requests.memory
        for port in pi.host_ports:
            self.used_ports.remove(port.host_ip, port.protocol, port.host_port)
        for key in pi.pvc_keys:
            n = self.pvc_ref_counts.get(key, 0) - 1
            if n > 0:
                self.pvc_ref_counts[key] = n
            else:
                self.pvc_ref_counts.pop(key, None)
        if self._journal is not None:
            self._note(False, pi)
        self.generation = next_generation()
        return True

    def _drop_from_term_lists(self, pi: PodInfo) -> None:
        uid = pi.pod.uid
        if pi.has_affinity:
            self.pods_with_affinity = [x for x in self.pods_with_affinity if x.pod.uid != uid]
        if pi.has_required_anti_affinity:
            self.pods_with_required_anti_affinity = [
                x for x in self.pods_with_required_anti_affinity if x.pod.uid != uid
            ]

    def _note(self, added: bool, pi: PodInfo) -> None:
        j = self._journal
        assert j is not None
        n = len(self.pods)
        if n < _REPLAY_MIN_PODS:  # nothing kept: copies behind this change take a full copy
            self._journal_base += len(j) + 1
            j.clear()
            return
        j.append((added, pi))
        keep = n // _REPLAY_FRACTION  # a copy further behind than this is not replayed anyway
        if len(j) > keep:
            drop = len(j) - keep // 2  # halve: the memmove is paid once per keep/2 changes
            del j[:drop]
            self._journal_base += drop

    def catch_up(self, src: NodeInfo) -> bool:
        """Make this copy of ``src`` (a ``src.clone()`` or a copy caught up before) equal to ``src`` again
        in place, by replaying the pods ``src`` added and removed since, in order; the pods keep ``src``'s
        order and the totals are copied. False when it cannot (not a copy of ``src``, its place in the
        journal dropped, or so many changes that a full copy is cheaper): then this copy may be half updated and the caller
        must copy every slot from ``src.clone()``. For the snapshot: a node with 30,000 pods (upstream's
        SchedulingDaemonset) was a 30,000-pod copy, and the old list's release, on every cycle."""
        seen = self._seen
        j = src._journal
        base = src._journal_base
        if seen is None or j is None or seen[0] is not j or seen[1] < base:
            return False
        start = seen[1] - base
        end = len(j)
        pods = self.pods
        if (end - start) * _REPLAY_FRACTION > len(pods):
            return False
        for k in range(start, end):
            added, pi = j[k]
            if added:
                pods.append(pi)
                if pi.has_affinity:
                    self.pods_with_affinity.append(pi)
                if pi.has_required_anti_affinity:
                    self.pods_with_required_anti_affinity.append(pi)
            else:
                try:
                    del pods[_position(pods, pi)]
                except ValueError:
                    return False  # this copy was changed in place by someone: not a copy any more
                self._drop_from_term_lists(pi)
        if len(pods) != len(src.pods) or (pods and pods[-1] is not src.pods[-1]):
            return False
        self.node = src.node
        self.allocatable = src.allocatable.clone()
        self.requested = src.requested.clone()
        self.non_zero_requested = src.non_zero_requested.clone()
        self.used_ports = src.used_ports.clone()
        self.image_states = dict(src.image_states)
        self.pvc_ref_counts = dict(src.pvc_ref_counts)
        self.generation = src.generation
        self._seen = (j, base + end)
        return True

    def clone(self) -> NodeInfo:
        c = NodeInfo.__new__(NodeInfo)
        c.row = self.row
        c.copy_from(self)
        return c

    def copy_from(self, src: NodeInfo) -> None:
        """Make this NodeInfo an independent copy of ``src`` in place, ``row`` excepted (``clone`` without a
        new object: the snapshot refreshes its NodeInfos so, which its node lists and table point at)."""
        self.node = src.node
        self.allocatable = src.allocatable.clone()
        self.requested = src.requested.clone()
        self.non_zero_requested = src.non_zero_requested.clone()
        self.pods = list(src.pods)
        self.pods_with_affinity = list(src.pods_with_affinity)
        self.pods_with_required_anti_affinity = list(src.pods_with_required_anti_affinity)
        self.used_ports = src.used_ports.clone()
        self.image_states = dict(src.image_states)
        self.pvc_ref_counts = dict(src.pvc_ref_counts)
        self.generation = src.generation
        self._by_uid = None  # not copied: a copy's removals scan (see __init__)
        self._journal = None
        self._journal_base = 0
        j = src._journal
        self._seen = (j, src._journal_base + len(j)) if j is not None else None

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)}, requested={self.requested!r})"
