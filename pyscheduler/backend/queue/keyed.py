"""The parked pods filed by the keys their plugins' ``HintIndex`` gives, so that an event asks only the
pods it can concern.

A plugin may give a registration a ``HintIndex`` (framework/events.py): ``pod_keys(pod)`` and
``event_keys(old, new)``, with the promise that its hint answers SKIP for a pod holding none of the
event's keys. DynamicResources' claim hint is the case it was made for: every ResourceClaim add or
update asked the hint of every pod waiting for a claim (O(waiting pods x claim events) Python calls),
while a claim concerns only the pods that name it (or every pod when it was deallocated: then
``event_keys`` says None).

The queue files every parked pod (unschedulable or gated) here, under its keys and under the plugins
that rejected it. For an event (not a wildcard) that some indexed registration matches, it asks only:

- for each interested plugin whose every registration the event matches has a hint and an index giving
  keys: the pods filed under one of those keys (per index, so several profiles' registrations that share
  one ``pod_keys`` share one table), and the pods whose keys could not be worked out (``pod_keys`` raised);
- for every other interested plugin (no index, a registration without a hint, ``event_keys`` None, e.g.
  a claim deallocated; or a plugin that registered a wildcard, as every plugin without
  EnqueueExtensions does): the pods it rejected;
- the pods parked with no rejecting plugin (``worth_requeuing`` moves those whatever the hints say).

Every other pod would have been skipped by the full walk: each plugin that could move it (a rejector
interested in the event) answers SKIP through each of its matching registrations. The candidates keep
the full walk's order (the unschedulable pool first, then the gated pods, each in parking order), since
the order pods are requeued in breaks ties in activeQ.

A parked pod's rejecting plugins are read when it is parked and when the queue changes them (PreEnqueue
run again on an update adds the gating plugin): nothing else changes them while the pod is parked.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

from pyscheduler.backend.queue.records import QueuedPodInfo
from pyscheduler.framework.events import ClusterEventWithHint
from pyscheduler.framework.types import Pod

log = logging.getLogger("pyscheduler.backend.queue")

PodKeysFn = Callable[[Pod], Iterable[Hashable]]

_UNKNOWN = object()  # the key of a pod whose pod_keys raised: it is asked for every event


class KeyTable:
    """key -> uids and uid -> keys, for one ``pod_keys`` function."""

    __slots__ = ("_keys_of", "_pod_keys", "_uids")

    def __init__(self, pod_keys: PodKeysFn) -> None:
        self._pod_keys = pod_keys
        self._keys_of: dict[str, frozenset[Hashable]] = {}
        self._uids: dict[Hashable, set[str]] = {}

    def file(self, uid: str, pod: Pod) -> None:
        try:
            keys = frozenset(self._pod_keys(pod))
        except Exception:  # a plugin bug: ask this pod for every event, as without an index
            log.exception("pod_keys failed for pod %s", pod.key)
            keys = frozenset((_UNKNOWN,))
        old = self._keys_of.get(uid)
        if old == keys:
            return
        if old is not None:
            self._unfile(uid, old)
        self._keys_of[uid] = keys
        for k in keys:
            self._uids.setdefault(k, set()).add(uid)

    def drop(self, uid: str) -> None:
        old = self._keys_of.pop(uid, None)
        if old is not None:
            self._unfile(uid, old)

    def _unfile(self, uid: str, keys: frozenset[Hashable]) -> None:
        for k in keys:
            bucket = self._uids[k]
            bucket.discard(uid)
            if not bucket:
                del self._uids[k]

    def lookup(self, keys: Iterable[Hashable], into: set[str]) -> None:
        """Add to ``into`` the uids filed under any of ``keys`` (and those whose keys are unknown)."""
        uids = self._uids
        for k in itertools.chain(keys, (_UNKNOWN,)):
            bucket = uids.get(k)
            if bucket:
                into |= bucket

    def keys_of(self, uid: str) -> frozenset[Hashable] | None:
        return self._keys_of.get(uid)


class ParkedKeys:
    """Every parked pod's keys under each index, its parking order, and the pods parked with no
    rejecting plugin. ``enabled`` is False (and nothing is filed) when no registration has an index."""

    __slots__ = ("_by_rejector", "_order", "_rejectors_of", "_seq", "_tables", "_unrejected", "enabled")

    def __init__(self, events_map: Mapping[str, Sequence[ClusterEventWithHint]]) -> None:
        self._tables: dict[PodKeysFn, KeyTable] = {}
        for regs in events_map.values():
            for reg in regs:
                if reg.index is not None and reg.index.pod_keys not in self._tables:
                    self._tables[reg.index.pod_keys] = KeyTable(reg.index.pod_keys)
        self.enabled = bool(self._tables)
        self._order: dict[str, int] = {}  # uid -> parking order (that of the pools' own dicts)
        self._seq = itertools.count()
        self._unrejected: set[str] = set()  # parked with no rejecting plugin
        self._by_rejector: dict[str, set[str]] = {}  # plugin -> the parked pods it rejected
        self._rejectors_of: dict[str, frozenset[str]] = {}

    def park(self, qpi: QueuedPodInfo) -> None:
        """The pod was just parked (put last in the unschedulable or gated pool)."""
        if not self.enabled:
            return
        self._order[qpi.uid] = next(self._seq)
        self.refile(qpi)

    def repark(self, qpi: QueuedPodInfo) -> None:
        """The parked pod was parked again, unchanged (PreEnqueue still gates it): it goes last in the
        parking order; filed again under its rejectors only if they changed (its keys did not)."""
        if not self.enabled:
            return
        uid = qpi.uid
        self._order[uid] = next(self._seq)
        rejectors = frozenset(qpi.unschedulable_plugins | qpi.pending_plugins)
        if self._rejectors_of.get(uid) != rejectors:
            self.refile(qpi)

    def refile(self, qpi: QueuedPodInfo) -> None:
        """The parked pod changed (a new version, PreEnqueue ran again): it keeps its order."""
        if not self.enabled:
            return
        uid = qpi.uid
        pod = qpi.pod
        for table in self._tables.values():
            table.file(uid, pod)
        rejectors = frozenset(qpi.unschedulable_plugins | qpi.pending_plugins)
        old = self._rejectors_of.get(uid)
        if old != rejectors:
            if old is not None:
                self._unfile_rejectors(uid, old)
            self._rejectors_of[uid] = rejectors
            for p in rejectors:
                self._by_rejector.setdefault(p, set()).add(uid)
        if rejectors:
            self._unrejected.discard(uid)
        else:
            self._unrejected.add(uid)

    def _unfile_rejectors(self, uid: str, rejectors: frozenset[str]) -> None:
        for p in rejectors:
            bucket = self._by_rejector[p]
            bucket.discard(uid)
            if not bucket:
                del self._by_rejector[p]

    def drop(self, uid: str) -> None:
        if not self.enabled or self._order.pop(uid, None) is None:
            return
        for table in self._tables.values():
            table.drop(uid)
        self._unrejected.discard(uid)
        rejectors = self._rejectors_of.pop(uid, None)
        if rejectors is not None:
            self._unfile_rejectors(uid, rejectors)

    def narrow(
        self, matching: Mapping[str, Sequence[ClusterEventWithHint]], old: Any, new: Any
    ) -> set[str] | None:
        """The uids of the parked pods the event can concern (a superset; see the module docstring), or
        None when no registration the event matches has an index (the caller walks every pod then).
        ``matching``: each plugin's registrations this (non-wildcard) event matches."""
        if not self.enabled or not any(reg.index is not None for regs in matching.values() for reg in regs):
            return None
        hits: set[str] = set()
        for plugin, regs in matching.items():
            if not regs:
                continue
            keyed: list[tuple[KeyTable, Iterable[Hashable]]] = []
            for reg in regs:
                index = reg.index
                if index is None or reg.hint is None:
                    break  # this registration may move any pod the plugin rejected
                try:
                    keys = index.event_keys(old, new)
                except Exception:
                    log.exception("event_keys failed")
                    break
                if keys is None:
                    break
                keyed.append((self._tables[index.pod_keys], keys))
            else:
                for table, keys in keyed:
                    table.lookup(keys, hits)
                continue
            rejected = self._by_rejector.get(plugin)
            if rejected:
                hits |= rejected
        hits |= self._unrejected
        return hits

    def in_order(self, uids: Iterable[str]) -> list[str]:
        order = self._order
        return sorted(uids, key=order.__getitem__)

    def keys_of(self, uid: str) -> list[frozenset[Hashable] | None]:
        """The pod's keys under each index (tests)."""
        return [t.keys_of(uid) for t in self._tables.values()]
