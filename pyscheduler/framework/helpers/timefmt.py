"""RFC 3339 timestamps as the API server writes them (UTC, ``Z``)."""

from __future__ import annotations

import math
import time


def rfc3339(t: float) -> str:
    """Whole seconds (metav1.Time, what object timestamps carry)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def rfc3339_micro(t: float) -> str:
    """Microseconds, truncated (metav1.MicroTime: events.k8s.io ``eventTime``, a Lease's times)."""
    whole = math.floor(t)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{int((t - whole) * 1e6):06d}Z"
