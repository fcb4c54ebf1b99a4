"""``pyscheduler explain NS/POD``: why is my pod still pending (or why did it land where it did)?

Design
------
Reads the cluster once (nodes, pods and the objects plugins consult) into the same cache, snapshot and
object store the daemon uses, builds the pod's profile from the same configuration, and runs the pod's
scheduling cycle read-only: PreFilter, then Filter on *every* node (no sampling), then PreScore and Score
on the nodes that fit. Nothing is bound, reserved, patched or deleted; PostFilter (preemption) is not run,
since it would evict pods.

The report names, per node, the first plugin that rejected the pod and its reason, groups nodes by
reason, prints kube-scheduler's one-line summary, and for the nodes that fit shows the score each plugin
gave, weighted, so a user can see which plugin decided.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.objects import ObjectStore, slim
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.clock import RealClock
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.interfaces import Diagnosis
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.runtime import FitError, FrameworkHandle
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import MalformedObject, Node, Pod
from pyscheduler.framework.waiting_pods import WaitingPods


@dataclass
class Explanation:
    pod: Pod
    profile: str
    num_nodes: int
    pre_filter: Status | None = None
    rejected: dict[str, Status] = field(default_factory=dict)
    fits: list[str] = field(default_factory=list)
    scores: list[tuple[str, int, dict[str, int]]] = field(default_factory=list)
    summary: str = ""

    def render(self, top: int = 5) -> str:
        p = self.pod
        out = [f"pod {p.key} (profile {self.profile}, priority {p.priority})"]
        if p.node_name:
            out.append(f"  already bound to {p.node_name}; the cycle below is what would happen now")
        if self.pre_filter is not None:
            out.append(f"  PreFilter {self.pre_filter.plugin}: {self.pre_filter.message()}")
        by_reason: dict[tuple[str, str], list[str]] = defaultdict(list)
        for node, st in self.rejected.items():
            by_reason[(st.plugin or "?", st.message())].append(node)
        if by_reason:
            out.append(f"  {len(self.rejected)} of {self.num_nodes} nodes rejected the pod:")
            for (plugin, msg), nodes in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
                names = ", ".join(sorted(nodes)[:6]) + (", ..." if len(nodes) > 6 else "")
                out.append(f"    {len(nodes):>4} x {plugin}: {msg}   [{names}]")
        if self.fits:
            out.append(f"  {len(self.fits)} node(s) fit.")
            if self.scores:
                out.append("  best scores (weighted, per plugin):")
                for name, total, detail in sorted(self.scores, key=lambda s: -s[1])[:top]:
                    parts = ", ".join(
                        f"{k} {v}" for k, v in sorted(detail.items(), key=lambda kv: -kv[1]) if v
                    )
                    out.append(f"    {name:<30} {total:>5}  ({parts})")
        else:
            out.append(f"  no node fits: {self.summary}")
        return "\n".join(out)


def explain(
    pod_json: Mapping[str, Any],
    nodes_json: list[dict[str, Any]],
    pods_json: list[dict[str, Any]],
    objects: Mapping[str, list[dict[str, Any]]],
    config: Any,
    registry: Mapping[str, PluginSpec],
) -> Explanation:
    """The read-only scheduling cycle of one pod over the given cluster state."""
    from pyscheduler.app import build_frameworks

    pod = Pod.from_dict(dict(pod_json))
    cache = Cache()
    for n in nodes_json:
        try:
            cache.add_node(Node.from_dict(n))
        except MalformedObject:
            continue
    for pj in pods_json:
        try:
            p = Pod.from_dict(pj)
        except MalformedObject:
            continue
        if p.node_name and p.uid != pod.uid and p.phase not in ("Succeeded", "Failed"):
            cache.add_pod(p)
    store = ObjectStore()
    for kind, items in objects.items():
        for o in items:
            store.put(kind, slim(o))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    handle = FrameworkHandle(
        snapshot=snapshot,
        objects=store,
        client=None,
        waiting_pods=WaitingPods(),
        nominator=None,
        clock=RealClock(),
    )
    frameworks = build_frameworks(config, registry, handle, None)
    fwk = frameworks.get(pod.scheduler_name)
    if fwk is None:
        raise ValueError(
            f"pod {pod.key} uses schedulerName {pod.scheduler_name!r}, which is not a profile of this "
            f"configuration (profiles: {', '.join(sorted(frameworks))})"
        )
    nodes = list(snapshot.list())
    ex = Explanation(pod=pod, profile=fwk.profile_name, num_nodes=len(nodes))
    state = CycleState()
    pre_res, st, _ = fwk.run_pre_filter_plugins(state, pod, nodes)
    diagnosis = Diagnosis()
    if st is not None and not st.is_success():
        ex.pre_filter = st
        diagnosis.pre_filter_msg = st.message()
        ex.summary = FitError(pod, len(nodes), diagnosis).message()
        return ex
    allowed = None if pre_res is None or pre_res.all_nodes() else pre_res.node_names
    feasible = []
    for ni in nodes:
        if allowed is not None and ni.name not in allowed:
            s: Status | None = Status.unresolvable(
                "node(s) didn't satisfy PreFilter's node list", plugin="PreFilter"
            )
        else:
            s = fwk.run_filter_plugins(state, pod, ni)
        if s is None or s.is_success():
            feasible.append(ni)
        else:
            ex.rejected[ni.name] = s
    ex.fits = [n.name for n in feasible]
    diagnosis.node_to_status = dict(ex.rejected)
    ex.summary = FitError(pod, len(nodes), diagnosis).message()
    if feasible:
        pst = fwk.run_pre_score_plugins(state, pod, feasible)
        if pst is None or pst.is_success():
            scored, _ = fwk.run_score_plugins(state, pod, feasible)
            ex.scores = scored
    return ex


# kinds plugins read, listed once (same set the daemon watches)
def read_cluster(
    api: Any, namespace: str, name: str
) -> tuple[dict[str, Any], list[Any], list[Any], dict[str, list[Any]]]:
    from pyscheduler.app import OBJECT_KINDS

    pod = api.get("Pod", namespace, name)
    nodes, _ = api.list("/api/v1/nodes")
    pods, _ = api.list("/api/v1/pods", field_selector="status.phase!=Succeeded,status.phase!=Failed")
    objects: dict[str, list[Any]] = {}
    for kind, (path, _res) in OBJECT_KINDS.items():
        try:
            objects[kind], _ = api.list(path)
        except Exception:
            objects[kind] = []  # not readable with these credentials: plugins see none
    return pod, nodes, pods, objects
