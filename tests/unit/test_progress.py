"""pyscheduler.progress: a bar a person can watch on a terminal; in CI and pipes, only the closing line."""

from __future__ import annotations

import io

import pytest

from pyscheduler.progress import Progress, interactive


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_a_pipe_gets_only_the_closing_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    out = io.StringIO()
    clock = Clock()
    p = Progress(3000, "creating fake nodes", stream=out, clock=clock)
    for _ in range(3000):
        p.advance()
    clock.t += 12.34
    p.finish()
    assert out.getvalue() == "creating fake nodes: done in 12.3s\n"


def test_a_terminal_gets_a_bar_redrawn_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    out = Tty()
    clock = Clock()
    p = Progress(5000, "creating fake nodes", stream=out, clock=clock, unit="nodes")
    clock.t += 1
    p.update(1250)
    clock.t += 0.05
    p.update(1300)  # within 0.1 s of the last draw: not redrawn
    clock.t += 1
    p.update(2500)
    frames = out.getvalue().split("\r\x1b[2K")[1:]
    assert frames == [
        "creating fake nodes [" + "." * 30 + "] 0/5,000 nodes  0s",
        "creating fake nodes [" + "#" * 7 + "." * 23 + "] 1,250/5,000 nodes  1s",
        "creating fake nodes [" + "#" * 15 + "." * 15 + "] 2,500/5,000 nodes  2s",
    ]
    p.finish("created 5,000 fake nodes in 2.1s")
    assert out.getvalue().endswith("\r\x1b[2Kcreated 5,000 fake nodes in 2.1s\n")


def test_ci_is_quiet_even_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert not interactive(Tty())
    monkeypatch.setenv("CI", "false")
    assert interactive(Tty())
    assert not interactive(io.StringIO())


def test_without_a_total_it_shows_the_elapsed_time(monkeypatch: pytest.MonkeyPatch) -> None:
    out = Tty()
    clock = Clock()
    p = Progress(None, "starting etcd, kube-apiserver and KWOK", stream=out, clock=clock, force=True)
    clock.t += 7
    p.tick()
    assert out.getvalue().endswith("starting etcd, kube-apiserver and KWOK ...  7s")
