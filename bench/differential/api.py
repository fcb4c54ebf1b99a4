"""The differential's own access to the cluster: JSON requests as the admin, lists, creates with their
status, deletes that wait for finalizers to go, and the devices an allocated claim holds."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from bench.differential.common import FINALIZED_KINDS, JSON, KINDS, RunError, wait_for
from pyscheduler.testing.cluster import LocalCluster


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def object_key(obj: Mapping[str, Any]) -> str:
    return f"{namespace_of(obj)}/{name_of(obj)}"


def allocated_devices(claim: Mapping[str, Any]) -> list[str]:
    """A ResourceClaim's allocation as "request driver/pool/device" strings (sorted), with " admin" for
    admin access, the binding (failure) conditions the device carried and the consumed capacity
    (consumable capacity); the shareID is a random UID, left out."""
    alloc = (claim.get("status") or {}).get("allocation") or {}
    out = []
    for r in (alloc.get("devices") or {}).get("results") or ():
        text = f"{r.get('request')} {r.get('driver')}/{r.get('pool')}/{r.get('device')}"
        if r.get("adminAccess"):
            text += " admin"
        if r.get("bindingConditions") or r.get("bindingFailureConditions"):
            text += " binding=" + ",".join(r.get("bindingConditions") or ())
            text += " failure=" + ",".join(r.get("bindingFailureConditions") or ())
        consumed = r.get("consumedCapacity") or {}
        if consumed:
            text += " " + ",".join(f"{k}={v}" for k, v in sorted(consumed.items()))
        out.append(text)
    return sorted(out)


class Api:
    """Thin helpers over ``LocalCluster.request`` for the objects scenarios use."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        ok: Iterable[int] = (200, 201, 202),
        content_type: str = "application/json",
    ) -> Any:
        status, out = self.cluster.request(method, path, body, content_type=content_type)
        if status not in tuple(ok):
            raise RunError(f"{method} {path}: HTTP {status}: {str(out)[:400]}")
        return out

    def get(self, path: str) -> Any:
        status, out = self.cluster.request("GET", path)
        if status == 404:
            return None
        if status != 200:
            raise RunError(f"GET {path}: HTTP {status}: {str(out)[:400]}")
        return out

    def items(self, path: str) -> list[JSON]:
        out = self.get(path)
        return list(out.get("items") or []) if out else []

    @staticmethod
    def collection(kind: str, ns: str = "") -> str:
        if kind == "Pod":
            return f"/api/v1/namespaces/{ns}/pods"
        if kind == "Node":
            return "/api/v1/nodes"
        path, namespaced = KINDS[kind]
        return path.format(ns=ns) if namespaced else path

    def path_of(self, obj: Mapping[str, Any]) -> str:
        return f"{self.collection(str(obj['kind']), namespace_of(obj))}/{name_of(obj)}"

    def create(self, obj: JSON) -> JSON:
        body = {k: v for k, v in obj.items() if k != "status" or obj["kind"] in ("Node",)}
        ok: tuple[int, ...] = (200, 201, 409) if obj["kind"] == "Namespace" else (200, 201)
        out: JSON = self.call("POST", self.collection(str(obj["kind"]), namespace_of(obj)), body, ok=ok)
        status = obj.get("status")
        if status and obj["kind"] not in ("Node", "Pod", "Namespace"):
            for attempt in range(5):  # a controller may update the object in between: retry on conflict
                cur = self.call("GET", self.path_of(obj))
                cur["status"] = copy.deepcopy(status)
                code, put = self.cluster.request("PUT", self.path_of(obj) + "/status", cur)
                if code == 200:
                    out = put
                    break
                if code != 409 or attempt == 4:
                    raise RunError(f"PUT {self.path_of(obj)}/status: HTTP {code}: {str(put)[:400]}")
        return out

    def drop_finalizers(self, obj: Mapping[str, Any]) -> None:
        self.call(
            "PATCH",
            self.path_of(obj),
            {"metadata": {"finalizers": None}},
            ok=(200, 404),
            content_type="application/merge-patch+json",
        )

    def delete(self, obj: Mapping[str, Any], grace0: bool = False) -> None:
        if obj["kind"] in FINALIZED_KINDS:
            self.drop_finalizers(obj)
        q = "?gracePeriodSeconds=0" if grace0 else ""
        self.call("DELETE", self.path_of(obj) + q, ok=(200, 202, 404))

    def wait_gone(self, paths: Iterable[str], timeout: float = 30.0) -> None:
        left = list(paths)

        def gone() -> bool | None:
            left[:] = [p for p in left if self.get(p) is not None]
            return True if not left else None

        if wait_for(gone, timeout) is None:
            raise RunError(f"still present after {timeout:.0f}s: {left[:5]}")

    def bound_pods(self) -> dict[str, str]:
        """ns/name -> node of every bound, not terminating pod in the cluster."""
        out: dict[str, str] = {}
        for p in self.items("/api/v1/pods"):
            if (
                p["spec"].get("nodeName")
                and not p["metadata"].get("deletionTimestamp")
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            ):
                out[object_key(p)] = p["spec"]["nodeName"]
        return out
