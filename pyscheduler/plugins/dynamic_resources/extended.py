"""Extended resources backed by DRA (DRAExtendedResource, beta and on by default in 1.36; kube's
extendeddynamicresources.go).

A pod asking in its containers for an extended resource that a DeviceClass maps (``spec.extendedResourceName``,
or the implicit ``deviceclass.resource.kubernetes.io/<class>``) gets one special ResourceClaim for all such
resources. PreFilter starts it in memory (no requests, a temporary uid), or finds the one an earlier cycle
created (annotated ``resource.kubernetes.io/extended-resource-claim`` and controlled by the pod). Filter
gives it, per node, one ExactCount request per container and resource the node does not list in its
allocatable ("container-<i>-request-<j>", j the resource's index among the container's sorted request
names); PreBind creates it through the API, writes its allocation and reservation, and records the
container-to-request mapping in the pod's ``status.extendedResourceClaimStatus``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyscheduler.framework.dra import ResourceClaim, extended_resource_class
from pyscheduler.framework.helpers.names import is_extended_resource_name
from pyscheduler.framework.types import Container, NodeInfo, Pod

ANNOTATION = "resource.kubernetes.io/extended-resource-claim"  # resourceapi.ExtendedResourceClaimAnnotation
IN_MEMORY_NAME = "<extended-resources>"  # kube's specialClaimInMemName
ERR_CANNOT_FIT = "cannot fit resource"
ERR_PRIOR_CLAIM = "cannot schedule extended resource claim"
MSG_DELETED = "deletion of ResourceClaim completed"

JSON = dict[str, Any]


def is_dra_extended_resource_name(name: str) -> bool:
    """kube's IsDRAExtendedResourceName: an extended resource name, or the implicit class name."""
    return is_extended_resource_name(name) or name.startswith("deviceclass.resource.kubernetes.io/")


@dataclass
class ExtendedClaim:
    """The pod's special claim for this cycle (kube's draExtendedResource plus the claim)."""

    claim: ResourceClaim  # in memory (name IN_MEMORY_NAME) or from an earlier cycle
    requests: dict[str, int]  # the pod's extended resource requests (name -> count)
    classes: dict[str, str]  # resource name -> the DeviceClass that backs it
    # node name -> (the claim with that node's requests, the container mappings); None: nothing from DRA
    per_node: dict[str, tuple[ResourceClaim, list[JSON]] | None] = field(default_factory=dict)
    created: JSON | None = None  # the claim PreBind created (Unreserve deletes it)
    # what the node needs from DRA (resource, count pairs) -> the claim and mappings for it: nodes that
    # need the same share one, built once per cycle
    by_wanted: dict[tuple[tuple[str, int], ...], tuple[ResourceClaim, list[JSON]]] = field(
        default_factory=dict
    )

    @property
    def in_memory(self) -> bool:
        return self.claim.meta.name == IN_MEMORY_NAME


def find_prior_claim(pod: Pod, claims: Iterable[ResourceClaim]) -> ResourceClaim | None:
    for c in claims:
        meta = c.raw.get("metadata") or {}
        if (meta.get("annotations") or {}).get(ANNOTATION) != "true" or c.meta.namespace != pod.namespace:
            continue
        for o in meta.get("ownerReferences") or ():
            if o.get("name") == pod.name and o.get("uid") == pod.uid and o.get("controller"):
                return c
    return None


def pre_filter(
    pod: Pod, classes: Sequence[Mapping[str, Any]], claims: Iterable[ResourceClaim]
) -> ExtendedClaim | None:
    """The pod's special claim, or None when no requested extended resource is backed by a DeviceClass."""
    if not classes:
        return None
    requests = {r: q for r, q in pod.requests.scalar.items() if q and is_dra_extended_resource_name(r)}
    mapped = {r: c for r in requests if (c := extended_resource_class(classes, r)) is not None}
    if not mapped:
        return None
    prior = find_prior_claim(pod, claims)
    if prior is not None:
        return ExtendedClaim(prior, requests, mapped)
    raw: JSON = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": pod.namespace,
            "name": IN_MEMORY_NAME,
            "uid": str(uuid.uuid4()),  # temporary: keys the in-flight allocation
            "generateName": f"{pod.name}-extended-resources-",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid, "controller": True}
            ],
            "annotations": {ANNOTATION: "true"},
        },
        "spec": {},
    }
    return ExtendedClaim(ResourceClaim.from_dict(raw), requests, mapped)


