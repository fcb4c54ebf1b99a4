"""``pyscheduler explain NS/POD``: why is my pod still pending, or why is it on that node?

Design
------
Reads the cluster once (nodes, pods and the objects plugins consult) into the same cache, snapshot and
object store the daemon uses, builds the pod's profile from the same configuration (``--config``, else
``$PYSCHEDULER_CONFIG``, as ``run`` finds it; the report says which file and profile it used, and warns
when it fell back to the built-in default profile), and runs the pod's scheduling cycle read-only:
PreEnqueue (a gated pod is reported as gated, with its gates and the plugin that holds it), PreFilter,
then Filter on *every* node (no sampling), then PreScore and Score on the nodes that fit. Nothing is
bound, reserved, patched or deleted; PostFilter (preemption, DRA deallocation) is not run, since it would
evict pods or write claims. DynamicResources sees the cluster's ResourceClaims, DeviceClasses and
ResourceSlices, so a pod with claims gets its per-node verdicts ("cannot allocate all claims", "resourceclaim
not available on the node") like any other plugin's.

``--feature-gates`` takes the daemon's gates (``run --feature-gates``): they choose the default profile's
plugins (GenericWorkload and GangScheduling add GangScheduling, PodGroupPodsCount, TopologyPlacement) and
what those plugins read; with GenericWorkload on, the PodGroups are read too and each group's members
counted, so GangScheduling's PreEnqueue says what it says in the daemon. The explained pod's own cycle is
run, not its group's (the pod group cycle would assume the other members).

A bound pod is replayed as if it were pending: without its ``spec.nodeName`` and with itself removed
from its node. The report then says where it would go now, the rank and per-plugin scores of the node
it is on, and warns when that node would no longer accept it.

The report names, per node, the first plugin that rejected the pod and its reason, groups nodes by
reason, prints kube-scheduler's one-line summary, and for the nodes that fit shows the score each plugin
gave, weighted, so a user can see which plugin decided. Every plugin call is timed; the report lists the
time per plugin and extension point. A plugin that raised is reported with its traceback and the
command exits non-zero (``EXIT_PLUGIN_ERROR``).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.claims import ClaimTracker
from pyscheduler.backend.objects import ObjectStore, slim
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.config import feature_gates
from pyscheduler.framework.clock import RealClock
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.framework.fit_error import FitError
from pyscheduler.framework.handle import FrameworkHandle
from pyscheduler.framework.interfaces import Diagnosis
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.runtime import Framework
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import MalformedObject, Node, NodeInfo, Pod
from pyscheduler.framework.waiting_pods import WaitingPods
from pyscheduler.plugin_log import format_traceback

EXIT_PLUGIN_ERROR = 3
"""``explain``'s exit code when a plugin raised during the cycle (or while being built)."""


class _Timings:
    """The framework observer of an explain run: every plugin call's time, and the exceptions."""

    def __init__(self) -> None:
        self.seconds: dict[tuple[str, str], float] = defaultdict(float)
        self.calls: dict[tuple[str, str], int] = defaultdict(int)

    def plugin_error(self, profile: str, plugin: str, extension_point: str, error: BaseException) -> None:
        pass  # the Error status carries the exception; the report shows it

    def plugin_time(self, profile: str, plugin: str, extension_point: str, seconds: float) -> None:
        self.seconds[(extension_point, plugin)] += seconds
        self.calls[(extension_point, plugin)] += 1


