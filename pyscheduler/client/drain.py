"""Waiting for an asynchronous sender to drain: shared by ``events.EventRecorder`` and ``writer.AsyncWriter``.

Both count what is queued or being sent under a ``threading.Condition`` and notify it when the count
reaches zero; ``flush`` waits for that, up to a timeout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


def wait_drained(cond: threading.Condition, pending: Callable[[], int], timeout: float) -> bool:
    """Wait on ``cond`` until ``pending()`` is 0; False if ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    with cond:
        while pending() > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            cond.wait(left)
    return True
