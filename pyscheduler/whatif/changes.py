"""Changes to a snapshot's nodes before a simulation: what an operator is about to do.

    change              nodes                                   the pods on them
    --cordon NODE       spec.unschedulable = true               stay
    --drain NODE        cordoned                                owned by a controller (not a DaemonSet):
                                                                pending again, to be placed elsewhere;
                                                                DaemonSet and mirror pods stay; bare pods
                                                                are lost (``kubectl drain --force``)
    --remove-node NODE  gone                                    owned by a controller (not a DaemonSet):
                                                                pending again; the others are lost
    --add-nodes N --like NODE   N copies ``NODE-whatif-<i>``    none (with NODE's labels, taints,
                                (and of its CSINode)            allocatable; not cordoned)

PodDisruptionBudgets are not consulted by drain here: the report lists every pod a drain displaces.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pyscheduler.whatif.snapshot import JSON, ClusterSnapshot

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
HOSTNAME_LABEL = "kubernetes.io/hostname"
MAX_ADDED_NODES = 100_000


class ChangeError(ValueError):
    """A change that cannot apply to this snapshot (an unknown node, a bad count)."""


@dataclass
class Changes:
    drain: Sequence[str] = ()
    cordon: Sequence[str] = ()
    remove: Sequence[str] = ()
    add_nodes: int = 0
    like: str | None = None

    def is_empty(self) -> bool:
        return not (self.drain or self.cordon or self.remove or self.add_nodes)

    def describe(self) -> list[str]:
        out = [f"drain {n}" for n in self.drain]
        out += [f"cordon {n}" for n in self.cordon]
        out += [f"remove {n}" for n in self.remove]
        if self.add_nodes:
            out.append(f"add {self.add_nodes} node(s) like {self.like}")
        return out


@dataclass
class LostPod:
    pod: str  # "ns/name"
    node: str
    why: str


@dataclass
class Applied:
    """The snapshot after the changes: the nodes, the pods that stay bound, those pending as before, those
    displaced (pending again, by "ns/name" → the node they left) and those lost."""

    nodes: list[JSON]
    bound: list[JSON]
    pending: list[JSON]
    displaced: list[JSON] = field(default_factory=list)
    displaced_from: dict[str, str] = field(default_factory=dict)
    lost: list[LostPod] = field(default_factory=list)
    added_nodes: list[str] = field(default_factory=list)
    objects: dict[str, list[JSON]] = field(default_factory=dict)


def _pod_key(p: JSON) -> str:
    m = p.get("metadata") or {}
    return f"{m.get('namespace') or 'default'}/{m.get('name', '')}"


def _controller_kind(p: JSON) -> str | None:
    for ref in (p.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("kind") or "")
    return None


def _is_mirror(p: JSON) -> bool:
    return MIRROR_ANNOTATION in ((p.get("metadata") or {}).get("annotations") or {})


def _recreated(p: JSON, stamp: str) -> JSON:
    """The pod its controller makes again: same name and spec, unbound, a new uid."""
    d = copy.deepcopy(p)
    meta = d.setdefault("metadata", {})
    meta["uid"] = f"{meta.get('uid') or _pod_key(p)}-whatif"
    meta["creationTimestamp"] = stamp
    meta.pop("resourceVersion", None)
    meta.pop("deletionTimestamp", None)
    d.setdefault("spec", {}).pop("nodeName", None)
    d["status"] = {"phase": "Pending"}
    return d


def apply(snapshot: ClusterSnapshot, changes: Changes, *, stamp: str | None = None) -> Applied:
    names = snapshot.node_names()
    known = set(names)
    for flag, asked in (
        ("--drain", changes.drain),
        ("--cordon", changes.cordon),
        ("--remove-node", changes.remove),
    ):
        unknown = [n for n in asked if n not in known]
        if unknown:
            raise ChangeError(f"{flag}: no node {', '.join(map(repr, unknown))} in the snapshot")
    if changes.add_nodes < 0 or changes.add_nodes > MAX_ADDED_NODES:
        raise ChangeError(f"--add-nodes must be from 0 to {MAX_ADDED_NODES}, not {changes.add_nodes}")
    if changes.add_nodes and not changes.like:
        raise ChangeError("--add-nodes needs --like NODE (the node to copy)")
    if changes.like and changes.like not in known:
        raise ChangeError(f"--like: no node {changes.like!r} in the snapshot")
    stamp = stamp or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    removed, drained = set(changes.remove), set(changes.drain)
    cordoned = (drained | set(changes.cordon)) - removed

    nodes: list[JSON] = []
    for n in snapshot.nodes:
        name = n["metadata"]["name"]
        if name in removed:
            continue
        if name in cordoned and not (n.get("spec") or {}).get("unschedulable"):
            n = copy.deepcopy(n)
            n.setdefault("spec", {})["unschedulable"] = True
        nodes.append(n)

    out = Applied(
        nodes=nodes, bound=[], pending=[], objects={k: list(v) for k, v in snapshot.objects.items()}
    )
    for p in snapshot.pods:
        node = (p.get("spec") or {}).get("nodeName") or ""
        if not node:
            out.pending.append(p)
            continue
        leaving = node in removed or node in drained
        if not leaving:
            out.bound.append(p)
            continue
        kind = _controller_kind(p)
        if node in drained and node not in removed and (kind == "DaemonSet" or _is_mirror(p)):
            out.bound.append(p)  # kubectl drain --ignore-daemonsets leaves them
        elif kind is not None and kind != "DaemonSet" and not _is_mirror(p):
            out.displaced.append(_recreated(p, stamp))
            out.displaced_from[_pod_key(p)] = node
        else:
            why = (
                "a DaemonSet pod"
                if kind == "DaemonSet"
                else "a mirror pod"
                if _is_mirror(p)
                else "no controller"
            )
            out.lost.append(LostPod(_pod_key(p), node, f"{why}: not re-created"))

    if changes.add_nodes and changes.like:
        _add_like(out, snapshot, changes.like, changes.add_nodes, known)
    return out


def _add_like(out: Applied, snapshot: ClusterSnapshot, like: str, count: int, known: set[str]) -> None:
    template = next(n for n in snapshot.nodes if n["metadata"]["name"] == like)
    csinode = next(
        (c for c in snapshot.objects.get("CSINode", ()) if (c.get("metadata") or {}).get("name") == like),
        None,
    )
    i = 0
    for _ in range(count):
        i += 1
        while f"{like}-whatif-{i}" in known:
            i += 1
        name = f"{like}-whatif-{i}"
        n = copy.deepcopy(template)
        meta: dict[str, Any] = n["metadata"]
        meta["name"] = name
        meta["uid"] = f"whatif-node-{name}"
        meta.pop("resourceVersion", None)
        meta.pop("creationTimestamp", None)
        meta.setdefault("labels", {})[HOSTNAME_LABEL] = name
        spec = n.setdefault("spec", {})
        spec.pop("unschedulable", None)
        spec.pop("providerID", None)
        spec.pop("podCIDR", None)
        spec.pop("podCIDRs", None)
        if spec.get("taints"):
            spec["taints"] = [t for t in spec["taints"] if t.get("key") != UNSCHEDULABLE_TAINT]
        out.nodes.append(n)
        out.added_nodes.append(name)
        if csinode is not None:
            c = copy.deepcopy(csinode)
            c["metadata"] = {**c["metadata"], "name": name, "uid": f"whatif-csinode-{name}"}
            out.objects.setdefault("CSINode", []).append(c)
