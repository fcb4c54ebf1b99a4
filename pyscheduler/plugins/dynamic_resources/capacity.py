"""Consumable capacity (DRAConsumableCapacity, beta and on in kube 1.36), as kube's structured allocator
computes it (incubating/consumable_capacity.go).

Every device's capacities are checked against a request's ``capacity.requests``: a request naming a
capacity the device does not have cannot use it; otherwise, per capacity, the amount consumed is the request
rounded up by the capacity's ``requestPolicy`` (``validRange`` min/step, or the next of ``validValues``),
or the policy's ``default`` (else the whole capacity) when the request names nothing. The amount must not
violate the policy, and with what other shares of the device already consume (allocated, and picked in
this attempt) it must fit the capacity's value. Only a device with ``allowMultipleAllocations`` is shared:
each allocation of it is a share with its own ``shareID`` and ``consumedCapacity``.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from pyscheduler.framework.dra import CapacityPolicy

_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def format_quantity(v: Fraction, binary: bool) -> str:
    """A quantity in apimachinery's canonical form (binary suffixes when the value came in binary form and
    is a whole number of at least 1024, else the largest decimal suffix with a whole mantissa)."""
    if binary and v.denominator == 1 and abs(v) >= 1024:
        n, k = int(v), 0
        while n % 1024 == 0 and k < len(_BINARY) - 1:
            n //= 1024
            k += 1
        return f"{n}{_BINARY[k]}"
    for exp in sorted(_DECIMAL, reverse=True):
        m = v / Fraction(10) ** exp
        if m.denominator == 1 and (m != 0 or exp == 0):
            return f"{int(m)}{_DECIMAL[exp]}"
    return str(float(v))


def is_binary(text: str) -> bool:
    return text.rstrip().endswith("i")


def _round_up_range(requested: Fraction, text: str, p: CapacityPolicy) -> tuple[Fraction, str]:
    assert p.range_min is not None
    if requested < p.range_min:
        return p.range_min, p.range_min_text
    if p.range_step is None:
        return requested, text
    # kube works on Value() (whole units, rounded up) here
    req, step, low = _ceil(requested), _ceil(p.range_step), _ceil(p.range_min)
    n, mod = divmod(req - low, step)
    if mod:
        n += 1
    value = Fraction(low + step * n)
    return value, format_quantity(value, True)


def _ceil(v: Fraction) -> int:
    return -((-v.numerator) // v.denominator)


def consumed(requested: tuple[Fraction, str] | None, p: CapacityPolicy) -> tuple[Fraction, str]:
    """kube's calculateConsumedCapacity: (amount, as the API writes it)."""
    if requested is None:
        if p.default is not None:
            return p.default, p.default_text
        return p.value, p.value_text
    value, text = requested
    if not p.has_policy:
        return value, text
    if p.has_range and p.range_min is not None:
        return _round_up_range(value, text, p)
    if p.valid_values:
        for v, t in p.valid_values:
            if value <= v:
                return v, t
    return value, text


def violates_policy(value: Fraction, p: CapacityPolicy) -> bool:
    if not p.has_policy:
        return False
    if p.default is not None and value == p.default:
        return False
    if p.has_range:
        if p.range_max is not None and value > p.range_max:
            return True
        if p.range_step is not None and p.range_min is not None:
            return (_ceil(value) - _ceil(p.range_min)) % _ceil(p.range_step) != 0
        return False
    if p.valid_values:
        return all(value != v for v, _ in p.valid_values)
    return False


def fits(
    requests: Mapping[str, tuple[Fraction, str]],
    policies: Mapping[str, CapacityPolicy],
    allocated: Mapping[str, Fraction],
    allocating: Mapping[str, Fraction],
) -> bool:
    """kube's CmpRequestOverCapacity (a request naming a capacity the device lacks: False)."""
    if not requests and not allocated and not allocating and not any(p.has_policy for p in policies.values()):
        return True  # each capacity is consumed whole, once: it fits by definition
    if any(name not in policies for name in requests):
        return False
    for name, p in policies.items():
        amount, _ = consumed(requests.get(name), p)
        if violates_policy(amount, p):
            return False
        total = allocated.get(name, Fraction(0)) + amount + allocating.get(name, Fraction(0))
        if total > p.value:
            return False
    return True


def consumption(
    requests: Mapping[str, tuple[Fraction, str]], policies: Mapping[str, CapacityPolicy]
) -> dict[str, tuple[Fraction, str]]:
    """kube's GetConsumedCapacityFromRequest: what one share takes of every capacity of the device."""
    return {name: consumed(requests.get(name), p) for name, p in policies.items()}
