"""A keyed rate limiter driven by a ``Clock``: lets one event per key through per period.

Used to keep plugin tracebacks and slow-plugin warnings in the log without letting a plugin that fails
on every node of every cycle flood it: the first occurrence of a (plugin, site) is logged, repeats within
the period are counted and the count is reported with the next one let through.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable

from pyscheduler.framework.clock import Clock

DEFAULT_PERIOD = 60.0
MAX_KEYS = 4096


class RateLimiter:
    def __init__(self, clock: Clock, period: float = DEFAULT_PERIOD, max_keys: int = MAX_KEYS) -> None:
        if period <= 0:
            raise ValueError(f"period must be positive, got {period}")
        self._clock = clock
        self._period = period
        self._max_keys = max_keys
        self._last: dict[Hashable, float] = {}
        self._suppressed: dict[Hashable, int] = {}
        self._lock = threading.Lock()  # the binding cycle's threads report too

    def allow(self, key: Hashable) -> int | None:
        """None while ``key`` was let through less than a period ago (the call is counted); else the
        number of calls suppressed since the last one let through (0 the first time)."""
        now = self._clock.now()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._period:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return None
            if last is None and len(self._last) >= self._max_keys:
                self._forget_expired(now)
            self._last[key] = now
            return self._suppressed.pop(key, 0)

    def _forget_expired(self, now: float) -> None:
        for k in [k for k, t in self._last.items() if now - t >= self._period]:
            del self._last[k]
            self._suppressed.pop(k, None)
        if len(self._last) >= self._max_keys:  # all recent: drop the oldest half
            for k in sorted(self._last, key=self._last.__getitem__)[: self._max_keys // 2]:
                del self._last[k]
                self._suppressed.pop(k, None)
