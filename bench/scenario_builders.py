"""The differential test's scenario data and builders: small clusters and pod sequences that exercise every
default plugin (the scenarios themselves are in the family modules bench/scenarios_*.py, listed in order by
bench/scenarios.py).

Design
------
A ``Scenario`` is plain API JSON, so the runner (``bench.differential``) can create it on a real cluster
once for kube-scheduler and once for pyscheduler:

    nodes      Node objects (KWOK-managed: the runner adds the annotation and a Ready condition)
    objects    anything else the pods need, in any order (the runner sorts by kind): Namespaces,
               PriorityClasses, RuntimeClasses, StorageClasses, PVs, PVCs, CSINodes, PDBs, Services.
               A ``status`` key is written through the status subresource after creation (PDB
               disruptionsAllowed, PVC/PV phase), since no controller computes it here.
    existing   pods already bound (``spec.nodeName`` set) before the scheduler starts
    batch      pods created *before* the scheduler starts, all pending at once: the only way queue
               order (PrioritySort) decides anything
    pods       pods created one at a time after the scheduler is ready; the runner waits for each
               to be bound or reported unschedulable before the next
    node_updates  node status changes (``{"metadata": {"name"}, "status": {...}}``, merge-patched into
               the status subresource) made once the batch pods are decided; the batch pods left
               pending are then watched again and judged a second time as ``<name>@after-update``

Namespaced objects written with namespace ``""`` (the builders' default here) land in the scenario's own
namespace (``diff-<name>``); PV ``claimRef.namespace`` ``""`` likewise. Extra namespaces (for
namespaceSelector) are ``Namespace`` objects in ``objects`` and are referenced by their real names.

Every scenario is built so that kube-scheduler's decision is determined by the algorithm up to score
ties (the runner judges ties with scores), and preemption scenarios have a unique best candidate node.

Node names are short (``n1``...) and reused by every scenario: the runner deletes a scenario's nodes
before the next one. Names below are DNS labels; ``name`` doubles as the namespace suffix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyscheduler.testing.builders import PodBuilder, make_node, make_pod

JSON = dict[str, Any]

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
GI = 1024**3
MI = 1024**2
CSI_DRIVER = "diff.csi.example.com"


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    plugins: tuple[str, ...]
    nodes: tuple[JSON, ...]
    pods: tuple[JSON, ...] = ()
    existing: tuple[JSON, ...] = ()
    objects: tuple[JSON, ...] = ()
    batch: tuple[JSON, ...] = ()
    namespace_labels: Mapping[str, str] = field(default_factory=dict)
    node_updates: tuple[JSON, ...] = ()

    @property
    def namespace(self) -> str:
        return f"diff-{self.name}"

    @property
    def needs_pv_controller(self) -> bool:
        """WaitForFirstConsumer binding needs kube-controller-manager's PV binder to finish the bind."""
        return any(
            o.get("kind") == "StorageClass" and o.get("volumeBindingMode") == "WaitForFirstConsumer"
            for o in self.objects
        )

    def placements(self) -> int:
        return len(self.pods) + len(self.batch)


# ------------------------------------------------------------------------------------------- builders


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[tuple[str, str, str]] = (),
    images: Sequence[tuple[Sequence[str], int]] = (),
    unschedulable: bool = False,
    zone: str = "",
    extended: Mapping[str, str] | None = None,
) -> JSON:
    """A node; ``taints`` are (key, value, effect); ``images`` are (names, sizeBytes)."""
    b = make_node(name).capacity(cpu=cpu, memory=memory, pods=pods).fake()
    if extended:
        b.res(extended)
    if labels:
        b.labels(labels)
    if zone:
        b.label(ZONE, zone)
    for key, value, effect in taints:
        b.taint(key, value, effect)
    if unschedulable:
        b.unschedulable()
    d = b.json()
    if images:
        d["status"]["images"] = [{"names": list(names), "sizeBytes": size} for names, size in images]
    d["metadata"].pop("uid", None)
    return d