@dataclass
class Explanation:
    pod: Pod
    profile: str
    num_nodes: int
    config_file: str | None = None
    config_from: str = ""
    bound_to: str = ""
    gates: str = ""  # the gates set explicitly (``--feature-gates``), as the report names them
    gated: Status | None = None
    pre_filter: Status | None = None
    errors: list[Status] = field(default_factory=list)
    rejected: dict[str, Status] = field(default_factory=dict)
    fits: list[str] = field(default_factory=list)
    scores: list[tuple[str, int, dict[str, int]]] = field(default_factory=list)
    summary: str = ""
    timings: dict[tuple[str, str], float] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """A plugin raised (or returned an Error): the daemon's cycle would fail, not just not fit."""
        return bool(self.errors)

    def ranked(self) -> list[tuple[str, int, dict[str, int]]]:
        return sorted(self.scores, key=lambda s: (-s[1], s[0]))

    def render(self, top: int = 5) -> str:
        out = [f"pod {self.pod.key} (profile {self.profile}, priority {self.pod.priority})"]
        out.extend(self._context_lines())
        out.extend(self._stop_lines())
        out.extend(self._rejection_lines())
        if self.fits:
            out.extend(self._fit_lines(top))
        elif not self.failed and (self.pre_filter is not None or self.rejected):
            out.append(f"  no node fits: {self.summary}")
        if self.bound_to:
            out.extend(self._where_it_is())
        if self.timings:
            out.extend(self._timing_lines())
        return "\n".join(out)

    def _context_lines(self) -> list[str]:
        """Which configuration answered, and whether the pod is replayed from its node."""
        out = []
        if self.config_file:
            out.append(f"  config: {self.config_file} (from {self.config_from or '--config'})")
        else:
            out.append(
                "  warning: no --config and no $PYSCHEDULER_CONFIG: this is the built-in default "
                "profile; plugins your scheduler's configuration adds or removes are not in this answer"
            )
        if self.gates:
            out.append(f"  feature gates: {self.gates}")
        if self.bound_to:
            out.append(
                f"  bound to {self.bound_to}; replayed as if pending (no nodeName, itself removed from "
                f"{self.bound_to}): where it would go now"
            )
        return out

    def _stop_lines(self) -> list[str]:
        """What stops the pod before Filter: a PreEnqueue gate, plugin errors, a PreFilter rejection."""
        out = []
        p = self.pod
        if self.gated is not None:
            out.append(f"  gated by PreEnqueue plugin {self.gated.plugin or '?'}: {self.gated.message()}")
            if p.scheduling_gates:
                out.append(
                    f"    scheduling gates: {', '.join(p.scheduling_gates)}; the pod is not scheduled until "
                    "they are removed (the cycle below is what would happen then)"
                )
        for st in self.errors:
            out.append(f"  ERROR: {st.message()}")
            if st.error is not None and st.error.__traceback__ is not None:
                out.extend("    " + line for line in format_traceback(st.error).splitlines())
        if self.pre_filter is not None:
            out.append(f"  PreFilter {self.pre_filter.plugin}: {self.pre_filter.message()}")
        return out

    def _rejection_lines(self) -> list[str]:
        by_reason: dict[tuple[str, str], list[str]] = defaultdict(list)
        for node, st in self.rejected.items():
            by_reason[(st.plugin or "?", st.message())].append(node)
        if not by_reason:
            return []
        out = [f"  {len(self.rejected)} of {self.num_nodes} nodes rejected the pod:"]
        for (plugin, msg), nodes in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
            names = ", ".join(sorted(nodes)[:6]) + (", ..." if len(nodes) > 6 else "")
            out.append(f"    {len(nodes):>4} x {plugin}: {msg}   [{names}]")
        return out

    def _fit_lines(self, top: int) -> list[str]:
        out = [f"  {len(self.fits)} node(s) fit."]
        ranked = self.ranked()
        if ranked:
            out.append("  best scores (weighted, per plugin):")
            for name, total, detail in ranked[:top]:
                out.append(f"    {name:<30} {total:>5}  ({_parts(detail)})")
            best = [s[0] for s in ranked if s[1] == ranked[0][1]]
            if len(best) == 1:
                out.append(f"  it would go to {best[0]} now.")
            else:  # kube-scheduler picks one of the tied nodes at random
                out.append(
                    f"  it would go to one of {', '.join(best[:6])}{', ...' if len(best) > 6 else ''} (tied) now."
                )
        return out

    def _timing_lines(self) -> list[str]:
        out = ["  time per plugin (ms, this run; slowest first):"]
        per_plugin: dict[str, dict[str, float]] = defaultdict(dict)
        for (point, plugin), secs in self.timings.items():
            per_plugin[plugin][point] = secs
        for plugin, points in sorted(per_plugin.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])):
            by_point = ", ".join(
                f"{pt} {v * 1000:.3f}" for pt, v in sorted(points.items(), key=lambda kv: -kv[1])
            )
            out.append(f"    {plugin:<32} {sum(points.values()) * 1000:>9.3f}  ({by_point})")
        return out

    def _where_it_is(self) -> list[str]:
        node = self.bound_to
        if node in self.rejected:
            st = self.rejected[node]
            return [f"  warning: {node} would no longer accept the pod: {st.plugin or '?'}: {st.message()}"]
        if node not in self.fits:
            if self.failed or self.pre_filter is not None:
                return [f"  warning: the cycle ended before deciding about {node} (see above)"]
            return [f"  warning: {node} is not in the cluster any more"]
        ranked = self.ranked()
        if not ranked:
            return [f"  {node} still fits; no scores (see above)"]
        mine = next(s for s in ranked if s[0] == node)
        rank = 1 + sum(1 for s in ranked if s[1] > mine[1])
        ties = sum(1 for s in ranked if s[1] == mine[1]) - 1
        tie = f", tied with {ties} other node(s)" if ties else ""
        return [
            f"  {node} still fits: rank {rank} of {len(ranked)}{tie}, score {mine[1]} ({_parts(mine[2])})"
        ]


