"""The what-if run: a snapshot, changes and added workloads through the real scheduler core, in process.

``simulate`` feeds the in-process engine (``pyscheduler.engine.Engine``: the daemon's validated
configuration, plugins, queue, cache and preemption, with no I/O) the changed snapshot:

1. the objects plugins read (PVCs, PVs, StorageClasses, CSINodes, PDBs, Namespaces, ReplicaSets...), the
   objects added workloads stand for, then the nodes;
2. the pods that stay bound (into the cache), then every pod to place: the snapshot's pending pods, the
   pods a drain or node removal displaced, the added workloads' pods; the queue orders them (PrioritySort:
   priority, then creation time);
3. the engine runs until nothing is left to try (backoffs and flushes on a fake clock) and each pod's
   outcome is read back: its node, or the FailedScheduling text the daemon would post; the victims of
   preemptions; then utilisation and fragmentation before (the snapshot as it is) and after.

Pending pods for a scheduler the configuration has no profile for are left alone (the daemon would not
touch them) and counted in ``skipped``, unless ``schedule_all`` hands them to the first profile. Nothing is
written anywhere.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyscheduler.framework.types import Node, Pod
from pyscheduler.whatif import changes as changes_mod
from pyscheduler.whatif.changes import Applied, Changes, LostPod
from pyscheduler.whatif.reasons import filter_reasons
from pyscheduler.whatif.snapshot import JSON, ClusterSnapshot
from pyscheduler.whatif.usage import Usage, average_pod
from pyscheduler.whatif.workloads import Workload, WorkloadError

ORIGIN_PENDING = "pending"
ORIGIN_DISPLACED = "displaced"


@dataclass
class PodOutcome:
    pod: str  # "ns/name"
    origin: str  # "pending", "displaced" or the workload ("Deployment/ns/name")
    priority: int = 0
    node: str | None = None
    previous_node: str | None = None  # where a displaced pod was
    message: str | None = None  # the FailedScheduling text, when not placed
    reason: str | None = None
    nominated_node: str | None = None
    victims: list[str] = field(default_factory=list)
    tied: bool = False  # its node was one of several with the same top score (kube picks at random)

    @property
    def scheduled(self) -> bool:
        return self.node is not None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "pod": self.pod,
            "origin": self.origin,
            "priority": self.priority,
            "node": self.node,
        }
        for k in ("previous_node", "message", "reason", "nominated_node"):
            v = getattr(self, k)
            if v:
                d[k] = v
        if self.victims:
            d["victims"] = self.victims
        if self.tied:
            d["tied"] = True
        return d


@dataclass
class Victim:
    pod: str
    node: str
    preempted_by: str | None
    priority: int = 0


@dataclass
class SimulationResult:
    config: str
    snapshot: str
    changes: list[str]
    pods: list[PodOutcome]
    victims: list[Victim]
    lost: list[LostPod]
    skipped: dict[str, int]
    added_nodes: list[str]
    before: Usage
    after: Usage
    fragmentation_before: dict[str, Any]
    fragmentation_after: dict[str, Any]
    seconds: float
    warnings: list[str] = field(default_factory=list)

    @property
    def scheduled(self) -> list[PodOutcome]:
        return [p for p in self.pods if p.scheduled]

    @property
    def unschedulable(self) -> list[PodOutcome]:
        return [p for p in self.pods if not p.scheduled]

    def unschedulable_groups(self) -> dict[str, list[str]]:
        """The pods not placed, grouped by the exact FailedScheduling text (largest group first)."""
        groups: dict[str, list[str]] = {}
        for p in self.unschedulable:
            text = p.message or (f"not attempted ({p.reason})" if p.reason else "not attempted")
            groups.setdefault(text, []).append(p.pod)
        return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))

    def reason_counts(self) -> dict[str, int]:
        """Per filter reason, how many unplaced pods had it on at least one node."""
        out: dict[str, int] = {}
        for text, pods in self.unschedulable_groups().items():
            for reason in filter_reasons(text):
                out[reason] = out.get(reason, 0) + len(pods)
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))

    def summary(self) -> dict[str, Any]:
        tb, ta = self.before.total(), self.after.total()
        return {
            "pods_to_place": len(self.pods),
            "scheduled": len(self.scheduled),
            "unschedulable": len(self.unschedulable),
            "preempted": len(self.victims),
            "lost": len(self.lost),
            "nodes_in_use_before": self.before.nodes_in_use(),
            "nodes_in_use_after": self.after.nodes_in_use(),
            "cpu_requested_before": round(tb.cpu_fraction, 4),
            "cpu_requested_after": round(ta.cpu_fraction, 4),
            "memory_requested_before": round(tb.memory_fraction, 4),
            "memory_requested_after": round(ta.memory_fraction, 4),
            "fragmentation_cpu_after": self.fragmentation_after["fragmentation"]["cpu"],
            "fragmentation_memory_after": self.fragmentation_after["fragmentation"]["memory"],
            "seconds": round(self.seconds, 3),
        }

    def to_dict(self, per_node: bool = True) -> dict[str, Any]:
        return {
            "config": self.config,
            "snapshot": self.snapshot,
            "changes": self.changes,
            "summary": self.summary(),
            "placements": [p.to_dict() for p in self.pods],
            "unschedulable": [
                {"message": text, "count": len(pods), "pods": pods}
                for text, pods in self.unschedulable_groups().items()
            ],
            "reasons": self.reason_counts(),
            "victims": [v.__dict__ for v in self.victims],
            "lost": [lp.__dict__ for lp in self.lost],
            "skipped": self.skipped,
            "added_nodes": self.added_nodes,
            "utilisation": {
                "before": self.before.to_dict(per_node),
                "after": self.after.to_dict(per_node),
            },
            "fragmentation": {"before": self.fragmentation_before, "after": self.fragmentation_after},
            "warnings": self.warnings,
        }


@dataclass
class _Job:
    key: str
    origin: str
    previous_node: str | None
    pod: JSON


def _key(p: JSON) -> str:
    m = p.get("metadata") or {}
    return f"{m.get('namespace') or 'default'}/{m.get('name', '')}"


def simulate(
    snapshot: ClusterSnapshot,
    *,
    workloads: Sequence[Workload] = (),
    changes: Changes | None = None,
    config: Any = None,
    config_name: str = "",
    seed: int = 0,
    schedule_all: bool = False,
    progress: Callable[[int, int], None] | None = None,
    engine_factory: Callable[..., Any] | None = None,
) -> SimulationResult:
    """Run the what-if (see the module docstring). ``config``: a KubeSchedulerConfiguration (path, YAML
    text, dict) or None for the default profile; an invalid one raises the daemon's ConfigError.
    ``progress(done, total)`` is called as pods are tried."""
    start = time.perf_counter()
    ch = changes or Changes()
    applied = changes_mod.apply(snapshot, ch)
    warnings: list[str] = list(snapshot.warnings)
    extra = [o for w in workloads for o in w.objects]
    engine, bound = prepare_engine(applied, config, seed, extra, warnings, engine_factory)
    profiles = set(engine.app.profiles)
    default_name = engine.default_scheduler_name
    bound_at = {_key(p): str(p["spec"]["nodeName"]) for p in bound}
    bound_priority = {_key(p): int(p["spec"].get("priority") or 0) for p in bound}

    jobs = [_Job(_key(p), ORIGIN_PENDING, None, p) for p in applied.pending]
    jobs += [
        _Job(_key(p), ORIGIN_DISPLACED, applied.displaced_from.get(_key(p)), p) for p in applied.displaced
    ]
    existing = {_key(p) for p in snapshot.pods}
    for w in workloads:
        for p in w.pods:
            if _key(p) in existing:  # the API server would answer AlreadyExists
                raise WorkloadError(f"{w.source}: pod {_key(p)} already exists in the snapshot")
        jobs += [_Job(_key(p), w.key, None, p) for p in w.pods]
    skipped: dict[str, int] = {}
    to_place: list[_Job] = []
    for j in jobs:
        name = (j.pod.get("spec") or {}).get("schedulerName")
        if name and name not in profiles:
            if not schedule_all:
                skipped[name] = skipped.get(name, 0) + 1
                continue
            j.pod = {**j.pod, "spec": {**j.pod["spec"], "schedulerName": default_name}}
        to_place.append(j)
    engine.add_pods([j.pod for j in to_place], deep_copy=False)

    total = len(to_place)
    done = [0]

    def tick() -> None:
        done[0] += 1
        if progress is not None:
            progress(min(done[0], total), total)

    with _long_lived_heap():
        results = engine.run(on_cycle=tick if progress is not None else None)
    if progress is not None:
        progress(total, total)

    outcomes: list[PodOutcome] = []
    for j in to_place:
        r = results[j.key]
        o = PodOutcome(
            j.key,
            j.origin,
            priority=int((j.pod.get("spec") or {}).get("priority") or 0),
            node=r.node,
            previous_node=j.previous_node,
            nominated_node=r.nominated_node,
            victims=list(r.victims),
        )
        if r.node is None:
            o.message, o.reason = r.message, r.reason
            gates = [g.get("name", "") for g in (j.pod.get("spec") or {}).get("schedulingGates") or ()]
            if r.waiting:  # assumed on a node, held by Permit until the run ended
                o.message = f"waiting on Permit ({', '.join(r.waiting)}) when the simulation ended"
            elif gates and not r.message:  # PreEnqueue keeps it out of the queue, as in the daemon
                o.message = f"not attempted: scheduling gates {', '.join(gates)}"
        elif len(r.scores) > 1 and r.scores[0].total == r.scores[1].total:
            o.tied = True
        outcomes.append(o)
    victims = [
        Victim(k, bound_at[k], r.preempted_by, bound_priority[k])
        for k, r in results.items()
        if k in bound_at and r.node is None
    ]

    before_nodes = [Node.from_dict(n) for n in snapshot.nodes]
    before_pods = [Pod.from_dict(p) for p in snapshot.pods if (p.get("spec") or {}).get("nodeName")]
    after_pods = [p for p in engine._pods.values() if p.node_name]
    avg = average_pod(after_pods) if after_pods else average_pod(before_pods)
    before = Usage.of(before_nodes, before_pods)
    after = Usage.of([engine._nodes[n] for n in engine._nodes], after_pods)
    return SimulationResult(
        config=config_name or (str(config) if isinstance(config, str) else "default profile"),
        snapshot=f"{snapshot.source}: {snapshot.summary()}",
        changes=ch.describe(),
        pods=outcomes,
        victims=victims,
        lost=applied.lost,
        skipped=skipped,
        added_nodes=applied.added_nodes,
        before=before,
        after=after,
        fragmentation_before=before.fragmentation(avg),
        fragmentation_after=after.fragmentation(avg),
        seconds=time.perf_counter() - start,
        warnings=warnings,
    )


@contextlib.contextmanager
def _long_lived_heap() -> Iterator[None]:
    """What the daemon does once its caches are synced: the snapshot's records leave the collector's
    sight and collections come less often (the cycle allocates many short-lived objects)."""
    from pyscheduler.app import DAEMON_GC_THRESHOLD

    old = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*DAEMON_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


def prepare_engine(
    applied: Applied,
    config: Any,
    seed: int,
    extra_objects: Iterable[JSON],
    warnings: list[str],
    engine_factory: Callable[..., Any] | None = None,
) -> tuple[Any, list[JSON]]:
    """An engine holding the changed snapshot: its objects, nodes and the pods bound to those nodes
    (returned; pods bound to a node the snapshot lacks are left out, with a warning)."""
    from pyscheduler.engine import Engine

    engine = (engine_factory or Engine)(config, seed=seed, score_breakdown=False)
    if getattr(engine.config, "extenders", None):
        warnings.append(
            "the configuration's HTTP extenders are not called in a simulation (nothing leaves it)"
        )
    objects: dict[str, list[JSON]] = {k: list(v) for k, v in applied.objects.items() if k != "PriorityClass"}
    for o in extra_objects:
        objects.setdefault(str(o["kind"]), []).append(o)
    if "ResourceClaim" in objects and "DynamicResources" not in _enabled_plugins(engine):
        objects.pop("ResourceClaim")
    if not engine.app.pod_groups_enabled:
        groups = objects.pop("PodGroup", [])
        if groups:
            warnings.append(
                f"{len(groups)} PodGroup(s) in the snapshot ignored: the GenericWorkload feature gate is off "
                "(--feature-gates GenericWorkload=true schedules their pods a group at a time)"
            )
    engine.add_objects(objects)
    engine.add_nodes(applied.nodes)
    node_names = {n["metadata"]["name"] for n in applied.nodes}
    bound = [p for p in applied.bound if p["spec"]["nodeName"] in node_names]
    if len(bound) < len(applied.bound):
        warnings.append(
            f"{len(applied.bound) - len(bound)} pod(s) bound to nodes the snapshot does not have: left out"
        )
    engine.add_pods(bound, deep_copy=False)
    return engine, bound


def _enabled_plugins(engine: Any) -> set[str]:
    out: set[str] = set()
    for fwk in engine.app.profiles.values():
        out.update(fwk.plugins)
    return out


@dataclass
class Comparison:
    a: SimulationResult
    b: SimulationResult

    def to_dict(self, per_node: bool = False) -> dict[str, Any]:
        sa, sb = self.a.summary(), self.b.summary()
        b_nodes = {p.pod: p.node for p in self.b.pods}
        moved = sum(1 for p in self.a.pods if p.pod in b_nodes and b_nodes[p.pod] != p.node)
        return {
            "a": self.a.to_dict(per_node),
            "b": self.b.to_dict(per_node),
            "difference": {
                k: round(sb[k] - sa[k], 4) for k in sa if isinstance(sa[k], int | float) and k != "seconds"
            },
            "pods_placed_differently": moved,
        }


def compare(config_a: Any, config_b: Any, names: Iterable[str] = ("A", "B"), **kw: Any) -> Comparison:
    na, nb = list(names)
    return Comparison(
        simulate(config=config_a, config_name=na, **kw), simulate(config=config_b, config_name=nb, **kw)
    )
