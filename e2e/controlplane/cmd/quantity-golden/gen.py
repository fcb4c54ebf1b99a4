"""Inputs for the quantity golden file: hand-picked edge cases, then seeded random quantity-like strings.

Prints one JSON string per line; ``make quantity-golden`` pipes them through main.go (apimachinery's
own parser) into tests/unit/quantity_golden.jsonl. Exponents stay within what Go answers in well under
a second: Go itself takes minutes over "1e10000000", so those are checked by the bounded-time tests.
"""

from __future__ import annotations

import json
import random

SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
EDGE = [
    "", "0", "00", "-0", "+0", "0.0", "1", "-1", "+1", "-m", "+", "-", ".", "-.", "+.", ".5", "5.", "-.5",
    " 1", "1 ", "\t1", "1\n", "\u0661", "\uff11", "1\u0661", "\u00b2", "1_000", "0x10", "1e", "1E", "1e+", "1e-", "1e+3",
    "1e-3", "1E3", "1.5e3", "1ee3", "1e3e3", "1K", "1k", "1Ki", "1ki", "1KI", "1mi", "1Mi", "1m", "1M",
    "1.5Ki", "1.5Gi", "0.5Ki", "0.001Ki", "1Ei", "7Ei", "8Ei", "9Ei", "-8Ei", "16Ei", "9e18Ei", "1.1Ei",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "99999999999999999999", "-99999999999999999999", "922337203685477580.7", "9223372036854775.807",
    "1n", "1.5n", "0.1n", "-0.1n", "-1.5", "-1.5m", "-0.5m", "-0.0000000001", "0.0000000001",
    "-2.5", "-2.4", "-1000000000000000000000", "1e18", "1e19", "1e20", "1e63", "1e64", "1e65",
    "1e100", "1e1000", "-1e1000", "1e100000", "1e-100000", "1e-10000000", "1e4294967297",
    "1e4294967296", "1e-4294967295", "1e9223372036854775807", "1e9223372036854775808",
    "1E18", "1P", "1T", "1G", "100m", "0.1", "0.01", "0.001", "0.0001", "100Mi", "128974848",
    "129e6", "129M", "123Mi", "1.5", "2.5m", "1u", "1.000000001", "1" + "0" * 30, "1" * 100,
    "0." + "0" * 30 + "1", "0." + "0" * 30 + "1Ki", "1" * 10000, "9" * 5000 + "Ki", "-" + "9" * 5000,
    "0" * 100 + "1", "1.5e-9", "1.5e-10", "5e-10", "-5e-10", "1m1", "1Mi1", "1+", "1-", "--1", "+-1",
    "1.2.3", "e3", ".e3", ".e-20", "-e3", "m", "Ki",
]


def random_quantity(rng: random.Random) -> str:
    sign = rng.choice(["", "", "", "-", "+"])
    whole = "".join(rng.choice("0123456789") for _ in range(rng.choice([0, 1, 1, 2, 3, 5, 10, 17, 18, 19, 20, 25, 40])))
    frac = ""
    if rng.random() < 0.4:
        frac = "." + "".join(rng.choice("0123456789") for _ in range(rng.choice([0, 1, 2, 3, 6, 9, 10, 12, 20])))
    if rng.random() < 0.3:
        e = rng.choice([0, 1, 3, 9, 17, 18, 19, 20, 30, 63, 64, 100, 1000, 99999, 2**32 + 3])
        suffix = rng.choice("eE") + rng.choice(["", "+", "-"]) + str(e if rng.random() < 0.7 else rng.randint(-30, 30))
    else:
        suffix = rng.choice(SUFFIXES)
    text = sign + whole + frac + suffix
    if rng.random() < 0.03:  # a damaged quantity: junk, whitespace or a non-ASCII digit somewhere
        at = rng.randint(0, len(text))
        text = text[:at] + rng.choice([" ", "x", "\u0663", "_", ".", "e", "i", "-"]) + text[at:]
    return text


def main() -> None:
    rng = random.Random(15)
    seen: set[str] = set()
    for text in EDGE + [random_quantity(rng) for _ in range(4000)]:
        if text not in seen:
            seen.add(text)
            print(json.dumps(text))


if __name__ == "__main__":
    main()