def _parts(detail: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(detail.items(), key=lambda kv: (-kv[1], kv[0])) if v)


def explain(
    pod_json: Mapping[str, Any],
    nodes_json: list[dict[str, Any]],
    pods_json: list[dict[str, Any]],
    objects: Mapping[str, list[dict[str, Any]]],
    config: Any,
    registry: Mapping[str, PluginSpec],
    *,
    config_file: str | None = None,
    config_from: str = "",
    gates: feature_gates.FeatureGates | None = None,
) -> Explanation:
    """The read-only scheduling cycle of one pod over the given cluster state, with ``gates`` (default:
    the process's, as ``run --feature-gates`` sets them)."""
    from pyscheduler.app import build_frameworks

    gates = gates or feature_gates.current()
    bound_to = str((pod_json.get("spec") or {}).get("nodeName") or "")
    if bound_to:  # replay as if pending: no nodeName (and, below, not counted on its node)
        pod_json = copy.deepcopy(dict(pod_json))
        pod_json["spec"].pop("nodeName", None)
    pod = Pod.from_dict(dict(pod_json))
    cache = _cluster_cache(pod, nodes_json, pods_json, gates.enabled(feature_gates.GENERIC_WORKLOAD))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    claims = _claim_tracker(objects)
    handle = FrameworkHandle(
        snapshot=snapshot,
        objects=_object_store(objects),
        client=None,
        waiting_pods=WaitingPods(),
        nominator=None,
        clock=RealClock(),
        extra={  # no claim writer, no activation: explain writes nothing, moves nothing
            "claims": claims,
            "feature_gates": gates.as_mapping(),
            "pod_group_states": cache.pod_group_states,
        },
    )
    timings = _Timings()
    frameworks = build_frameworks(config, registry, handle, None, observer=timings, slow_plugin_threshold=0.0)
    fwk = frameworks.get(pod.scheduler_name)
    if fwk is None:
        raise ValueError(
            f"pod {pod.key} uses schedulerName {pod.scheduler_name!r}, which is not a profile of this "
            f"configuration (profiles: {', '.join(sorted(frameworks))})"
        )
    nodes = list(snapshot.list())
    ex = Explanation(
        pod=pod,
        profile=fwk.profile_name,
        num_nodes=len(nodes),
        config_file=config_file,
        config_from=config_from,
        bound_to=bound_to,
        gates=gates.describe() if gates.explicit else "",
        timings=timings.seconds,
    )
    _run_cycle(fwk, ex, nodes)
    return ex


def _cluster_cache(
    pod: Pod, nodes_json: list[dict[str, Any]], pods_json: list[dict[str, Any]], pod_groups: bool
) -> Cache:
    """The nodes and the running pods but ``pod`` itself; malformed objects are skipped. With
    ``pod_groups`` the pending pods (``pod`` among them) are counted as their groups' members, as the
    daemon counts the pending pods it schedules."""
    cache = Cache(pod_groups=pod_groups)
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
        if p.uid == pod.uid or p.phase in ("Succeeded", "Failed"):
            continue
        if p.node_name:
            cache.add_pod(p)
        elif p.scheduler_name == pod.scheduler_name:
            cache.add_pod_group_member(p)
    cache.add_pod_group_member(pod)
    return cache


def _object_store(objects: Mapping[str, list[dict[str, Any]]]) -> ObjectStore:
    store = ObjectStore()
    for kind, items in objects.items():
        if kind == CLAIM_KIND:
            continue  # DynamicResources reads ResourceClaims from its assume cache (_claim_tracker)
        for o in items:
            store.put(kind, slim(o))
    return store


