"""What the runtime reports about plugin calls, and to whom.

``MetricsObserver`` receives each extension point's time and status, in sampled cycles each plugin call's
(kube's scheduler_framework_extension_point_duration_seconds and scheduler_plugin_execution_duration_seconds),
Permit's wait, and the evaluation counts; ``pyscheduler.metrics`` implements it. ``PluginObserver``
receives a plugin's exception and any one call that took ``slow_plugin_threshold`` seconds or more;
``pyscheduler.plugin_log`` implements it (rate-limited logs), ``explain`` records every call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from pyscheduler.framework.status import Code


class MetricsObserver(Protocol):
    def extension_point(self, extension_point: str, status: Code, profile: str, seconds: float) -> None: ...

    def plugin(self, plugin: str, extension_point: str, status: Code, seconds: float) -> None: ...

    def sample_plugins(self) -> bool: ...

    def permit_wait(self, status: Code, seconds: float) -> None: ...

    def add_evaluations(self, profile: str, counts: Callable[[], Mapping[tuple[str, str], int]]) -> None: ...


class PluginObserver(Protocol):
    """What the framework reports about plugin calls (see the module docstring)."""

    def plugin_error(self, profile: str, plugin: str, extension_point: str, error: BaseException) -> None: ...

    def plugin_time(self, profile: str, plugin: str, extension_point: str, seconds: float) -> None:
        """One plugin call that took ``slow_plugin_threshold`` seconds or more."""
        ...


DEFAULT_SLOW_PLUGIN_THRESHOLD = 0.1
"""Seconds; kube-scheduler has no equivalent setting (``pyscheduler run --slow-plugin-threshold``)."""
