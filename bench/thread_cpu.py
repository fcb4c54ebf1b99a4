"""``python -m bench.thread_cpu OUT.json [SECONDS]``: CPU seconds per pyscheduler thread, for each
pyscheduler process a benchmark starts while this runs beside it.

Why: the benchmarks report a scheduler's CPU as one figure. Where pyscheduler's goes (the scheduling
cycle against the work every pod costs whatever the cycle does: its watch, its Binding and Event writes)
is what says how far a faster cycle can take it. py-spy's ``--gil`` profile sees only the thread that holds
the GIL; this reads utime+stime of every task in ``/proc/<pid>/task`` (TLS, syscalls and numpy included),
names each by ``py-spy dump`` (Python thread names), and when the process exits prints and saves the
totals per name (threads ending in a number summed: ``bind`` is the binding threads, ``event-recorder``
the event posters). Totals cover the process's whole life, start-up included.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.measure import CLK_TCK, _stat_fields
from bench.report import find_py_spy

_THREAD = re.compile(r'Thread (\d+) \([^)]*\): "([^"]*)"')
_NUMBERED = re.compile(r"[_-]\d+$")


def find_pyscheduler() -> int | None:
    """The pid of a running ``pyscheduler run --config ...`` (the benchmark's), None if none."""
    r = subprocess.run(["pgrep", "-f", "pyscheduler.*run.*--config"], capture_output=True, text=True)
    for p in r.stdout.split():
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_text()
        except OSError:
            continue
        if "python" in cmd and "pgrep" not in cmd:
            return int(p)
    return None


def task_cpu(pid: int) -> dict[int, float] | None:
    """Thread id -> its CPU seconds so far; None once the process is gone (or exited, not yet reaped)."""
    state = _stat_fields(pid)
    if state is None or state[0] == "Z":
        return None
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    out: dict[int, float] = {}
    for t in tids:
        fields = _stat_fields(f"{pid}/task/{t}")
        if fields is not None:
            out[int(t)] = (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime
    return out


def thread_names(pid: int) -> dict[int, str]:
    """Thread id -> Python thread name, as ``py-spy dump`` shows them; empty without py-spy."""
    py_spy = find_py_spy(None)
    if py_spy is None:
        return {}
    try:
        r = subprocess.run(
            [py_spy, "dump", "--pid", str(pid), "--nonblocking"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return {int(m.group(1)): m.group(2) for m in _THREAD.finditer(r.stdout)}


def follow(pid: int) -> dict[str, Any]:
    """Sample ``pid`` until it exits; its CPU per thread name."""
    last: dict[int, float] = {}
    names: dict[int, str] = {}
    t0, named_at = time.monotonic(), 0.0
    while (now := task_cpu(pid)) is not None:
        last.update(now)
        if time.monotonic() - named_at > 2.0:
            names.update(thread_names(pid))
            named_at = time.monotonic()
        time.sleep(0.3)
    groups: dict[str, float] = {}
    for tid, seconds in last.items():
        name = _NUMBERED.sub("", names.get(tid, "?"))
        groups[name] = groups.get(name, 0.0) + seconds
    return {
        "pid": pid,
        "seconds": time.monotonic() - t0,
        "total": sum(last.values()),
        "by_thread": dict(sorted(groups.items(), key=lambda kv: -kv[1])),
    }


def main() -> None:
    out_path = Path(sys.argv[1])
    deadline = time.monotonic() + (float(sys.argv[2]) if len(sys.argv) > 2 else 3600.0)
    records: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        pid = find_pyscheduler()
        if pid is None:
            time.sleep(0.2)
            continue
        rec = follow(pid)
        records.append(rec)
        print(json.dumps(rec), flush=True)
        out_path.write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
