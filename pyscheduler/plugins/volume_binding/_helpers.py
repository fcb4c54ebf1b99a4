"""Storage helpers for VolumeBinding: reading PVC/PV/StorageClass JSON the way kube's
component-helpers/storage/volume does, PV node affinity, StorageClass allowed topologies, and the
assume cache that keeps in-flight bindings visible to later scheduling cycles.

Everything works on the API's JSON (``Mapping[str, Any]``) as ``handle.objects`` returns it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pyscheduler.framework.interfaces import ClusterObjects
from pyscheduler.framework.quantity import QuantityError, int_value, parse_quantity
from pyscheduler.framework.selectors import (
    LabelSelector,
    NodeSelectorTerm,
    SelectorError,
    parse_node_selector_term,
)
from pyscheduler.framework.types import Pod

JSONMap = Mapping[str, Any]

PVC = "PersistentVolumeClaim"
PV = "PersistentVolume"
STORAGE_CLASS = "StorageClass"
CSI_NODE = "CSINode"
CSI_DRIVER = "CSIDriver"
CSI_STORAGE_CAPACITY = "CSIStorageCapacity"

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


class VolumeError(Exception):
    """What kube's binder returns as an error (reported as an Error status)."""


class NotFound(VolumeError):
    """An API NotFound error, with the API server's message form."""

    def __init__(self, resource: str, name: str) -> None:
        super().__init__(f'{resource} "{name}" not found')


# --------------------------------------------------------------------------------- JSON accessors

# Kinds the ClusterObjects may not serve (optional features): treated as absent then.
_OPTIONAL_ERRORS = (LookupError, ValueError, TypeError, NotImplementedError)


def get_optional(objects: ClusterObjects, kind: str, namespace: str, name: str) -> JSONMap | None:
    try:
        return objects.get(kind, namespace, name)
    except _OPTIONAL_ERRORS:
        return None


def list_optional(objects: ClusterObjects, kind: str) -> Iterable[JSONMap]:
    try:
        return list(objects.list(kind))
    except _OPTIONAL_ERRORS:
        return []


def meta(obj: JSONMap) -> JSONMap:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def spec(obj: JSONMap) -> JSONMap:
    s = obj.get("spec")
    return s if isinstance(s, Mapping) else {}


def name_of(obj: JSONMap) -> str:
    return str(meta(obj).get("name") or "")


def namespace_of(obj: JSONMap) -> str:
    return str(meta(obj).get("namespace") or "")


def uid_of(obj: JSONMap) -> str:
    return str(meta(obj).get("uid") or "")


def rv_of(obj: JSONMap) -> str:
    return str(meta(obj).get("resourceVersion") or "")


def annotations_of(obj: JSONMap) -> Mapping[str, str]:
    a = meta(obj).get("annotations")
    return a if isinstance(a, Mapping) else {}


def labels_of(obj: JSONMap) -> Mapping[str, str]:
    lb = meta(obj).get("labels")
    return lb if isinstance(lb, Mapping) else {}


def is_deleting(obj: JSONMap) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def thaw(value: Any) -> Any:
    """A mutable deep copy of API JSON (mappings become dicts, sequences lists)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    return value


def claim_class(pvc: JSONMap) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation wins over spec.storageClassName."""
    ann = annotations_of(pvc)
    if ANN_BETA_STORAGE_CLASS in ann:
        return str(ann[ANN_BETA_STORAGE_CLASS])
    return str(spec(pvc).get("storageClassName") or "")


def pv_class(pv: JSONMap) -> str:
    """GetPersistentVolumeClass."""
    ann = annotations_of(pv)
    if ANN_BETA_STORAGE_CLASS in ann:
        return str(ann[ANN_BETA_STORAGE_CLASS])
    return str(spec(pv).get("storageClassName") or "")


def binding_mode(sc: JSONMap) -> str:
    """The StorageClass's volumeBindingMode; a missing field is the API's default, Immediate."""
    return str(sc.get("volumeBindingMode") or "Immediate")


def _quantity(value: Any) -> Fraction:
    if value is None:
        return Fraction(0)
    try:
        return parse_quantity(value)
    except (QuantityError, TypeError):
        return Fraction(0)


def storage_request(pvc: JSONMap) -> Fraction | None:
    """spec.resources.requests.storage, None when absent."""
    res = spec(pvc).get("resources")
    req = res.get("requests") if isinstance(res, Mapping) else None
    if not isinstance(req, Mapping) or "storage" not in req:
        return None
    return _quantity(req["storage"])


