"""The polling and process helpers the differential run, the benchmark and the test harness share:
``bench.differential.common.wait_for`` and ``pyscheduler.testing.cluster.spawn_logged``/``wait_http_ready``."""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.differential.common import RunError, wait_for
from pyscheduler.testing.cluster import spawn_logged, stop_process_group, wait_http_ready


def test_wait_for_returns_the_first_answer_even_a_falsy_one() -> None:
    answers = iter([None, None, ""])
    calls = []

    def probe() -> str | None:
        calls.append(1)
        return next(answers)

    assert wait_for(probe, 5.0, interval=0) == ""
    assert len(calls) == 3


def test_wait_for_gives_none_after_the_timeout_having_probed_past_the_deadline() -> None:
    calls = []

    def never() -> int | None:
        calls.append(1)
        return None

    assert wait_for(never, 0.05, interval=0.01) is None
    assert len(calls) >= 2


@pytest.fixture
def readyz() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/readyz" else 404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.network
def test_wait_http_ready_returns_once_the_url_answers_200(readyz: str, tmp_path: Path) -> None:
    proc = spawn_logged([sys.executable, "-c", "import time; time.sleep(30)"], tmp_path / "log")
    try:
        wait_http_ready(proc, f"{readyz}/readyz", 10, "sleeper", lambda: "")
        with pytest.raises(RunError, match=r"sleeper not ready after 0s:\nthe log"):
            wait_http_ready(proc, f"{readyz}/other", 0.2, "sleeper", lambda: "the log", error=RunError)
    finally:
        stop_process_group(proc, 5)
    assert proc.returncode is not None


def test_wait_http_ready_reports_a_process_that_exits_with_its_log(tmp_path: Path) -> None:
    log = tmp_path / "log"
    proc = spawn_logged([sys.executable, "-c", "print('bad flag'); raise SystemExit(3)"], log)
    proc.wait(30)
    with pytest.raises(RuntimeError, match=r"child exited with 3:\nbad flag"):
        wait_http_ready(proc, "http://127.0.0.1:1/readyz", 10, "child", lambda: log.read_text().strip())
