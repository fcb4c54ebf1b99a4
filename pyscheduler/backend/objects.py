"""ObjectStore: the cluster objects plugins consult besides pods and nodes (PVCs, PVs, StorageClasses,
CSINodes, PodDisruptionBudgets, Namespaces, Services, ReplicaSets, StatefulSets,
ReplicationControllers), kept current by the watches and read through the ``ClusterObjects`` protocol.

Objects are stored as the API's JSON minus ``managedFields`` and the last-applied annotation; plugins
treat them as read-only. Lookups are by (kind, namespace, name); cluster-scoped kinds use namespace "".

``version(kind)`` counts the puts and removes of a kind: a plugin that derives something from objects of
some kinds (NodeVolumeLimits: the volumes of the pods on a node) may keep it across cycles while the
versions it read before deriving it are unchanged, and ``changed(kind, since)`` names the objects put or
removed after a version (the last ``CHANGE_LOG`` changes of each kind are remembered), so that it can drop
only what those objects went into.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

JSON = dict[str, Any]

_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

CHANGE_LOG = 4096  # changes remembered per kind, for ``changed``


def slim(obj: JSON) -> JSON:
    """Drop what no plugin reads and what costs memory."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        ann = meta.get("annotations")
        if isinstance(ann, dict):
            ann.pop(_LAST_APPLIED, None)
    return obj


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name', '')}"


class ObjectStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kinds: dict[str, dict[str, JSON]] = {}
        self._versions: dict[str, int] = {}
        self._changes: dict[str, deque[tuple[int, str]]] = {}  # kind -> (version, key), newest last

    def put(self, kind: str, obj: JSON) -> None:
        key = object_key(obj)
        with self._lock:
            self._kinds.setdefault(kind, {})[key] = obj
            self._changed(kind, key)

    def remove(self, kind: str, obj: Mapping[str, Any]) -> None:
        key = object_key(obj)
        with self._lock:
            self._kinds.get(kind, {}).pop(key, None)
            self._changed(kind, key)

    def _changed(self, kind: str, key: str) -> None:
        v = self._versions.get(kind, 0) + 1
        self._versions[kind] = v
        log = self._changes.get(kind)
        if log is None:
            log = self._changes[kind] = deque(maxlen=CHANGE_LOG)
        log.append((v, key))

    def version(self, kind: str) -> int:
        """How many times objects of ``kind`` were put or removed: unchanged, no object of it changed."""
        return self._versions.get(kind, 0)

    def changed(self, kind: str, since: int) -> set[str] | None:
        """The keys (``<namespace>/<name>``) of the objects of ``kind`` put or removed after version
        ``since``; None when more changes than the log remembers came since."""
        with self._lock:
            log = self._changes.get(kind)
            if not log:
                return set() if since >= self._versions.get(kind, 0) else None
            if log[0][0] > since + 1:
                return None
            return {key for v, key in log if v > since}

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        with self._lock:
            return self._kinds.get(kind, {}).get(f"{namespace or ''}/{name}")

    def list(self, kind: str, namespace: str | None = None) -> Iterable[Mapping[str, Any]]:
        with self._lock:
            items = list(self._kinds.get(kind, {}).values())
        if namespace is None:
            return items
        return [o for o in items if (o.get("metadata") or {}).get("namespace", "") == namespace]

    def count(self, kind: str) -> int:
        with self._lock:
            return len(self._kinds.get(kind, {}))
