"""Kubernetes resource quantities ("100m", "1.5Gi", "2e3") as exact numbers.

Scheduling compares integers: CPU in millicores, everything else in base units (bytes, counts),
rounded up as the API server's ``MilliValue()``/``Value()`` do, so ``0.1m`` of CPU counts as ``1m``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_SUFFIX = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@lru_cache(maxsize=4096, typed=True)  # typed: True must not hit the entry for 1
def parse_quantity(value: str | int | float) -> Fraction:
    """Parse a quantity into an exact fraction of base units."""
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a string or a number, not {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    text = value.strip()
    m = _RE.match(text)
    if not m:
        raise QuantityError(
            f"quantities must match the regular expression of a Kubernetes quantity: {value!r}"
        )
    number = Fraction(m.group(1))
    if m.group(2):
        return number * Fraction(10) ** int(m.group(2)[1:])
    return number * _SUFFIX[m.group(3) or ""]


@lru_cache(maxsize=4096, typed=True)  # typed: True must not hit the entry for 1
def milli_value(value: str | int | float) -> int:
    """The quantity in thousandths, rounded up (CPU millicores)."""
    return math.ceil(parse_quantity(value) * 1000)


@lru_cache(maxsize=4096, typed=True)  # typed: True must not hit the entry for 1
def int_value(value: str | int | float) -> int:
    """The quantity in base units, rounded up (bytes, counts)."""
    return math.ceil(parse_quantity(value))