def pv_capacity(pv: JSONMap) -> Fraction:
    cap = spec(pv).get("capacity")
    return _quantity(cap.get("storage")) if isinstance(cap, Mapping) else Fraction(0)


def quantity_value(value: Any) -> int:
    """Quantity.Value(): base units rounded up."""
    try:
        return int_value(value)
    except (QuantityError, TypeError):
        return 0


def is_pvc_fully_bound(pvc: JSONMap) -> bool:
    return bool(spec(pvc).get("volumeName")) and ANN_BIND_COMPLETED in annotations_of(pvc)


def is_volume_bound_to_claim(pv: JSONMap, pvc: JSONMap) -> bool:
    ref = spec(pv).get("claimRef")
    if not isinstance(ref, Mapping):
        return False
    if name_of(pvc) != (ref.get("name") or "") or namespace_of(pvc) != (ref.get("namespace") or ""):
        return False
    ref_uid = ref.get("uid") or ""
    return not (ref_uid and ref_uid != uid_of(pvc))


def bind_volume_to_claim(pv: JSONMap, pvc: JSONMap) -> tuple[dict[str, Any], bool]:
    """GetBindVolumeToClaim: a copy of the PV bound to the claim, and whether anything changed."""
    should_set_bound_by_controller = not is_volume_bound_to_claim(pv, pvc)
    clone: dict[str, Any] = thaw(pv)
    clone.setdefault("metadata", {})
    clone.setdefault("spec", {})
    dirty = False
    ref = spec(pv).get("claimRef")
    if (
        not isinstance(ref, Mapping)
        or ref.get("name") != name_of(pvc)
        or ref.get("namespace") != namespace_of(pvc)
        or (ref.get("uid") or "") != uid_of(pvc)
    ):
        clone["spec"]["claimRef"] = claim_reference(pvc)
        dirty = True
    if should_set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in annotations_of(clone):
        clone["metadata"].setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
        dirty = True
    return clone, dirty


def claim_reference(pvc: JSONMap) -> dict[str, str]:
    """The ObjectReference to a claim that the PV controller expects in PV.spec.claimRef."""
    return {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": namespace_of(pvc),
        "name": name_of(pvc),
        "uid": uid_of(pvc),
        "resourceVersion": rv_of(pvc),
    }


# ------------------------------------------------------------------------------ pod claim names


@dataclass(frozen=True, slots=True)
class PodClaim:
    name: str
    ephemeral: bool


def pod_claims(pod: Pod) -> list[PodClaim]:
    """The claims a pod's volumes use: persistentVolumeClaim volumes and generic ephemeral volumes
    (whose claim is named ``<pod name>-<volume name>``), in volume order."""
    out: list[PodClaim] = []
    for v in pod.volumes:
        src = v.get("persistentVolumeClaim")
        if src is not None:
            out.append(PodClaim(str(src.get("claimName") or "") if isinstance(src, Mapping) else "", False))
        elif v.get("ephemeral") is not None:
            out.append(PodClaim(f"{pod.name}-{v.get('name') or ''}", True))
    return out


def ephemeral_owner_error(pod: Pod, pvc: JSONMap) -> str | None:
    """ephemeral.VolumeIsForPod: the claim must be controlled by the pod."""
    for ref in meta(pvc).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("uid") == pod.uid:
            return None
    return (
        f"PVC {namespace_of(pvc)}/{name_of(pvc)} was not created for pod "
        f"{pod.namespace}/{pod.name} (pod is not owner)"
    )


# ------------------------------------------------------------------------------- node affinity


class NodeAffinity:
    """A PV's spec.nodeAffinity.required, checked the way CheckNodeAffinity does: against the
    node's labels only (no name, so matchFields on metadata.name never match In). Invalid terms
    match nothing; no required selector matches every node."""

    __slots__ = ("terms",)

    def __init__(self, terms: tuple[NodeSelectorTerm, ...] | None) -> None:
        self.terms = terms

    @classmethod
    def of(cls, pv: JSONMap) -> NodeAffinity:
        na = spec(pv).get("nodeAffinity")
        req = na.get("required") if isinstance(na, Mapping) else None
        if not isinstance(req, Mapping):
            return _ANY_NODE
        terms: list[NodeSelectorTerm] = []
        for i, t in enumerate(req.get("nodeSelectorTerms") or ()):
            if not isinstance(t, Mapping):
                continue
            try:
                terms.append(parse_node_selector_term(t, f"nodeSelectorTerms[{i}]"))
            except SelectorError:
                continue
        return cls(tuple(terms))

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.terms is None:
            return True
        return any(t.matches(labels, "") for t in self.terms)


