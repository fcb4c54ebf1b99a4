"""The scheduler's log of plugin problems: a plugin that raised (with its traceback) and a plugin call
that was slow, each at most once per minute per site so a plugin failing in a hot loop cannot flood it.

``PluginProblemLog`` is the ``PluginObserver`` the daemon hands its frameworks. A plugin exception is
logged at error level with its type, message, the file and line where it was raised and the formatted
traceback as a plain string in ``exception`` (the key structlog's console renderer prints as a block,
and the JSON renderer as a string; no frame locals: ``traceback.format_exception`` renders none). The key that rate-limits it is (profile, plugin, exception type, file, line): the same bug
hit again within the period is counted, and the count is logged with the next line let through
(``suppressed``). A slow call is a warning keyed by (profile, plugin, extension point).
"""

from __future__ import annotations

import traceback
from typing import Any

import structlog

from pyscheduler.framework.clock import Clock
from pyscheduler.framework.observers import DEFAULT_SLOW_PLUGIN_THRESHOLD
from pyscheduler.framework.ratelimit import DEFAULT_PERIOD, RateLimiter
from pyscheduler.framework.status import error_text


def exception_site(e: BaseException) -> tuple[str, int, str]:
    """(file, line, function) of the frame that raised ``e``: the innermost of its traceback."""
    tb = e.__traceback__
    if tb is None:
        return ("?", 0, "?")
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return (code.co_filename, tb.tb_lineno, code.co_name)


def format_traceback(e: BaseException) -> str:
    """The traceback as Python prints it, without locals."""
    return "".join(traceback.format_exception(e)).rstrip("\n")


class PluginProblemLog:
    def __init__(
        self,
        clock: Clock,
        *,
        period: float = DEFAULT_PERIOD,
        slow_threshold: float = DEFAULT_SLOW_PLUGIN_THRESHOLD,
        logger: Any = None,
    ) -> None:
        self._errors = RateLimiter(clock, period)
        self._slow = RateLimiter(clock, period)
        self._slow_threshold = slow_threshold
        self._log = logger if logger is not None else structlog.get_logger("pyscheduler.plugins")

    def plugin_error(self, profile: str, plugin: str, extension_point: str, error: BaseException) -> None:
        file, line, function = exception_site(error)
        suppressed = self._errors.allow((profile, plugin, type(error), file, line))
        if suppressed is None:
            return
        self._log.error(
            "plugin raised an exception",
            plugin=plugin,
            extension_point=extension_point,
            profile=profile,
            exc_type=type(error).__name__,
            error=error_text(error),
            file=file,
            line=line,
            function=function,
            exception=format_traceback(error),  # ConsoleRenderer prints this key as a block
            suppressed=suppressed,
        )

    def plugin_time(self, profile: str, plugin: str, extension_point: str, seconds: float) -> None:
        suppressed = self._slow.allow((profile, plugin, extension_point))
        if suppressed is None:
            return
        self._log.warning(
            "slow plugin call",
            plugin=plugin,
            extension_point=extension_point,
            profile=profile,
            duration_ms=round(seconds * 1000, 1),
            threshold_ms=round(self._slow_threshold * 1000, 1),
            suppressed=suppressed,
        )
