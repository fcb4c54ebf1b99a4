"""The framework runtime: runs one profile's plugins at each extension point, in order.

Design
------
``Framework`` is built per profile from plugin instances and the profile's resolved plugin lists (which
plugins run at which extension point, in which order, with which score weight). It owns the semantics
that plugins rely on, as kube-scheduler's ``frameworkImpl`` does; exceptions raised by a plugin become
``Error`` statuses naming the plugin, never a crash. The extension points are run by one class each
group, which ``Framework`` combines; the semantics of each point are in its module:

- this module: building the plugin lists per point, PreEnqueue and QueueSort (the queue's points),
  EventsToRegister, and what the scheduler asks of a profile (``has_*_plugins``, ``list_plugins``);
- ``runtime_filter.py`` (``FilterPoints``): PreFilter and its AddPod/RemovePod extensions, Filter
  (node by node, batched, with nominated pods), PostFilter;
- ``runtime_score.py`` (``ScorePoints``): PreScore, Score, NormalizeScore and weights;
- ``runtime_binding.py`` (``BindingPoints``): Reserve/Unreserve, Permit, WaitOnPermit, PreBind, Bind,
  PostBind;
- ``runtime_placement.py`` (``PlacementPoints``): PlacementGenerate and PlacementScore (pod groups);
- ``runtime_base.py`` (``RuntimeBase``): what they share: the plugin lists' declarations, and how one
  plugin call is timed, reported and turned into an Error status.

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

from pyscheduler.framework import extension_points
from pyscheduler.framework.batch import OpportunisticBatch
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import WILDCARD_EVENT, ClusterEventWithHint
from pyscheduler.framework.fit_error import FitError as FitError  # default_preemption imports it here
from pyscheduler.framework.handle import FrameworkHandle as FrameworkHandle  # docs/plugins.md names it here
from pyscheduler.framework.interfaces import (
    EnqueueExtensions,
    PreEnqueuePlugin,
    QueuedPodInfoView,
    QueueSortPlugin,
)
from pyscheduler.framework.observers import DEFAULT_SLOW_PLUGIN_THRESHOLD, MetricsObserver, PluginObserver
from pyscheduler.framework.runtime_binding import (  # the coscheduling example imports it here
    MAX_PERMIT_TIMEOUT as MAX_PERMIT_TIMEOUT,
)
from pyscheduler.framework.runtime_binding import BindingPoints
from pyscheduler.framework.runtime_filter import FilterPoints
from pyscheduler.framework.runtime_placement import PlacementPoints
from pyscheduler.framework.runtime_score import ScorePoints
from pyscheduler.framework.signing import PodSigner
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import Pod

EXTENSION_POINTS = extension_points.NAMES


def extension_points_of(plugin_type: type | object) -> set[str]:
    """The extension points a plugin class (or instance) implements, by its methods."""
    return extension_points.implemented_by(plugin_type)


@dataclass
class ProfilePlugins:
    """Which plugin runs at which extension point, in order, and score weights."""

    points: dict[str, tuple[str, ...]] = field(default_factory=dict)
    weights: dict[str, int] = field(default_factory=dict)


class Framework(FilterPoints, ScorePoints, BindingPoints, PlacementPoints):
    """One profile's plugins, run per extension point (the points are in the modules named above)."""

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
        self.pre_filter_plugins = at("preFilter")
        self.filter_plugins = at("filter")
        self.post_filter_plugins = at("postFilter")
        self.pre_score_plugins = at("preScore")
        self.score_plugins = at("score")
        self.reserve_plugins = at("reserve")
        self.permit_plugins = at("permit")
        self.pre_bind_plugins = at("preBind")
        self.bind_plugins = at("bind")
        self.post_bind_plugins = at("postBind")
        self.placement_generate_plugins = at("placementGenerate")
        self.placement_score_plugins = at("placementScore")
        self.weights = {p.name: config.weights.get(p.name, 1) for p in self.score_plugins}
        self.placement_weights = {p.name: config.weights.get(p.name, 1) for p in self.placement_score_plugins}
        # (plugin, its filter_nodes or None): batch Filter where the plugin offers it
        self._filter_batch = [(p, getattr(p, "filter_nodes", None)) for p in self.filter_plugins]
        # (plugin, its PreFilterExtensions): asked once, as kube's runtime does at start
        self._pre_filter_exts = [
            (p, ext) for p in self.pre_filter_plugins if (ext := p.pre_filter_extensions()) is not None
        ]
        # scheduler_plugin_evaluation_total's counts, and each counted plugin's key into them
        self.evaluations = {}
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

    # ---------------------------------------------------------------------------------- misc
    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

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