def pod(name: str, cpu: str = "", memory: str = "", ns: str = "", **labels: str) -> PodBuilder:
    """A pod builder with optional requests; keyword arguments become labels."""
    b = make_pod(name, ns)
    req: dict[str, str] = {}
    if cpu:
        req["cpu"] = cpu
    if memory:
        req["memory"] = memory
    if req:
        b.res(req)
    if labels:
        b.labels(labels)
    return b


def bound(b: PodBuilder, node_name: str) -> JSON:
    """An existing pod, already on ``node_name``."""
    return b.node(node_name).json()


def spec(b: PodBuilder, **fields: Any) -> PodBuilder:
    """Set raw spec fields on a builder (runtimeClassName, priorityClassName, ...)."""
    d = b._d  # the builders keep their JSON here; we only add top-level spec fields
    d["spec"].update(fields)
    return b


def required_node_affinity(*terms: Sequence[JSON], fields: Sequence[JSON] = ()) -> JSON:
    """nodeAffinity with one nodeSelectorTerm per ``terms`` entry (ANDed expressions inside a term)."""
    out_terms: list[JSON] = [{"matchExpressions": list(t)} for t in terms]
    if fields:
        out_terms.append({"matchFields": list(fields)})
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": out_terms}}
    }


def expr(key: str, operator: str, *values: str) -> JSON:
    e: JSON = {"key": key, "operator": operator}
    if values:
        e["values"] = list(values)
    return e


def preferred_node_affinity(*prefs: tuple[int, Sequence[JSON]]) -> JSON:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": {"matchExpressions": list(exprs)}} for w, exprs in prefs
            ]
        }
    }


def pod_term(
    topology_key: str,
    labels: Mapping[str, str],
    namespaces: Sequence[str] | None = None,
    namespace_selector: Mapping[str, Any] | None = None,
) -> JSON:
    t: JSON = {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": topology_key}
    if namespaces is not None:
        t["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        t["namespaceSelector"] = dict(namespace_selector)
    return t


def namespace(name: str, **labels: str) -> JSON:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels)}}


def priority_class(name: str, value: int, never: bool = False) -> JSON:
    pc: JSON = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if never:
        pc["preemptionPolicy"] = "Never"
    return pc


def storage_class(
    name: str, mode: str = "Immediate", provisioner: str = "kubernetes.io/no-provisioner"
) -> JSON:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }


def pv(
    name: str,
    storage_class_name: str,
    size: str = "10Gi",
    modes: Sequence[str] = ("ReadWriteOnce",),
    claim: str = "",
    hosts: Sequence[str] = (),
    labels: Mapping[str, str] | None = None,
    csi_handle: str = "",
) -> JSON:
    """A PersistentVolume, pre-bound to ``claim`` (in the scenario namespace) if given, with required
    node affinity to ``hosts`` if given, a CSI source if ``csi_handle`` is given (else hostPath)."""
    s: JSON = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": storage_class_name,
    }
    if csi_handle:
        s["csi"] = {"driver": CSI_DRIVER, "volumeHandle": csi_handle}
    else:
        s["hostPath"] = {"path": f"/tmp/{name}"}
    if claim:
        s["claimRef"] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": "", "name": claim}
    if hosts:
        s["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOST, "operator": "In", "values": list(hosts)}]}
                ]
            }
        }
    out: JSON = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": s,
    }
    if claim:
        out["status"] = {"phase": "Bound"}
    return out


def pvc(
    name: str,
    storage_class_name: str,
    size: str = "5Gi",
    modes: Sequence[str] = ("ReadWriteOnce",),
    volume: str = "",
) -> JSON:
    """A claim; bound (volumeName + bind-completed, status Bound) to ``volume`` if given."""
    md: JSON = {"name": name, "namespace": ""}
    s: JSON = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
        "storageClassName": storage_class_name,
    }
    out: JSON = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": md, "spec": s}
    if volume:
        s["volumeName"] = volume
        md["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        out["status"] = {"phase": "Bound", "accessModes": list(modes), "capacity": {"storage": size}}
    return out


def csinode(node_name: str, count: int) -> JSON:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node_name},
        "spec": {"drivers": [{"name": CSI_DRIVER, "nodeID": node_name, "allocatable": {"count": count}}]},
    }


