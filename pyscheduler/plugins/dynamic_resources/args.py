"""DynamicResourcesArgs (kube-scheduler's config.DynamicResourcesArgs), validated as kube 1.36 validates it.

Both fields are Go durations (``"10s"``, ``"1m30s"``, ``"250ms"``), as ``metav1.Duration`` reads them:

- ``filterTimeout`` (default 10s; DRASchedulerFilterTimeout is beta and on): how long Filter may search for
  devices on one node; ``0s`` turns the limit off; negative is refused ("must be zero or positive").
- ``bindingTimeout`` (default 600s; DRADeviceBindingConditions and DRAResourceClaimDeviceStatus are on):
  how long an allocated device may wait for its binding conditions; less than 1s is refused.

Messages carry kube's field paths, e.g. ``...args.filterTimeout: Invalid value: -1s: must be zero or
positive`` (a duration is printed as Go prints it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyscheduler.framework.plugin_args import ArgsError

DEFAULT_FILTER_TIMEOUT = 10.0
DEFAULT_BINDING_TIMEOUT = 600.0

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9}
_UNITS["h"] = 3600 * 10**9
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_MAX_NS = 2**63 - 1


class DurationError(ValueError):
    pass


def parse_go_duration(text: str) -> int:
    """Nanoseconds, as Go's time.ParseDuration reads ``text`` (sign, then number+unit pairs, or "0")."""
    s = text
    neg = False
    if s[:1] in ("+", "-"):
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise DurationError(f'time: invalid duration "{text}"')
    total = 0
    pos = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            if re.fullmatch(r"\d+(?:\.\d*)?|\.\d+", s[pos:]):
                raise DurationError(f'time: missing unit in duration "{text}"')
            raise DurationError(f'time: invalid duration "{text}"')
        number, unit = m.group(1), m.group(2)
        whole, _, frac = number.partition(".")
        scale = _UNITS[unit]
        value = int(whole or "0") * scale
        if frac:
            value += int(frac) * scale // 10 ** len(frac)
        total += value
        if total > _MAX_NS + (1 if neg else 0):
            raise DurationError(f'time: invalid duration "{text}"')
        pos = m.end()
    return -total if neg else total


def format_go_duration(ns: int) -> str:
    """Go's time.Duration.String: ``1m30s``, ``250ms``, ``-1s``, ``0s``."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < 10**9:
        for unit, scale in (("ms", 10**6), ("µs", 10**3), ("ns", 1)):
            if u >= scale:
                return sign + _frac(u, scale) + unit
    h, rem = divmod(u, 3600 * 10**9)
    m, rem = divmod(rem, 60 * 10**9)
    out = _frac(rem, 10**9) + "s"
    if h or m:
        out = f"{m}m" + out
    if h:
        out = f"{h}h" + out
    return sign + out


def _frac(value: int, scale: int) -> str:
    whole, rest = divmod(value, scale)
    if not rest:
        return str(whole)
    digits = str(rest).rjust(len(str(scale)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


@dataclass(frozen=True)
class DynamicResourcesArgs:
    filter_timeout: str | None = None
    binding_timeout: str | None = None

    def validate(self, path: str) -> None:
        for key, value, check in (
            ("filterTimeout", self.filter_timeout, _at_least_zero),
            ("bindingTimeout", self.binding_timeout, _at_least_one_second),
        ):
            if value is None:
                continue
            try:
                ns = parse_go_duration(value)
            except DurationError as e:
                raise ArgsError(f"{path}.{key}", str(e)) from None
            problem = check(ns)
            if problem:
                raise ArgsError(f"{path}.{key}", f"Invalid value: {format_go_duration(ns)}: {problem}")

    @property
    def filter_timeout_seconds(self) -> float:
        """0 means no limit."""
        if self.filter_timeout is None:
            return DEFAULT_FILTER_TIMEOUT
        return parse_go_duration(self.filter_timeout) / 1e9

    @property
    def binding_timeout_seconds(self) -> float:
        if self.binding_timeout is None:
            return DEFAULT_BINDING_TIMEOUT
        return parse_go_duration(self.binding_timeout) / 1e9


def _at_least_zero(ns: int) -> str:
    return "must be zero or positive" if ns < 0 else ""


def _at_least_one_second(ns: int) -> str:
    return "must be at least 1 second" if ns < 10**9 else ""
