"""framework.helpers: the value-list NormalizeScore must equal the NodeScore one (kube's
DefaultNormalizeScore with Go's integer division), including negative and all-zero scores."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pyscheduler.framework.helpers import default_normalize_score, default_normalize_values, go_div
from pyscheduler.framework.interfaces import NodeScore


@pytest.mark.parametrize("seed", range(200))
def test_normalize_values_equals_normalize_score(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([0, 1, 5, 300])
    lo = rng.choice([0, 0, -50])
    values = [rng.randint(lo, rng.choice([0, 3, 100, 10_000])) for _ in range(n)]
    reverse = rng.random() < 0.5
    scores = [NodeScore(f"n{i}", v) for i, v in enumerate(values)]
    default_normalize_score(100, reverse, scores)
    assert default_normalize_values(100, reverse, values) == [s.score for s in scores]
    # the runtime passes int64 arrays: same values, still an int64 array
    got = default_normalize_values(100, reverse, np.array(values, dtype=np.int64))
    assert [int(v) for v in got] == [s.score for s in scores]
    assert not isinstance(got, np.ndarray) or got.dtype == np.int64


def test_known_answers() -> None:
    assert default_normalize_values(100, False, [0, 5, 10]) == [0, 50, 100]
    assert default_normalize_values(100, True, [0, 5, 10]) == [100, 50, 0]
    assert default_normalize_values(100, True, [0, 0]) == [100, 100]
    assert default_normalize_values(100, False, [0, 0]) == [0, 0]
    assert default_normalize_values(100, False, [-3, 7]) == [go_div(-300, 7), 100]
