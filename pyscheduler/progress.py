"""Progress of a long command: a bar on a terminal, nothing in CI or a log but the closing line.

``Progress`` draws ``label [#######.......] 1,234/5,000  12s`` on one line of a terminal (redrawn at
most ten times a second), and stays silent when the stream is not a terminal or ``$CI`` is set, so CI
logs and redirected output get one line per finished step instead of hundreds of carriage returns.
``Progress(None, ...)`` has no known total and shows the elapsed time only (a spinner of sorts).
``finish()`` prints ``label: done in 12.3s`` (or the given summary) in every mode.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

WIDTH = 30


def interactive(stream: TextIO) -> bool:
    """A terminal a person watches: a TTY, and not CI (``$CI`` set, as every CI service sets it)."""
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Progress:
    def __init__(
        self,
        total: int | None,
        label: str,
        *,
        stream: TextIO | None = None,
        unit: str = "",
        clock: Callable[[], float] = time.monotonic,
        force: bool | None = None,
    ) -> None:
        self.total = total
        self.label = label
        self.stream = stream or sys.stderr
        self.unit = unit
        self._clock = clock
        self.start = self._clock()
        self.done = 0
        self.live = interactive(self.stream) if force is None else force
        self._drawn = -1.0
        self._lock = threading.Lock()
        self._finished = False
        if self.live:
            self._draw(force=True)

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            if self.live:
                self._draw()

    def update(self, done: int, total: int | None = None) -> None:
        """Set the count (and the total, once known) outright: for progress read from elsewhere."""
        with self._lock:
            self.done = done
            if total is not None:
                self.total = total
            if self.live:
                self._draw()

    def tick(self) -> None:
        """Redraw the elapsed time (a step with nothing to count yet)."""
        with self._lock:
            if self.live:
                self._draw()

    def finish(self, summary: str = "") -> None:
        with self._lock:
            if self._finished:
                return
            self._finished = True
            elapsed = self._clock() - self.start
            end = summary or f"{self.label}: done in {elapsed:.1f}s"
            if self.live:
                self.stream.write("\r\x1b[2K")
            self.stream.write(end + "\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.finish()
        elif self.live:
            self.stream.write("\n")
            self.stream.flush()

    def line(self) -> str:
        """What the bar shows now (without the carriage return)."""
        elapsed = self._clock() - self.start
        if self.total:
            frac = min(1.0, self.done / self.total)
            filled = int(frac * WIDTH)
            bar = "#" * filled + "." * (WIDTH - filled)
            unit = f" {self.unit}" if self.unit else ""
            return f"{self.label} [{bar}] {self.done:,}/{self.total:,}{unit}  {elapsed:.0f}s"
        return f"{self.label} ...  {elapsed:.0f}s"

    def _draw(self, force: bool = False) -> None:
        now = self._clock()
        if not force and now - self._drawn < 0.1 and self.done != self.total:
            return
        self._drawn = now
        self.stream.write("\r\x1b[2K" + self.line())
        self.stream.flush()
