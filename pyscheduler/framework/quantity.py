"""Kubernetes resource quantities ("100m", "1.5Gi", "2e3") as apimachinery reads them.

Scheduling compares integers: CPU in millicores, everything else in base units (bytes, counts). These
are exactly what apimachinery's ``resource.ParseQuantity`` followed by ``MilliValue()``/``Value()``
return, int64 wrap-arounds and all (``"8Ei"`` has ``MilliValue() == -1000``; ``"1e100000"`` has
``Value() == 0``), because kube-scheduler decides on those numbers and so must we. The golden file
``tests/unit/quantity_golden.jsonl``, made by Go's own parser, pins every rule.

Unlike a literal port, the time is bounded: a huge exponent ("1e10000000") never expands into a
number with ten million digits; only its low 64 bits, which are all int64 keeps, are computed.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

_M64 = 1 << 64
_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)
_NANO = 9  # apimachinery rounds every inexact quantity up to whole nano-units
_BIG = 64  # a power of ten beyond 10**_BIG is handled modulo 2**64 only

_DEC_SUFFIX = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BIN_SUFFIX = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")

ERR_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
ERR_SUFFIX = "unable to parse quantity's suffix"
ERR_NUMERIC = "unable to parse numeric part of quantity"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def _i64(x: int) -> int:
    """``x`` as Go's int64 arithmetic leaves it (two's complement wrap)."""
    return ((x - _INT64_MIN) % _M64) + _INT64_MIN


def _i32(x: int) -> int:
    return ((x + (1 << 31)) % (1 << 32)) - (1 << 31)


def _quo(a: int, b: int) -> int:
    """Go's ``a / b`` on int64: truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _rem(a: int, b: int) -> int:
    """Go's ``a % b`` on int64: the sign of the dividend."""
    return a - _quo(a, b) * b


def _int(digits: str) -> int:
    """A decimal digit string of any length as an int (Python refuses ``int()`` past 4,300 digits)."""
    if len(digits) <= 4000:
        return int(digits or "0", 10)
    half = len(digits) // 2
    shift: int = 10 ** (len(digits) - half)
    return _int(digits[:half]) * shift + _int(digits[half:])


