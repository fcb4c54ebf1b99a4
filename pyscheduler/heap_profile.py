"""An opt-in heap profile of the daemon (tracemalloc), for naming what grows in a long run.

Off unless ``PYSCHEDULER_TRACEMALLOC=<frames>`` is set (1 is enough to name a file:line; more frames
cost more memory and time). Then ``pyscheduler run``:

- starts tracemalloc at start-up, keeping ``<frames>`` frames per allocation;
- writes a snapshot whenever it receives SIGUSR2: ``heap-<pid>-<n>.tracemalloc`` in
  ``PYSCHEDULER_TRACEMALLOC_DIR`` (default: the system's temporary directory), written under a temporary
  name and renamed, so a reader never sees half a file. The signal handler only wakes a thread; the
  snapshot (a copy of every live trace: the process stands still while it is taken, a second or so for
  a few hundred MiB) and the file are made there, and each is logged (``heap snapshot written``).

Tracing slows every allocation (expect the daemon to use noticeably more CPU and memory): never on in a
normal deployment. ``python -m bench.chaos --soak --tracemalloc`` turns it on for the soak's daemon, takes
snapshots every few minutes and prints the top growers (``top_growers``/``format_growers`` below) between
the snapshot after warm-up and the last one.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import tempfile
import threading
import tracemalloc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

log = structlog.get_logger("pyscheduler.heap")

ENV_FRAMES = "PYSCHEDULER_TRACEMALLOC"
ENV_DIR = "PYSCHEDULER_TRACEMALLOC_DIR"
SUFFIX = ".tracemalloc"

#: allocations the report leaves out: the import system's and tracemalloc's own
IGNORED_FILES = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>", "<unknown>")


class HeapProfiler:
    """tracemalloc started; ``snapshot()`` writes one file (also what SIGUSR2 does, on a thread)."""

    def __init__(self, frames: int, directory: Path) -> None:
        self.frames = frames
        self.directory = directory
        self._seq = itertools.count(1)
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> HeapProfiler:
        self.directory.mkdir(parents=True, exist_ok=True)
        if not tracemalloc.is_tracing():
            tracemalloc.start(self.frames)
        return self

    def snapshot(self) -> Path:
        """Take a snapshot and write it; returns its path."""
        with self._lock:
            n = next(self._seq)
            path = self.directory / f"heap-{os.getpid()}-{n}{SUFFIX}"
            snap = tracemalloc.take_snapshot()
            tmp = path.with_name(path.name + ".part")
            snap.dump(str(tmp))
            os.replace(tmp, path)
        current, peak = tracemalloc.get_traced_memory()
        log.info(
            "heap snapshot written",
            path=str(path),
            traced_mib=round(current / 2**20, 1),
            peak_mib=round(peak / 2**20, 1),
        )
        return path

    def install_signal(self, signum: int = signal.SIGUSR2) -> None:
        """Snapshot on ``signum`` (from the main thread only, as any signal handler)."""
        self._thread = threading.Thread(target=self._loop, name="heap-snapshot", daemon=True)
        self._thread.start()
        signal.signal(signum, lambda _s, _f: self._wake.set())

    def _loop(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            try:
                self.snapshot()
            except Exception:  # a full disk must not end the daemon
                log.exception("heap snapshot failed", directory=str(self.directory))


def from_env(environ: Mapping[str, str] = os.environ) -> HeapProfiler | None:
    """The profiler ``PYSCHEDULER_TRACEMALLOC`` asks for (started, SIGUSR2 installed), or None when unset.
    Raises ValueError on a value that is not a frame count from 1 to 100."""
    raw = environ.get(ENV_FRAMES, "").strip()
    if not raw:
        return None
    try:
        frames = int(raw)
    except ValueError:
        frames = 0
    if not 1 <= frames <= 100:
        raise ValueError(f"{ENV_FRAMES}={raw!r}: want a number of frames from 1 to 100")
    directory = Path(environ.get(ENV_DIR) or tempfile.gettempdir())
    prof = HeapProfiler(frames, directory).start()
    prof.install_signal()
    log.warning(
        "tracemalloc on: allocations are traced (slower, more memory); SIGUSR2 writes a snapshot",
        frames=frames,
        directory=str(directory),
    )
    return prof


# ------------------------------------------------------------------------------------------ reading


@dataclass(frozen=True)
class Grower:
    where: str  # file:line of the allocation (the innermost frame)
    size_diff: int  # bytes more (negative: fewer) in the later snapshot
    count_diff: int  # blocks more
    size: int  # bytes at that line in the later snapshot


def load(path: Path | str) -> tracemalloc.Snapshot:
    return tracemalloc.Snapshot.load(str(path))


def _short(filename: str) -> str:
    """A path from its package down, for the table: ``pyscheduler/app.py``, ``structlog/_log.py`` (from
    site-packages), ``threading.py`` (the standard library)."""
    m = re.search(r"/site-packages/(.+)$", filename) or re.search(r"/lib/python3[^/]*/(.+)$", filename)
    if m:
        return m.group(1)
    m = re.search(r"/((?:pyscheduler|bench)/.+)$", filename)
    return m.group(1) if m else filename


def top_growers(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, limit: int = 15) -> list[Grower]:
    """The allocation sites (file:line) whose live bytes grew most from ``before`` to ``after``, largest
    growth first; sites that shrank or stayed are left out. tracemalloc's own and the import system's
    allocations are not counted."""
    filters = [tracemalloc.Filter(False, tracemalloc.__file__)]
    filters += [tracemalloc.Filter(False, f) for f in IGNORED_FILES]
    diffs = after.filter_traces(filters).compare_to(before.filter_traces(filters), "lineno")
    out = []
    for d in diffs:
        if d.size_diff <= 0:
            continue
        frame = d.traceback[0]
        out.append(Grower(f"{_short(frame.filename)}:{frame.lineno}", d.size_diff, d.count_diff, d.size))
    out.sort(key=lambda g: (-g.size_diff, g.where))
    return out[:limit]


def total_traced(snapshot: tracemalloc.Snapshot) -> int:
    return sum(stat.size for stat in snapshot.statistics("filename"))


def format_growers(rows: Sequence[Grower], minutes: float | None = None) -> str:
    """The growers as a small text table: growth (KiB, and KiB per minute when ``minutes`` is given),
    blocks, size now, file:line."""
    per_min = minutes is not None and minutes > 0
    head = (
        f"{'+KiB':>9} {'KiB/min':>8} {'+blocks':>8} {'KiB now':>9}  file:line"
        if per_min
        else (f"{'+KiB':>9} {'+blocks':>8} {'KiB now':>9}  file:line")
    )
    lines = [head]
    for g in rows:
        rate = f" {g.size_diff / 1024 / minutes:>8.1f}" if per_min and minutes else ""
        lines.append(f"{g.size_diff / 1024:>9.1f}{rate} {g.count_diff:>8} {g.size / 1024:>9.1f}  {g.where}")
    if not rows:
        lines.append("(nothing grew)")
    return "\n".join(lines)


def snapshot_files(directory: Path) -> list[Path]:
    """The finished snapshot files in ``directory``, in the order they were written."""
    files = [p for p in directory.glob(f"heap-*{SUFFIX}") if p.is_file()]

    def order(p: Path) -> tuple[int, str]:
        with contextlib.suppress(ValueError, IndexError):
            return int(p.stem.rsplit("-", 1)[1]), p.name
        return 0, p.name

    return sorted(files, key=order)
