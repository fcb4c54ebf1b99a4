"""What every extension point's runner in ``Framework`` shares (``runtime.py`` builds it): the profile's
plugin lists, the evaluation counts, and how one plugin call is timed, reported and turned into a Status.

``RuntimeBase`` is the common base of the runners split by extension point: ``runtime_filter``
(PreFilter, Filter, PostFilter), ``runtime_score`` (PreScore, Score), ``runtime_binding`` (Reserve,
Permit, WaitOnPermit, PreBind, Bind, PostBind) and ``runtime_placement`` (PlacementGenerate,
PlacementScore). It holds no state of its own; ``Framework.__init__`` sets what it declares.

Timing: ``_observe`` hands an extension point's duration to the metrics observer; ``_took`` is the one
``perf_counter`` read per plugin call, chained (its return is the next call's start), which reports a
slow call to the plugin observer and, in a sampled cycle, the call's time to the metrics. ``_error`` is
the Error status of a plugin that raised, the exception handed to the plugin observer.
"""

from __future__ import annotations

import time
from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.handle import FrameworkHandle
from pyscheduler.framework.interfaces import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from pyscheduler.framework.observers import MetricsObserver, PluginObserver
from pyscheduler.framework.status import Code, Status, error_text, plugin_error


class RuntimeBase:
    """The state the extension point runners read (set by ``Framework.__init__``) and the plugin call
    helpers they share."""

    profile_name: str
    handle: FrameworkHandle
    metrics: MetricsObserver | None
    observer: PluginObserver | None
    slow_plugin_threshold: float
    pre_filter_plugins: list[PreFilterPlugin]
    filter_plugins: list[FilterPlugin]
    post_filter_plugins: list[PostFilterPlugin]
    pre_score_plugins: list[PreScorePlugin]
    score_plugins: list[ScorePlugin]
    reserve_plugins: list[ReservePlugin]
    permit_plugins: list[PermitPlugin]
    pre_bind_plugins: list[PreBindPlugin]
    bind_plugins: list[BindPlugin]
    post_bind_plugins: list[PostBindPlugin]
    placement_generate_plugins: list[PlacementGeneratePlugin]
    placement_score_plugins: list[PlacementScorePlugin]
    weights: dict[str, int]  # Score plugin -> weight
    placement_weights: dict[str, int]  # PlacementScore plugin -> weight
    # scheduler_plugin_evaluation_total's counts per (plugin, extension point)
    evaluations: dict[tuple[str, str], int]
    # (plugin, its filter_nodes or None): batch Filter where the plugin offers it
    _filter_batch: list[tuple[FilterPlugin, Any]]
    # (plugin, its PreFilterExtensions): asked once, as kube's runtime does at start
    _pre_filter_exts: list[tuple[PreFilterPlugin, PreFilterExtensions]]
    # (plugin, its key into ``evaluations`` at Filter)
    _filter_keys: list[tuple[FilterPlugin, tuple[str, str]]]

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
