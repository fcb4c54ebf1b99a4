"""Status: what every extension point returns, with kube-scheduler's seven codes.

- SUCCESS: go on.
- ERROR: something broke (an exception, an API failure); the pod is retried with backoff.
- UNSCHEDULABLE: this node (or this pod, now) does not fit, but preemption might help.
- UNSCHEDULABLE_AND_UNRESOLVABLE: does not fit and preemption cannot help.
- WAIT: Permit only: hold the pod until another plugin allows or rejects it, or the timeout.
- SKIP: PreFilter/PreScore: this plugin has nothing to do for the pod; its Filter/Score are skipped.
  Bind: this plugin does not bind this pod; the next one is asked.
- PENDING: the pod is waiting for something outside the scheduler (PreEnqueue, PreBind).

A ``None`` status means SUCCESS, as a nil ``*Status`` does in Go.

The last functions word the Error the runtime makes of a plugin that raised, or that returned a code
its extension point does not allow, as kube-scheduler's frameworkImpl does.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Code(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    def __str__(self) -> str:  # the Go names, used in logs and metrics labels
        return _GO_NAMES[self]


_GO_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


@dataclass(frozen=True, slots=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    error: BaseException | None = None

    # -- constructors ------------------------------------------------------------------------
    @staticmethod
    def success() -> Status:
        return _SUCCESS

    @staticmethod
    def unschedulable(*reasons: str, plugin: str = "") -> Status:
        return Status(Code.UNSCHEDULABLE, tuple(reasons), plugin)

    @staticmethod
    def unresolvable(*reasons: str, plugin: str = "") -> Status:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(reasons), plugin)

    @staticmethod
    def as_error(err: BaseException | str, plugin: str = "") -> Status:
        if isinstance(err, str):
            err = RuntimeError(err)
        return Status(Code.ERROR, (str(err),), plugin, err)

    @staticmethod
    def skip(plugin: str = "") -> Status:
        return Status(Code.SKIP, (), plugin)

    @staticmethod
    def wait(*reasons: str, plugin: str = "") -> Status:
        return Status(Code.WAIT, tuple(reasons), plugin)

    @staticmethod
    def pending(*reasons: str, plugin: str = "") -> Status:
        return Status(Code.PENDING, tuple(reasons), plugin)

    # -- predicates --------------------------------------------------------------------------
    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending: the pod does not go on."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    def is_error(self) -> bool:
        return self.code == Code.ERROR

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        if self.plugin == plugin:
            return self
        return Status(self.code, self.reasons, plugin, self.error)

    def __str__(self) -> str:
        return f"{self.code}: {self.message()}" if self.reasons else str(self.code)


_SUCCESS = Status()


def is_success(status: Status | None) -> bool:
    return status is None or status.code == Code.SUCCESS


def code_of(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code


# ----------------------------------------------------------------------- a plugin's failure, as kube words it


def error_text(e: BaseException) -> str:
    """``KeyError: 'tier'``: the exception's type, then its message when it has one."""
    msg = str(e)
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def kube_error_message(point: str, plugin: str, text: str) -> str:
    """How kube-scheduler's runtime words an Error from ``plugin`` at ``point`` (framework.go): users grep
    for these prefixes in FailedScheduling events and logs."""
    if point == "Filter":
        return f'running "{plugin}" filter plugin: {text}'
    if point == "Score":
        return f'running Score plugins: plugin "{plugin}" failed with: {text}'
    if point == "NormalizeScore":
        return f'running Normalize on Score plugins: plugin "{plugin}" failed with: {text}'
    return f'running {point} plugin "{plugin}": {text}'


def plugin_error(plugin: str, point: str, e: BaseException) -> Status:
    """The Error status of ``plugin`` raising ``e`` at ``point``: kube-scheduler's prefix, then the
    exception's type and message (``KeyError: 'tier'``)."""
    return Status(Code.ERROR, (kube_error_message(point, plugin, error_text(e)),), plugin, e)


def wrapped_error(point: str, plugin: str, s: Status) -> Status:
    """A status ``plugin`` returned at ``point`` that is not a rejection (an Error, or a code the point does
    not allow), as the Error kube-scheduler's runtime makes of it."""
    return Status(Code.ERROR, (kube_error_message(point, plugin, s.message()),), plugin, s.error)


def filter_outcome(plugin: str, s: Status) -> Status:
    """A Filter plugin's non-success Status as the framework reports it for the node: a rejection named
    for ``plugin``, anything else wrapped as the Error kube's runtime makes of it."""
    if not s.is_rejected():
        return wrapped_error("Filter", plugin, s)
    return s if s.plugin == plugin else s.with_plugin(plugin)
