"""``pyscheduler new-plugin`` writes a package that installs with ``pip install -e``, passes its own tests
and shows in ``pyscheduler plugins`` — checked end to end in a temporary directory.

The package is installed into a fresh virtual environment that sees this project's environment through
a .pth file calling site.addsitedir (so pyscheduler and pytest are importable there without a download), and the shared .venv is
never touched.
"""

from __future__ import annotations

import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from pyscheduler.cli import main

pytestmark = pytest.mark.slow


def _run(argv: list[str], cwd: Path | None = None) -> str:
    out = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"{' '.join(argv)} failed:\n{out.stdout}\n{out.stderr}"
    return out.stdout


@pytest.mark.parametrize("points", ["filter,score", "preFilter,reserve,permit,postBind"])
def test_new_plugin_installs_passes_its_tests_and_is_listed(tmp_path: Path, points: str) -> None:
    pkg = tmp_path / "gate"
    assert main(["new-plugin", "NodeLabelGate", "--points", points, "--dir", str(pkg)]) == 0

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    purelib = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip())
    ours = [sysconfig.get_paths()["purelib"], *site.getsitepackages()]
    # addsitedir (not a bare path) so that the .pth files there, pyscheduler's editable finder, run too
    lines = [f"import site; site.addsitedir({d!r})" for d in dict.fromkeys(ours)]
    (purelib / "_parent_env.pth").write_text("\n".join(lines) + "\n")
    _run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", str(pkg)])

    tests = _run([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=pkg)
    n = 4 if "filter" in points else 2
    assert f"{n} passed" in tests, tests

    listing = _run([str(py), "-c", "from pyscheduler.cli import main; main(['plugins'])"], cwd=tmp_path)
    row = next(line for line in listing.splitlines() if line.startswith("NodeLabelGate"))
    for point in points.split(","):
        assert point in row, row


def test_new_plugin_refuses_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new-plugin", "lowercase", "--points", "filter", "--dir", str(tmp_path / "a")]) == 2
    assert "CamelCase" in capsys.readouterr().err
    assert main(["new-plugin", "Gate", "--points", "filtre", "--dir", str(tmp_path / "b")]) == 2
    assert "unknown extension point 'filtre'" in capsys.readouterr().err
    assert main(["new-plugin", "Gate", "--points", "filter", "--dir", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