def pdb(name: str, labels: Mapping[str, str], disruptions_allowed: int, healthy: int) -> JSON:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": ""},
        "spec": {"selector": {"matchLabels": dict(labels)}, "minAvailable": healthy - disruptions_allowed},
        "status": {
            "disruptionsAllowed": disruptions_allowed,
            "currentHealthy": healthy,
            "desiredHealthy": healthy - disruptions_allowed,
            "expectedPods": healthy,
            "observedGeneration": 1,
        },
    }


def runtime_class(name: str, cpu: str, memory: str) -> JSON:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": "runc",
        "overhead": {"podFixed": {"cpu": cpu, "memory": memory}},
    }


def service(name: str, **selector: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ""},
        "spec": {"selector": dict(selector), "ports": [{"port": 80, "protocol": "TCP"}]},
    }


def _json(items: Iterable[JSON | PodBuilder]) -> tuple[JSON, ...]:
    return tuple(i.json() if isinstance(i, PodBuilder) else i for i in items)


def scenario(
    name: str,
    description: str,
    plugins: Sequence[str],
    nodes: Sequence[JSON],
    pods: Sequence[JSON | PodBuilder] = (),
    existing: Sequence[JSON] = (),
    objects: Sequence[JSON] = (),
    batch: Sequence[JSON | PodBuilder] = (),
    namespace_labels: Mapping[str, str] | None = None,
    node_updates: Sequence[JSON] = (),
) -> Scenario:
    return Scenario(
        name,
        description,
        tuple(plugins),
        tuple(nodes),
        _json(pods),
        tuple(existing),
        tuple(objects),
        _json(batch),
        dict(namespace_labels or {}),
        tuple(node_updates),
    )


def three(cpu: str = "4", memory: str = "8Gi", **kw: Any) -> list[JSON]:
    return [node(f"n{i}", cpu, memory, **kw) for i in (1, 2, 3)]


def zoned(*zones: str, cpu: str = "4", memory: str = "8Gi") -> list[JSON]:
    """One node per entry, n1.., in the given zones."""
    return [node(f"n{i}", cpu, memory, zone=z) for i, z in enumerate(zones, 1)]


def tol(
    key: str = "", value: str = "", effect: str = "", operator: str = "", seconds: int | None = None
) -> JSON:
    t: JSON = {"operator": operator or ("Equal" if value else "Exists")}
    if key:
        t["key"] = key
    if value:
        t["value"] = value
    if effect:
        t["effect"] = effect
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


def tolerating(b: PodBuilder, *tols: JSON) -> PodBuilder:
    b._d["spec"].setdefault("tolerations", []).extend(tols)
    return b


def sel(b: PodBuilder, **selector: str) -> PodBuilder:
    return b.node_selector(selector)


def on_host(b: PodBuilder, host: str) -> PodBuilder:
    return b.node_selector({HOST: host})


def gpu(b: PodBuilder, count: int) -> PodBuilder:
    b.res({"example.com/gpu": count})
    return b.res({"example.com/gpu": count}, limits=True)


def terms(*ts: JSON) -> JSON:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(ts)}}
    }


def spread(b: PodBuilder, skew: int, key: str, when: str = "DoNotSchedule", **extra: Any) -> PodBuilder:
    labels = extra.pop("labels", None) or {"app": b._d["metadata"].get("labels", {}).get("app", "web")}
    return b.spread(skew, key, when, labels, **extra)


def affinity(b: PodBuilder, *terms: JSON, anti: bool = False, weight: int = 0) -> PodBuilder:
    kind = "podAntiAffinity" if anti else "podAffinity"
    a = b._d["spec"].setdefault("affinity", {}).setdefault(kind, {})
    for t in terms:
        if weight:
            a.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": t}
            )
        else:
            a.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(t)
    return b
