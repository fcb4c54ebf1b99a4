"""A cluster snapshot: what scheduling reads of a cluster, read once and kept as plain API JSON.

Three sources, one record (``ClusterSnapshot``):

- a live cluster through a kubeconfig (``from_cluster``): LIST requests only, never a write; a kind the
  credentials cannot read (403) or the server does not serve (404) is left empty with a warning;
- ``kubectl get nodes,pods,pv,... -A -o yaml`` output (``load``): one file or a directory of ``.yaml``,
  ``.yml`` and ``.json`` files, each a ``List`` or one or more documents;
- a file written by ``save`` (``load`` again): JSON (orjson), gzip-compressed when the name ends in
  ``.gz``.

Pods that have finished (phase Succeeded or Failed) are dropped, as the daemon's pod watch drops them;
``managedFields`` and the last-applied annotation are dropped from everything (nothing reads them).
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import yaml

from pyscheduler.backend.objects import slim

JSON = dict[str, Any]

FORMAT_KIND = "ClusterSnapshot"
FORMAT_API_VERSION = "whatif.pyscheduler.io/v1alpha1"

# What a snapshot keeps besides nodes and pods: the kinds the scheduler's plugins read (app.OBJECT_KINDS),
# the DRA kinds, and PriorityClasses (to resolve added workloads' spec.priorityClassName, as admission does).
OBJECT_KINDS: tuple[str, ...] = (
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "VolumeAttachment",
    "PodDisruptionBudget",
    "Namespace",
    "Service",
    "ReplicaSet",
    "StatefulSet",
    "ReplicationController",
    "PriorityClass",
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaim",
    "PodGroup",
)
# PodGroups are scheduling.k8s.io/v1alpha2, an alpha API most clusters do not serve: a 404 there is the
# normal case, not worth a warning. (They are kept whatever the gates; simulate uses them only with
# GenericWorkload on, as the daemon watches them only then.)
_ALPHA_KINDS = frozenset({"PodGroup"})
_TERMINAL = ("Succeeded", "Failed")
_FILE_SUFFIXES = (".yaml", ".yml", ".json", ".gz")


class SnapshotError(ValueError):
    """A snapshot that cannot be read: the message names the file (and document) and what is wrong."""


@dataclass
class ClusterSnapshot:
    """Nodes, pods (bound and pending) and the other objects scheduling reads, as API JSON."""

    nodes: list[JSON] = field(default_factory=list)
    pods: list[JSON] = field(default_factory=list)
    objects: dict[str, list[JSON]] = field(default_factory=dict)
    source: str = ""
    taken_at: str = ""
    warnings: list[str] = field(default_factory=list)

    # ---------------------------------------------------------------------------------- building
    @classmethod
    def from_objects(cls, objects: Iterable[Mapping[str, Any]], source: str = "") -> ClusterSnapshot:
        """Objects that each carry their ``kind`` (``List`` objects are opened)."""
        snap = cls(source=source, taken_at=_now())
        skipped: dict[str, int] = {}
        for i, obj in enumerate(objects):
            snap._add(obj, f"{source or '<objects>'}: object {i + 1}", skipped)
        for kind, n in sorted(skipped.items()):
            snap.warnings.append(f"{n} {kind} object(s) ignored: scheduling does not read that kind")
        return snap

    def _add(self, obj: Mapping[str, Any], where: str, skipped: dict[str, int]) -> None:
        if not isinstance(obj, Mapping):
            raise SnapshotError(f"{where}: expected an object, got {type(obj).__name__}")
        kind = obj.get("kind")
        if kind == "List" or (isinstance(kind, str) and kind.endswith("List") and "items" in obj):
            for j, item in enumerate(obj.get("items") or ()):
                item_kind = kind[:-4] if kind != "List" else None
                if item_kind and isinstance(item, Mapping) and "kind" not in item:
                    item = {**item, "kind": item_kind}
                self._add(item, f"{where}, item {j + 1}", skipped)
            return
        if not isinstance(kind, str) or not kind:
            raise SnapshotError(f"{where}: object without a kind")
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping) or not meta.get("name"):
            raise SnapshotError(f"{where}: {kind} without metadata.name")
        d = slim(dict(obj))
        if kind == "Node":
            self.nodes.append(d)
        elif kind == "Pod":
            if (d.get("status") or {}).get("phase") not in _TERMINAL:
                self.pods.append(d)
        elif kind in OBJECT_KINDS:
            self.objects.setdefault(kind, []).append(d)
        else:
            skipped[kind] = skipped.get(kind, 0) + 1

    @classmethod
    def from_cluster(
        cls, kubeconfig: str | None = None, context: str | None = None, *, api: Any = None
    ) -> ClusterSnapshot:
        """List the cluster (read-only). ``api``: an ``pyscheduler.client.api.Api`` to use instead of
        one made from ``kubeconfig``/``context``."""
        from pyscheduler.client.api import KINDS, Api, ApiError
        from pyscheduler.client.connection import load_configuration

        own = api is None
        if api is None:
            api = Api(load_configuration(kubeconfig, context), qps=50, burst=100)
        snap = cls(source=f"cluster {api.url('/')}".rstrip("/"), taken_at=_now())
        try:
            nodes, _ = api.list("/api/v1/nodes")
            pods, _ = api.list("/api/v1/pods", field_selector="status.phase!=Succeeded,status.phase!=Failed")
            snap.nodes = [slim({**n, "kind": "Node"}) for n in nodes]
            snap.pods = [slim({**p, "kind": "Pod"}) for p in pods]
            for kind in OBJECT_KINDS:
                prefix, resource, _ns = KINDS[kind]
                try:
                    items, _ = api.list(f"{prefix}/{resource}")
                except ApiError as e:
                    if e.status == 404 and kind in _ALPHA_KINDS:
                        continue
                    if e.status in (403, 404):
                        snap.warnings.append(f"{kind}: not listed ({e.status} {e.reason}); plugins see none")
                        continue
                    raise
                if items:
                    snap.objects[kind] = [slim({**o, "kind": kind}) for o in items]
        finally:
            if own:
                api.close()
        return snap

    # ---------------------------------------------------------------------------------- files
    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ClusterSnapshot:
        """A file written by ``save``, or kubectl YAML/JSON output: one file or a directory of them."""
        p = Path(path)
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(_FILE_SUFFIXES))
            if not files:
                raise SnapshotError(f"{p}: no .yaml, .yml or .json files in this directory")
            docs: list[tuple[str, Any]] = []
            for f in files:
                docs.extend(_read_documents(f))
            return cls._from_documents(docs, str(p))
        if not p.exists():
            raise SnapshotError(f"{p}: no such file or directory")
        docs = _read_documents(p)
        if len(docs) == 1 and isinstance(docs[0][1], Mapping) and docs[0][1].get("kind") == FORMAT_KIND:
            return cls._from_saved(docs[0][1], str(p))
        return cls._from_documents(docs, str(p))

    @classmethod
    def _from_documents(cls, docs: list[tuple[str, Any]], source: str) -> ClusterSnapshot:
        snap = cls(source=source, taken_at=_now())
        skipped: dict[str, int] = {}
        for where, doc in docs:
            if doc is None:
                continue
            if isinstance(doc, Mapping) and doc.get("kind") == FORMAT_KIND:
                raise SnapshotError(
                    f"{where}: a saved snapshot must be loaded on its own, not with other files"
                )
            snap._add(doc, where, skipped)
        for kind, n in sorted(skipped.items()):
            snap.warnings.append(f"{n} {kind} object(s) ignored: scheduling does not read that kind")
        if not snap.nodes:
            snap.warnings.append(f"{source}: no nodes in the snapshot")
        return snap

    @classmethod
    def _from_saved(cls, d: Mapping[str, Any], source: str) -> ClusterSnapshot:
        if d.get("apiVersion") != FORMAT_API_VERSION:
            raise SnapshotError(
                f"{source}: snapshot format {d.get('apiVersion')!r} is not {FORMAT_API_VERSION!r}"
            )
        objects = d.get("objects") or {}
        if not isinstance(objects, Mapping) or not isinstance(d.get("nodes", []), list):
            raise SnapshotError(f"{source}: a snapshot's nodes must be a list and its objects a mapping")
        return cls(
            nodes=list(d.get("nodes") or ()),
            pods=list(d.get("pods") or ()),
            objects={str(k): list(v) for k, v in objects.items()},
            source=str(d.get("source") or source),
            taken_at=str(d.get("takenAt") or ""),
            warnings=list(d.get("warnings") or ()),
        )

    def to_dict(self) -> JSON:
        return {
            "apiVersion": FORMAT_API_VERSION,
            "kind": FORMAT_KIND,
            "source": self.source,
            "takenAt": self.taken_at,
            "warnings": self.warnings,
            "nodes": self.nodes,
            "pods": self.pods,
            "objects": self.objects,
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the snapshot (JSON; gzip when the name ends in .gz). Written to a temporary file first, so
        an existing snapshot is never left half-written."""
        p = Path(path)
        data = orjson.dumps(self.to_dict())
        if p.name.endswith(".gz"):
            data = gzip.compress(data, compresslevel=6)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(p)

    # ---------------------------------------------------------------------------------- views
    def priority_classes(self) -> dict[str, JSON]:
        return {str(pc["metadata"]["name"]): pc for pc in self.objects.get("PriorityClass", ())}

    def node_names(self) -> list[str]:
        return [str(n["metadata"]["name"]) for n in self.nodes]

    def summary(self) -> str:
        bound = sum(1 for p in self.pods if (p.get("spec") or {}).get("nodeName"))
        others = sum(len(v) for v in self.objects.values())
        return (
            f"{len(self.nodes)} nodes, {bound} bound pods, {len(self.pods) - bound} pending pods, "
            f"{others} other objects"
        )


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's loader where PyYAML was built with it (kubectl output of 10,000 pods parses ~10x faster)."""


def _read_documents(path: Path) -> list[tuple[str, Any]]:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise SnapshotError(f"{path}: {e.strerror or e}") from e
    if path.name.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise SnapshotError(f"{path}: not a gzip file ({e})") from e
    stripped = raw.lstrip()
    if stripped.startswith((b"{", b"[")):
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise SnapshotError(f"{path}: invalid JSON: {e}") from e
        docs = doc if isinstance(doc, list) else [doc]
        return [(f"{path}" if len(docs) == 1 else f"{path}: item {i + 1}", d) for i, d in enumerate(docs)]
    try:
        text = raw.decode()
    except UnicodeDecodeError as e:
        raise SnapshotError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    try:
        loaded = list(yaml.load_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        at = f":{mark.line + 1}" if mark is not None else ""
        raise SnapshotError(f"{path}{at}: invalid YAML: {e.problem or e.context}") from e
    except yaml.YAMLError as e:
        raise SnapshotError(f"{path}: invalid YAML: {e}") from e
    return [(f"{path}: document {i + 1}", d) for i, d in enumerate(loaded)]
