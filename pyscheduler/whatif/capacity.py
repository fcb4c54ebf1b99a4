"""How many more copies of a pod fit, and what stops the next one (cluster-capacity's question).

Copies of the pod are added to the changed snapshot in growing batches (1, 2, 4, ... up to 256) and
scheduled by the real core until one does not fit; the copies ask for no preemption (preemptionPolicy
Never), so the answer is what fits beside the pods already running. ``stopped_by`` is the filter part of
the first failing copy's FailedScheduling text as {reason: node count}, the message itself is kept whole.
The snapshot's pending pods are not placed first (they might never be); bound pods count as they are.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyscheduler.whatif import changes as changes_mod
from pyscheduler.whatif.changes import Changes
from pyscheduler.whatif.reasons import filter_reasons
from pyscheduler.whatif.simulate import prepare_engine
from pyscheduler.whatif.snapshot import ClusterSnapshot
from pyscheduler.whatif.usage import ZONE_LABEL
from pyscheduler.whatif.workloads import WorkloadError, expand

DEFAULT_MAX_REPLICAS = 100_000
MAX_BATCH = 256


@dataclass
class CapacityResult:
    pod: str
    replicas: int
    stopped_by: dict[str, int]
    message: str | None
    limit_reached: bool
    per_node: dict[str, int] = field(default_factory=dict)
    per_zone: dict[str, int] = field(default_factory=dict)
    changes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "replicas": self.replicas,
            "stopped_by": self.stopped_by,
            "message": self.message,
            "limit_reached": self.limit_reached,
            "per_node": self.per_node,
            "per_zone": self.per_zone,
            "changes": self.changes,
            "seconds": round(self.seconds, 3),
            "warnings": self.warnings,
        }

    def to_text(self) -> str:
        lines = [f"{self.replicas} more replicas of {self.pod} fit"]
        if self.changes:
            lines[0] += f" (after: {'; '.join(self.changes)})"
        if self.limit_reached:
            lines.append("stopped at the --max-replicas limit, not by the cluster")
        elif self.stopped_by:
            lines.append("the next one is stopped by:")
            width = max(len(str(n)) for n in self.stopped_by.values())
            for reason, n in sorted(self.stopped_by.items(), key=lambda kv: (-kv[1], kv[0])):
                lines.append(f"  {n:>{width}} node(s): {reason}")
            lines.append(f"message: {self.message}")
        if self.per_zone:
            lines.append("per zone: " + ", ".join(f"{z} {n}" for z, n in self.per_zone.items()))
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def template_pod(
    doc: Mapping[str, Any], snapshot: ClusterSnapshot, where: str = "POD.yaml"
) -> dict[str, Any]:
    """The pod to copy: a Pod, or the template of a Deployment/ReplicaSet/StatefulSet/Job, admitted as
    ``workloads`` does (namespace, priority from its class)."""
    d: dict[str, Any] = copy.deepcopy(dict(doc))
    if d.get("kind") not in ("Pod", None) and isinstance(d.get("spec"), dict):
        d["spec"] = {**d["spec"], "replicas": 1, "parallelism": 1, "completions": 1}
    elif d.get("kind") is None:
        d["kind"] = "Pod"
    ws = expand([(where, d)], snapshot.priority_classes())
    if len(ws) != 1 or not ws[0].pods:
        raise WorkloadError(f"{where}: expected one pod (or a workload with a pod template)")
    return ws[0].pods[0]


def capacity(
    snapshot: ClusterSnapshot,
    pod: Mapping[str, Any],
    *,
    changes: Changes | None = None,
    config: Any = None,
    seed: int = 0,
    max_replicas: int = DEFAULT_MAX_REPLICAS,
    progress: Callable[[int, int], None] | None = None,
) -> CapacityResult:
    start = time.perf_counter()
    ch = changes or Changes()
    applied = changes_mod.apply(snapshot, ch)
    warnings = list(snapshot.warnings)
    engine, _bound = prepare_engine(applied, config, seed, (), warnings)
    base = copy.deepcopy(dict(pod))
    meta, spec = base["metadata"], base["spec"]
    spec.pop("nodeName", None)
    spec["preemptionPolicy"] = "Never"
    if not spec.get("schedulerName") or spec["schedulerName"] not in engine.app.profiles:
        spec["schedulerName"] = engine.default_scheduler_name
    ns, name = meta.get("namespace") or "default", meta["name"]
    zones = {
        n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get(ZONE_LABEL, "(no zone)")
        for n in applied.nodes
    }

    placed = 0
    message: str | None = None
    per_node: dict[str, int] = {}
    batch = 1
    while placed < max_replicas and message is None:
        count = min(batch, max_replicas - placed)
        keys = []
        copies = []
        for i in range(placed, placed + count):
            # the copies share the spec (nothing writes to it); each has its own metadata
            uid = f"whatif-capacity-{ns}-{name}-{i}"
            copies.append({**base, "metadata": {**meta, "name": f"{name}-capacity-{i}", "uid": uid}})
            keys.append(f"{ns}/{name}-capacity-{i}")
        engine.add_pods(copies, deep_copy=False)
        results = engine.run(max_rounds=0)
        for k in keys:
            r = results[k]
            if r.node is not None:
                placed += 1
                per_node[r.node] = per_node.get(r.node, 0) + 1
            elif message is None:
                message = r.message or f"not attempted ({r.reason or 'unknown'})"
        if progress is not None:
            progress(placed, max_replicas)
        batch = min(batch * 2, MAX_BATCH)
    per_zone: dict[str, int] = {}
    for node, n in per_node.items():
        per_zone[zones.get(node, "(no zone)")] = per_zone.get(zones.get(node, "(no zone)"), 0) + n
    return CapacityResult(
        pod=f"{ns}/{name}",
        replicas=placed,
        stopped_by=filter_reasons(message) if message else {},
        message=message,
        limit_reached=message is None,
        per_node=dict(sorted(per_node.items())),
        per_zone=dict(sorted(per_zone.items())),
        changes=ch.describe(),
        seconds=time.perf_counter() - start,
        warnings=warnings,
    )
