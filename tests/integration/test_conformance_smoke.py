"""A smoke of `make conformance`: a few fast upstream [sig-scheduling] specs against pyscheduler only.

The whole suite (~25 min for both schedulers) runs on demand; this keeps the runner, the e2e binary's
build and pyscheduler's start as a user runs it (manifests' RBAC, ServiceAccount token, leader election)
from breaking unnoticed. The first run builds the e2e binary (~4 min, then cached)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyscheduler.testing import conformance

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

# Conformance specs that take a few seconds each: a pod kept off nodes by its nodeSelector (a
# FailedScheduling event from us), LimitRange defaults, PriorityClass endpoints.
FOCUS = "NodeSelector is respected if not matching|LimitRange should create|PriorityClass endpoints"


@pytest.mark.timeout(900)
def test_fast_upstream_specs_pass_with_pyscheduler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = conformance.main(["--scheduler", "py", "--focus", FOCUS, "--out", str(tmp_path), "--nodes", "2"])
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1] == "conformance: pyscheduler 3/3 passed", out
    assert rc == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    ran = {n: s for n, s in summary["py"]["specs"].items() if s["status"] != "skipped"}
    assert len(ran) == 3 and all(s["status"] == "passed" for s in ran.values())
    assert (tmp_path / "py" / "junit_01.xml").exists()
    assert (tmp_path / "py" / "pyscheduler.log").stat().st_size > 0
