"""A hand-driven clock for tests (implements ``pyscheduler.framework.clock.Clock``).

Design
------
Time only moves when a test says so, so backoff expiries, unschedulable timeouts and permit
deadlines are exact and no test sleeps::

    clock = FakeClock()
    queue = SchedulingQueue(less, clock)
    ...
    clock.advance(1.0)      # one second later, at once
    queue.flush()

``now()`` (monotonic) and ``wall()`` (epoch seconds) move together. Reading and advancing are
guarded by a lock so a clock shared with a helper thread is still coherent; nothing here blocks.

    +-----------+  advance(s >= 0) / set(t >= now)  +-----------+
    | now = t   | --------------------------------> | now = t+s |
    +-----------+                                   +-----------+
"""

from __future__ import annotations

import threading

__all__ = ["FakeClock"]


class FakeClock:
    """``now()`` starts at ``start`` and ``wall()`` at ``wall_start``; both move only on ``advance``."""

    __slots__ = ("_lock", "_now", "_wall_offset")

    def __init__(self, start: float = 1000.0, wall_start: float = 1_700_000_000.0) -> None:
        self._lock = threading.Lock()
        self._now = float(start)
        self._wall_offset = float(wall_start) - float(start)

    def now(self) -> float:
        with self._lock:
            return self._now

    def wall(self) -> float:
        with self._lock:
            return self._now + self._wall_offset

    def advance(self, seconds: float) -> float:
        """Move time forward by ``seconds`` (>= 0) and return the new ``now()``."""
        if seconds < 0:
            raise ValueError(f"a clock cannot go back in time (advance({seconds}))")
        with self._lock:
            self._now += seconds
            return self._now

    def set(self, now: float) -> None:
        """Jump to the absolute monotonic time ``now`` (not earlier than the current time)."""
        with self._lock:
            if now < self._now:
                raise ValueError(f"a clock cannot go back in time ({now} < {self._now})")
            self._now = float(now)

    def __repr__(self) -> str:
        return f"FakeClock(now={self.now()})"
