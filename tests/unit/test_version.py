"""``pyscheduler --version`` names the kube-scheduler release it follows, and that is the one we pin."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pyscheduler import KUBERNETES_VERSION
from pyscheduler.cli import main

GO_MOD = Path(__file__).resolve().parents[2] / "e2e" / "controlplane" / "go.mod"


def test_the_kubernetes_version_we_claim_is_the_one_we_pin() -> None:
    pinned = re.search(r"^\s*k8s\.io/kubernetes\s+(v\S+)", GO_MOD.read_text(), re.M)
    assert pinned is not None and pinned.group(1) == KUBERNETES_VERSION


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert re.fullmatch(
        rf"pyscheduler \d+\.\d+\.\d+\S* \(kube-scheduler {re.escape(KUBERNETES_VERSION)}\)\n",
        capsys.readouterr().out,
    )
