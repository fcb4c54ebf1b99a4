"""The assume cache: PV and PVC bindings made in Reserve stay visible to later scheduling cycles
until the API confirms or refutes them."""

from __future__ import annotations

import threading

from pyscheduler.framework.helpers.storage import (
    PV,
    PVC,
    JSONMap,
    name_of,
    namespace_of,
    rv_of,
)
from pyscheduler.framework.interfaces import ClusterObjects
from pyscheduler.plugins.volume_binding.binding import NotFound, VolumeError

_RESOURCES = {PV: "persistentvolumes", PVC: "persistentvolumeclaims"}


class AssumeCache:
    """Objects of one kind as the informer has them, overlaid with the versions this scheduler
    assumed (a PV pre-bound to a claim, a PVC with a selected node) until the API catches up.

    An assumed object keeps the resourceVersion of the object it was derived from; as soon as the
    informer's copy has a different resourceVersion (our update landed, or someone else changed
    it) or is gone, the assumed copy is dropped, as kube's assume cache does.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._lock = threading.Lock()
        self._assumed: dict[str, JSONMap] = {}

    @staticmethod
    def key(namespace: str, name: str) -> str:
        return f"{namespace}/{name}" if namespace else name

    def get(self, objects: ClusterObjects, namespace: str, name: str) -> JSONMap | None:
        real = objects.get(self.kind, namespace, name)
        key = self.key(namespace, name)
        with self._lock:
            assumed = self._assumed.get(key)
            if assumed is None:
                return real
            if real is None or rv_of(real) != rv_of(assumed):
                del self._assumed[key]
                return real
            return assumed

    def list_all(self, objects: ClusterObjects) -> list[JSONMap]:
        reals = list(objects.list(self.kind))
        with self._lock:
            if not self._assumed:
                return reals
            out: list[JSONMap] = []
            for real in reals:
                key = self.key(namespace_of(real), name_of(real))
                assumed = self._assumed.get(key)
                if assumed is not None and rv_of(assumed) == rv_of(real):
                    out.append(assumed)
                else:
                    if assumed is not None:
                        del self._assumed[key]
                    out.append(real)
            return out

    def assume(self, objects: ClusterObjects, obj: JSONMap) -> None:
        """Overlay ``obj`` on the informer's copy. As kube's passive assume cache, refuse (VolumeError) when
        the informer no longer has the object or has another version of it than ``obj`` was derived from
        (it changed since the scheduling cycle read it)."""
        namespace, name = namespace_of(obj), name_of(obj)
        key = self.key(namespace, name)
        real = objects.get(self.kind, namespace, name)
        if real is None:
            raise NotFound(_RESOURCES.get(self.kind, self.kind), key)
        if rv_of(real) != rv_of(obj):
            raise VolumeError(f'"{key}" is out of sync (stored: {rv_of(real)}, assume: {rv_of(obj)})')
        with self._lock:
            self._assumed[key] = obj

    def restore(self, namespace: str, name: str) -> None:
        with self._lock:
            self._assumed.pop(self.key(namespace, name), None)

    def assumed_keys(self) -> list[str]:
        with self._lock:
            return sorted(self._assumed)