_ANY_NODE = NodeAffinity(None)


_Term = tuple[tuple[str, frozenset[str]], ...]


class TopologySelector:
    """StorageClass.allowedTopologies (MatchTopologySelectorTerms): no terms match everything; a
    term matches when each of its expressions finds the node's label value among its values; an
    empty term matches nothing."""

    __slots__ = ("terms",)

    def __init__(self, allowed: Any) -> None:
        terms: list[_Term] = []
        for t in allowed or ():
            exprs = t.get("matchLabelExpressions") if isinstance(t, Mapping) else None
            reqs = tuple(
                (str(e.get("key") or ""), frozenset(str(v) for v in e.get("values") or ()))
                for e in exprs or ()
                if isinstance(e, Mapping)
            )
            terms.append(reqs)
        self.terms: tuple[_Term, ...] | None = tuple(terms) if terms else None

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.terms is None:
            return True
        for reqs in self.terms:
            if not reqs:
                continue
            if all(k in labels and labels[k] in values for k, values in reqs):
                return True
        return False


# ------------------------------------------------------------------------------ matching PVs


@dataclass(frozen=True, slots=True)
class Candidate:
    """An unbound-claim candidate PV with what FindMatchingVolume reads, parsed once per cycle."""

    pv: JSONMap
    name: str
    capacity: Fraction
    volume_mode: str
    deleting: bool
    affinity: NodeAffinity
    available: bool
    labels: Mapping[str, str]
    storage_class: str
    access_modes: frozenset[str]
    attributes_class: str

    @classmethod
    def of(cls, pv: JSONMap) -> Candidate:
        s = spec(pv)
        status = pv.get("status")
        phase = status.get("phase") if isinstance(status, Mapping) else None
        return cls(
            pv=pv,
            name=name_of(pv),
            capacity=pv_capacity(pv),
            volume_mode=str(s.get("volumeMode") or "Filesystem"),
            deleting=is_deleting(pv),
            affinity=NodeAffinity.of(pv),
            available=phase == "Available",
            labels=labels_of(pv),
            storage_class=pv_class(pv),
            access_modes=frozenset(str(m) for m in s.get("accessModes") or ()),
            attributes_class=str(s.get("volumeAttributesClassName") or ""),
        )


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    """An unbound claim with what matching reads, parsed once per cycle."""

    pvc: JSONMap
    key: str
    request: Fraction
    has_request: bool
    storage_class: str
    selector: LabelSelector | None
    volume_mode: str
    access_modes: tuple[str, ...]
    attributes_class: str
    selected_node: str | None

    @classmethod
    def of(cls, pvc: JSONMap) -> ClaimInfo:
        s = spec(pvc)
        sel = s.get("selector")
        selector = None
        if isinstance(sel, Mapping):
            try:
                selector = LabelSelector.parse(sel, "selector")
            except SelectorError as e:
                raise VolumeError(
                    f"error creating internal label selector for claim: "
                    f"{namespace_of(pvc)}/{name_of(pvc)}: {e}"
                ) from e
        req = storage_request(pvc)
        ann = annotations_of(pvc)
        return cls(
            pvc=pvc,
            key=f"{namespace_of(pvc)}/{name_of(pvc)}",
            request=req if req is not None else Fraction(0),
            has_request=req is not None,
            storage_class=claim_class(pvc),
            selector=selector,
            volume_mode=str(s.get("volumeMode") or "Filesystem"),
            access_modes=tuple(str(m) for m in s.get("accessModes") or ()),
            attributes_class=str(s.get("volumeAttributesClassName") or ""),
            selected_node=str(ann[ANN_SELECTED_NODE]) if ANN_SELECTED_NODE in ann else None,
        )


