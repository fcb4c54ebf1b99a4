"""The differential test's scenarios: small clusters and pod sequences that exercise every default plugin.

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


# ------------------------------------------------------------------------------------------ scenarios

SCENARIOS: list[Scenario] = []


def add(s: Scenario) -> None:
    SCENARIOS.append(s)


# ---------------------------------------------------------------- NodeResourcesFit (filter)

add(
    scenario(
        "fit-cpu",
        "CPU requests against free CPU; the third pod fits nowhere",
        ["NodeResourcesFit"],
        [node("n1", "2", "16Gi"), node("n2", "4", "16Gi"), node("n3", "8", "16Gi")],
        existing=[bound(pod("e1", cpu="6"), "n3")],
        pods=[pod("p1", cpu="3"), pod("p2", cpu="1500m"), pod("p3", cpu="2500m"), pod("p4", cpu="500m")],
    )
)

add(
    scenario(
        "fit-memory",
        "memory requests against free memory",
        ["NodeResourcesFit"],
        [node("n1", "8", "4Gi"), node("n2", "8", "8Gi"), node("n3", "8", "16Gi")],
        existing=[bound(pod("e1", memory="12Gi"), "n3")],
        pods=[
            pod("p1", memory="6Gi"),
            pod("p2", memory="3Gi"),
            pod("p3", memory="5Gi"),
            pod("p4", memory="512Mi"),
        ],
    )
)

add(
    scenario(
        "fit-pods-count",
        "the pods allocatable (max pods per node) fills up",
        ["NodeResourcesFit"],
        [node("n1", pods=2), node("n2", pods=2), node("n3", pods=3)],
        existing=[
            bound(pod("e1"), "n1"),
            bound(pod("e2"), "n1"),
            bound(pod("e3"), "n2"),
            bound(pod("e4"), "n3"),
            bound(pod("e5"), "n3"),
        ],
        pods=[pod("p1", cpu="100m"), pod("p2", cpu="100m"), pod("p3", cpu="100m")],
    )
)


def gpu(b: PodBuilder, count: int) -> PodBuilder:
    b.res({"example.com/gpu": count})
    return b.res({"example.com/gpu": count}, limits=True)


add(
    scenario(
        "fit-extended",
        "an extended resource (example.com/gpu) counted per node",
        ["NodeResourcesFit"],
        [
            node("n1"),
            node("n2", extended={"example.com/gpu": "2"}),
            node("n3", extended={"example.com/gpu": "4"}),
        ],
        pods=[
            gpu(pod("p1", cpu="100m"), 3),
            gpu(pod("p2", cpu="100m"), 2),
            gpu(pod("p3", cpu="100m"), 1),
            gpu(pod("p4", cpu="100m"), 1),
            pod("p5", cpu="100m"),
        ],
    )
)

add(
    scenario(
        "fit-init-containers",
        "init containers: the effective request is max(init, sum of containers)",
        ["NodeResourcesFit"],
        [node("n1", "2"), node("n2", "2")],
        existing=[bound(pod("e1", cpu="1"), "n1")],
        pods=[
            pod("p1", cpu="500m").init_req(cpu="1500m"),
            pod("p2", cpu="400m").init_req(cpu="600m"),
            pod("p3", cpu="100m").init_req(cpu="3"),
        ],
    )
)

add(
    scenario(
        "fit-sidecar",
        "restartable init containers (sidecars) add to the containers' requests",
        ["NodeResourcesFit"],
        [node("n1", "2"), node("n2", "2")],
        existing=[bound(pod("e1", cpu="500m"), "n1")],
        pods=[
            pod("p1", cpu="1").init_req(sidecar=True, cpu="1"),
            pod("p2", cpu="500m").init_req(sidecar=True, cpu="500m"),
            pod("p3", cpu="200m").init_req(sidecar=True, cpu="600m").init_req(cpu="1"),
            pod("p4", cpu="100m").init_req(sidecar=True, cpu="300m"),
        ],
    )
)

add(
    scenario(
        "fit-overhead",
        "pod overhead from a RuntimeClass counts against the node",
        ["NodeResourcesFit"],
        [node("n1", "2"), node("n2", "3")],
        objects=[runtime_class("diff-kata", "1", "256Mi")],
        pods=[
            spec(pod("p1", cpu="1500m"), runtimeClassName="diff-kata"),
            spec(pod("p2", cpu="1500m"), runtimeClassName="diff-kata"),
            pod("p3", cpu="1500m"),
            spec(pod("p4", cpu="100m"), runtimeClassName="diff-kata"),
        ],
    )
)

add(
    scenario(
        "fit-ephemeral-storage",
        "ephemeral-storage requests against node ephemeral-storage",
        ["NodeResourcesFit"],
        [
            node("n1", extended={"ephemeral-storage": "10Gi"}),
            node("n2", extended={"ephemeral-storage": "50Gi"}),
        ],
        existing=[bound(pod("e1").res({"ephemeral-storage": "30Gi"}), "n2")],
        pods=[
            pod("p1").res({"ephemeral-storage": "15Gi"}),
            pod("p2").res({"ephemeral-storage": "8Gi"}),
            pod("p3").res({"ephemeral-storage": "6Gi"}),
        ],
    )
)

# ---------------------------------------------------------------- scoring

add(
    scenario(
        "score-least-allocated",
        "LeastAllocated spreads pods to the emptiest nodes",
        ["NodeResourcesFit", "NodeResourcesBalancedAllocation"],
        three(),
        existing=[
            bound(pod("e1", cpu="2", memory="2Gi"), "n1"),
            bound(pod("e2", cpu="1", memory="1Gi"), "n2"),
        ],
        pods=[pod(f"p{i}", cpu="500m", memory="512Mi") for i in range(1, 6)],
    )
)

add(
    scenario(
        "score-balanced",
        "BalancedAllocation prefers nodes whose cpu and memory use stay even",
        ["NodeResourcesBalancedAllocation", "NodeResourcesFit"],
        three(),
        existing=[
            bound(pod("e1", cpu="3", memory="1Gi"), "n1"),
            bound(pod("e2", cpu="500m", memory="6Gi"), "n2"),
            bound(pod("e3", cpu="2", memory="4Gi"), "n3"),
        ],
        pods=[
            pod("p1", cpu="500m", memory="1Gi"),
            pod("p2", cpu="1", memory="256Mi"),
            pod("p3", cpu="100m", memory="2Gi"),
            pod("p4"),
        ],
    )
)

add(
    scenario(
        "score-best-effort",
        "pods without requests are scored with kube's non-zero defaults (100m, 200Mi)",
        ["NodeResourcesFit", "NodeResourcesBalancedAllocation"],
        [node("n1", "1", "1Gi"), node("n2", "4", "512Mi"), node("n3", "2", "2Gi")],
        existing=[bound(pod("e1"), "n3"), bound(pod("e2"), "n3")],
        pods=[pod("p1"), pod("p2"), pod("p3"), pod("p4", cpu="300m")],
    )
)

add(
    scenario(
        "score-image-locality",
        "ImageLocality prefers nodes that already have the pod's images",
        ["ImageLocality"],
        [
            node("n1", images=[(["diffbench/big:1.0"], 800 * MI)]),
            node("n2", images=[(["diffbench/big:1.0"], 800 * MI), (["diffbench/small:1.0"], 60 * MI)]),
            node("n3", images=[(["diffbench/tiny:1.0"], 5 * MI)]),
        ],
        pods=[
            pod("p1", cpu="100m").image("diffbench/big:1.0"),
            pod("p2", cpu="100m").image("diffbench/big:1.0").container(image="diffbench/small:1.0"),
            pod("p3", cpu="100m").image("diffbench/small:1.0"),
            pod("p4", cpu="100m").image("diffbench/tiny:1.0"),
            pod("p5", cpu="100m").image("diffbench/none:1.0"),
        ],
    )
)

DIGEST = "sha256:" + "ab" * 32

add(
    scenario(
        "score-image-names",
        "image names: an untagged image means :latest; digests match as written",
        ["ImageLocality"],
        [
            node("n1", images=[(["diffbench/app:latest"], 500 * MI)]),
            node("n2", images=[(["diffbench/dig:1", f"diffbench/dig@{DIGEST}"], 400 * MI)]),
            node("n3", images=[(["diffbench/app:2.0"], 500 * MI)]),
        ],
        pods=[
            pod("p1", cpu="100m").image("diffbench/app"),
            pod("p2", cpu="100m").image(f"diffbench/dig@{DIGEST}"),
            pod("p3", cpu="100m").image("diffbench/app:2.0"),
            pod("p4", cpu="100m").image("diffbench/dig"),
        ],
    )
)

# ---------------------------------------------------------------- NodeName, NodeUnschedulable, NodePorts

add(
    scenario(
        "node-name",
        "pods with spec.nodeName bypass the scheduler, and both schedulers account for them",
        ["NodeName", "NodeResourcesFit"],
        [node("n1", "2"), node("n2", "2")],
        pods=[
            pod("p1", cpu="1500m").node("n1"),
            pod("p2", cpu="1"),
            pod("p3", cpu="1"),
            pod("p4", cpu="400m"),
            pod("p5", cpu="600m"),
        ],
    )
)

add(
    scenario(
        "node-unschedulable",
        "cordoned nodes take only pods tolerating node.kubernetes.io/unschedulable",
        ["NodeUnschedulable"],
        [node("n1", "8", unschedulable=True), node("n2", "2"), node("n3", "2")],
        pods=[
            pod("p1", cpu="500m"),
            tolerating(pod("p2", cpu="500m"), tol("node.kubernetes.io/unschedulable", effect="NoSchedule")),
            on_host(pod("p3", cpu="100m"), "n1"),
            tolerating(pod("p4", cpu="100m"), tol()),
            pod("p5", cpu="100m"),
        ],
    )
)

add(
    scenario(
        "node-ports",
        "host ports conflict by port, protocol and host IP (0.0.0.0 conflicts with any IP)",
        ["NodePorts"],
        [node("n1"), node("n2")],
        existing=[
            bound(pod("e1").host_port(8080), "n1"),
            bound(pod("e2").host_port(9090, host_ip="10.0.0.5"), "n2"),
        ],
        pods=[
            pod("p1").host_port(8080),
            pod("p2").host_port(8080, protocol="UDP"),
            pod("p3").host_port(9090, host_ip="10.0.0.6"),
            pod("p4").host_port(9090),
            pod("p5").host_port(8080),
            pod("p6").host_port(8081, protocol="SCTP"),
        ],
    )
)

# ---------------------------------------------------------------- TaintToleration

add(
    scenario(
        "taint-noschedule",
        "NoSchedule taints repel pods without an Equal toleration",
        ["TaintToleration"],
        [
            node("n1", taints=[("dedicated", "gpu", "NoSchedule")]),
            node("n2"),
            node("n3", taints=[("team", "ml", "NoSchedule")]),
        ],
        pods=[
            pod("p1", cpu="500m"),
            tolerating(pod("p2", cpu="500m"), tol("dedicated", "gpu", "NoSchedule")),
            on_host(pod("p3", cpu="100m"), "n3"),
            tolerating(on_host(pod("p4", cpu="100m"), "n3"), tol("team", "ai", "NoSchedule")),
            tolerating(on_host(pod("p5", cpu="100m"), "n3"), tol("team", "ml")),
        ],
    )
)

add(
    scenario(
        "taint-noexecute",
        "NoExecute taints and tolerations with Exists, tolerationSeconds, and no effect",
        ["TaintToleration"],
        [
            node("n1", taints=[("maint", "true", "NoExecute")]),
            node("n2", taints=[("maint", "true", "NoSchedule")]),
            node("n3"),
        ],
        existing=[bound(pod("e1", cpu="2"), "n3")],
        pods=[
            tolerating(
                pod("p1", cpu="500m"), tol("maint", effect="NoExecute", operator="Exists", seconds=30)
            ),
            tolerating(pod("p2", cpu="500m"), tol("maint", operator="Exists")),
            pod("p3", cpu="500m"),
            tolerating(pod("p4", cpu="500m"), tol("maint", "false")),
            tolerating(on_host(pod("p5", cpu="100m"), "n1"), tol("maint", "true", "NoSchedule")),
        ],
    )
)

add(
    scenario(
        "taint-prefer-noschedule",
        "PreferNoSchedule taints lower a node's score per untolerated taint",
        ["TaintToleration"],
        [
            node("n1", taints=[("a", "1", "PreferNoSchedule"), ("b", "2", "PreferNoSchedule")]),
            node("n2", taints=[("a", "1", "PreferNoSchedule")]),
            node("n3"),
        ],
        pods=[
            pod("p1", cpu="500m"),
            tolerating(pod("p2", cpu="500m"), tol("a", "1", "PreferNoSchedule")),
            pod("p3", cpu="500m"),
            tolerating(pod("p4", cpu="500m"), tol(operator="Exists")),
            pod("p5", cpu="500m"),
            pod("p6", cpu="500m"),
        ],
    )
)

add(
    scenario(
        "taint-all-tainted",
        "every node tainted: an empty-key Exists tolerates all, others are rejected",
        ["TaintToleration"],
        [
            node("n1", taints=[("a", "x", "NoSchedule")]),
            node("n2", taints=[("b", "y", "NoExecute")]),
            node("n3", taints=[("c", "", "NoSchedule"), ("a", "x", "NoSchedule")]),
        ],
        pods=[
            tolerating(pod("p1"), tol()),
            tolerating(pod("p2"), tol("b", operator="Exists")),
            tolerating(pod("p3"), tol("c", operator="Exists"), tol("a", "x")),
            pod("p4"),
            tolerating(pod("p5"), tol("a", "x", "NoSchedule")),
        ],
    )
)

# ---------------------------------------------------------------- NodeAffinity

LAB3 = [
    node("n1", labels={"disk": "ssd", "tier": "gold"}),
    node("n2", labels={"disk": "hdd", "tier": "gold"}),
    node("n3", labels={"disk": "ssd", "tier": "silver"}),
]

add(
    scenario(
        "affinity-in-notin",
        "required node affinity with In and NotIn (expressions ANDed)",
        ["NodeAffinity"],
        LAB3,
        pods=[
            pod("p1").affinity(
                required_node_affinity([expr("disk", "In", "ssd"), expr("tier", "NotIn", "silver")])
            ),
            pod("p2").affinity(required_node_affinity([expr("disk", "NotIn", "ssd")])),
            pod("p3").affinity(required_node_affinity([expr("disk", "In", "nvme")])),
            pod("p4").affinity(required_node_affinity([expr("tier", "NotIn", "bronze")])),
        ],
    )
)

add(
    scenario(
        "affinity-exists",
        "Exists / DoesNotExist",
        ["NodeAffinity"],
        [node("n1", labels={"gpu": "a100"}), node("n2"), node("n3", labels={"gpu": "t4"})],
        pods=[
            pod("p1").affinity(required_node_affinity([expr("gpu", "Exists")])),
            pod("p2").affinity(required_node_affinity([expr("gpu", "DoesNotExist")])),
            pod("p3").affinity(required_node_affinity([expr("gpu", "Exists"), expr("gpu", "NotIn", "a100")])),
            pod("p4").affinity(required_node_affinity([expr("fpga", "Exists")])),
        ],
    )
)

add(
    scenario(
        "affinity-gt-lt",
        "Gt / Lt compare integer label values; a non-integer value never matches",
        ["NodeAffinity"],
        [
            node("n1", labels={"cores": "8"}),
            node("n2", labels={"cores": "16"}),
            node("n3", labels={"cores": "32"}),
            node("n4", labels={"cores": "many"}),
        ],
        pods=[
            pod("p1").affinity(required_node_affinity([expr("cores", "Gt", "10")])),
            pod("p2").affinity(required_node_affinity([expr("cores", "Lt", "10")])),
            pod("p3").affinity(required_node_affinity([expr("cores", "Gt", "8"), expr("cores", "Lt", "32")])),
            pod("p4").affinity(required_node_affinity([expr("cores", "Gt", "32")])),
            pod("p5").affinity(required_node_affinity([expr("cores", "Lt", "1")])),
        ],
    )
)


def terms(*ts: JSON) -> JSON:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(ts)}}
    }


add(
    scenario(
        "affinity-match-fields",
        "matchFields on metadata.name (PreFilter narrows the node set)",
        ["NodeAffinity"],
        three(),
        pods=[
            pod("p1").affinity(terms({"matchFields": [expr("metadata.name", "In", "n2")]})),
            pod("p2").affinity(terms({"matchFields": [expr("metadata.name", "NotIn", "n1")]})),
            pod("p3").affinity(terms({"matchFields": [expr("metadata.name", "In", "nope")]})),
            pod("p4").affinity(
                terms(
                    {"matchFields": [expr("metadata.name", "In", "n1")]},
                    {"matchFields": [expr("metadata.name", "In", "n3")]},
                )
            ),
            pod("p5").affinity(
                terms(
                    {
                        "matchExpressions": [expr(HOST, "In", "n2")],
                        "matchFields": [expr("metadata.name", "In", "n2")],
                    }
                )
            ),
            pod("p6").affinity(
                terms(
                    {
                        "matchExpressions": [expr(HOST, "In", "n1")],
                        "matchFields": [expr("metadata.name", "In", "n2")],
                    }
                )
            ),
        ],
    )
)

add(
    scenario(
        "affinity-preferred",
        "preferred node affinity weights decide among feasible nodes",
        ["NodeAffinity"],
        [
            node("n1", labels={"type": "spot"}, zone="a"),
            node("n2", labels={"type": "ondemand"}, zone="b"),
            node("n3", zone="c"),
        ],
        pods=[
            pod("p1", cpu="100m").affinity(
                preferred_node_affinity((80, [expr(ZONE, "In", "b")]), (20, [expr("type", "In", "spot")]))
            ),
            pod("p2", cpu="100m").affinity(
                preferred_node_affinity((50, [expr("type", "In", "spot")]), (50, [expr(ZONE, "In", "c")]))
            ),
            pod("p3", cpu="100m").affinity(
                preferred_node_affinity((1, [expr("type", "Exists")]), (100, [expr("type", "DoesNotExist")]))
            ),
            pod("p4", cpu="100m").affinity(
                {
                    "nodeAffinity": {
                        **required_node_affinity([expr("type", "Exists")])["nodeAffinity"],
                        **preferred_node_affinity((10, [expr(ZONE, "In", "b")]))["nodeAffinity"],
                    }
                }
            ),
        ],
    )
)

add(
    scenario(
        "node-selector",
        "spec.nodeSelector (all pairs must match)",
        ["NodeAffinity"],
        LAB3,
        pods=[
            sel(pod("p1"), disk="ssd"),
            sel(pod("p2"), disk="ssd", tier="silver"),
            sel(pod("p3"), disk="none"),
            sel(pod("p4").affinity(required_node_affinity([expr("tier", "In", "gold")])), disk="ssd"),
        ],
    )
)

add(
    scenario(
        "affinity-or-terms",
        "nodeSelectorTerms are ORed; an empty term matches nothing",
        ["NodeAffinity"],
        LAB3,
        pods=[
            pod("p1").affinity(required_node_affinity([expr(ZONE, "In", "x")], [expr("disk", "In", "hdd")])),
            pod("p2").affinity(
                required_node_affinity(
                    [expr("tier", "In", "silver")], [expr("tier", "In", "gold"), expr("disk", "In", "hdd")]
                )
            ),
            pod("p3").affinity(required_node_affinity([])),
        ],
    )
)

# ---------------------------------------------------------------- PodTopologySpread


def spread(b: PodBuilder, skew: int, key: str, when: str = "DoNotSchedule", **extra: Any) -> PodBuilder:
    labels = extra.pop("labels", None) or {"app": b._d["metadata"].get("labels", {}).get("app", "web")}
    return b.spread(skew, key, when, labels, **extra)


ZONES4 = [node("n1", zone="z1"), node("n2", zone="z1"), node("n3", zone="z2"), node("n4", zone="z3")]

add(
    scenario(
        "spread-hard-zone",
        "DoNotSchedule over zones; a topology key no node has rejects every node",
        ["PodTopologySpread"],
        ZONES4,
        existing=[
            bound(pod("e1", app="web"), "n1"),
            bound(pod("e2", app="web"), "n2"),
            bound(pod("e3", app="web"), "n3"),
        ],
        pods=[spread(pod(f"p{i}", cpu="100m", app="web"), 1, ZONE) for i in (1, 2, 3, 4)]
        + [spread(pod("p5", app="web"), 1, "rack")],
    )
)

add(
    scenario(
        "spread-hard-hostname",
        "DoNotSchedule over hostnames combined with a zone constraint",
        ["PodTopologySpread"],
        ZONES4,
        existing=[bound(pod("e1", app="web"), "n1")],
        pods=[spread(spread(pod(f"p{i}", cpu="100m", app="web"), 1, HOST), 2, ZONE) for i in range(1, 7)],
    )
)

add(
    scenario(
        "spread-soft",
        "ScheduleAnyway constraints only score",
        ["PodTopologySpread"],
        ZONES4,
        existing=[bound(pod(f"e{i}", app="web"), "n1") for i in (1, 2, 3)]
        + [bound(pod("e4", app="web"), "n3")],
        pods=[spread(pod(f"p{i}", cpu="100m", app="web"), 1, ZONE, "ScheduleAnyway") for i in (1, 2, 3, 4)],
    )
)

add(
    scenario(
        "spread-min-domains",
        "minDomains above the number of domains makes the global minimum 0",
        ["PodTopologySpread"],
        [node("n1", zone="z1"), node("n2", zone="z2")],
        pods=[spread(pod(f"p{i}", cpu="100m", app="web"), 1, ZONE, minDomains=3) for i in (1, 2, 3)]
        + [spread(pod("p4", cpu="100m", app="web"), 1, ZONE, minDomains=2)],
    )
)

add(
    scenario(
        "spread-node-affinity-policy",
        "nodeAffinityPolicy Honor counts only domains of nodes the pod selects",
        ["PodTopologySpread", "NodeAffinity"],
        [
            node("n1", zone="z1", labels={"pool": "a"}),
            node("n2", zone="z2", labels={"pool": "a"}),
            node("n3", zone="z3", labels={"pool": "b"}),
        ],
        existing=[bound(pod("e1", app="db"), "n1"), bound(pod("e2", app="db"), "n2")],
        pods=[
            sel(spread(pod("p1", cpu="100m", app="db"), 1, ZONE, nodeAffinityPolicy="Honor"), pool="a"),
            sel(spread(pod("p2", cpu="100m", app="db"), 1, ZONE, nodeAffinityPolicy="Ignore"), pool="a"),
            sel(spread(pod("p3", cpu="100m", app="db"), 1, ZONE), pool="a"),
        ],
    )
)

add(
    scenario(
        "spread-node-taints-policy",
        "nodeTaintsPolicy Honor leaves out domains of nodes whose taints the pod does not tolerate",
        ["PodTopologySpread", "TaintToleration"],
        [
            node("n1", zone="z1"),
            node("n2", zone="z2"),
            node("n3", zone="z3", taints=[("gpu", "", "NoSchedule")]),
        ],
        existing=[bound(pod("e1", app="db"), "n1"), bound(pod("e2", app="db"), "n2")],
        pods=[
            spread(pod("p1", cpu="100m", app="db"), 1, ZONE, nodeTaintsPolicy="Honor"),
            spread(pod("p2", cpu="100m", app="db"), 1, ZONE, nodeTaintsPolicy="Ignore"),
            tolerating(
                spread(pod("p3", cpu="100m", app="db"), 1, ZONE, nodeTaintsPolicy="Honor"), tol("gpu")
            ),
        ],
    )
)

add(
    scenario(
        "spread-match-label-keys",
        "matchLabelKeys narrows the counted pods to the incoming pod's revision",
        ["PodTopologySpread"],
        zoned("z1", "z2", "z3"),
        existing=[
            bound(pod("e1", app="web", rev="v1"), "n1"),
            bound(pod("e2", app="web", rev="v1"), "n1"),
            bound(pod("e3", app="web", rev="v1"), "n2"),
        ],
        pods=[
            spread(pod(f"p{i}", cpu="100m", app="web", rev="v2"), 1, ZONE, matchLabelKeys=["rev"])
            for i in (1, 2, 3)
        ]
        + [spread(pod("p4", cpu="100m", app="web", rev="v2"), 1, ZONE)],
    )
)

add(
    scenario(
        "spread-system-default",
        "pods selected by a Service get the system default constraints (ScheduleAnyway)",
        ["PodTopologySpread"],
        ZONES4,
        objects=[service("web", app="web")],
        existing=[
            bound(pod("e1", app="web"), "n1"),
            bound(pod("e2", app="web"), "n1"),
            bound(pod("e3", app="web"), "n2"),
        ],
        pods=[pod(f"p{i}", cpu="100m", app="web") for i in (1, 2, 3)] + [pod("p4", cpu="100m", app="other")],
    )
)

# ---------------------------------------------------------------- InterPodAffinity

ZONES3 = [node("n1", zone="z1"), node("n2", zone="z1"), node("n3", zone="z2")]


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


add(
    scenario(
        "ipa-required-affinity",
        "required pod affinity by zone and by hostname; no matching pod -> pending",
        ["InterPodAffinity"],
        ZONES3,
        existing=[bound(pod("db", app="db"), "n2")],
        pods=[
            affinity(pod("p1", cpu="100m"), pod_term(ZONE, {"app": "db"})),
            affinity(pod("p2", cpu="100m"), pod_term(HOST, {"app": "db"})),
            affinity(pod("p3", cpu="100m"), pod_term(HOST, {"app": "cache"})),
            affinity(pod("p4", cpu="100m"), pod_term(ZONE, {"app": "db"}), pod_term(HOST, {"app": "db"})),
        ],
    )
)

add(
    scenario(
        "ipa-required-anti-affinity",
        "required anti-affinity by hostname until every node has one",
        ["InterPodAffinity"],
        ZONES3,
        existing=[bound(pod("e1", app="web"), "n1")],
        pods=[
            affinity(pod(f"p{i}", cpu="100m", app="web"), pod_term(HOST, {"app": "web"}), anti=True)
            for i in (1, 2, 3)
        ]
        + [affinity(pod("p4", cpu="100m", app="api"), pod_term(ZONE, {"app": "web"}), anti=True)],
    )
)

add(
    scenario(
        "ipa-preferred",
        "preferred affinity and anti-affinity weights in scoring",
        ["InterPodAffinity"],
        [node("n1", zone="z1"), node("n2", zone="z1"), node("n3", zone="z2"), node("n4", zone="z2")],
        existing=[bound(pod("db", app="db"), "n1"), bound(pod("noisy", app="noisy"), "n3")],
        pods=[
            affinity(pod("p1", cpu="100m"), pod_term(ZONE, {"app": "db"}), weight=100),
            affinity(pod("p2", cpu="100m"), pod_term(HOST, {"app": "noisy"}), anti=True, weight=100),
            affinity(
                affinity(pod("p3", cpu="100m"), pod_term(ZONE, {"app": "noisy"}), weight=30),
                pod_term(HOST, {"app": "noisy"}),
                anti=True,
                weight=70,
            ),
            affinity(pod("p4", cpu="100m"), pod_term(ZONE, {"app": "none"}), weight=50),
        ],
    )
)

add(
    scenario(
        "ipa-namespace-selector",
        "affinity terms across namespaces: namespaceSelector, namespaces, own namespace",
        ["InterPodAffinity"],
        three(),
        objects=[namespace("diff-ipa-team-a", team="a"), namespace("diff-ipa-team-b", team="b")],
        existing=[
            bound(pod("cache-a", app="cache", ns="diff-ipa-team-a"), "n1"),
            bound(pod("cache-b", app="cache", ns="diff-ipa-team-b"), "n2"),
        ],
        pods=[
            affinity(
                pod("p1", cpu="100m"),
                pod_term(HOST, {"app": "cache"}, namespace_selector={"matchLabels": {"team": "b"}}),
            ),
            affinity(pod("p2", cpu="100m"), pod_term(HOST, {"app": "cache"}, namespaces=["diff-ipa-team-a"])),
            affinity(
                pod("p3", cpu="100m"), pod_term(HOST, {"app": "cache"}, namespace_selector={}), anti=True
            ),
            affinity(pod("p4", cpu="100m"), pod_term(HOST, {"app": "cache"})),
            affinity(
                pod("p5", cpu="100m"),
                pod_term(
                    HOST,
                    {"app": "cache"},
                    namespaces=["diff-ipa-team-a"],
                    namespace_selector={"matchLabels": {"team": "b"}},
                ),
                weight=10,
            ),
        ],
    )
)

add(
    scenario(
        "ipa-existing-anti-affinity",
        "existing pods' required anti-affinity repels matching incoming pods",
        ["InterPodAffinity"],
        ZONES3,
        existing=[
            bound(affinity(pod("guard", app="db"), pod_term(HOST, {"app": "web"}), anti=True), "n1"),
            bound(affinity(pod("zguard", app="db2"), pod_term(ZONE, {"app": "batch"}), anti=True), "n3"),
        ],
        pods=[
            pod("p1", cpu="100m", app="web"),
            pod("p2", cpu="100m", app="other"),
            pod("p3", cpu="100m", app="batch"),
            on_host(pod("p4", cpu="100m", app="web"), "n1"),
            on_host(pod("p5", cpu="100m", app="batch"), "n3"),
        ],
    )
)

add(
    scenario(
        "ipa-first-of-group",
        "a pod whose required affinity matches itself may go anywhere when it is the first",
        ["InterPodAffinity"],
        ZONES3,
        pods=[
            affinity(pod("p1", cpu="100m", app="grp"), pod_term(ZONE, {"app": "grp"})),
            affinity(pod("p2", cpu="100m", app="grp"), pod_term(ZONE, {"app": "grp"})),
            affinity(pod("p3", cpu="100m", app="other"), pod_term(ZONE, {"app": "grp"})),
            affinity(pod("p4", cpu="100m", app="other2"), pod_term(ZONE, {"app": "nobody"})),
        ],
    )
)

add(
    scenario(
        "ipa-existing-preferred",
        "existing pods' preferred (anti-)affinity terms count for the incoming pod",
        ["InterPodAffinity"],
        three(),
        existing=[
            bound(affinity(pod("likes-web", app="x"), pod_term(HOST, {"app": "web"}), weight=80), "n2"),
            bound(
                affinity(pod("hates-web", app="y"), pod_term(HOST, {"app": "web"}), anti=True, weight=80),
                "n3",
            ),
            bound(affinity(pod("needs-web", app="z"), pod_term(HOST, {"app": "web"})), "n1"),
        ],
        pods=[
            pod("p1", cpu="100m", app="web"),
            pod("p2", cpu="100m", app="web"),
            pod("p3", cpu="100m", app="other"),
        ],
    )
)

# ---------------------------------------------------------------- volumes

add(
    scenario(
        "vol-bound-pv-affinity",
        "a bound PVC's PV node affinity pins the pod; an unreachable PV -> pending",
        ["VolumeBinding"],
        three(),
        objects=[
            storage_class("diff-local"),
            pv("diff-pv-n2", "diff-local", claim="data", hosts=["n2"]),
            pvc("data", "diff-local", volume="diff-pv-n2"),
            pv("diff-pv-gone", "diff-local", claim="lost", hosts=["n9"]),
            pvc("lost", "diff-local", volume="diff-pv-gone"),
        ],
        pods=[pod("p1", cpu="100m").pvc("data"), pod("p2", cpu="100m").pvc("lost"), pod("p3", cpu="100m")],
    )
)

add(
    scenario(
        "vol-unbound-immediate",
        "an unbound PVC of an Immediate class keeps the pod pending",
        ["VolumeBinding"],
        three(),
        objects=[
            storage_class("diff-immediate", "Immediate", "example.com/never"),
            pvc("waiting", "diff-immediate"),
        ],
        pods=[pod("p1", cpu="100m").pvc("waiting"), pod("p2", cpu="100m")],
    )
)

add(
    scenario(
        "vol-missing-pvc",
        "a pod naming a PVC that does not exist stays pending",
        ["VolumeBinding"],
        three(),
        pods=[pod("p1", cpu="100m").pvc("ghost"), pod("p2", cpu="100m")],
    )
)

add(
    scenario(
        "vol-wffc-static",
        "WaitForFirstConsumer: the pod goes where a matching static PV is, and binds it",
        ["VolumeBinding"],
        three(),
        objects=[
            storage_class("diff-wffc", "WaitForFirstConsumer"),
            pv("diff-pv-a", "diff-wffc", size="10Gi", hosts=["n3"]),
            pv("diff-pv-small", "diff-wffc", size="1Gi", hosts=["n1"]),
            pvc("claim1", "diff-wffc", size="5Gi"),
            pvc("claim2", "diff-wffc", size="5Gi"),
        ],
        pods=[pod("p1", cpu="100m").pvc("claim1"), pod("p2", cpu="100m").pvc("claim2")],
    )
)

add(
    scenario(
        "vol-rwop",
        "ReadWriteOncePod: a claim in use by another pod makes the pod unschedulable",
        ["VolumeRestrictions"],
        three(),
        objects=[
            storage_class("diff-rwop"),
            pv("diff-pv-rwop1", "diff-rwop", modes=["ReadWriteOncePod"], claim="solo"),
            pvc("solo", "diff-rwop", modes=["ReadWriteOncePod"], volume="diff-pv-rwop1"),
            pv("diff-pv-rwop2", "diff-rwop", modes=["ReadWriteOncePod"], claim="free"),
            pvc("free", "diff-rwop", modes=["ReadWriteOncePod"], volume="diff-pv-rwop2"),
        ],
        existing=[bound(pod("owner").pvc("solo"), "n1")],
        pods=[
            pod("p1", cpu="100m").pvc("solo"),
            pod("p2", cpu="100m").pvc("free"),
            pod("p3", cpu="100m").pvc("free"),
        ],
    )
)

add(
    scenario(
        "vol-zone",
        "VolumeZone: a PV labelled with a zone needs a node in that zone",
        ["VolumeZone"],
        [node("n1", zone="z1"), node("n2", zone="z2"), node("n3", zone="z2")],
        objects=[
            storage_class("diff-zonal"),
            pv("diff-pv-z2", "diff-zonal", claim="zonal", labels={ZONE: "z2"}),
            pvc("zonal", "diff-zonal", volume="diff-pv-z2"),
            pv("diff-pv-z9", "diff-zonal", claim="far", labels={ZONE: "z9"}),
            pvc("far", "diff-zonal", volume="diff-pv-z9"),
            pv("diff-pv-multi", "diff-zonal", claim="multi", labels={ZONE: "z1__z9"}),
            pvc("multi", "diff-zonal", volume="diff-pv-multi"),
        ],
        pods=[
            pod("p1", cpu="100m").pvc("zonal"),
            pod("p2", cpu="100m").pvc("far"),
            pod("p3", cpu="100m").pvc("multi"),
        ],
    )
)

add(
    scenario(
        "vol-csi-limits",
        "NodeVolumeLimits: CSINode allocatable count caps CSI volumes per node",
        ["NodeVolumeLimits"],
        [node("n1"), node("n2")],
        objects=[storage_class("diff-csi", provisioner=CSI_DRIVER), csinode("n1", 1), csinode("n2", 2)]
        + [
            x
            for i in (1, 2, 3, 4)
            for x in (
                pv(f"diff-pv-csi{i}", "diff-csi", claim=f"c{i}", csi_handle=f"vol-{i}"),
                pvc(f"c{i}", "diff-csi", volume=f"diff-pv-csi{i}"),
            )
        ],
        existing=[bound(pod("e1").pvc("c1"), "n1")],
        pods=[
            pod("p1", cpu="100m").pvc("c2"),
            pod("p2", cpu="100m").pvc("c3"),
            pod("p3", cpu="100m").pvc("c4"),
            pod("p4", cpu="100m").pvc("c1"),
        ],
    )
)

# ---------------------------------------------------------------- SchedulingGates

add(
    scenario(
        "scheduling-gates",
        "a gated pod stays pending; ungated pods are placed",
        ["SchedulingGates"],
        three(),
        pods=[
            pod("p1", cpu="100m").gate("example.com/wait"),
            pod("p2", cpu="100m"),
            pod("p3", cpu="100m").gate("a").gate("b"),
        ],
    )
)

# ---------------------------------------------------------------- DefaultPreemption / PrioritySort

PCS = [
    priority_class("diff-p100", 100),
    priority_class("diff-p200", 200),
    priority_class("diff-p1000", 1000),
    priority_class("diff-p2000", 2000),
    priority_class("diff-never", 1000, never=True),
]


def prio(b: PodBuilder, cls: str) -> PodBuilder:
    return b.priority_class(cls)


add(
    scenario(
        "preempt-basic",
        "a high-priority pod evicts a low-priority pod; too big a pod finds no victims",
        ["DefaultPreemption"],
        [node("n1", "2"), node("n2", "2")],
        objects=PCS,
        existing=[
            bound(prio(pod("low", cpu="1500m"), "diff-p100"), "n1"),
            bound(prio(pod("high", cpu="1500m"), "diff-p2000"), "n2"),
        ],
        pods=[
            prio(pod("p1", cpu="1"), "diff-p1000"),
            prio(pod("p2", cpu="3"), "diff-p1000"),
            pod("p3", cpu="1"),
        ],
    )
)

add(
    scenario(
        "preempt-lowest-priority",
        "among candidate nodes, the one whose highest victim priority is lowest wins",
        ["DefaultPreemption"],
        [node("n1", "2"), node("n2", "2")],
        objects=PCS,
        existing=[
            bound(prio(pod("v100", cpu="1500m"), "diff-p100"), "n2"),
            bound(prio(pod("v200", cpu="1500m"), "diff-p200"), "n1"),
        ],
        pods=[prio(pod("p1", cpu="1"), "diff-p1000")],
    )
)

add(
    scenario(
        "preempt-pdb",
        "victims whose PodDisruptionBudget allows no disruption are avoided",
        ["DefaultPreemption"],
        [node("n1", "2"), node("n2", "2")],
        objects=[*PCS, pdb("guarded", {"app": "guarded"}, 0, 1)],
        existing=[
            bound(prio(pod("g1", cpu="1500m", app="guarded"), "diff-p100"), "n1"),
            bound(prio(pod("f1", cpu="1500m", app="free"), "diff-p100"), "n2"),
        ],
        pods=[prio(pod("p1", cpu="1"), "diff-p1000")],
    )
)

add(
    scenario(
        "preempt-fewest-victims",
        "equal victim priorities: the smaller priority sum (fewer victims) wins",
        ["DefaultPreemption"],
        [node("n1", "2"), node("n2", "2")],
        objects=PCS,
        existing=[
            bound(prio(pod("a1", cpu="900m"), "diff-p100"), "n1"),
            bound(prio(pod("a2", cpu="900m"), "diff-p100"), "n1"),
            bound(prio(pod("b1", cpu="1800m"), "diff-p100"), "n2"),
        ],
        pods=[prio(pod("p1", cpu="1500m"), "diff-p1000")],
    )
)

add(
    scenario(
        "preempt-reprieve",
        "victims are reprieved highest priority first: only what must go is evicted",
        ["DefaultPreemption"],
        [node("n1", "2"), node("n2", "2")],
        objects=PCS,
        existing=[
            bound(prio(pod("a", cpu="1"), "diff-p100"), "n1"),
            bound(prio(pod("b", cpu="1"), "diff-p200"), "n1"),
            bound(prio(pod("top", cpu="1800m"), "diff-p2000"), "n2"),
        ],
        pods=[prio(pod("p1", cpu="1"), "diff-p1000"), prio(pod("p2", cpu="500m"), "diff-p200")],
    )
)

add(
    scenario(
        "preempt-never",
        "preemptionPolicy Never: the pod waits instead of evicting",
        ["DefaultPreemption"],
        [node("n1", "2")],
        objects=PCS,
        existing=[bound(prio(pod("low", cpu="1500m"), "diff-p100"), "n1")],
        pods=[prio(pod("p1", cpu="1"), "diff-never"), prio(pod("p2", cpu="1"), "diff-p1000")],
    )
)

add(
    scenario(
        "priority-sort",
        "pods pending together are tried highest priority first",
        ["PrioritySort"],
        [node("n1", "1")],
        objects=PCS,
        batch=[
            prio(pod("b-low", cpu="800m"), "diff-p100"),
            prio(pod("b-top", cpu="800m"), "diff-p2000"),
            prio(pod("b-mid", cpu="800m"), "diff-p200"),
        ],
    )
)

# ---------------------------------------------------------------- pod-level resources and in-place resize
# (PodLevelResources, beta and on by default since 1.34; InPlacePodVerticalScaling, GA). Existing pods
# with a "status" get it written through the status subresource once KWOK has started them (see
# bench/differential/runner.py ScenarioRunner.setup), as a kubelet resizing them would.


def pod_level(b: PodBuilder, **requests: str) -> PodBuilder:
    """Pod-level requests (spec.resources.requests) on a builder."""
    return b.pod_requests(**requests)


def resizing(
    b: PodBuilder, reason: str = "", allocated: Mapping[str, str] | None = None, **actuated: str
) -> PodBuilder:
    """Container 0 of ``b`` reported by its kubelet at ``actuated`` requests (and ``allocated``), with a
    PodResizePending condition of ``reason`` when given."""
    b.resized(0, allocated, **actuated)
    if reason:
        b.resize_pending(reason)
    return b


add(
    scenario(
        "podlevel-no-fit",
        "pod-level cpu above every node's allocatable, though its containers ask 100m",
        ["NodeResourcesFit"],
        [node("n1", "4"), node("n2", "2")],
        pods=[
            pod_level(pod("p1", cpu="100m"), cpu="5"),
            pod_level(pod("p2", memory="1Gi"), memory="9Gi"),
            pod_level(pod("p3", cpu="100m"), cpu="3"),
        ],
    )
)

add(
    scenario(
        "podlevel-fit",
        "pod-level requests fill nodes; the last pods no longer fit",
        ["NodeResourcesFit"],
        [node("n1", "4"), node("n2", "4")],
        pods=[
            pod_level(pod("p1", cpu="100m"), cpu="3"),
            pod_level(pod("p2"), cpu="3", memory="1Gi"),
            pod_level(pod("p3", cpu="100m"), cpu="1500m"),
            pod("p4", cpu="1"),
            pod("p5", cpu="500m"),
        ],
    )
)

add(
    scenario(
        "podlevel-mixed",
        "pod-level cpu with container memory, pod-level memory with container cpu",
        ["NodeResourcesFit"],
        [node("n1", "4", "4Gi"), node("n2", "4", "4Gi")],
        pods=[
            pod_level(pod("p1", cpu="200m", memory="3Gi").container(cpu="200m", memory="512Mi"), cpu="3"),
            pod_level(pod("p2", cpu="3"), memory="3Gi"),
            pod_level(pod("p3", cpu="100m", memory="1Gi").container(memory="1Gi"), cpu="1"),
            pod("p4", cpu="1", memory="1Gi"),
        ],
    )
)

add(
    scenario(
        "podlevel-existing",
        "next to existing pod-level pods: a 1-CPU pod must not overcommit the node",
        ["NodeResourcesFit"],
        [node("n1", "4"), node("n2", "2")],
        existing=[
            bound(pod("e1", cpu="500m"), "n1"),
            bound(pod_level(pod("e2", cpu="100m"), cpu="3"), "n1"),
            bound(pod_level(pod("e3"), cpu="1500m"), "n2"),
        ],
        pods=[pod("p1", cpu="1"), pod("p2", cpu="400m"), pod("p3", cpu="200m")],
    )
)

add(
    scenario(
        "podlevel-score",
        "scoring with pod-level requests (LeastAllocated and BalancedAllocation)",
        ["NodeResourcesFit", "NodeResourcesBalancedAllocation"],
        three("8", "16Gi"),
        existing=[
            bound(pod_level(pod("e1", memory="1Gi"), cpu="4"), "n1"),
            bound(pod_level(pod("e2", cpu="100m").container(memory="2Gi"), cpu="1"), "n2"),
        ],
        pods=[
            pod_level(pod("p1", cpu="100m"), cpu="2", memory="4Gi"),
            pod_level(pod("p2"), cpu="3"),
            pod_level(pod("p3", memory="512Mi"), memory="6Gi"),
            pod("p4", cpu="1", memory="1Gi"),
        ],
    )
)

add(
    scenario(
        "podlevel-resized",
        "existing pods being resized in place count at max(desired, allocated)",
        ["NodeResourcesFit"],
        [node("n1", "4"), node("n2", "4"), node("n3", "4")],
        existing=[
            bound(resizing(pod("e1", cpu="1"), allocated={"cpu": "3"}, cpu="3"), "n1"),
            bound(resizing(pod("e2", cpu="3"), "Deferred", allocated={"cpu": "1"}, cpu="1"), "n2"),
            bound(resizing(pod("e3", cpu="3"), "Infeasible", allocated={"cpu": "1"}, cpu="1"), "n3"),
        ],
        pods=[pod("p1", cpu="2500m"), pod("p2", cpu="1500m"), pod("p3", cpu="1500m")],
    )
)

# ---------------------------------------------------------------- combinations

add(
    scenario(
        "mixed-constraints",
        "resources, taints, node affinity, spreading and pod affinity together",
        ["NodeResourcesFit", "TaintToleration", "NodeAffinity", "PodTopologySpread", "InterPodAffinity"],
        [
            node("n1", "4", zone="z1", labels={"disk": "ssd"}),
            node("n2", "2", zone="z1"),
            node("n3", "4", zone="z2", labels={"disk": "ssd"}, taints=[("spot", "true", "NoSchedule")]),
            node("n4", "8", zone="z3", labels={"disk": "ssd"}),
        ],
        existing=[bound(pod("db", cpu="1", app="db"), "n1"), bound(pod("w1", cpu="500m", app="web"), "n4")],
        pods=[
            spread(
                affinity(pod("p1", cpu="1", app="web"), pod_term(ZONE, {"app": "db"}), weight=50), 1, ZONE
            ),
            tolerating(sel(spread(pod("p2", cpu="1", app="web"), 1, ZONE), disk="ssd"), tol("spot", "true")),
            affinity(pod("p3", cpu="3", app="api"), pod_term(HOST, {"app": "web"}), anti=True),
            sel(pod("p4", cpu="6", app="big"), disk="ssd"),
        ],
    )
)

add(
    scenario(
        "mixed-many-nodes",
        "twelve nodes in three zones, a run of mixed pods",
        ["NodeResourcesFit", "NodeResourcesBalancedAllocation", "PodTopologySpread", "InterPodAffinity"],
        [node(f"n{i}", str(2 + i % 3 * 2), f"{4 + i % 4 * 4}Gi", zone=f"z{i % 3}") for i in range(1, 13)],
        existing=[bound(pod(f"e{i}", cpu="500m", memory="1Gi", app="web"), f"n{i}") for i in (1, 2, 5)],
        pods=[
            spread(pod(f"p{i}", cpu="700m", memory=f"{1 + i % 3}Gi", app="web"), 1, ZONE, "ScheduleAnyway")
            for i in range(1, 7)
        ]
        + [
            affinity(pod(f"q{i}", cpu="300m", app="cache"), pod_term(HOST, {"app": "cache"}), anti=True)
            for i in range(1, 5)
        ],
    )
)


# ---------------------------------------------------------------- NodeDeclaredFeatures
# (kept together: nodes that declare features in status.declaredFeatures and nodes that declare none,
# as an older kubelet's; pods that need a feature by their spec and pods that need none. Of 1.36's
# features only RestartAllContainersOnContainerExits can be asked for through a v1.36.3 API server with
# default gates: UserNamespacesHostNetworkSupport's hostNetwork + hostUsers=false is still rejected.)

RESTART_ALL = "RestartAllContainersOnContainerExits"


def declaring(n: JSON, *features: str) -> JSON:
    """The node with ``status.declaredFeatures`` set, as its kubelet would write it (the API server
    requires the list sorted)."""
    n["status"]["declaredFeatures"] = sorted(features)
    return n


def restarts_all(b: PodBuilder) -> PodBuilder:
    """A pod whose container restarts all containers on exit code 42: it needs RESTART_ALL."""
    return b.restart_rule("RestartAllContainers")


add(
    scenario(
        "ndf-mixed",
        "nodes declaring a feature, another one, or none; pods needing it or nothing",
        ["NodeDeclaredFeatures", "NodeResourcesFit"],
        [
            declaring(node("n1", "4"), RESTART_ALL),
            declaring(node("n2", "8"), "SomeFutureFeature"),
            node("n3", "6"),
            declaring(node("n4", "2"), "SomeFutureFeature", RESTART_ALL),
        ],
        pods=[
            restarts_all(pod("p1", cpu="1")),
            pod("p2", cpu="1"),
            restarts_all(pod("p3", cpu="3")),
            restarts_all(pod("p4", cpu="3")),
            pod("p5", cpu="2"),
            restarts_all(pod("p6", cpu="500m")),
        ],
    )
)

add(
    scenario(
        "ndf-no-node",
        "no node declares the feature the pod needs (old kubelets): exact message",
        ["NodeDeclaredFeatures"],
        [node("n1"), node("n2"), declaring(node("n3"), "SomeFutureFeature")],
        pods=[restarts_all(pod("p1", cpu="100m")), pod("p2", cpu="100m")],
    )
)

add(
    scenario(
        "ndf-declared-later",
        "a parked pod schedules once a node's kubelet declares the feature",
        ["NodeDeclaredFeatures"],
        [
            node("n1", "8"),
            node("n2"),
        ],  # n1 is roomier: b2's placement is no score tie (batch pods get no tie judging)
        batch=[restarts_all(pod("b1", cpu="100m")), pod("b2", cpu="1")],
        node_updates=[{"metadata": {"name": "n2"}, "status": {"declaredFeatures": [RESTART_ALL]}}],
    )
)


def by_name() -> dict[str, Scenario]:
    return {s.name: s for s in SCENARIOS}


def _check() -> None:
    names = [s.name for s in SCENARIOS]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"duplicate scenario names {dup}"
    for s in SCENARIOS:
        assert len(s.namespace) <= 63, s.name


_check()

from bench.scenarios_gang import GANG_SCENARIOS  # noqa: E402 (the gang scenarios use the helpers above)

SCENARIOS.extend(GANG_SCENARIOS)
import bench.scenarios_dra  # noqa: E402, F401  (Dynamic Resource Allocation scenarios, appended to SCENARIOS)
