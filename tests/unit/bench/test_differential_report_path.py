"""Where ``python -m bench.differential`` writes its JSON report when no ``--output`` is given."""

from __future__ import annotations

import datetime as dt

from bench.differential.driver import RESULTS_DIR, default_report_path

NOON = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)


def test_a_full_run_writes_the_days_file() -> None:
    assert default_report_path(subset=False, now=NOON) == RESULTS_DIR / "differential-2026-11-27.json"


def test_a_chosen_scenarios_run_never_replaces_the_days_full_run() -> None:
    subset = default_report_path(subset=True, now=NOON)
    assert subset != default_report_path(subset=False, now=NOON)
    assert subset == RESULTS_DIR / "differential-2026-11-27-subset.json"
