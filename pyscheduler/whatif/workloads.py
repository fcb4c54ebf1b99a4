"""Workloads to add to a simulation, expanded to the pods their controllers would create.

    kind                          pods
    Pod                           itself
    Deployment                    spec.replicas (default 1) pods of its template, owned by a ReplicaSet
                                  ``<name>-whatif`` (added too: default topology spreading reads it)
    ReplicaSet, ReplicationController   spec.replicas pods, owned by it (it is added too)
    StatefulSet                   ``<name>-0`` ... ``<name>-<replicas-1>``, with the PVCs of its
                                  volumeClaimTemplates (``<template>-<name>-<i>``, pending)
    Job                           min(parallelism, completions) pods (parallelism defaults to 1)
    List                          its items

What admission does on a real cluster is done here too: the namespace defaults to ``default``;
``spec.priorityClassName`` becomes ``spec.priority`` (and the class's preemptionPolicy) from the
snapshot's PriorityClasses, or from the global default class when the pod names none; a class the
snapshot does not have is an error, as admission refuses the pod. A pod without ``schedulerName`` gets the
first profile's (the simulation sets it).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyscheduler.whatif.snapshot import JSON, SnapshotError, _read_documents

# Classes every cluster has (the API server creates them); a snapshot without PriorityClasses still knows them.
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
MAX_REPLICAS = 1_000_000


class WorkloadError(ValueError):
    """A workload that cannot be expanded; the message names the file, the object and the field."""


@dataclass
class Workload:
    """One added object and the pods (and objects) it stands for."""

    kind: str
    namespace: str
    name: str
    source: str
    pods: list[JSON] = field(default_factory=list)
    objects: list[JSON] = field(default_factory=list)  # with their kind: ReplicaSet, StatefulSet, PVC...

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


class _Priorities:
    def __init__(self, classes: Mapping[str, Mapping[str, Any]]) -> None:
        self.values = dict(SYSTEM_PRIORITY_CLASSES)
        self.policies: dict[str, str] = {}
        self.default: str | None = None
        for name, pc in classes.items():
            self.values[name] = int(pc.get("value") or 0)
            if pc.get("preemptionPolicy"):
                self.policies[name] = str(pc["preemptionPolicy"])
            if pc.get("globalDefault"):
                self.default = name

    def admit(self, spec: JSON, where: str) -> None:
        if "priority" in spec and spec["priority"] is not None:
            return
        name = spec.get("priorityClassName") or self.default
        if not name:
            spec["priority"] = 0
            return
        if name not in self.values:
            raise WorkloadError(
                f"{where}: no PriorityClass {name!r} in the snapshot (admission would refuse the pod)"
            )
        spec["priorityClassName"] = name
        spec["priority"] = self.values[name]
        if name in self.policies:
            spec.setdefault("preemptionPolicy", self.policies[name])


def expand(
    docs: Iterable[tuple[str, Any]],
    priority_classes: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    created: str | None = None,
) -> list[Workload]:
    """Workloads from ``(where, document)`` pairs (``where`` names the file and document in errors)."""
    prio = _Priorities(priority_classes or {})
    stamp = created or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    out: list[Workload] = []
    for where, doc in docs:
        if doc is None:
            continue
        _expand_one(doc, where, prio, stamp, out)
    seen: dict[str, str] = {}
    for w in out:
        for p in w.pods:
            key = f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            if key in seen:
                raise WorkloadError(f"{w.source}: pod {key} is also made by {seen[key]}")
            seen[key] = w.source
    return out


def load(
    paths: Sequence[str | Path],
    priority_classes: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    created: str | None = None,
) -> list[Workload]:
    """Workloads from YAML/JSON files (several documents or a List each)."""
    docs: list[tuple[str, Any]] = []
    for path in paths:
        try:
            docs.extend(_read_documents(Path(path)))
        except SnapshotError as e:
            raise WorkloadError(str(e)) from e
    return expand(docs, priority_classes, created=created)


def _expand_one(doc: Any, where: str, prio: _Priorities, stamp: str, out: list[Workload]) -> None:
    if not isinstance(doc, Mapping):
        raise WorkloadError(f"{where}: expected an object, got {type(doc).__name__}")
    kind = doc.get("kind")
    if kind == "List":
        for i, item in enumerate(doc.get("items") or ()):
            _expand_one(item, f"{where}, item {i + 1}", prio, stamp, out)
        return
    meta = doc.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        raise WorkloadError(f"{where}: {kind or 'object'} without metadata.name")
    name = str(meta["name"])
    ns = str(meta.get("namespace") or "default")
    label = f"{where}: {kind} {ns}/{name}"
    spec = doc.get("spec")
    if not isinstance(spec, Mapping):
        raise WorkloadError(f"{label}: no spec")
    w = Workload(str(kind), ns, name, where)
    if kind == "Pod":
        pod = _pod_from(dict(meta), dict(spec), ns, name, None, stamp)
        prio.admit(pod["spec"], label)
        w.pods.append(pod)
    elif kind in ("Deployment", "ReplicaSet", "ReplicationController", "StatefulSet", "Job"):
        _expand_controller(w, doc, spec, label, prio, stamp)
    elif kind in ("DaemonSet", "CronJob"):
        raise WorkloadError(
            f"{label}: {kind}s are not expanded (a DaemonSet's pods follow its nodes, a CronJob's its "
            "schedule); add the pods or a Job instead"
        )
    else:
        raise WorkloadError(
            f"{label}: cannot expand a {kind or 'kind-less object'} "
            "(Pod, Deployment, ReplicaSet, ReplicationController, StatefulSet, Job or List)"
        )
    out.append(w)


def _int_field(spec: Mapping[str, Any], name: str, default: int, label: str) -> int:
    v = spec.get(name, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v > MAX_REPLICAS:
        raise WorkloadError(f"{label}: spec.{name} must be an integer from 0 to {MAX_REPLICAS}, not {v!r}")
    return v


def _expand_controller(
    w: Workload, doc: Mapping[str, Any], spec: Mapping[str, Any], label: str, prio: _Priorities, stamp: str
) -> None:
    template = spec.get("template")
    if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
        raise WorkloadError(f"{label}: no spec.template.spec")
    kind, ns, name = w.kind, w.namespace, w.name
    if kind == "Job":
        parallelism = _int_field(spec, "parallelism", 1, label)
        completions = spec.get("completions")
        count = (
            parallelism
            if completions is None
            else min(parallelism, _int_field(spec, "completions", 1, label))
        )
    else:
        count = _int_field(spec, "replicas", 1, label)
    tmeta = dict(template.get("metadata") or {})
    tspec = dict(template["spec"])
    owner_kind, owner_name = kind, name
    labels = dict(tmeta.get("labels") or {})
    if kind == "Deployment":
        owner_kind, owner_name = "ReplicaSet", f"{name}-whatif"
        labels["pod-template-hash"] = "whatif"
        selector = copy.deepcopy(dict(spec.get("selector") or {"matchLabels": dict(labels)}))
        selector.setdefault("matchLabels", {})["pod-template-hash"] = "whatif"
        w.objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": owner_name,
                    "namespace": ns,
                    "uid": f"whatif-replicaset-{ns}-{owner_name}",
                },
                "spec": {
                    "replicas": count,
                    "selector": selector,
                    "template": {"metadata": {"labels": labels}},
                },
            }
        )
    elif kind in ("ReplicaSet", "ReplicationController", "StatefulSet"):
        obj = copy.deepcopy(dict(doc))
        obj["metadata"] = {**obj["metadata"], "namespace": ns}
        obj["metadata"].setdefault("uid", f"whatif-{kind.lower()}-{ns}-{name}")
        w.objects.append(obj)
    tmeta["labels"] = labels
    claim_templates = list(spec.get("volumeClaimTemplates") or ()) if kind == "StatefulSet" else []
    for i in range(count):
        pod_name = f"{name}-{i}" if kind == "StatefulSet" else f"{owner_name}-{i}"
        pod = _pod_from(tmeta, tspec, ns, pod_name, (owner_kind, owner_name), stamp)
        if kind == "StatefulSet":
            pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] = pod_name
            pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] = str(i)
            _claims_for(w, pod, claim_templates, i, label)
        prio.admit(pod["spec"], label)
        w.pods.append(pod)


def _claims_for(w: Workload, pod: JSON, templates: list[Any], index: int, label: str) -> None:
    vols = pod["spec"].setdefault("volumes", [])
    for t in templates:
        tname = (t.get("metadata") or {}).get("name") if isinstance(t, Mapping) else None
        if not tname:
            raise WorkloadError(f"{label}: a volumeClaimTemplate without metadata.name")
        claim = f"{tname}-{w.name}-{index}"
        w.objects.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim,
                    "namespace": w.namespace,
                    "uid": f"whatif-pvc-{w.namespace}-{claim}",
                },
                "spec": copy.deepcopy(dict(t.get("spec") or {})),
                "status": {"phase": "Pending"},
            }
        )
        vols[:] = [v for v in vols if v.get("name") != tname]
        vols.append({"name": tname, "persistentVolumeClaim": {"claimName": claim}})


def _pod_from(
    meta: Mapping[str, Any],
    spec: Mapping[str, Any],
    ns: str,
    name: str,
    owner: tuple[str, str] | None,
    stamp: str,
) -> JSON:
    m: JSON = {
        "name": name,
        "namespace": ns,
        "uid": f"whatif-{ns}-{name}",
        "labels": dict(meta.get("labels") or {}),
        "creationTimestamp": stamp,
    }
    if meta.get("annotations"):
        m["annotations"] = dict(meta["annotations"])
    if owner is not None:
        m["ownerReferences"] = [
            {
                "apiVersion": "batch/v1" if owner[0] == "Job" else "apps/v1",
                "kind": owner[0],
                "name": owner[1],
                "uid": f"whatif-{owner[0].lower()}-{ns}-{owner[1]}",
                "controller": True,
            }
        ]
    s = copy.deepcopy(dict(spec))
    if owner is not None:
        s.pop("nodeName", None)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": s, "status": {"phase": "Pending"}}