class CannotFit(Exception):
    """A requested extended resource neither in the node's allocatable nor backed by DRA."""


def for_node(ext: ExtendedClaim, pod: Pod, node_info: NodeInfo) -> tuple[ResourceClaim, list[JSON]] | None:
    """kube's filterExtendedResources: the claim with this node's requests, or None when the node's
    allocatable covers every extended resource (NodeResourcesFit checks those). Nodes needing the same
    resources get the same claim object (read-only; one node's is written at PreBind)."""
    alloc = node_info.allocatable.scalar
    wanted: dict[str, int] = {}
    for rname, qty in ext.requests.items():
        have = alloc.get(rname)
        if rname in ext.classes and not have:
            wanted[rname] = qty
        elif have is None:
            raise CannotFit(rname)
    if not wanted:
        return None
    key = tuple(sorted(wanted.items()))
    hit = ext.by_wanted.get(key)
    if hit is None:
        requests, mappings = requests_and_mappings(pod, sorted(wanted), ext.classes)
        raw = dict(ext.claim.raw)
        raw["spec"] = {"devices": {"requests": requests}}
        hit = ext.by_wanted[key] = (ResourceClaim.from_dict(raw), mappings)
    return hit


def _request_names(c: Container) -> list[str]:
    r = c.requests
    names = list(r.scalar)
    if r.milli_cpu:
        names.append("cpu")
    if r.memory:
        names.append("memory")
    if r.ephemeral_storage:
        names.append("ephemeral-storage")
    return sorted(names)


def _container_request(
    index: int, c: Container, rname: str, class_name: str, reusable: Sequence[JSON | None]
) -> tuple[JSON | None, list[JSON]]:
    """kube's createResourceRequestAndMappings for one container and resource."""
    want = c.requests.scalar.get(rname, 0)
    if not want:
        return None, []
    mappings: list[JSON] = []
    got = 0
    for r in reusable:
        if r is None:
            continue
        got += int(r["exactly"]["count"])
        mappings.append({"containerName": c.name, "resourceName": rname, "requestName": r["name"]})
        if got >= want:
            return None, mappings
    names = _request_names(c)
    name = f"container-{index}-request-{names.index(rname) if rname in names else 0}"
    request = {
        "name": name,
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": want - got},
    }
    mappings.append({"containerName": c.name, "resourceName": rname, "requestName": name})
    return request, mappings


def requests_and_mappings(
    pod: Pod, resources: Sequence[str], classes: Mapping[str, str]
) -> tuple[list[JSON], list[JSON]]:
    """kube's createRequestsAndMappings: requests sorted by name; a plain init container reuses the
    devices of the long-lived containers after it, and the plain init containers share their largest
    request."""
    containers = [*pod.init_containers, *pod.containers]
    n_init = len(pod.init_containers)
    long_lived = [i for i, c in enumerate(containers) if i >= n_init or c.restart_policy == "Always"]
    short_lived = [i for i in range(n_init) if containers[i].restart_policy != "Always"]
    requests: list[JSON] = []
    mappings: list[JSON] = []
    for rname in resources:
        class_name = classes[rname]
        long_reqs: list[JSON | None] = [None] * len(containers)
        long_maps: list[JSON] = []
        for i in long_lived:
            req, maps = _container_request(i, containers[i], rname, class_name, ())
            long_reqs[i] = req
            long_maps.extend(maps)
        biggest: JSON | None = None
        short_names: set[str] = set()
        short_maps: list[JSON] = []
        for i in short_lived:
            req, maps = _container_request(i, containers[i], rname, class_name, long_reqs[i:])
            if req is not None:
                short_names.add(req["name"])
                if biggest is None or biggest["exactly"]["count"] < req["exactly"]["count"]:
                    biggest = req
            short_maps.extend(maps)
        if biggest is not None and len(short_names) > 1:
            short_names.discard(biggest["name"])
            for m in short_maps:
                if m["requestName"] in short_names:
                    m["requestName"] = biggest["name"]
        if biggest is not None:
            requests.append(biggest)
        requests.extend(r for r in long_reqs if r is not None)
        mappings.extend(long_maps)
        mappings.extend(short_maps)
    requests.sort(key=lambda r: r["name"])
    return requests, mappings
