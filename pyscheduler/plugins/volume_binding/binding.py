"""Binding a PV to a claim the way the PV controller expects it (claimRef, bound-by-controller), and
the errors of the binding path."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyscheduler.framework.helpers.storage import (
    ANN_BOUND_BY_CONTROLLER,
    JSONMap,
    annotations_of,
    is_volume_bound_to_claim,
    name_of,
    namespace_of,
    rv_of,
    spec,
    thaw,
    uid_of,
)


class VolumeError(Exception):
    """What kube's binder returns as an error (reported as an Error status)."""


class NotFound(VolumeError):
    """An API NotFound error, with the API server's message form."""

    def __init__(self, resource: str, name: str) -> None:
        super().__init__(f'{resource} "{name}" not found')


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
