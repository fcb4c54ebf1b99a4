"""DefaultPreemption: when a pod fits no node, evict lower-priority pods from one node so that it fits
there, and nominate that node for the pod (kube-scheduler's DefaultPreemption PostFilter plugin).

Behaviour (kube-scheduler 1.36)
-------------------------------
PostFilter (runs only when no node fits; gets each failed node's Filter status):

1. Eligibility. A pod with ``preemptionPolicy: Never`` does not preempt ("not eligible due to
   preemptionPolicy=Never."). A pod already nominated to a node where a lower-priority pod is
   terminating waits for it ("not eligible due to a terminating pod on the nominated node."), unless
   that node is now UnschedulableAndUnresolvable for it.
2. Candidates. Only nodes whose Filter status is Unschedulable can help (UnschedulableAndUnresolvable
   ones, and nodes without a status, cannot). Starting at a random offset, each is dry-run (see
   ``victims``) until max(``minCandidateNodesPercentage`` % of them, ``minCandidateNodesAbsolute``)
   candidates are found, at least one of them violating no PodDisruptionBudget. A node NodeResourcesFit
   rejects even with every lower-priority pod gone (and the higher-priority nominated ones counted) is
   dry-run only if no node turns out a candidate (its reasons are reported then). What a dry run
   may leave out without changing its answer is decided once per attempt (``dry_run``).
3. No candidate: Unschedulable with the nodes' reasons, e.g. "preemption: 0/3 nodes are available:
   1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.", and a
   result that clears the pod's nomination (``PostFilterResult("", mode="clear")``).
4. Otherwise one node is picked (fewest PDB violations, lowest highest-victim priority, smallest sum of
   priorities, fewest victims, latest start), its victims are evicted (``executor``) and the result
   nominates it: ``PostFilterResult(nominated_node_name=node)`` with success.

Every message is prefixed "preemption: ", as kube does.

PreEnqueue: with async preemption (on by default) a pod whose victims are still being evicted is held
back: "waiting for the preemption for this pod to be finished" (UnschedulableAndUnresolvable).

EnqueueExtensions: an assigned pod's deletion, with a hint that always says Skip: the plugins that
rejected the pod in Filter decide when it is worth retrying; this plugin only gates it.

Args (``DefaultPreemptionArgs``): ``minCandidateNodesPercentage`` (0-100, default 10) and
``minCandidateNodesAbsolute`` (>= 0, default 100), not both 0.

What the plugin takes from the handle
-------------------------------------
``snapshot``, ``objects.list("PodDisruptionBudget")`` (none when the handle has no object store),
``run_filter_plugins_with_nominated_pods`` and the PreFilter extensions, ``nominated_pods_for_node``,
``get_waiting_pod``, ``client.patch_pod_status(ns, name, condition=...)`` and
``client.delete_pod(ns, name, uid=...)``; from ``extra``: ``recorder`` (events), ``status_writer``
(clears nominations), ``metrics`` (``preemption_attempts``, ``preemption_victims``), ``rng`` (a
``random.Random`` for the dry run's offset), ``feature_gates`` (``SchedulerAsyncPreemption``, default
on), ``preemption_runner`` (runs an eviction job; a daemon thread by default), ``assigned_pod``
(``uid -> Pod | None``) or ``pod_lister`` (``(namespace, name) -> Pod | JSON | None``) and ``activate``
(``(pods) -> None``). Anything missing is
logged and skipped.

Not modelled: extenders' ProcessPreemption, pods in PreBind (kube cancels them in memory), workload
(pod group) preemption. Pod records have no status conditions, so a terminating pod counts as
terminating because of preemption, and pod start times are creation times.
"""

from __future__ import annotations

import dataclasses
import logging
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from pyscheduler.framework.interfaces import Diagnosis, Handle, PostFilterResult
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.runtime import FitError
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod

from .args import (
    DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE,
    DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE,
    DefaultPreemptionArgs,
)
from .dry_run import DryRunPlan, plan_dry_run
from .executor import (
    DISRUPTION_TARGET,
    EVENT_ACTION_PREEMPTING,
    EVENT_REASON_PREEMPTED,
    PREEMPTION_BY_SCHEDULER,
    Executor,
    Runner,
    disruption_condition,
    preempted_event_note,
)
from .victims import (
    NO_VICTIMS,
    NO_VICTIMS_REASON,
    PDB,
    Candidate,
    filter_pods_with_pdb_violation,
    has_lower_priority_pods,
    parse_pdbs,
    pick_one_node_for_preemption,
    select_victims_on_node,
    too_small_without_lower_priority_pods,
    victims_by_resources,
)

