"""PVC, PV and StorageClass JSON read the way kube's component-helpers/storage/volume does, and the
claims a pod's volumes use. VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits share
these, so they agree on what a claim's class is or which claims a pod has.

Everything works on the API's JSON (``Mapping[str, Any]``) as ``handle.objects`` returns it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pyscheduler.framework.interfaces import ClusterObjects
from pyscheduler.framework.quantity import QuantityError, int_value, parse_quantity
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


def store_versions(objects: ClusterObjects, kinds: Sequence[str]) -> tuple[int, ...] | None:
    """The object store's change counts of these kinds (``ObjectStore.version``), or None when the
    store keeps none: then nothing derived from its objects may be kept across cycles."""
    version = getattr(objects, "version", None)
    if version is None:
        return None
    return tuple(version(k) for k in kinds)


def store_changes(objects: ClusterObjects, kind: str, since: int) -> set[str] | None:
    """The keys (``<namespace>/<name>``) of the objects of ``kind`` changed after version ``since``
    (``ObjectStore.changed``); None when the store cannot tell."""
    changed = getattr(objects, "changed", None)
    if changed is None:
        return None
    keys: set[str] | None = changed(kind, since)
    return keys


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


def pvc_claim_names(pod: Pod) -> list[str]:
    """The claim names of the pod's persistentVolumeClaim volumes only (generic ephemeral volumes left
    out), in volume order: what VolumeZone and VolumeRestrictions look at."""
    return [c.name for c in pod_claims(pod) if not c.ephemeral]


def is_controlled_by(pvc: JSONMap, pod: Pod) -> bool:
    """The claim's controller owner reference is the pod (a generic ephemeral volume's claim)."""
    return any(
        isinstance(ref, Mapping) and ref.get("controller") and ref.get("uid") == pod.uid
        for ref in meta(pvc).get("ownerReferences") or ()
    )


def ephemeral_owner_error(pod: Pod, pvc: JSONMap) -> str | None:
    """ephemeral.VolumeIsForPod: the claim must be controlled by the pod."""
    if is_controlled_by(pvc, pod):
        return None
    return (
        f"PVC {namespace_of(pvc)}/{name_of(pvc)} was not created for pod "
        f"{pod.namespace}/{pod.name} (pod is not owner)"
    )
