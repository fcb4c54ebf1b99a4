"""The opt-in heap profile (pyscheduler.heap_profile): snapshots on SIGUSR2, and the growers between two."""

from __future__ import annotations

import os
import signal
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyscheduler import heap_profile
from pyscheduler.heap_profile import HeapProfiler, format_growers, load, snapshot_files, top_growers


@pytest.fixture
def tracing() -> Iterator[None]:
    was = tracemalloc.is_tracing()
    if not was:
        tracemalloc.start(1)
    yield
    if not was:
        tracemalloc.stop()


def _grow(n: int) -> list[bytes]:
    return [bytes(1000) + bytes([i % 256]) for i in range(n)]  # the line the report must name


GROW_LINE = _grow.__code__.co_firstlineno + 1


def test_the_site_that_grew_is_named_first_with_its_growth(tracing: None) -> None:
    kept: list[list[bytes]] = []
    before = tracemalloc.take_snapshot()
    freed = _grow(500)
    kept.append(_grow(3000))  # ~3 MB that stays
    del freed
    after = tracemalloc.take_snapshot()
    rows = top_growers(before, after, limit=5)
    assert rows, "nothing reported"
    top = rows[0]
    assert top.where.endswith(f"test_heap_profile.py:{GROW_LINE}"), rows
    assert 3000 * 1000 <= top.size_diff < 3000 * 1200
    assert 3000 <= top.count_diff < 3100
    assert all(r.size_diff > 0 for r in rows)
    # and in the other direction nothing at that line grew: it shrank
    assert all(not r.where.endswith(f":{GROW_LINE}") for r in top_growers(after, before))
    table = format_growers(rows, minutes=2.0)
    first = table.splitlines()[1].split()
    assert float(first[0]) == pytest.approx(top.size_diff / 1024, abs=0.1)
    assert float(first[1]) == pytest.approx(top.size_diff / 1024 / 2, abs=0.1)  # KiB a minute
    assert first[-1] == top.where
    assert len(kept[0]) == 3000


def test_sigusr2_writes_a_snapshot_that_loads(tracing: None, tmp_path: Path) -> None:
    prof = HeapProfiler(1, tmp_path).start()
    old = signal.getsignal(signal.SIGUSR2)
    try:
        prof.install_signal()
        os.kill(os.getpid(), signal.SIGUSR2)
        deadline = time.monotonic() + 20
        while not snapshot_files(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        second = prof.snapshot()
    finally:
        signal.signal(signal.SIGUSR2, old)
    files = snapshot_files(tmp_path)
    assert [p.name for p in files] == [f"heap-{os.getpid()}-1.tracemalloc", second.name]
    assert not list(tmp_path.glob("*.part"))
    snap = load(files[0])
    assert heap_profile.total_traced(snap) > 0


def test_the_environment_turns_it_on_and_a_bad_value_is_refused() -> None:
    assert heap_profile.from_env({}) is None
    assert heap_profile.from_env({heap_profile.ENV_FRAMES: " "}) is None
    for bad in ("yes", "0", "1000"):
        with pytest.raises(ValueError, match="PYSCHEDULER_TRACEMALLOC"):
            heap_profile.from_env({heap_profile.ENV_FRAMES: bad})
