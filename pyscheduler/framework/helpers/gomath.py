"""Go's integer and rounding arithmetic, where kube's results depend on it."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt


def go_div(a: int, b: int) -> int:
    """Go's int64 division: truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def go_round(x: float) -> int:
    """Go's math.Round: half away from zero."""
    if x < 0:
        return -go_round(-x)
    r = math.floor(x)
    if x - r >= 0.5:
        r += 1
    return int(r)


def go_round_array(x: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """``go_round`` of every element: the same floor and comparison on the magnitude, then the sign."""
    a = np.abs(x)
    r = np.floor(a)
    r += (a - r) >= 0.5
    return (np.copysign(r, x)).astype(np.int64)
