"""Our quantity parser against apimachinery's own (golden rows from e2e/controlplane/cmd/quantity-golden)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pyscheduler.framework import quantity
from pyscheduler.framework.quantity import QuantityError, int_value, milli_value

GOLDEN = Path(__file__).with_name("quantity_golden.jsonl")
ROWS = [json.loads(line) for line in GOLDEN.read_text().splitlines()]


def test_golden_file_is_large_and_varied() -> None:
    assert len(ROWS) > 3000
    assert sum("err" in r for r in ROWS) > 100
    assert sum("err" not in r for r in ROWS) > 2000


def test_every_golden_row_matches_go() -> None:
    mismatches = []
    for row in ROWS:
        text = row["in"]
        try:
            got: object = (int_value(text), milli_value(text))
        except QuantityError as err:
            got = str(err)
            if "err" in row and got.startswith(row["err"]):
                continue
        want = row["err"] if "err" in row else (row.get("value", 0), row.get("milli", 0))
        if got != want:
            mismatches.append((text[:80], got, want))
    assert not mismatches, mismatches[:20]


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("-1.5", -2, -1500),  # the int64 path rounds away from zero
        ("-0.0000000001", 1, 1),  # the inf.Dec path rounds to nano, then Value() rounds toward +inf
        ("8Ei", 2**63 - 1, -1000),  # BinarySI saturates at MaxInt64; MilliValue() then wraps
        ("1e100000", 0, 0),  # only the low 64 bits survive
        ("1e4294967297", 10, 10000),  # Go keeps the exponent as an int32
        ("-m", 0, 0),
        ("+", 0, 0),
        (".", 0, 0),
    ],
)
def test_surprising_go_answers_are_kept(text: str, value: int, milli: int) -> None:
    assert (int_value(text), milli_value(text)) == (value, milli)


@pytest.mark.parametrize("text", [" 1", "1 ", "\u0661", "\uff11", "9e18Ei", "", "1e", "1.2.3"])
def test_what_go_refuses_we_refuse(text: str) -> None:
    with pytest.raises(QuantityError):
        milli_value(text)


ADVERSARIAL = [
    "1e10000000",
    "-1e10000000",
    "1e-10000000",
    "1e2147483647",
    "1e-2147483648",
    "0e2000000000",
    "1" * 10000,
    "-" + "9" * 10000 + "e999999",
    "0." + "0" * 10000 + "1Ki",
    "9" * 5000 + "." + "9" * 5000 + "Ei",
]


def test_adversarial_values_parse_in_bounded_time() -> None:
    # Go itself takes minutes over several of these; we must not: the parse runs on the watch path.
    assert (int_value("1e10000000"), milli_value("1e10000000")) == (0, 0)  # 10**n, n >= 64: low bits 0
    assert int_value("1e-10000000") == 1
    assert int_value("0e2000000000") == 0
    start = time.perf_counter()
    for _ in range(20):
        quantity._values.cache_clear()  # measure the parse, not the cache
        for text in ADVERSARIAL:
            int_value(text)
    elapsed = time.perf_counter() - start
    # 200 parses; each is microseconds (huge exponents) to a few ms (10,000 digits). Generous bound.
    assert elapsed < 10, elapsed


def _fit(pod_cpu: str, node_cpu: str, node_memory: str = "8Gi") -> str | None:
    from pyscheduler.plugins.node_resources_fit import Fit
    from pyscheduler.testing.builders import make_cycle_state, make_node, make_node_info, make_pod

    plugin = Fit()
    pod = make_pod("p").req(cpu=pod_cpu).obj()
    info = make_node_info(make_node("n1").capacity(cpu=node_cpu, memory=node_memory, pods=110).obj())
    state = make_cycle_state()
    result, status = plugin.pre_filter(state, pod, [info])
    assert result is None and status is None
    status = plugin.filter(state, pod, info)
    return None if status is None else "; ".join(status.reasons)


def test_scheduler_decides_on_go_numbers_for_absurd_quantities() -> None:
    # kube-scheduler adds MilliValue(): "1e100000" cpu is 0 millicores there (low 64 bits of 10**100003),
    # so the pod fits; we must decide the same, and quickly.
    assert _fit("1e100000", "4") is None
    assert _fit("1e10000000", "4") is None
    # 20 nines wrap to 200376420520688664 millicores: more than any node has.
    assert _fit("99999999999999999999", "4") == "Insufficient cpu"
    # A node whose cpu reads as 0 millicores has room for nothing; 8Ei of memory saturates, which is fine.
    assert _fit("1", "1e100000") == "Insufficient cpu"
    assert _fit("1", "4", node_memory="8Ei") is None