def _claim_tracker(objects: Mapping[str, list[dict[str, Any]]]) -> ClaimTracker:
    claims = ClaimTracker()
    for o in objects.get(CLAIM_KIND, ()):
        try:
            claims.on_add(ResourceClaim.from_dict(slim(o)))
        except MalformedObject:
            continue
    return claims


def _run_cycle(fwk: Framework, ex: Explanation, nodes: list[NodeInfo]) -> None:
    """PreEnqueue, PreFilter, Filter over every node and Score, recording each outcome in ``ex``."""
    pod = ex.pod
    gate = fwk.run_pre_enqueue_plugins(pod)
    if gate is not None and not gate.is_success():
        if gate.code == Code.ERROR:
            ex.errors.append(gate)
        else:
            ex.gated = gate
    state = CycleState()
    pre_res, st, _ = fwk.run_pre_filter_plugins(state, pod, nodes)
    diagnosis = Diagnosis()
    if st is not None and not st.is_success():
        if st.code == Code.ERROR:
            ex.errors.append(st)
            return
        ex.pre_filter = st
        diagnosis.pre_filter_msg = st.message()
        ex.summary = FitError(pod, len(nodes), diagnosis).message()
        return
    allowed = None if pre_res is None or pre_res.all_nodes() else pre_res.node_names
    feasible = _filter(fwk, state, ex, nodes, allowed)
    if ex.failed:
        return
    ex.fits = [n.name for n in feasible]
    diagnosis.node_to_status = dict(ex.rejected)
    ex.summary = FitError(pod, len(nodes), diagnosis).message()
    if feasible:
        _score(fwk, state, ex, feasible)


def _filter(
    fwk: Framework,
    state: CycleState,
    ex: Explanation,
    nodes: list[NodeInfo],
    allowed: AbstractSet[str] | None,
) -> list[NodeInfo]:
    """Filter every node PreFilter allowed; rejections and errors go to ``ex``; returns the feasible."""
    candidates = []
    for ni in nodes:
        if allowed is not None and ni.name not in allowed:
            ex.rejected[ni.name] = Status.unresolvable(
                "node(s) didn't satisfy PreFilter's node list", plugin="PreFilter"
            )
        else:
            candidates.append(ni)
    statuses, _ = fwk.run_filter_plugins_counted(state, ex.pod, candidates)
    feasible = []
    for ni, s in zip(candidates, statuses, strict=True):
        if s is None or s.is_success():
            feasible.append(ni)
        elif s.code == Code.ERROR:
            if not any(e is s for e in ex.errors):
                ex.errors.append(s)
        else:
            ex.rejected[ni.name] = s
    return feasible


def _score(fwk: Framework, state: CycleState, ex: Explanation, feasible: list[NodeInfo]) -> None:
    pst = fwk.run_pre_score_plugins(state, ex.pod, feasible)
    if pst is not None and not pst.is_success():
        ex.errors.append(pst)
        return
    scored, sst = fwk.run_score_plugins(state, ex.pod, feasible)
    if sst is not None and not sst.is_success():
        ex.errors.append(sst)
    ex.scores = scored


CLAIM_KIND = "ResourceClaim"


# kinds plugins read, listed once (same set the daemon watches, the resource.k8s.io kinds included)
def read_cluster(
    api: Any, namespace: str, name: str, gates: feature_gates.FeatureGates | None = None
) -> tuple[dict[str, Any], list[Any], list[Any], dict[str, list[Any]]]:
    from pyscheduler.app import DRA_CLAIMS_PATH, DRA_OBJECT_KINDS, OBJECT_KINDS, POD_GROUP_KINDS

    pod = api.get("Pod", namespace, name)
    nodes, _ = api.list("/api/v1/nodes")
    pods, _ = api.list("/api/v1/pods", field_selector="status.phase!=Succeeded,status.phase!=Failed")
    objects: dict[str, list[Any]] = {}
    kinds = {**OBJECT_KINDS, **DRA_OBJECT_KINDS, CLAIM_KIND: (DRA_CLAIMS_PATH, None)}
    if (gates or feature_gates.current()).enabled(feature_gates.GENERIC_WORKLOAD):
        kinds.update(POD_GROUP_KINDS)  # alpha, and only with the gate (as the daemon watches them)
    for kind, (path, _res) in kinds.items():
        try:
            objects[kind], _ = api.list(path)
        except Exception:
            objects[kind] = []  # not readable with these credentials: plugins see none
    return pod, nodes, pods, objects
