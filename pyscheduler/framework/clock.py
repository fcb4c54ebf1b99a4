"""Clocks. Everything that waits or times out takes a Clock so tests can drive time.

``RealClock`` uses the monotonic clock; ``FakeClock`` (``pyscheduler.testing.clock``) is advanced by
hand in tests. Wall-clock time is used only for API timestamps, through ``wall()``.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds."""
        ...

    def wall(self) -> float:
        """Seconds since the epoch, for timestamps the API and users see."""
        ...


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()