__all__ = [
    "DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE",
    "DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE",
    "DISRUPTION_TARGET",
    "EVENT_ACTION_PREEMPTING",
    "EVENT_REASON_PREEMPTED",
    "MSG_NOT_ELIGIBLE_NEVER",
    "MSG_NOT_ELIGIBLE_TERMINATING",
    "MSG_NOT_HELPFUL",
    "MSG_PREFIX",
    "MSG_WAITING_FOR_PREEMPTION",
    "NAME",
    "NO_VICTIMS_REASON",
    "PDB",
    "PLUGIN",
    "PREEMPTION_BY_SCHEDULER",
    "Candidate",
    "DefaultPreemption",
    "DefaultPreemptionArgs",
    "disruption_condition",
    "filter_pods_with_pdb_violation",
    "new",
    "pick_one_node_for_preemption",
    "preempted_event_note",
    "select_victims_on_node",
]

log = logging.getLogger("pyscheduler.plugins.default_preemption")

NAME = "DefaultPreemption"
MSG_PREFIX = "preemption: "
MSG_PLACEMENT_LIMITATION = "not eligible due to placement-based pod group scheduling limitation"
MSG_NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
MSG_NO_CANDIDATE = "no candidate node for preemption"
MSG_WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
ASYNC_PREEMPTION_GATE = "SchedulerAsyncPreemption"
NODE_RESOURCES_FIT = "NodeResourcesFit"
NODE_RESOURCES_FIT_STATE_KEY = "PreFilter" + NODE_RESOURCES_FIT  # its PodResourceRequest


def _skip_hint(pod: Any, old: Any, new: Any) -> QueueingHint:
    """kube's isPodSchedulableAfterAssignedPodDeletion: always Skip (see the module docstring)."""
    return QueueingHint.SKIP


