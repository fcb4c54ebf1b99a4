"""bench.thread_cpu: a process's CPU per thread, summed by name, until it exits."""

from __future__ import annotations

import subprocess
import sys

from bench import thread_cpu

_BUSY = """
import threading, time
def spin():
    end = time.thread_time() + 0.3
    while time.thread_time() < end:
        pass
    time.sleep(2.0)  # alive while sampled: a thread's CPU is read while it exists
ts = [threading.Thread(target=spin, name=f"bind_{i}") for i in range(2)]
for t in ts: t.start()
for t in ts: t.join()
"""


def test_a_process_cpu_is_read_per_thread_until_it_exits(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    child = subprocess.Popen([sys.executable, "-c", _BUSY])
    # names as py-spy would give them, for whichever threads the child has: none needs py-spy here
    monkeypatch.setattr(
        thread_cpu, "thread_names", lambda pid: dict.fromkeys(thread_cpu.task_cpu(pid) or {}, "bind_7")
    )
    try:
        rec = thread_cpu.follow(child.pid)
    finally:
        child.wait()
    assert rec["pid"] == child.pid
    assert rec["total"] >= 0.5  # the two threads' 0.3 s each, and the interpreter's start
    assert set(rec["by_thread"]) <= {"bind", "?"}  # numbered names summed under one
    assert rec["by_thread"]["bind"] >= 0.55
    assert thread_cpu.task_cpu(child.pid) is None
