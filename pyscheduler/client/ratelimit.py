"""The client-side rate limit: client-go's token bucket (``--kube-api-qps`` / ``--kube-api-burst``).

Every attempt the transport makes, retries and watches included, takes a token first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class TokenBucket:
    """client-go's token-bucket rate limiter: ``burst`` tokens, refilled at ``qps`` per second.

    ``acquire`` reserves a token and sleeps until it is due; reservations are handed out in order, so
    concurrent callers are served first come, first served. ``qps <= 0`` disables the limit."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(self.burst)
        self._last = clock()

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0

    def reserve(self) -> float:
        """Take a token now; return how many seconds the caller must wait before using it."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            elapsed = now - self._last
            self._last = now
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.qps

    def acquire(self) -> float:
        """Block until a token is available; return the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
        return delay