class DefaultPreemption:
    name = NAME

    def __init__(
        self,
        args: DefaultPreemptionArgs | None,
        handle: Any,
        *,
        rng: random.Random | None = None,
        async_preemption: bool | None = None,
        runner: Runner | None = None,
    ) -> None:
        self.args = args or DefaultPreemptionArgs()
        self.handle = handle
        extra = getattr(handle, "extra", None)
        extra = extra if isinstance(extra, Mapping) else {}
        self.rng: random.Random = rng or extra.get("rng") or random.Random()
        if async_preemption is None:
            gates = extra.get("feature_gates") or {}
            async_preemption = bool(gates.get(ASYNC_PREEMPTION_GATE, True))
        self.async_preemption = async_preemption
        self.executor = Executor(handle, NAME, runner=runner or extra.get("preemption_runner"))
        # dry runs by kind, for benchmarks: "full" (every step through the framework), "reprieve"
        # (pod-independent plugins left out of the reprieve steps), "resources" (dry_run.DryRunPlan)
        self.dry_runs: Counter[str] = Counter()
        # node name -> (generation, lowest pod priority there), for has_lower_priority_pods
        self._lowest: dict[str, tuple[int, int]] = {}

    # ---------------------------------------------------------------------------------- PostFilter
    def post_filter(
        self, state: CycleState, pod: Pod, filtered_node_status: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        self._count_attempt()
        not_eligible = self._pod_group_not_eligible(pod)
        if not_eligible is not None:
            return None, not_eligible
        result, status = self.preempt(state, pod, filtered_node_status)
        if status is not None and status.reasons:
            msg = status.message()
            if msg:
                status = Status(status.code, (MSG_PREFIX + msg,), NAME, status.error)
        return result, status

    def _pod_group_not_eligible(self, pod: Pod) -> Status | None:
        """kube 1.36 with TopologyAwareWorkloadScheduling on (``extra["feature_gates"]``): a pod of a pod
        group with scheduling constraints does not preempt (its group is tried placement by placement)."""
        if not pod.scheduling_group:
            return None
        gates = (getattr(self.handle, "extra", None) or {}).get("feature_gates") or {}
        if not gates.get("TopologyAwareWorkloadScheduling", False):
            return None
        pg = self.handle.objects.get("PodGroup", pod.namespace, pod.scheduling_group)
        if pg is None:
            return Status.unschedulable(MSG_PREFIX + "pod group for pod not found", plugin=NAME)
        if (pg.get("spec") or {}).get("schedulingConstraints") is not None:
            return Status.unschedulable(MSG_PREFIX + MSG_PLACEMENT_LIMITATION, plugin=NAME)
        return None

    def preempt(
        self, state: CycleState, pod: Pod, m: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        """kube's Evaluator.Preempt (without the "preemption: " prefix)."""
        nom = self._nomination(pod)
        nominated_status = m.get(nom) if nom else None
        ok, msg = self.pod_eligible_to_preempt_others(pod, nominated_status, nom)
        if not ok:
            return None, Status.unschedulable(msg, plugin=NAME)

        all_nodes = list(self.handle.snapshot.list())
        if not all_nodes:
            return None, Status.as_error("no nodes available", NAME)
        candidates, statuses, errors = self.find_candidates(state, pod, all_nodes, m)
        if errors and not candidates:
            return None, Status.as_error(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]", NAME)
        if not candidates:
            fit = FitError(
                pod,
                len(all_nodes),
                Diagnosis(node_to_status=statuses, absent_nodes_status=Status.unresolvable(MSG_NOT_HELPFUL)),
            )
            return PostFilterResult("", mode="clear"), Status.unschedulable(fit.message(), plugin=NAME)

        best = pick_one_node_for_preemption(candidates)
        if best is None or not best.name:
            return None, Status.unschedulable(MSG_NO_CANDIDATE, plugin=NAME)
        log.info("preempting %d pod(s) on node %s for %s", len(best.victims), best.name, pod.key)
        if self.async_preemption:
            self.executor.prepare_candidate_async(best, pod)
        else:
            st = self.executor.prepare_candidate(best, pod)
            if st is not None and not st.is_success():
                return None, st
        return PostFilterResult(best.name), Status.success()

    def _nomination(self, pod: Pod) -> str:
        """The node the pod is nominated to: the nomination this scheduler holds for it in memory, else
        its status's ``nominatedNodeName``. kube reads the status alone, which its quick status writes
        keep current; ours can lag a second behind the decision, and then the status names the node
        of an *earlier* nomination, or none. A preemptor whose new victims were still terminating then
        looked eligible to preempt again (the terminating pods are on the new node, the status names
        the old one), "preempted" the same node again (nothing new to evict), was let through at once
        and failed, a dozen times a second (the Preemption benchmark: attempts up to 12). The in-memory
        nomination follows the status whenever a status update names a node (``Nominator.update``)."""
        in_memory = getattr(self.handle, "nominated_node_name", None)
        held = in_memory(pod.uid) if callable(in_memory) else None
        return held or pod.nominated_node_name or ""

    def pod_eligible_to_preempt_others(
        self, pod: Pod, nominated_node_status: Status | None, nominated: str | None = None
    ) -> tuple[bool, str]:
        """kube's PodEligibleToPreemptOthers; ``nominated``: the pod's nominated node, if not its
        status's (see ``_nomination``)."""
        if pod.preemption_policy == "Never":
            return False, MSG_NOT_ELIGIBLE_NEVER
        nom = pod.nominated_node_name if nominated is None else nominated
        if nom:
            # A nominated node that cannot help any more (or that no status names: kube's default for
            # absent nodes is UnschedulableAndUnresolvable) lets the pod preempt again.
            if _code(nominated_node_status) == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            ni = self.handle.snapshot.get(nom)
            if ni is not None:
                for pi in ni.pods:
                    if pi.pod.priority < pod.priority and _terminating_by_preemption(pi.pod):
                        return False, MSG_NOT_ELIGIBLE_TERMINATING
        return True, ""

    def find_candidates(
        self, state: CycleState, pod: Pod, all_nodes: Sequence[NodeInfo], m: Mapping[str, Status]
    ) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        unschedulable = Code.UNSCHEDULABLE  # a node without a status is not a potential one (_code)
        potential = [ni for ni in all_nodes if (s := m.get(ni.name)) is not None and s.code == unschedulable]
        if not potential:
            log.debug("preemption cannot help %s on any node", pod.key)
            return [], {}, []
        offset, num = self.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, self.pdbs(), offset, num)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.rng.randrange(num_nodes), self.args.num_candidates(num_nodes)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: Pod,
        potential: Sequence[NodeInfo],
        pdbs: Sequence[PDB],
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """Try the potential nodes from ``offset`` on, until ``num_candidates`` are found with at least
        one not violating a PDB. Returns non-violating candidates first, the nodes that could not help
        with their statuses, and the errors met."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[str, Status | None] = {}
        errors: list[str] = []
        # Nodes NodeResourcesFit rejects even with every lower-priority pod gone cannot be candidates:
        # they are skipped here and dry-run only if no node is a candidate (then their statuses and
        # errors are what the caller reports).
        request = self._resource_precheck(state)
        plan = plan_dry_run(getattr(self.handle, "framework", None), state)
        if plan is not None and plan.by_resources and not _plain_request(request):
            plan = dataclasses.replace(plan, by_resources=False)
        deferred: list[NodeInfo] = []
        n = len(potential)
        by_node = self._nominated_by_node()
        for i in range(n):
            ni = potential[(offset + i) % n]
            if not has_lower_priority_pods(ni, pod, self._lowest):
                statuses[ni.name] = NO_VICTIMS
                continue
            nominated = by_node.get(ni.name, ()) if by_node is not None else self._nominated(ni.name)
            if request is not None and too_small_without_lower_priority_pods(ni, pod, request, nominated):
                statuses[ni.name] = None  # keeps the visiting order; filled in below if needed
                deferred.append(ni)
                continue
            c, status = self._dry_run_node(state, pod, ni, pdbs, plan, nominated)
            if c is not None:
                bucket = non_violating if c.num_pdb_violations == 0 else violating
                if len(bucket) < num_candidates:
                    bucket.append(c)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            assert status is not None
            if status.code == Code.ERROR:
                errors.append(status.message())
            statuses[ni.name] = status
        if deferred and not non_violating and not violating:
            errors = []  # recomputed in the visiting order
            for ni in deferred:
                c, status = self._dry_run_node(state, pod, ni, pdbs, plan, self._nominated(ni.name))
                if c is not None:  # not expected: the precheck only skips nodes that cannot fit
                    log.warning("preemption resource precheck skipped candidate node %s", ni.name)
                    (non_violating if c.num_pdb_violations == 0 else violating).append(c)
                    statuses.pop(ni.name, None)
                    continue
                statuses[ni.name] = status
            errors = [s.message() for s in statuses.values() if s is not None and s.code == Code.ERROR]
        out = {name: s for name, s in statuses.items() if s is not None}
        return non_violating + violating, out, errors

    def _dry_run_node(
        self,
        state: CycleState,
        pod: Pod,
        ni: NodeInfo,
        pdbs: Sequence[PDB],
        plan: DryRunPlan | None = None,
        nominated: Sequence[Any] = (),
    ) -> tuple[Candidate | None, Status | None]:
        """One node's dry run on clones: a candidate, or the status saying why the node cannot help.
        ``plan`` says what the dry run may leave out (``dry_run``); ``nominated``: the pods nominated to
        the node (with pods of equal or higher priority among them, every step is the full one)."""
        if plan is None:
            self.dry_runs["full"] += 1
            victims, num_violations, status = select_victims_on_node(
                self.handle, state.clone(), pod, ni.clone(), pdbs
            )
        else:
            priority, uid = pod.priority, pod.uid
            full = any(pi.pod.priority >= priority and pi.pod.uid != uid for pi in nominated)
            if plan.by_resources and not full:
                c = self._victims_by_resources(state, pod, ni, pdbs, plan)
                if c is not None:
                    self.dry_runs["resources"] += 1
                    return c, None
            self.dry_runs["full" if full else "reprieve"] += 1
            victims, num_violations, status = select_victims_on_node(
                self.handle,
                state.clone() if plan.clone_state else state,
                pod,
                ni.clone(),
                pdbs,
                reprieve=None if full else plan.reprieve,
                run_extensions=plan.run_extensions,
            )
        if (status is None or status.is_success()) and victims:
            return Candidate(ni.name, tuple(victims), num_violations), None
        if status is None or status.is_success():
            status = Status.as_error(f'expected at least one victim pod on node "{ni.name}"')
        return None, status

    def _victims_by_resources(
        self, state: CycleState, pod: Pod, ni: NodeInfo, pdbs: Sequence[PDB], plan: DryRunPlan
    ) -> Candidate | None:
        """The dry run on numbers (``victims.victims_by_resources``), checked by one Filter pass on the
        node without the victims (it stands for the full dry run's first pass: every pod-independent
        plugin passes, and NodeResourcesFit passes with fewer pods). None: the full dry run decides
        (and counts its evaluations as if this had not been tried)."""
        found = victims_by_resources(ni, pod, state.get(NODE_RESOURCES_FIT_STATE_KEY), pdbs)
        if found is None:
            return None
        victims, num_violations, steps = found
        evaluations = plan.reprieve.evaluations
        saved = dict(evaluations)
        # no pod of equal or higher priority is nominated here (the caller checked): the nominated
        # pass is the plain one, on the node without the victims (no copy when none is needed)
        fw = getattr(self.handle, "framework", None)
        adjusted = fw.adjusted_filter(state) if fw is not None else None
        if adjusted is not None:
            st = adjusted.run(state, pod, ni, (), victims)
        else:
            node = ni.clone()
            for pi in victims:
                node.remove_pod(pi.pod)
            st = self.handle.run_filter_plugins_with_nominated_pods(state, pod, node)
        if st is not None and not st.is_success():
            log.debug("resource dry run on %s not confirmed by Filter: %s", ni.name, st.message())
            evaluations.clear()
            evaluations.update(saved)
            return None
        plan.reprieve.count(steps)
        return Candidate(ni.name, tuple(pi.pod for pi in victims), num_violations)

    def _nominated_by_node(self) -> Mapping[str, Sequence[Any]] | None:
        """The nominator read once for a whole dry run (None: read it node by node)."""
        whole = getattr(self.handle, "nominated_pods_by_node", None)
        return whole() if callable(whole) else None

    def _nominated(self, node: str) -> Sequence[Any]:
        nominated = getattr(self.handle, "nominated_pods_for_node", None)
        return nominated(node) if callable(nominated) else ()

    def _resource_precheck(self, state: CycleState) -> Any:
        """NodeResourcesFit's PreFilter state when that plugin filters in this cycle, else None (no
        precheck)."""
        if NODE_RESOURCES_FIT in state.skip_filter_plugins:
            return None
        fw = getattr(self.handle, "framework", None)
        plugins = getattr(fw, "filter_plugins", None) or ()
        if not any(getattr(p, "name", None) == NODE_RESOURCES_FIT for p in plugins):
            return None
        request = state.get(NODE_RESOURCES_FIT_STATE_KEY)
        if not (
            isinstance(getattr(request, "milli_cpu", None), int)
            and isinstance(getattr(request, "memory", None), int)
        ):
            return None
        return request

    def pdbs(self) -> list[PDB]:
        try:
            objects = self.handle.objects
            return parse_pdbs(objects.list("PodDisruptionBudget"))
        except Exception as e:  # no object store: no budgets to respect
            log.debug("no PodDisruptionBudgets available: %s", e)
            return []

    # ---------------------------------------------------------------------------------- PreEnqueue
    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not self.async_preemption:
            return None
        if self.executor.is_pod_running_preemption(pod.uid):
            return Status.unresolvable(MSG_WAITING_FOR_PREEMPTION, plugin=NAME)
        return None

    def is_pod_running_preemption(self, uid: str) -> bool:
        return self.executor.is_pod_running_preemption(uid)

    # ---------------------------------------------------------------------------------- queueing
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        if not self.async_preemption:
            return []  # PreEnqueue never rejects, so no pod waits on this plugin
        return [ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE), _skip_hint)]

    # ---------------------------------------------------------------------------------- misc
    def _count_attempt(self) -> None:
        extra = getattr(self.handle, "extra", None)
        metrics = extra.get("metrics") if isinstance(extra, Mapping) else None
        counter = getattr(metrics, "preemption_attempts", None)
        if counter is not None:
            try:
                counter.inc()
            except Exception:  # metrics must never break scheduling
                log.debug("preemption_attempts metric failed", exc_info=True)


def _plain_request(request: Any) -> bool:
    """NodeResourcesFit's PreFilter state asks for pods, CPU, memory and ephemeral storage only."""
    return (
        request is not None
        and not getattr(request, "scalar", True)
        and all(
            isinstance(getattr(request, a, None), int) for a in ("milli_cpu", "memory", "ephemeral_storage")
        )
    )


def _code(status: Status | None) -> Code:
    # A node without a status is "absent": kube treats it as UnschedulableAndUnresolvable.
    return Code.UNSCHEDULABLE_AND_UNRESOLVABLE if status is None else status.code


def _terminating_by_preemption(pod: Pod) -> bool:
    """kube checks deletionTimestamp and a DisruptionTarget=True/PreemptionByScheduler condition; pod
    records keep no conditions, so any terminating pod counts."""
    return pod.deleting


def new(args: DefaultPreemptionArgs | None, handle: Handle) -> DefaultPreemption:
    return DefaultPreemption(args, handle)


PLUGIN = PluginSpec(
    NAME,
    new,
    DefaultPreemptionArgs,
    "evict lower-priority pods so that a pod that fits nowhere fits on one node",
)
