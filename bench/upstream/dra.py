"""scheduler_perf's Dynamic Resource Allocation operations, done by the harness (there is no kubelet and no
DRA driver on our control plane).

``createResourceDriver``: upstream's test driver publishes, for every node whose name matches the glob
``nodes``, one ResourceSlice named after the node (pool = node name, one slice in the pool) with
``maxClaimsPerNode`` devices ``instance-<i>``, each with the attributes ``model`` = A100, ``family`` = GPU,
``driverVersion`` = 1.2.3, ``dra.example.com/numa`` = i and 1Gi of ``memory`` capacity. The harness
creates exactly those slices.

``allocResourceClaims``: every not yet allocated ResourceClaim of the namespace (all namespaces when none
is given) gets an allocation written to its status, as if a scheduler had placed it: claims one at a
time, nodes tried in a shuffled order (fixed seed, so both schedulers face the same allocations), the
first node whose devices fit wins. The allocation is computed by pyscheduler's structured allocator (the
same answer kube's allocator gives for these claims: one device of a class per request).

Pods that name a ResourceClaimTemplate need the resourceclaim controller (kube-controller-manager's, as
scheduler_perf runs it): ``needs_claim_controller(ops)`` says when the runner must start it.
"""

from __future__ import annotations

import fnmatch
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import yaml

from bench.measure import Conn, Endpoint, post_objects
from bench.workloads import dra_slice
from pyscheduler.framework.dra import DeviceClass, ResourceClaim, ResourceSlice
from pyscheduler.plugins.dynamic_resources.allocator import AllocationError, Allocator
from pyscheduler.plugins.dynamic_resources.cel import SelectorCache

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"


class DraOpError(RuntimeError):
    pass


def driver_slice(driver: str, node: str, devices: int) -> dict[str, Any]:
    """The ResourceSlice upstream's test driver publishes for one node."""
    return dra_slice(node, devices, driver=driver, generation=0)


def create_resource_driver(endpoint: Endpoint, conn: Conn, op: Mapping[str, Any], creators: int) -> int:
    """Publish the driver's slices for the matching nodes; returns how many."""
    driver = op.get("driverName") or ""
    pattern = op.get("nodes") or ""
    per_node = int(op.get("maxClaimsPerNode") or 0)
    if not driver or not pattern:
        raise DraOpError("createResourceDriver: driverName and nodes must be set")
    nodes = [n["metadata"]["name"] for n in conn.json("GET", "/api/v1/nodes")["items"]]
    matching = [n for n in nodes if fnmatch.fnmatchcase(n, pattern)]
    items = [(n, orjson.dumps(driver_slice(driver, n, per_node))) for n in matching]
    errors = post_objects(endpoint, SLICES, items, creators)
    if errors:
        raise DraOpError(f"createResourceDriver: {errors[:3]}")
    return len(matching)


def _device_ids(claim: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    alloc = (claim.get("status") or {}).get("allocation") or {}
    return [
        (r["driver"], r["pool"], r["device"]) for r in ((alloc.get("devices") or {}).get("results") or ())
    ]


def alloc_resource_claims(conn: Conn, namespace: str | None, seed: int = 0) -> int:
    """Allocate every unallocated claim of ``namespace`` (None: all); returns how many were allocated."""
    path = (
        f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"
        if namespace
        else "/apis/resource.k8s.io/v1/resourceclaims"
    )
    claims = conn.json("GET", path)["items"]
    every = conn.json("GET", "/apis/resource.k8s.io/v1/resourceclaims")["items"]
    allocated = {d for c in every for d in _device_ids(c)}
    slices = [ResourceSlice.from_dict(s) for s in conn.json("GET", SLICES)["items"]]
    classes = {c["metadata"]["name"]: DeviceClass.from_dict(c) for c in conn.json("GET", CLASSES)["items"]}
    nodes = [
        (n["metadata"]["name"], n["metadata"].get("labels") or {})
        for n in conn.json("GET", "/api/v1/nodes")["items"]
    ]
    rng = random.Random(seed)
    cel = SelectorCache()
    done = 0
    for k, raw in enumerate(claims):
        if (raw.get("status") or {}).get("allocation"):
            continue
        claim = ResourceClaim.from_dict(raw)
        allocator = Allocator(classes.get, slices, allocated, cel)
        rng.shuffle(nodes)
        for name, labels in nodes:
            try:
                result = allocator.allocate(name, labels, [claim])
            except AllocationError as e:
                raise DraOpError(f"allocResourceClaims: claim {k}: {e}") from None
            if result is None:
                continue
            raw = {**raw, "status": {**(raw.get("status") or {}), "allocation": result[0]}}
            meta = raw["metadata"]
            conn.json(
                "PUT",
                f"/apis/resource.k8s.io/v1/namespaces/{meta['namespace']}/resourceclaims/{meta['name']}/status",
                raw,
            )
            allocated.update(_device_ids(raw))
            done += 1
            break
        else:
            raise DraOpError(f"allocResourceClaims: could not allocate claim {k} of {len(claims)}")
    return done


def needs_claim_controller(ops: Sequence[Mapping[str, Any]], folder: Path) -> bool:
    """Whether the workload makes ResourceClaimTemplates (its pods then need the resourceclaim
    controller to get their claims)."""
    for op in ops:
        path = op.get("templatePath")
        if op.get("opcode") == "createAny" and path:
            try:
                kind = (yaml.safe_load((folder / path).read_text()) or {}).get("kind")
            except (OSError, yaml.YAMLError):
                continue
            if kind == "ResourceClaimTemplate":
                return True
    return False
