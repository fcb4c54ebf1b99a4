"""The soak's heap profile (``--soak --tracemalloc [FRAMES]``): the daemon runs with tracemalloc on
(``PYSCHEDULER_TRACEMALLOC``, pyscheduler/heap_profile.py), gets a SIGUSR2 every ``--tracemalloc-every``
minutes and at the soak's last minute, and writes a snapshot each time; at the end the allocation sites
(file:line) that grew most between the first snapshot (the one after warm-up) and the last are printed,
as a short table."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from pyscheduler.heap_profile import (
    ENV_DIR,
    ENV_FRAMES,
    format_growers,
    load,
    snapshot_files,
    top_growers,
    total_traced,
)


class HeapSampler:
    def __init__(self, frames: int, every: int, top: int = 15) -> None:
        self.frames = frames
        self.every = max(1, every)
        self.top = top
        self.dir = Path(tempfile.mkdtemp(prefix="chaos-heap-"))
        self.taken: list[tuple[int, Path]] = []  # (soak minute, snapshot file)

    def env(self) -> dict[str, str]:
        return {ENV_FRAMES: str(self.frames), ENV_DIR: str(self.dir)}

    def due(self, minute: int, last: int) -> bool:
        return minute % self.every == 0 or minute == last

    def take(self, pid: int, minute: int, timeout: float = 180.0) -> Path | None:
        """SIGUSR2 to the daemon, then wait for its new snapshot file; None if none came."""
        known = set(snapshot_files(self.dir))
        t = time.monotonic()
        os.kill(pid, signal.SIGUSR2)
        while time.monotonic() - t < timeout:
            new = [p for p in snapshot_files(self.dir) if p not in known]
            if new:
                self.taken.append((minute, new[-1]))
                size = new[-1].stat().st_size
                print(
                    f"heap snapshot, minute {minute}: {new[-1].name} ({size / 2**20:.1f} MiB file, "
                    f"{time.monotonic() - t:.1f}s)",
                    flush=True,
                )
                return new[-1]
            time.sleep(0.2)
        print(f"heap snapshot, minute {minute}: none written within {timeout:.0f}s", flush=True)
        return None

    def report(self) -> dict[str, Any]:
        """Print the traced total of each snapshot and the top growers between the first and the last;
        returns them for the scenario's JSON."""
        if len(self.taken) < 2:
            print(f"heap: {len(self.taken)} snapshot(s) taken, two are needed for growth", flush=True)
            return {"snapshots": len(self.taken)}
        totals = []
        for minute, path in self.taken:
            totals.append((minute, total_traced(load(path))))
        print(
            "heap traced per snapshot: "
            + ", ".join(f"minute {m} {size / 2**20:.1f} MiB" for m, size in totals),
            flush=True,
        )
        (m0, p0), (m1, p1) = self.taken[0], self.taken[-1]
        rows = top_growers(load(p0), load(p1), limit=self.top)
        print(
            f"heap top growers, minute {m0} -> {m1} (by file:line; tracemalloc's own excluded):", flush=True
        )
        print(format_growers(rows, minutes=m1 - m0), flush=True)
        return {
            "snapshots": len(self.taken),
            "traced_mib": {m: round(size / 2**20, 2) for m, size in totals},
            "from_minute": m0,
            "to_minute": m1,
            "growers": [g.__dict__ for g in rows],
        }

    def cleanup(self, keep: Path | None = None) -> None:
        """Delete the snapshots, or move them under ``keep`` (``--keep-logs``) for a closer look."""
        if keep is not None and self.taken:
            dest = keep / self.dir.name
            shutil.copytree(self.dir, dest, dirs_exist_ok=True)
            print(f"heap snapshots kept in {dest}", flush=True)
        shutil.rmtree(self.dir, ignore_errors=True)
