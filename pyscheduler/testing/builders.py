"""Builders for pods, nodes and NodeInfos, for our tests and for plugin authors' tests.

Each builder assembles the object's API JSON, so the same builder makes a record for a unit test
(``.obj()``) and a manifest to create on a real cluster (``.json()``)::

    pod = make_pod("web").req(cpu="500m", memory="1Gi").label("app", "web").obj()
    node = make_node("n1").capacity(cpu="4", memory="8Gi", pods=110).label("zone", "a").obj()
    info = make_node_info(node, pod)

Names default to something unique; uids are derived from names so tests can predict them.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.helpers.timefmt import rfc3339
from pyscheduler.framework.types import JSON, Node, NodeInfo, Pod, PodInfo

_counter = itertools.count(1)


class PodBuilder:
    def __init__(self, name: str | None = None, namespace: str = "default") -> None:
        name = name or f"pod-{next(_counter)}"
        self._d: JSON = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
            "spec": {"containers": [{"name": "c0", "image": "registry.k8s.io/pause:3.10"}]},
            "status": {},
        }

    # metadata
    def name(self, name: str) -> PodBuilder:
        self._d["metadata"]["name"] = name
        return self

    def namespace(self, ns: str) -> PodBuilder:
        self._d["metadata"]["namespace"] = ns
        return self

    def uid(self, uid: str) -> PodBuilder:
        self._d["metadata"]["uid"] = uid
        return self

    def label(self, key: str, value: str) -> PodBuilder:
        self._d["metadata"].setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: Mapping[str, str]) -> PodBuilder:
        self._d["metadata"].setdefault("labels", {}).update(labels)
        return self

    def annotation(self, key: str, value: str) -> PodBuilder:
        self._d["metadata"].setdefault("annotations", {})[key] = value
        return self

    def created(self, epoch_seconds: float) -> PodBuilder:
        self._d["metadata"]["creationTimestamp"] = rfc3339(epoch_seconds)
        return self

    def owner(self, kind: str, name: str, uid: str = "", controller: bool = True) -> PodBuilder:
        self._d["metadata"].setdefault("ownerReferences", []).append(
            {
                "apiVersion": "apps/v1",
                "kind": kind,
                "name": name,
                "uid": uid or f"uid-{name}",
                "controller": controller,
            }
        )
        return self

    def terminating(self) -> PodBuilder:
        self._d["metadata"]["deletionTimestamp"] = rfc3339(0)
        return self

    # spec
    @property
    def _spec(self) -> JSON:
        spec: JSON = self._d["spec"]
        return spec

    def scheduler(self, name: str) -> PodBuilder:
        self._spec["schedulerName"] = name
        return self

    def node(self, node_name: str) -> PodBuilder:
        self._spec["nodeName"] = node_name
        return self

    def priority(self, p: int) -> PodBuilder:
        self._spec["priority"] = p
        return self

    def priority_class(self, name: str) -> PodBuilder:
        """Set spec.priorityClassName (on a real cluster the API server then fills in the priority)."""
        self._spec["priorityClassName"] = name
        return self

    def preemption_policy(self, policy: str) -> PodBuilder:
        self._spec["preemptionPolicy"] = policy
        return self

    def req(self, container: int = 0, **resources: str | int) -> PodBuilder:
        """Requests of container ``container`` (0 by default); names with '_' become '-' and
        ``nvidia_com__gpu`` style names may be passed through ``res()`` instead."""
        return self.res({k.replace("_", "-"): v for k, v in resources.items()}, container=container)

    def res(self, requests: Mapping[str, str | int], container: int = 0, limits: bool = False) -> PodBuilder:
        cs = self._spec["containers"]
        while len(cs) <= container:
            cs.append({"name": f"c{len(cs)}", "image": "registry.k8s.io/pause:3.10"})
        key = "limits" if limits else "requests"
        cs[container].setdefault("resources", {}).setdefault(key, {}).update(
            {k: str(v) for k, v in requests.items()}
        )
        return self

    def container(
        self, name: str = "", image: str = "registry.k8s.io/pause:3.10", **requests: str
    ) -> PodBuilder:
        cs = self._spec["containers"]
        c: JSON = {"name": name or f"c{len(cs)}", "image": image}
        if requests:
            c["resources"] = {"requests": {k.replace("_", "-"): str(v) for k, v in requests.items()}}
        cs.append(c)
        return self

    def image(self, image: str, container: int = 0) -> PodBuilder:
        self._spec["containers"][container]["image"] = image
        return self

    def init_req(self, sidecar: bool = False, **requests: str) -> PodBuilder:
        ics = self._spec.setdefault("initContainers", [])
        c: JSON = {
            "name": f"init{len(ics)}",
            "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {k.replace("_", "-"): str(v) for k, v in requests.items()}},
        }
        if sidecar:
            c["restartPolicy"] = "Always"
        ics.append(c)
        return self

    def overhead(self, **resources: str) -> PodBuilder:
        self._spec["overhead"] = {k.replace("_", "-"): str(v) for k, v in resources.items()}
        return self

    def pod_requests(self, **resources: str) -> PodBuilder:
        """Pod-level requests (spec.resources.requests, PodLevelResources)."""
        res = self._spec.setdefault("resources", {}).setdefault("requests", {})
        res.update({k.replace("_", "-"): str(v) for k, v in resources.items()})
        return self

    def pod_limits(self, **resources: str) -> PodBuilder:
        """Pod-level limits (spec.resources.limits)."""
        res = self._spec.setdefault("resources", {}).setdefault("limits", {})
        res.update({k.replace("_", "-"): str(v) for k, v in resources.items()})
        return self

    def resized(
        self, container: int = 0, allocated: Mapping[str, str] | None = None, **actuated: str
    ) -> PodBuilder:
        """A container being resized in place: its status reports the ``actuated`` requests
        (status.containerStatuses[].resources.requests) and the ``allocated`` ones."""
        name = self._spec["containers"][container]["name"]
        statuses = self._d["status"].setdefault("containerStatuses", [])
        cs: JSON = {
            "name": name,
            "resources": {"requests": {k.replace("_", "-"): str(v) for k, v in actuated.items()}},
        }
        if allocated:
            cs["allocatedResources"] = dict(allocated)
        statuses.append(cs)
        return self

    def pod_level_resized(self, allocated: Mapping[str, str] | None = None, **actuated: str) -> PodBuilder:
        """The pod level being resized: status.resources.requests and status.allocatedResources."""
        st = self._d["status"]
        st["resources"] = {"requests": {k.replace("_", "-"): str(v) for k, v in actuated.items()}}
        if allocated:
            st["allocatedResources"] = dict(allocated)
        return self

    def resize_pending(self, reason: str) -> PodBuilder:
        """The PodResizePending condition with ``reason`` ("Infeasible" or "Deferred")."""
        self._d["status"].setdefault("conditions", []).append(
            {"type": "PodResizePending", "status": "True", "reason": reason}
        )
        return self

    def host_port(
        self, port: int, protocol: str = "TCP", host_ip: str = "", container: int = 0
    ) -> PodBuilder:
        p: JSON = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if host_ip:
            p["hostIP"] = host_ip
        self._spec["containers"][container].setdefault("ports", []).append(p)
        return self

    def node_selector(self, selector: Mapping[str, str]) -> PodBuilder:
        self._spec.setdefault("nodeSelector", {}).update(selector)
        return self

    def node_affinity_in(self, key: str, values: list[str], operator: str = "In") -> PodBuilder:
        """Add a required node affinity term with one expression."""
        na = self._spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        req = na.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []})
        expr: JSON = {"key": key, "operator": operator}
        if operator not in ("Exists", "DoesNotExist"):
            expr["values"] = values
        req["nodeSelectorTerms"].append({"matchExpressions": [expr]})
        return self

    def preferred_node_affinity(
        self, weight: int, key: str, values: list[str], operator: str = "In"
    ) -> PodBuilder:
        na = self._spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        expr: JSON = {"key": key, "operator": operator}
        if operator not in ("Exists", "DoesNotExist"):
            expr["values"] = values
        na.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
            {"weight": weight, "preference": {"matchExpressions": [expr]}}
        )
        return self

    def affinity(self, affinity: Mapping[str, Any]) -> PodBuilder:
        """Merge raw affinity JSON (nodeAffinity / podAffinity / podAntiAffinity)."""
        a = self._spec.setdefault("affinity", {})
        for k, v in affinity.items():
            a[k] = copy.deepcopy(v)
        return self

    def pod_affinity(
        self,
        topology_key: str,
        labels: Mapping[str, str],
        anti: bool = False,
        weight: int = 0,
        namespaces: list[str] | None = None,
        namespace_selector: Mapping[str, Any] | None = None,
    ) -> PodBuilder:
        """Add a pod (anti-)affinity term; ``weight`` > 0 makes it preferred, else required."""
        kind = "podAntiAffinity" if anti else "podAffinity"
        term: JSON = {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": topology_key}
        if namespaces is not None:
            term["namespaces"] = namespaces
        if namespace_selector is not None:
            term["namespaceSelector"] = dict(namespace_selector)
        a = self._spec.setdefault("affinity", {}).setdefault(kind, {})
        if weight:
            a.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": term}
            )
        else:
            a.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        return self

    def toleration(self, key: str = "", value: str = "", effect: str = "", operator: str = "") -> PodBuilder:
        t: JSON = {}
        if key:
            t["key"] = key
        t["operator"] = operator or ("Equal" if value else "Exists")
        if value:
            t["value"] = value
        if effect:
            t["effect"] = effect
        self._spec.setdefault("tolerations", []).append(t)
        return self

    def spread(
        self,
        max_skew: int,
        topology_key: str,
        when_unsatisfiable: str,
        labels: Mapping[str, str] | None,
        **extra: Any,
    ) -> PodBuilder:
        """Add a topology spread constraint; ``extra`` takes minDomains, nodeAffinityPolicy, ..."""
        c: JSON = {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when_unsatisfiable}
        if labels is not None:
            c["labelSelector"] = {"matchLabels": dict(labels)}
        c.update(extra)
        self._spec.setdefault("topologySpreadConstraints", []).append(c)
        return self

    def pvc(self, claim: str, volume: str = "") -> PodBuilder:
        vols = self._spec.setdefault("volumes", [])
        vols.append({"name": volume or f"vol{len(vols)}", "persistentVolumeClaim": {"claimName": claim}})
        return self

    def volume(self, volume: Mapping[str, Any]) -> PodBuilder:
        self._spec.setdefault("volumes", []).append(dict(volume))
        return self

    def gate(self, name: str) -> PodBuilder:
        self._spec.setdefault("schedulingGates", []).append({"name": name})
        return self

    def group(self, pod_group: str) -> PodBuilder:
        """``spec.schedulingGroup.podGroupName``: the pod belongs to this PodGroup (GenericWorkload)."""
        self._spec["schedulingGroup"] = {"podGroupName": pod_group}
        return self

    def host_network(self) -> PodBuilder:
        self._spec["hostNetwork"] = True
        return self

    def host_users(self, value: bool) -> PodBuilder:
        """``spec.hostUsers`` (false: the pod runs in its own user namespace)."""
        self._spec["hostUsers"] = value
        return self

    def restart_rule(
        self, action: str = "RestartAllContainers", container: int = 0, init: bool = False
    ) -> PodBuilder:
        """A ``restartPolicyRules`` entry (on exit code 42) for a container, or an init container when
        ``init`` (which must exist); the container's ``restartPolicy`` becomes Never if unset, as the
        API requires."""
        c = self._spec["initContainers" if init else "containers"][container]
        c.setdefault("restartPolicy", "Never")
        c.setdefault("restartPolicyRules", []).append(
            {"action": action, "exitCodes": {"operator": "In", "values": [42]}}
        )
        return self

    def resource_claim(self, name: str, claim: str = "", template: str = "") -> PodBuilder:
        """A ``spec.resourceClaims`` entry: an existing claim by name, or one from a ResourceClaimTemplate."""
        entry: JSON = {"name": name}
        if template:
            entry["resourceClaimTemplateName"] = template
        else:
            entry["resourceClaimName"] = claim or name
        self._spec.setdefault("resourceClaims", []).append(entry)
        return self

    # status
    def claim_status(self, name: str, claim: str | None) -> PodBuilder:
        """A ``status.resourceClaimStatuses`` entry (what the resourceclaim controller writes for a
        template; ``None``: no claim is needed for this entry)."""
        entry: JSON = {"name": name}
        if claim is not None:
            entry["resourceClaimName"] = claim
        self._d["status"].setdefault("resourceClaimStatuses", []).append(entry)
        return self

    def nominated(self, node_name: str) -> PodBuilder:
        self._d["status"]["nominatedNodeName"] = node_name
        return self

    def phase(self, phase: str) -> PodBuilder:
        self._d["status"]["phase"] = phase
        return self

    # results
    def json(self) -> JSON:
        """The pod as API JSON (a deep copy), e.g. to create it on a cluster."""
        return copy.deepcopy(self._d)

    def obj(self) -> Pod:
        return Pod.from_dict(self._d)

    def info(self) -> PodInfo:
        return PodInfo(self.obj())


class NodeBuilder:
    def __init__(self, name: str | None = None) -> None:
        name = name or f"node-{next(_counter)}"
        self._d: JSON = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-node-{name}", "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {"allocatable": {}, "capacity": {}},
        }

    def capacity(self, **resources: str | int) -> NodeBuilder:
        """Capacity and allocatable (the same), e.g. ``capacity(cpu="4", memory="8Gi", pods=110)``."""
        return self.res({k.replace("_", "-"): v for k, v in resources.items()})

    def res(self, resources: Mapping[str, str | int]) -> NodeBuilder:
        r = {k: str(v) for k, v in resources.items()}
        self._d["status"]["allocatable"].update(r)
        self._d["status"]["capacity"].update(r)
        return self

    def label(self, key: str, value: str) -> NodeBuilder:
        self._d["metadata"]["labels"][key] = value
        return self

    def labels(self, labels: Mapping[str, str]) -> NodeBuilder:
        self._d["metadata"]["labels"].update(labels)
        return self

    def annotation(self, key: str, value: str) -> NodeBuilder:
        self._d["metadata"].setdefault("annotations", {})[key] = value
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        t: JSON = {"key": key, "effect": effect}
        if value:
            t["value"] = value
        self._d["spec"].setdefault("taints", []).append(t)
        return self

    def unschedulable(self, value: bool = True) -> NodeBuilder:
        self._d["spec"]["unschedulable"] = value
        return self

    def image(self, name: str, size_bytes: int) -> NodeBuilder:
        self._d["status"].setdefault("images", []).append({"names": [name], "sizeBytes": size_bytes})
        return self

    def declared_features(self, *names: str) -> NodeBuilder:
        """``status.declaredFeatures``: what the node's kubelet says it supports."""
        self._d["status"]["declaredFeatures"] = list(names)
        return self

    def fake(self) -> NodeBuilder:
        """Mark the node for KWOK (which then keeps it Ready and runs its pods)."""
        self.annotation("kwok.x-k8s.io/node", "fake")
        self.label("type", "kwok")
        return self

    def json(self) -> JSON:
        return copy.deepcopy(self._d)

    def obj(self) -> Node:
        return Node.from_dict(self._d)


def make_pod(name: str | None = None, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)


def make_pod_group(
    name: str,
    namespace: str = "default",
    *,
    min_count: int | None = None,
    topology_key: str = "",
    uid: str | None = None,
) -> dict[str, Any]:
    """A scheduling.k8s.io/v1alpha2 PodGroup as JSON: a Gang policy with ``min_count`` (else Basic),
    and a topology constraint on ``topology_key`` when given."""
    policy: dict[str, Any] = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if topology_key:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid is not None:
        meta["uid"] = uid
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": meta, "spec": spec}


def make_node(name: str | None = None) -> NodeBuilder:
    return NodeBuilder(name)


def make_node_info(node: Node | NodeBuilder, *pods: Pod | PodBuilder) -> NodeInfo:
    """A NodeInfo for ``node`` holding ``pods`` (their nodeName is set to the node)."""
    n = node.obj() if isinstance(node, NodeBuilder) else node
    info = NodeInfo(n)
    for p in pods:
        pod = p.node(n.name).obj() if isinstance(p, PodBuilder) else p
        info.add_pod(pod)
    return info


def make_cycle_state() -> CycleState:
    return CycleState()