def _split(s: str) -> tuple[bool, str, str, str, str]:
    """apimachinery's ``parseQuantityString``: (positive, value, num, denom, suffix)."""
    positive, pos, end = True, 0, len(s)
    if end and s[0] in "+-":
        positive = s[0] == "+"
        pos = 1
    while pos < end and s[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, s, "0", "", ""  # Go leaves value as the sign and zeros; the fast path takes it
    i = pos
    while i < end and s[i] in _DIGITS:
        i += 1
    num = s[pos:i] or "0"
    if i >= end:
        return positive, s, num, "", ""
    pos, denom = i, ""
    if s[pos] == ".":
        pos += 1
        i = pos
        while i < end and s[i] in _DIGITS:
            i += 1
        denom = s[pos:i]
        if i >= end:
            return positive, s, num, denom, ""
        pos = i
    value, start = s[:pos], pos
    while pos < end and s[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and s[pos] in "+-":
        pos += 1
    while pos < end and s[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(f"{ERR_FORMAT}: {s!r}")
    return positive, value, num, denom, s[start:]


def _go_parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``, None where it errs."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or any(c not in _DIGITS for c in body):
        return None
    # Past 20 significant digits it is out of range whatever they are: no need to build the number.
    if len(body.lstrip("0")) > 20:
        return None
    v = int(body) * (-1 if text[0] == "-" else 1)
    return v if _INT64_MIN <= v <= _INT64_MAX else None


def _interpret(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix, as apimachinery's ``suffixHandler.interpret``."""
    if suffix in _DEC_SUFFIX:
        return 10, _DEC_SUFFIX[suffix], "DecimalSI"
    if suffix in _BIN_SUFFIX:
        return 2, _BIN_SUFFIX[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE":
        parsed = _go_parse_int64(suffix[1:])
        if parsed is not None:
            return 10, _i32(parsed), "DecimalExponent"
    raise QuantityError(ERR_SUFFIX)


def _mul_scale(a: int, b: int) -> tuple[int, bool]:
    """apimachinery's ``int64MultiplyScale``: the wrapped product and whether it did not overflow."""
    if a in (0, 1):
        return a * b, True
    if a == _INT64_MIN:
        return 0, False
    c = _i64(a * b)
    return c, _quo(c, b) == a


def _positive_scale(base: int, scale: int) -> int:
    """``positiveScaleInt64``'s value (ScaledValue ignores its overflow flag)."""
    if scale == 0:
        return base
    if scale in (1, 2, 3, 6, 9):
        return _mul_scale(base, 10**scale)[0]
    value = base
    for _ in range(scale):
        if value == 0:  # Go goes on multiplying zero; the answer stays 0
            return 0
        value, ok = _mul_scale(value, 10)
        if not ok:
            return 0
    return value


def _negative_scale(base: int, scale: int) -> int:
    """``negativeScaleInt64``: divide by 10**scale, rounding away from zero."""
    value, fraction = base, False
    for _ in range(scale):
        if not fraction and _rem(value, 10) != 0:
            fraction = True
        value = _quo(value, 10)
        if value == 0:
            if fraction:
                return 1 if base > 0 else -1
            return 0
    if fraction:
        value += 1 if base > 0 else -1
    return value


def _amount_scaled(value: int, scale: int, target: int) -> int:
    """``int64Amount.AsScaledInt64(target)``."""
    if scale < target:
        return _negative_scale(value, target - scale)
    return _positive_scale(value, scale - target)


class _Big:
    """A non-negative integer ``n * 10**k`` whose power of ten may be far too large to build."""

    __slots__ = ("k", "n")

    def __init__(self, n: int, k: int = 0) -> None:
        self.n, self.k = n, k

    def low64(self) -> int:
        if self.k <= _BIG:
            power: int = 10**self.k
            return (self.n * power) % _M64
        return (self.n % _M64) * int(pow(10, self.k, _M64)) % _M64

    def exact(self) -> int | None:
        return self.n * 10**self.k if self.k <= _BIG else None

    def divmod_pow10(self, d: int) -> tuple[_Big, bool]:
        """(self // 10**d, whether there is a remainder)."""
        if self.k >= d:
            return _Big(self.n, self.k - d), False
        q, r = divmod(self.n * 10**self.k, 10**d)
        return _Big(q), r != 0

    def ge(self, bound: int) -> bool:
        exact = self.exact()
        return True if exact is None else exact >= bound


def _scaled_value(negative: bool, unscaled: _Big, scale: int, new_scale: int) -> int:
    """apimachinery's ``scaledValue`` on an inf.Dec: ceil(x / 10**(new_scale - scale)), int64-wrapped."""
    if unscaled.n == 0:
        return 0
    dif = scale - new_scale

    def as_int64(b: _Big) -> int:  # big.Int.Int64(): the low 64 bits, sign applied
        low = b.low64()
        return _i64(-low if negative else low)

    if dif == 0:
        return as_int64(unscaled)
    if dif < 0:
        return _i64(as_int64(unscaled) * 10**-dif)  # dif >= -3 here: only a clamped 8Ei reaches it
    if (negative or not unscaled.ge(_INT64_MAX)) and dif < 19:
        v, divide = as_int64(unscaled), 10**dif
        result = _quo(v, divide)
        return _i64(result + 1) if _rem(v, divide) != 0 else result
    # Positive and at least MaxInt64: Go's big.Int DivMod (floor for a positive number).
    q, inexact = unscaled.divmod_pow10(dif)
    low = _i64(q.low64())
    return _i64(low + 1) if inexact else low


def _parse(s: str) -> tuple[int, int]:
    """(Value(), MilliValue()) of ``resource.MustParse(s)``."""
    if not s:
        raise QuantityError(f"{ERR_FORMAT}: {s!r}")
    if s == "0":
        return 0, 0
    positive, value, num, denom, suf = _split(s)
    base, exponent, fmt = _interpret(suf)

    precision, scale, mantissa = 0, 0, 1
    if fmt == "BinarySI":
        if denom:
            precision = -1
        else:
            mantissa = 1 << exponent
            precision = 15 - len(num) - (exponent * 3 // 10) - 1
    else:
        scale = exponent
        precision = 18 - (len(num) + len(denom))

    if precision >= 0:
        scale = _i32(scale - len(denom))
        if scale >= -_NANO:
            v = int(num + denom)  # at most 18 digits: precision >= 0
            result = v * mantissa
            if result <= _INT64_MAX:
                result = result if positive else -result
                return _amount_scaled(result, scale, 0), _amount_scaled(result, scale, -3)

    # The inf.Dec path. Its value keeps the digits as written; only the scale and size matter.
    if not any(c in _DIGITS for c in value):
        raise QuantityError(ERR_NUMERIC)
    body = value.lstrip("+-")
    int_part, _, frac_part = body.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    dec_scale = len(frac_part)
    if not digits:
        return 0, 0
    stripped = digits.rstrip("0")
    dec_scale -= len(digits) - len(stripped)  # trailing zeros: same number, smaller scale
    n = _int(stripped)
    if base == 10:
        dec_scale = _i32(len(frac_part) + _i32(-exponent)) - (len(digits) - len(stripped))
    else:
        n <<= exponent

    # Round up to nano-units (apimachinery rounds away from zero on the absolute value).
    if dec_scale <= _NANO:
        unscaled = _Big(n, _NANO - dec_scale)
    else:
        j = dec_scale - _NANO
        if j > len(stripped) + (19 if base == 2 else 0):  # 0 < n < 10**j: rounds up to one nano
            unscaled = _Big(1)
        else:
            q, r = divmod(n, 10**j)
            unscaled = _Big(q + (1 if r else 0))
    out_scale = _NANO

    if fmt == "BinarySI" and unscaled.ge(_INT64_MAX * 10**_NANO + 1):
        unscaled, out_scale = _Big(_INT64_MAX), 0
    negative = not positive
    return (
        _scaled_value(negative, unscaled, out_scale, 0),
        _scaled_value(negative, unscaled, out_scale, 3),
    )


@lru_cache(maxsize=4096, typed=True)  # typed: True must not hit the entry for 1
def _values(value: str | int | float) -> tuple[int, int]:
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a string or a number, not {value!r}")
    if isinstance(value, int):
        return _parse(str(value))
    if isinstance(value, float):
        return _parse(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"quantity must be a string or a number, not {value!r}")
    return _parse(value)


def milli_value(value: str | int | float) -> int:
    """``MilliValue()``: the quantity in thousandths, rounded up (CPU millicores)."""
    return _values(value)[1]


def int_value(value: str | int | float) -> int:
    """``Value()``: the quantity in base units, rounded up (bytes, counts)."""
    return _values(value)[0]


def parse_quantity(value: str | int | float) -> Fraction:
    """The quantity in base units with thousandth precision (for callers that compare sizes)."""
    return Fraction(milli_value(value), 1000)
