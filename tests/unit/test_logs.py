"""Logs never carry a failing frame's local variables (a request's bearer token, for one)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

TOKEN = "sekret-bearer-0123456789abcdef"

_SCRIPT = textwrap.dedent(
    f"""
    import structlog
    from pyscheduler.logs import setup_logging

    setup_logging(fmt={{fmt!r}})
    log = structlog.get_logger()

    def call_api():
        headers = {{{{"Authorization": "Bearer {TOKEN}"}}}}
        token = "{TOKEN}"
        raise ConnectionError("server said no")

    try:
        call_api()
    except ConnectionError:
        log.exception("bind failed")
    """
)


@pytest.mark.parametrize("fmt", ["json", "console", "auto"])
def test_exception_logs_render_no_locals(fmt: str) -> None:
    # a fresh interpreter: structlog's configuration is process-global and cached
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT.format(fmt=fmt)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    logged = out.stderr + out.stdout
    assert "server said no" in logged  # the exception itself is logged
    assert "call_api" in logged  # with its traceback
    assert TOKEN not in logged
