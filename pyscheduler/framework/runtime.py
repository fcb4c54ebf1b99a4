"""The framework runtime: runs one profile's plugins at each extension point, in order.

Design
------
``Framework`` is built per profile from plugin instances and the profile's resolved plugin lists (which
plugins run at which extension point, in which order, with which score weight). It owns the semantics
that plugins rely on, as kube-scheduler's ``frameworkImpl`` does:

- exceptions raised by a plugin become ``Error`` statuses naming the plugin, never a crash;
- PreFilter: a Skip excludes that plugin's Filter for this pod; results are intersected; a rejection
  ends the cycle; PreFilter results that leave no node report which plugins narrowed the set;
- Filter: plugins in order, the first non-success decides the node (Error is fatal for the cycle);
- PostFilter: runs only when no node fits; first success or first non-Unschedulable status wins;
- Score: per plugin per node (0..100), NormalizeScore, then times the weight; Skip in PreScore
  excludes the plugin's Score;
- Reserve in order, Unreserve of every reserve plugin in reverse order on failure (idempotent);
- Permit: any rejection rejects; WAIT registers a waiting pod with the shortest timeout per plugin;
- Bind: the first plugin that does not return Skip binds.

It does no I/O itself; plugins that write go through the handle's client. Timing of each extension
point goes to an optional ``metrics`` observer; so does each plugin call's time in the cycles whose
``CycleState.record_plugin_metrics`` is set (kube samples 10% of scheduling cycles), from the same
clock reads. ``evaluations`` counts plugin runs per (plugin, extension point) at PreFilter, Filter (per
node), PreScore and Score (per node), as kube's scheduler_plugin_evaluation_total does: plain integer
adds, read by the metrics collector when scraped.

A plugin that raises, or one call of a plugin that takes ``slow_plugin_threshold`` seconds or more, is
handed to an optional ``observer`` (``PluginObserver``): the scheduler's logs the traceback and the slow
call, rate-limited (``pyscheduler.plugin_log``); ``explain`` records every call's time. The per-plugin
times come from the same clock reads as the extension point's: one ``perf_counter`` per plugin call,
chained, at the points that run once per cycle (PreFilter, batch Filter, PostFilter, PreScore, Score with
its NormalizeScore, Reserve, Permit, PreBind, Bind). Filter run node by node (preemption's what-if,
nominated pods) is not timed per plugin: that is the hot loop.

Beside it: ``handle.py`` (``FrameworkHandle``, what plugins receive), ``scores.py`` (one Score plugin's
answer made kube's int64 scores: NormalizeScore, range check, weight), ``observers.py`` (``MetricsObserver``,
``PluginObserver``), ``status.py`` (the wording of a plugin's Error), ``fit_error.py`` (no node fits) and
``waiting_pods.py`` (Permit's waiting pods).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyscheduler.framework import extension_points
from pyscheduler.framework.batch import OpportunisticBatch
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import WILDCARD_EVENT, ClusterEventWithHint
from pyscheduler.framework.fit_error import FitError as FitError  # default_preemption imports it here
from pyscheduler.framework.handle import FrameworkHandle as FrameworkHandle  # docs/plugins.md names it here
from pyscheduler.framework.helpers.gofmt import go_string_slice
from pyscheduler.framework.interfaces import (
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PermitPlugin,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueuedPodInfoView,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from pyscheduler.framework.node_table import NodeBatch
from pyscheduler.framework.observers import DEFAULT_SLOW_PLUGIN_THRESHOLD, MetricsObserver, PluginObserver
from pyscheduler.framework.podgroup import Placement, PlacementScore, PodGroupAssignments, PodGroupInfo
from pyscheduler.framework.pods_adjusted import AdjustedFilter, plan_adjusted_filter
from pyscheduler.framework.scores import ScoreFailure, Scores, plugin_scores
from pyscheduler.framework.signing import PodSigner
from pyscheduler.framework.status import Code, Status, error_text, filter_outcome, plugin_error, wrapped_error
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo
from pyscheduler.framework.waiting_pods import WaitingPod

EXTENSION_POINTS = extension_points.NAMES

MAX_PERMIT_TIMEOUT = 15 * 60.0


def extension_points_of(plugin_type: type | object) -> set[str]:
    """The extension points a plugin class (or instance) implements, by its methods."""
    return extension_points.implemented_by(plugin_type)


WAIT_REASON = "one or more plugins asked to wait and no plugin rejected pod"


@dataclass
class ProfilePlugins:
    """Which plugin runs at which extension point, in order, and score weights."""

    points: dict[str, tuple[str, ...]] = field(default_factory=dict)
    weights: dict[str, int] = field(default_factory=dict)


class Framework:
    def __init__(
        self,
        profile_name: str,
        plugins: Mapping[str, Any],
        config: ProfilePlugins,
        handle: FrameworkHandle,
        *,
        percentage_of_nodes_to_score: int | None = None,
        metrics: MetricsObserver | None = None,
        observer: PluginObserver | None = None,
        slow_plugin_threshold: float = DEFAULT_SLOW_PLUGIN_THRESHOLD,
    ) -> None:
        self.profile_name = profile_name
        self.plugins = dict(plugins)
        self.config = config
        if handle.framework is None:
            handle.framework = self
            self.handle = handle
        else:
            self.handle = handle.for_profile(self)
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.metrics = metrics
        self.observer = observer
        self.slow_plugin_threshold = slow_plugin_threshold

        def at(point: str) -> list[Any]:
            out = []
            for name in config.points.get(point, ()):
                p = self.plugins[name]
                if not isinstance(p, extension_points.BY_NAME[point].protocol):
                    raise TypeError(f"plugin {name} does not implement {point}")
                out.append(p)
            return out

        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = at("preEnqueue")
        qs = at("queueSort")
        self.queue_sort_plugin: QueueSortPlugin | None = qs[0] if qs else None
        self.pre_filter_plugins: list[PreFilterPlugin] = at("preFilter")
        self.filter_plugins: list[FilterPlugin] = at("filter")
        self.post_filter_plugins: list[PostFilterPlugin] = at("postFilter")
        self.pre_score_plugins: list[PreScorePlugin] = at("preScore")
        self.score_plugins: list[ScorePlugin] = at("score")
        self.reserve_plugins: list[ReservePlugin] = at("reserve")
        self.permit_plugins: list[PermitPlugin] = at("permit")
        self.pre_bind_plugins: list[PreBindPlugin] = at("preBind")
        self.bind_plugins: list[BindPlugin] = at("bind")
        self.post_bind_plugins: list[PostBindPlugin] = at("postBind")
        self.placement_generate_plugins: list[PlacementGeneratePlugin] = at("placementGenerate")
        self.placement_score_plugins: list[PlacementScorePlugin] = at("placementScore")
        self.weights = {p.name: config.weights.get(p.name, 1) for p in self.score_plugins}
        self.placement_weights = {p.name: config.weights.get(p.name, 1) for p in self.placement_score_plugins}
        # (plugin, its filter_nodes or None): batch Filter where the plugin offers it
        self._filter_batch = [(p, getattr(p, "filter_nodes", None)) for p in self.filter_plugins]
        # (plugin, its PreFilterExtensions): asked once, as kube's runtime does at start
        self._pre_filter_exts = [
            (p, ext) for p in self.pre_filter_plugins if (ext := p.pre_filter_extensions()) is not None
        ]
        # scheduler_plugin_evaluation_total's counts, and each counted plugin's key into them
        self.evaluations: dict[tuple[str, str], int] = {}
        counted: tuple[tuple[str, Sequence[Any]], ...] = (
            ("PreFilter", self.pre_filter_plugins),
            ("Filter", self.filter_plugins),
            ("PreScore", self.pre_score_plugins),
            ("Score", self.score_plugins),
        )
        for point, at_point in counted:
            for p in at_point:
                self.evaluations[(p.name, point)] = 0
        self._filter_keys = [(p, (p.name, "Filter")) for p in self.filter_plugins]
        if metrics is not None:
            metrics.add_evaluations(profile_name, lambda: dict(self.evaluations))
        # opportunistic batching (framework/signing.py, framework/batch.py); the scheduler decides
        # whether to use them (the OpportunisticBatching gate)
        self.signer = PodSigner(
            profile_name,
            [*self.pre_filter_plugins, *self.filter_plugins, *self.pre_score_plugins, *self.score_plugins],
            metrics,
        )
        batch_observer: Any = metrics if hasattr(metrics, "batch_attempt") else None
        self.batch = OpportunisticBatch(profile_name, self.handle.clock, batch_observer)

    # ---------------------------------------------------------------------------------- metrics
    def _observe(self, point: str, status: Status | None, start: float, end: float | None = None) -> None:
        if self.metrics is not None:
            self.metrics.extension_point(
                point,
                status.code if status else Code.SUCCESS,
                self.profile_name,
                (time.perf_counter() if end is None else end) - start,
            )

    def observe_extension_point(self, point: str, code: Code, start: float) -> None:
        """An extension point the scheduler times itself (Filter, over the whole node search)."""
        if self.metrics is not None:
            self.metrics.extension_point(point, code, self.profile_name, time.perf_counter() - start)

    def _took(
        self,
        plugin: str,
        point: str,
        since: float,
        state: CycleState | None = None,
        status: Status | Code | None = None,
    ) -> float:
        """Now (``perf_counter``); a call of ``plugin`` that began at ``since`` and took the threshold or
        more goes to the observer, and in a sampled cycle (``state.record_plugin_metrics``) every call
        goes to the metrics with its status code. The return value is the next call's ``since`` and,
        after the last, the extension point's end."""
        now = time.perf_counter()
        if now - since >= self.slow_plugin_threshold and self.observer is not None:
            self.observer.plugin_time(self.profile_name, plugin, point, now - since)
        if state is not None and state.record_plugin_metrics and self.metrics is not None:
            code = status if isinstance(status, Code) else status.code if status is not None else Code.SUCCESS
            self.metrics.plugin(plugin, point, code, now - since)
        return now

    def _error(self, plugin: str, point: str, e: BaseException) -> Status:
        """The Error status of a plugin that raised; the exception goes to the observer."""
        if self.observer is not None:
            try:
                self.observer.plugin_error(self.profile_name, plugin, point, e)
            except Exception as report_error:  # reporting must never take the scheduling loop down
                # The framework cannot log (no I/O here); the failure rides on the plugin's exception,
                # which the returned Status carries to the scheduler's error log and explain.
                e.add_note(f"reporting this to the plugin observer failed: {error_text(report_error)}")
        return plugin_error(plugin, point, e)

    # ---------------------------------------------------------------------------------- queue
    def less(self, a: QueuedPodInfoView, b: QueuedPodInfoView) -> bool:
        assert self.queue_sort_plugin is not None
        return self.queue_sort_plugin.less(a, b)

    @property
    def queue_sort_key(self) -> Callable[[QueuedPodInfoView], Any] | None:
        """The QueueSort plugin's optional ``sort_key`` (see ``QueueSortPlugin``), or None."""
        return getattr(self.queue_sort_plugin, "sort_key", None)

    def run_pre_enqueue_plugins(self, pod: Pod) -> Status | None:
        if not self.pre_enqueue_plugins:
            return None
        start = t = time.perf_counter()
        sampled: CycleState | None = None
        if self.metrics is not None and self.metrics.sample_plugins():
            sampled = _SAMPLED
        status: Status | None = None
        for p in self.pre_enqueue_plugins:
            try:
                s = p.pre_enqueue(pod)
            except Exception as e:
                t = self._took(p.name, "PreEnqueue", t, sampled, Code.ERROR)
                status = self._error(p.name, "PreEnqueue", e)
                break
            t = self._took(p.name, "PreEnqueue", t, sampled, s)
            if s is not None and not s.is_success():
                status = s.with_plugin(p.name)
                break
        self._observe("PreEnqueue", status, start, t)
        return status

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Plugin -> the events that may make a pod it rejected schedulable. A plugin that does not
        say (no ``events_to_register``) is woken by every event, as kube-scheduler does."""
        out: dict[str, list[ClusterEventWithHint]] = {}
        for name, p in self.plugins.items():
            if isinstance(p, EnqueueExtensions):
                try:
                    out[name] = list(p.events_to_register())
                except Exception as e:  # a plugin bug must not stop the scheduler
                    self._error(name, "EventsToRegister", e)
                    out[name] = [ClusterEventWithHint(WILDCARD_EVENT)]
            else:
                out[name] = [ClusterEventWithHint(WILDCARD_EVENT)]
        return out

    # ---------------------------------------------------------------------------------- filtering
    def run_pre_filter_plugins(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Returns (merged result, status, plugins that rejected or narrowed the node set)."""
        start = t = time.perf_counter()
        result: PreFilterResult | None = None
        narrowed: set[str] = set()
        rejected: set[str] = set()
        status: Status | None = None
        ev = self.evaluations
        for p in self.pre_filter_plugins:
            try:
                r, s = p.pre_filter(state, pod, nodes)
            except Exception as e:
                t = self._took(p.name, "PreFilter", t, state, Code.ERROR)
                ev[(p.name, "PreFilter")] += 1
                status = self._error(p.name, "PreFilter", e)
                break
            t = self._took(p.name, "PreFilter", t, state, s)
            if s is not None and s.is_skip():
                state.skip_filter_plugins.add(p.name)
                continue
            ev[(p.name, "PreFilter")] += 1
            if s is not None and not s.is_success():
                if s.is_rejected():
                    s = s.with_plugin(p.name)
                    rejected.add(p.name)
                else:
                    s = wrapped_error("PreFilter", p.name, s)
                status = s
                break
            if r is not None and not r.all_nodes():
                narrowed.add(p.name)
                result = r if result is None else result.merge(r)
                if result.node_names is not None and not result.node_names:
                    status = Status.unschedulable(
                        f"node(s) didn't satisfy plugin(s) {go_string_slice(sorted(narrowed))} simultaneously"
                        if len(narrowed) > 1
                        else f"node(s) didn't satisfy plugin {next(iter(narrowed))}",
                    )
                    rejected |= narrowed
                    break
        self._observe("PreFilter", status, start, t)
        return result, status, rejected | narrowed

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        skip = state.skip_filter_plugins
        ev = self.evaluations
        for p, key in self._filter_keys:
            if skip and p.name in skip:
                continue
            ev[key] += 1
            try:
                s = p.filter(state, pod, node_info)
            except Exception as e:
                return self._error(p.name, "Filter", e)
            if s is not None and s.code != Code.SUCCESS:
                return filter_outcome(p.name, s)
        return None

    def run_filter_plugins_batch(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> list[Status | None]:
        """``run_filter_plugins`` for every node of ``nodes``, plugin by plugin: each plugin sees only the
        nodes every earlier plugin passed, so a node's status is that of the first plugin that rejects
        it, as node by node. Plugins with ``filter_nodes`` answer for all of them in one call. An Error
        status ends the pass (the cycle fails on it); nodes not reached are left None."""
        return self.run_filter_plugins_counted(state, pod, nodes)[0]

    def run_filter_plugins_counted(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[list[Status | None], int]:
        """``run_filter_plugins_batch`` and how many of its statuses are None (the nodes that passed),
        known without scanning them."""
        out: list[Status | None] = [None] * len(nodes)
        live = list(range(len(nodes)))
        sub: Sequence[NodeInfo] = nodes
        skip = state.skip_filter_plugins
        t = time.perf_counter()
        ev = self.evaluations
        for p, batch in self._filter_batch:
            if skip and p.name in skip:
                continue
            name = p.name
            ev[(name, "Filter")] += len(sub)
            try:
                if batch is not None:
                    results = batch(state, pod, sub)
                    if type(results) is not list:
                        results = list(results)
                else:
                    f = p.filter
                    results = [f(state, pod, ni) for ni in sub]
            except Exception as e:
                t = self._took(name, "Filter", t, state, Code.ERROR)
                err = self._error(name, "Filter", e)
                for i in live:
                    out[i] = err
                return out, 0
            t = self._took(name, "Filter", t, state)
            if len(results) != len(live):
                err = Status.as_error(
                    f"filter_nodes returned {len(results)} statuses for {len(live)} nodes", name
                )
                for i in live:
                    out[i] = err
                return out, 0
            # All passed (the common case): nothing to record. list.count(None) is a C loop while the
            # items are None; it would call Status.__eq__ on each rejection, so a list that starts with
            # one goes straight to the loop below.
            if not results or (results[0] is None and results.count(None) == len(results)):
                continue
            kept = _record_rejections(name, live, results, out)
            if kept is None:  # an error: the pass ends
                return out, sum(1 for x in out if x is None)
            if len(kept) != len(live):
                live = kept
                if not live:
                    break
                sub = _subset(nodes, live)
        return out, len(live)

    def run_filter_plugins_with_nominated_pods(
        self,
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        nominated: Sequence[PodInfo] | None = None,
    ) -> Status | None:
        """kube's RunFilterPluginsWithNominatedPods: if pods of equal or higher priority are nominated to
        this node, the pod must fit both with and without them (they may not land there after all).
        ``nominated``: those pods, when the caller has picked them already (see ``ge_nominated_pods``).

        The first pass runs on a clone of the node and an overlay of the state (``CycleState.overlay``:
        a value is cloned when a plugin first reads it, not every plugin's up front); ``state`` itself is
        left alone until that pass is over, so the overlay sees what a clone would."""
        if nominated is None:
            nominated = self.ge_nominated_pods(pod, node_info.name)
        if not nominated:
            return self.run_filter_plugins(state, pod, node_info)
        adjusted = self.adjusted_filter(state)
        if adjusted is not None:  # the same first pass, without the clones
            s = adjusted.run(state, pod, node_info, nominated)
            if s is not None and not s.is_success():
                return s
            return self.run_filter_plugins(state, pod, node_info)
        st = state.overlay()
        ni = node_info.clone()
        for pi in nominated:
            ni.add_pod(pi)
            s = self.run_pre_filter_extension_add_pod(st, pod, pi, ni)
            if s is not None and not s.is_success():
                return s
        s = self.run_filter_plugins(st, pod, ni)
        if s is not None and not s.is_success():
            return s
        return self.run_filter_plugins(state, pod, node_info)

    def adjusted_filter(self, state: CycleState) -> AdjustedFilter | None:
        """This cycle's Filter pass for a node with pods added or removed without a copy of it, when
        one is exact (``framework/pods_adjusted.py``)."""
        return plan_adjusted_filter(
            state, self.filter_plugins, self._pre_filter_exts, self.evaluations, self._error
        )

    def ge_nominated_pods(self, pod: Pod, node_name: str) -> list[PodInfo]:
        """The pods other than ``pod`` nominated to ``node_name`` with priority >= ``pod``'s (kube's
        addGENominatedPods): the ones the nominated-pods pass adds."""
        return [
            pi
            for pi in self.handle.nominated_pods_for_node(node_name)
            if pi.pod.uid != pod.uid and pi.pod.priority >= pod.priority
        ]

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension("add_pod", state, pod_to_schedule, pod_to_add, node_info)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension("remove_pod", state, pod_to_schedule, pod_to_remove, node_info)

    def _run_pre_filter_extension(
        self, method: str, state: CycleState, pod_to_schedule: Pod, other: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        point = "AddPod" if method == "add_pod" else "RemovePod"
        for p, ext in self._pre_filter_exts:
            if p.name in state.skip_filter_plugins:
                continue
            fn = ext.add_pod if method == "add_pod" else ext.remove_pod
            try:
                s = fn(state, pod_to_schedule, other, node_info)
            except Exception as e:
                return self._error(p.name, point, e)
            if s is not None and not s.is_success():
                return s.with_plugin(p.name)
        return None

    def run_post_filter_plugins(
        self, state: CycleState, pod: Pod, filtered: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        start = t = time.perf_counter()
        reasons: list[str] = []
        result: PostFilterResult | None = None
        final: Status | None = None
        for p in self.post_filter_plugins:
            try:
                r, s = p.post_filter(state, pod, filtered)
            except Exception as e:
                t = self._took(p.name, "PostFilter", t, state, Code.ERROR)
                final = self._error(p.name, "PostFilter", e)
                break
            t = self._took(p.name, "PostFilter", t, state, s)
            if s is None or s.is_success():
                final = Status.success()
                result = r
                break
            if s.code != Code.UNSCHEDULABLE:
                final = s.with_plugin(p.name)
                result = r
                break
            reasons.extend(s.reasons)
            if r is not None:
                result = r
        if final is None:
            final = Status.unschedulable(*reasons)
        self._observe("PostFilter", final, start, t)
        return result, final

    # ---------------------------------------------------------------------------------- scoring
    def run_pre_score_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        start = t = time.perf_counter()
        status: Status | None = None
        ev = self.evaluations
        for p in self.pre_score_plugins:
            try:
                s = p.pre_score(state, pod, nodes)
            except Exception as e:
                t = self._took(p.name, "PreScore", t, state, Code.ERROR)
                ev[(p.name, "PreScore")] += 1
                status = self._error(p.name, "PreScore", e)
                break
            t = self._took(p.name, "PreScore", t, state, s)
            if s is not None and s.is_skip():
                state.skip_score_plugins.add(p.name)
                continue
            ev[(p.name, "PreScore")] += 1
            if s is not None and not s.is_success():
                status = wrapped_error("PreScore", p.name, s)
                break
        self._observe("PreScore", status, start, t)
        return status

    def run_score_plugins(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[list[tuple[str, int, dict[str, int]]], Status | None]:
        """Per node: (name, weighted total, weighted score per plugin). For explanations and tests; the
        scheduling loop uses ``run_score_plugins_totals``, which skips the per-node breakdown."""
        per_plugin, st = self._score(state, pod, nodes)
        if st is not None:
            return [], st
        columns = {name: scores.tolist() for name, scores in per_plugin.items()}
        out: list[tuple[str, int, dict[str, int]]] = []
        for i, ni in enumerate(nodes):
            detail = {name: scores[i] for name, scores in columns.items()}
            out.append((ni.name, sum(detail.values()), detail))
        return out, None

    def run_score_plugins_totals(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[Scores, Status | None]:
        """The weighted total score of each node, in the order of ``nodes`` (an int64 array)."""
        per_plugin, st = self._score(state, pod, nodes)
        if st is not None:
            return np.zeros(0, dtype=np.int64), st
        total: Scores | None = None
        for scores in per_plugin.values():
            if total is None:
                total = scores.copy()
            else:
                total += scores
        return (total if total is not None else np.zeros(len(nodes), dtype=np.int64)), None

    def _score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[dict[str, Scores], Status | None]:
        start = t = time.perf_counter()
        per_plugin: dict[str, Scores] = {}
        skip = state.skip_score_plugins
        ev = self.evaluations
        n = len(nodes)
        for p in self.score_plugins:
            if p.name in skip:
                continue
            ev[(p.name, "Score")] += n
            try:
                scores = plugin_scores(p, state, pod, nodes, self.weights.get(p.name, 1))
            except ScoreFailure as f:
                t = self._took(p.name, "Score", t, state, f.status)
                self._observe("Score", f.status, start, t)
                return {}, f.status
            except Exception as e:
                t = self._took(p.name, "Score", t, state, Code.ERROR)
                st = self._error(p.name, "Score", e)
                self._observe("Score", st, start, t)
                return {}, st
            t = self._took(p.name, "Score", t, state)
            per_plugin[p.name] = scores
        self._observe("Score", None, start, t)
        return per_plugin, None

    # ---------------------------------------------------------------------------------- reserve/permit
    def run_reserve_plugins_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        start = t = time.perf_counter()
        status: Status | None = None
        for p in self.reserve_plugins:
            try:
                s = p.reserve(state, pod, node_name)
            except Exception as e:
                t = self._took(p.name, "Reserve", t, state, Code.ERROR)
                status = self._error(p.name, "Reserve", e)
                break
            t = self._took(p.name, "Reserve", t, state, s)
            if s is not None and not s.is_success():
                status = s.with_plugin(p.name) if s.is_rejected() else wrapped_error("Reserve", p.name, s)
                break
        self._observe("Reserve", status, start, t)
        return status

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for p in reversed(self.reserve_plugins):
            try:
                p.unreserve(state, pod, node_name)
            except Exception as e:
                self._error(p.name, "Unreserve", e)

    def run_permit_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        start = t = time.perf_counter()
        timeouts: dict[str, float] = {}
        status: Status | None = None
        wait_status: Status | None = None
        for p in self.permit_plugins:
            try:
                s, timeout = p.permit(state, pod, node_name)
            except Exception as e:
                t = self._took(p.name, "Permit", t, state, Code.ERROR)
                status = self._error(p.name, "Permit", e)
                break
            t = self._took(p.name, "Permit", t, state, s)
            if s is None or s.is_success():
                continue
            if s.is_wait():
                timeouts[p.name] = min(max(timeout, 0.0), MAX_PERMIT_TIMEOUT)
                wait_status = s
                continue
            status = s.with_plugin(p.name) if s.is_rejected() else wrapped_error("Permit", p.name, s)
            if status.is_rejected():
                status = Status(
                    Code.UNSCHEDULABLE if status.code == Code.PENDING else status.code, status.reasons, p.name
                )
            break
        if status is None and timeouts:
            self.handle.waiting_pods.add(WaitingPod(pod, node_name, timeouts, self.handle.clock))
            # kube 1.36: the last waiting plugin's status, with this reason appended
            assert wait_status is not None
            status = Status.wait(*wait_status.reasons, WAIT_REASON, plugin=wait_status.plugin or "")
        self._observe("Permit", status, start, t)
        return status

    def wait_on_permit(self, pod: Pod) -> Status | None:
        wp = self.handle.waiting_pods.get(pod.uid)
        if wp is None:
            return None
        start = time.perf_counter()
        try:
            s = wp.wait()
        finally:
            self.handle.waiting_pods.remove(pod.uid)
        if self.metrics is not None:
            self.metrics.permit_wait(s.code, time.perf_counter() - start)
        return None if s.is_success() else s

    # ---------------------------------------------------------------------------------- binding
    def run_pre_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        start = t = time.perf_counter()
        status: Status | None = None
        for p in self.pre_bind_plugins:
            if p.name in state.skip_pre_bind_plugins:
                continue
            try:
                s = p.pre_bind(state, pod, node_name)
            except Exception as e:
                t = self._took(p.name, "PreBind", t, state, Code.ERROR)
                status = self._error(p.name, "PreBind", e)
                break
            t = self._took(p.name, "PreBind", t, state, s)
            if s is not None and not s.is_success() and not s.is_skip():
                status = s.with_plugin(p.name) if s.is_rejected() else wrapped_error("PreBind", p.name, s)
                break
        self._observe("PreBind", status, start, t)
        return status

    def run_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        start = t = time.perf_counter()
        status: Status | None = Status.skip()
        for p in self.bind_plugins:
            try:
                s = p.bind(state, pod, node_name)
            except Exception as e:
                t = self._took(p.name, "Bind", t, state, Code.ERROR)
                status = self._error(p.name, "Bind", e)
                break
            t = self._took(p.name, "Bind", t, state, s)
            if s is not None and s.is_skip():
                continue
            if s is None or s.is_success():
                status = None
            else:
                status = s.with_plugin(p.name) if s.is_rejected() else wrapped_error("Bind", p.name, s)
            break
        if status is not None and status.is_skip():
            status = Status.as_error("no bind plugin bound the pod")
        self._observe("Bind", status, start, t)
        return status

    def run_post_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> None:
        start = t = time.perf_counter()
        for p in self.post_bind_plugins:
            try:
                p.post_bind(state, pod, node_name)
            except Exception as e:
                t = self._took(p.name, "PostBind", t, state, Code.ERROR)
                self._error(p.name, "PostBind", e)
                continue
            t = self._took(p.name, "PostBind", t, state)
        self._observe("PostBind", None, start, t)

    # ---------------------------------------------------------------------------------- placements
    def run_placement_generate_plugins(
        self, state: CycleState, group: PodGroupInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[Placement], Status | None]:
        """kube's RunPlacementGeneratePlugins: the first PlacementGenerate plugin splits all nodes into
        placements; without one, all nodes are the one placement."""
        start = time.perf_counter()
        parent = Placement("", nodes)
        if not self.placement_generate_plugins:
            return [parent], None
        p = self.placement_generate_plugins[0]
        status: Status | None = None
        placements: list[Placement] = []
        try:
            got, s = p.generate_placements(state, group, parent)
        except Exception as e:
            status = self._error(p.name, "PlacementGenerate", e)
        else:
            if s is not None and not s.is_success():
                status = s.with_plugin(p.name)
            elif not got:
                status = Status.unschedulable("no feasible placements found", plugin=p.name)
            else:
                placements = list(got)
        self._took(p.name, "PlacementGenerate", start)
        self._observe("PlacementGenerate", status, start)
        return placements, status

    def run_placement_score_plugins(
        self, state: CycleState, group: PodGroupInfo, assignments: Sequence[PodGroupAssignments]
    ) -> tuple[list[int], Status | None]:
        """kube's RunPlacementScorePlugins: each plugin scores every placement, normalizes, and the
        weighted sums are the placements' totals (in ``assignments`` order)."""
        start = time.perf_counter()
        totals = [0] * len(assignments)
        for p in self.placement_score_plugins:
            scores: list[PlacementScore] = []
            try:
                for a in assignments:
                    v, s = p.score_placement(state, group, a)
                    if s is not None and not s.is_success():
                        msg = f'running PlacementScore plugins: plugin "{p.name}" failed with: {s.message()}'
                        return [], Status.as_error(msg)
                    scores.append(PlacementScore(a.placement, int(v)))
                ext = p.placement_score_extensions()
                if ext is not None:
                    s = ext.normalize_placement_score(state, group, scores)
                    if s is not None and not s.is_success():
                        msg = (
                            "running NormalizePlacementScore on PlacementScore plugins: "
                            f'plugin "{p.name}" failed with: {s.message()}'
                        )
                        return [], Status.as_error(msg)
            except Exception as e:
                return [], self._error(p.name, "PlacementScore", e)
            w = self.placement_weights.get(p.name, 1)
            for i, sc in enumerate(scores):
                totals[i] += sc.score * w
        self._observe("PlacementScore", None, start)
        return totals, None

    # ---------------------------------------------------------------------------------- misc
    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    def filters_are_batched(self, state: CycleState) -> bool:
        """Whether every Filter plugin this cycle runs (those PreFilter did not skip) answers for many
        nodes in one call (``filter_nodes``): then checking a few nodes more than needed costs next to
        nothing, and the search may over-fetch."""
        skip = state.skip_filter_plugins
        return all(batch is not None or p.name in skip for p, batch in self._filter_batch)

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    def list_plugins(self) -> dict[str, list[str]]:
        return {
            ep: list(self.config.points.get(ep, ())) for ep in EXTENSION_POINTS if self.config.points.get(ep)
        }


_SAMPLED = CycleState()
_SAMPLED.record_plugin_metrics = True
"""Stands for a sampled cycle where there is none (PreEnqueue runs outside scheduling cycles)."""


def _record_rejections(
    name: str, live: Sequence[int], results: Sequence[Status | None], out: list[Status | None]
) -> list[int] | None:
    """One Filter plugin's answers for the nodes at positions ``live``: each rejection into ``out``
    (named for the plugin), the positions that passed returned. None if a Status is neither a success
    nor a rejection: its wrapped error is in ``out`` and the pass ends there."""
    kept: list[int] = []
    last: Status | None = None  # a batch hook may give many nodes one shared Status
    last_out: Status | None = None
    for i, s in zip(live, results, strict=True):
        if s is None or s.code == Code.SUCCESS:
            kept.append(i)
            continue
        if s is last:
            out[i] = last_out
            continue
        if not s.is_rejected():
            out[i] = wrapped_error("Filter", name, s)
            return None
        last = s
        last_out = out[i] = s if s.plugin == name else s.with_plugin(name)
    return kept


def _subset(nodes: Sequence[NodeInfo], idx: list[int]) -> Sequence[NodeInfo]:
    """nodes[i] for i in idx, still a NodeBatch (rows carried over) when ``nodes`` is one."""
    if isinstance(nodes, NodeBatch):
        return nodes.subset(idx)
    return [nodes[i] for i in idx]
