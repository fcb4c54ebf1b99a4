"""The upstream course samples throughput the way scheduler_perf's collector does (``collector_samples``),
so a row's average is the figure upstream's threshold is compared with."""

from __future__ import annotations

import pytest

from bench.measure import collector_samples


def test_a_steady_rate_reads_as_that_rate_and_the_first_tick_is_skipped() -> None:
    binds = [0.05 + i / 10 for i in range(100)]  # 10 pods/s from the window's start for 10 s
    samples = collector_samples(binds, start=0.0, end=10.5)
    # ticks at 1..10: the first one that sees binds (t=1) is skipped, nine samples follow
    assert samples == pytest.approx([10.0] * 9)


def test_a_burst_after_the_last_tick_is_not_sampled() -> None:
    # PreemptionBasic with kube-scheduler: a pod every two seconds, then 700 bound in the window's last
    # 0.2 s. Upstream's collector stops before ticking again, so the burst never becomes a sample; the
    # one-second buckets of `make bench` would have turned it into a 3,500 pods/s sample.
    binds = [0.5 + 2 * i for i in range(10)] + [20.3 + i * 0.0002 for i in range(700)]
    samples = collector_samples(binds, start=0.0, end=20.5)
    # tick 1 is the skipped first sample; then one pod per two ticks, each recorded twice at 0.5/s;
    # tick 20 saw nothing new and nothing ticks after the burst
    assert samples == pytest.approx([0.5] * 18)


def test_idle_seconds_lower_the_rate_instead_of_adding_zero_samples() -> None:
    binds = [0.5, 3.5, 3.6, 3.7]  # tick 1 sees the first pod (skipped); ticks 2 and 3 see nothing new
    samples = collector_samples(binds, start=0.0, end=4.2)
    assert samples == pytest.approx([1.0, 1.0, 1.0])  # three pods over the three seconds to tick 4


def test_no_bind_in_the_window_or_everything_before_the_first_tick_gives_no_sample() -> None:
    assert collector_samples([], start=0.0, end=5.0) == []
    assert collector_samples([0.1, 0.2], start=0.0, end=0.9) == []
    assert collector_samples([0.1, 0.2, 0.3], start=0.0, end=1.5) == []  # only the skipped first tick
    assert collector_samples([9.0], start=0.0, end=5.0) == []  # after the window
