"""The gated pool: pods PreEnqueue turned away, indexed by the plugin that gated each one.

A gated pod can be moved only by an event its gating plugin registered (kube keeps the gating plugin's
events on the pod and skips any other event for it). With thousands of gated pods, walking them all on
every bind or delete elsewhere in the cluster (kube's loop, cheap in Go) was most of pyscheduler's CPU in
upstream's SchedulingWhileGated; so the pool is indexed by gating plugin, and a move asks only the pods of
the plugins interested in its event (``by_plugins``).

Order: the pool keeps the pods in the order they were parked (a dict's insertion order, as the plain dict
before it did), and every per-plugin bucket holds its pods in that same order, so the pods of one plugin,
or of several (merged by their arrival number), come out in the order a walk of the whole pool would have
met them, and the queue requeues them in that order.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator

from pyscheduler.backend.queue.records import QueuedPodInfo


class GatedPool:
    """uid -> QueuedPodInfo of the gated pods, in parking order, with a per-gating-plugin index.

    The plugin a pod is filed under is the one it had when parked (``put``) or re-filed (``refile``);
    ``pop`` finds it under that name even if the pod's ``gating_plugin`` changed since.
    """

    __slots__ = ("_arrival", "_by_plugin", "_filed", "_pods", "_seq")

    def __init__(self) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        self._filed: dict[str, str] = {}  # uid -> the plugin it is filed under
        self._arrival: dict[str, int] = {}  # uid -> its place in parking order
        self._by_plugin: dict[str, dict[str, QueuedPodInfo]] = {}
        self._seq = itertools.count()

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def get(self, uid: str) -> QueuedPodInfo | None:
        return self._pods.get(uid)

    def values(self) -> Iterable[QueuedPodInfo]:
        return self._pods.values()

    def __iter__(self) -> Iterator[str]:
        return iter(self._pods)

    def put(self, qpi: QueuedPodInfo) -> None:
        """Park the pod last (the caller removed it from every pool first), filed under its gating plugin."""
        uid = qpi.uid
        if uid in self._pods:
            self.pop(uid)
        plugin = qpi.gating_plugin
        self._pods[uid] = qpi
        self._filed[uid] = plugin
        self._arrival[uid] = next(self._seq)
        self._by_plugin.setdefault(plugin, {})[uid] = qpi

    def pop(self, uid: str) -> QueuedPodInfo | None:
        qpi = self._pods.pop(uid, None)
        if qpi is None:
            return None
        plugin = self._filed.pop(uid)
        del self._arrival[uid]
        bucket = self._by_plugin[plugin]
        del bucket[uid]
        if not bucket:
            del self._by_plugin[plugin]
        return qpi

    def filed_under(self, uid: str) -> str | None:
        """The plugin the pod is filed under; None if it is not in the pool."""
        return self._filed.get(uid)

    def refile(self, qpi: QueuedPodInfo) -> None:
        """The pod stays where it is in the pool but its gating plugin changed (PreEnqueue ran again on an
        update): file it under the new one, in its parking order among that plugin's pods."""
        uid = qpi.uid
        old = self._filed.get(uid)
        new = qpi.gating_plugin
        if old is None or old == new:
            return
        bucket = self._by_plugin[old]
        del bucket[uid]
        if not bucket:
            del self._by_plugin[old]
        self._filed[uid] = new
        target = self._by_plugin.setdefault(new, {})
        target[uid] = qpi
        if len(target) > 1:  # rare: rebuild the bucket in parking order
            ordered = sorted(target.items(), key=lambda kv: self._arrival[kv[0]])
            target.clear()
            target.update(ordered)

    def by_plugins(self, plugins: Iterable[str]) -> list[QueuedPodInfo]:
        """The pods gated by any of ``plugins``, in parking order."""
        buckets = [b for p in plugins if (b := self._by_plugin.get(p))]
        if not buckets:
            return []
        if len(buckets) == 1:
            return list(buckets[0].values())
        arrival = self._arrival
        merged = heapq.merge(*(b.items() for b in buckets), key=lambda kv: arrival[kv[0]])
        return [qpi for _, qpi in merged]

    def plugins(self) -> list[str]:
        """The plugins holding at least one pod (for tests and debugging)."""
        return list(self._by_plugin)
