"""A one-line progress bar on stderr for long runs; nothing at all when stderr is not a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30
MIN_INTERVAL = 0.1  # seconds between redraws


class ProgressBar:
    """``bar(done, total)`` redraws at most every 0.1 s; ``close()`` ends the line."""

    def __init__(self, label: str, stream: TextIO | None = None, *, force: bool = False) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = force or bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self._last = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < MIN_INTERVAL:
            return
        self._last = now
        frac = done / total if total else 1.0
        filled = int(WIDTH * frac)
        line = (
            f"\r{self.label} [{'#' * filled}{'.' * (WIDTH - filled)}] {done}/{total} "
            f"{100 * frac:3.0f}% {now - self.start:5.1f}s"
        )
        self.stream.write(line)
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