def claim_candidates(claim: ClaimInfo, candidates: Sequence[Candidate]) -> list[tuple[Candidate, bool]]:
    """The part of FindMatchingVolume that does not depend on the node, done once per claim: the
    PVs (in order) that could serve the claim, each flagged when it is pre-bound to the claim.

    A PV bound to another claim, too small, of another volume mode or being deleted is out. A PV
    pre-bound to the claim stays whatever else it is; the others must also be Available, match the
    claim's selector, class, access modes and volume attributes class."""
    out: list[tuple[Candidate, bool]] = []
    for c in candidates:
        prebound = False
        if spec(c.pv).get("claimRef") is not None:
            if not is_volume_bound_to_claim(c.pv, claim.pvc):
                continue
            prebound = True
        if c.capacity < claim.request or c.volume_mode != claim.volume_mode or c.deleting:
            continue
        if not prebound and not (
            c.available
            and (claim.selector is None or claim.selector.matches(c.labels))
            and c.storage_class == claim.storage_class
            and all(m in c.access_modes for m in claim.access_modes)
            and c.attributes_class == claim.attributes_class
        ):
            continue
        out.append((c, prebound))
    return out


def pick_volume(
    candidates: Sequence[tuple[Candidate, bool]],
    node_labels: Mapping[str, str],
    excluded: set[str] | frozenset[str],
) -> Candidate | None:
    """The rest of FindMatchingVolume, per node: the first PV pre-bound to the claim decides (it
    matches if its node affinity fits the node, else nothing does); otherwise the smallest PV whose
    node affinity fits, first one on ties."""
    smallest: Candidate | None = None
    for c, prebound in candidates:
        if c.name in excluded:
            continue
        fits = c.affinity.matches(node_labels)
        if prebound:
            return c if fits else None
        if fits and (smallest is None or smallest.capacity > c.capacity):
            smallest = c
    return smallest


class CandidateIndex:
    """A claim's candidate PVs indexed by node label, so a node only looks at PVs that could be
    reachable from it: a PV whose every node-affinity term requires some label ``k In [v...]`` is
    filed under those (k, v); PVs pre-bound to the claim and PVs without such a requirement are
    checked on every node. ``for_node`` keeps the candidates' original order."""

    __slots__ = ("_always", "_by_label", "_items")

    def __init__(self, items: Sequence[tuple[Candidate, bool]]) -> None:
        self._items = list(items)
        self._always: list[int] = []
        self._by_label: dict[str, dict[str, list[int]]] = {}
        for pos, (c, prebound) in enumerate(self._items):
            keys = None if prebound else _index_keys(c.affinity)
            if keys is None:
                self._always.append(pos)
                continue
            for key, values in keys:
                by_value = self._by_label.setdefault(key, {})
                for v in values:
                    by_value.setdefault(v, []).append(pos)

    def __len__(self) -> int:
        return len(self._items)

    def for_node(self, labels: Mapping[str, str]) -> list[tuple[Candidate, bool]]:
        if not self._by_label:
            return self._items
        positions = set(self._always)
        for key, by_value in self._by_label.items():
            value = labels.get(key)
            if value is not None:
                positions.update(by_value.get(value, ()))
        return [self._items[i] for i in sorted(positions)]


def _index_keys(affinity: NodeAffinity) -> list[tuple[str, frozenset[str]]] | None:
    """One ``In`` requirement per term (any matching node has one of those labels), or None when
    some term has none (the PV must be checked everywhere). No terms: matches no node."""
    if affinity.terms is None:
        return None
    keys: list[tuple[str, frozenset[str]]] = []
    for term in affinity.terms:
        req = next((r for r in term.expressions if r.operator == "In"), None)
        if req is None:
            if not term.expressions and not term.fields:
                continue  # an empty term matches nothing
            return None
        keys.append((req.key, req.values))
    return keys


def find_matching_volume(
    claim: ClaimInfo,
    candidates: Sequence[Candidate],
    node_labels: Mapping[str, str],
    excluded: set[str] | frozenset[str],
) -> Candidate | None:
    """FindMatchingVolume on the scheduler path: a PV pre-bound to the claim if its node affinity
    fits, else the smallest Available PV of the claim's class that satisfies size, volume mode,
    selector, node affinity, access modes and volume attributes class."""
    return pick_volume(claim_candidates(claim, candidates), node_labels, excluded)


# ------------------------------------------------------------------------------ assume cache


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

    def assume(self, obj: JSONMap) -> None:
        with self._lock:
            self._assumed[self.key(namespace_of(obj), name_of(obj))] = obj

    def restore(self, namespace: str, name: str) -> None:
        with self._lock:
            self._assumed.pop(self.key(namespace, name), None)

    def assumed_keys(self) -> list[str]:
        with self._lock:
            return sorted(self._assumed)
