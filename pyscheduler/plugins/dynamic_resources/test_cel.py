"""DRA selector CEL: cases from kube 1.36's dynamic-resource-allocation/cel compile_test.go expectations."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from pyscheduler.plugins.dynamic_resources.cel import CELRuntimeError, Device, Selector, SelectorCache

DRIVER = "dra.example.com"


def dev(
    attributes: dict[str, dict[str, object]] | None = None,
    capacity: dict[str, str] | None = None,
    driver: str = DRIVER,
) -> Device:
    return Device(driver, attributes or {}, capacity or {})


@pytest.mark.parametrize(
    ("expression", "device", "expected"),
    [
        ("true", dev(), True),
        ("false", dev(), False),
        ('"no-such-domain" in device.attributes', dev(), False),
        ('"dra.example.com" in device.attributes', dev({"dra.example.com/something": {"bool": True}}), True),
        ('device.driver == ""', dev(driver=""), True),
        ('device.driver == "dra.example.com"', dev(), True),
        # a name without a domain belongs to the driver
        ('device.attributes["dra.example.com"].name', dev({"name": {"bool": True}}), True),
        ('device.attributes["dra.example.com"]["name"]', dev({"name": {"bool": True}}), True),
        (
            'cel.bind(dra, device.attributes["dra.example.com"], dra.name)',
            dev({"name": {"bool": True}}),
            True,
        ),
        (
            'device.attributes["other.example.com"].name',
            dev({"other.example.com/name": {"bool": True}}),
            True,
        ),
        ('device.attributes["dra.example.com"].name > 0', dev({"name": {"int": 1}}), True),
        ('device.attributes["dra.example.com"].name == "fish"', dev({"name": {"string": "fish"}}), True),
        (
            'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
            dev({"name": {"version": "1.0.0"}}),
            True,
        ),
        (
            'device.attributes["dra.example.com"].name.isGreaterThan(semver("1.10.0"))',
            dev({"name": {"version": "1.9.0"}}),
            False,
        ),
        (
            'device.attributes["dra.example.com"].name.isLessThan(semver("1.0.0"))',
            dev({"name": {"version": "1.0.0-rc.1"}}),
            True,
        ),
        (
            'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
            dev({"name": {"version": "1.0.0"}}),
            True,
        ),
        ('isSemver("v1.0.0")', dev(), False),
        (
            'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
            dev(capacity={"name": "1Mi"}),
            True,
        ),
        (
            'device.capacity["dra.example.com"].name.compareTo(quantity("1048576")) == 0',
            dev(capacity={"name": "1Mi"}),
            True,
        ),
        (
            '"name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
            dev(),
            False,
        ),
        (
            '!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
            dev(),
            True,
        ),
        ('has(device.attributes["dra.example.com"].missing)', dev({"name": {"bool": True}}), False),
        ('has(device.attributes["no-such-domain"].x)', dev(), False),
        ('quantity("1.5").isInteger() || quantity("2").add(1).asInteger() == 3', dev(), True),
        ('quantity("500m").sign() == 1 && quantity("1Gi").sub(quantity("1024Mi")).sign() == 0', dev(), True),
        ("device.allowMultipleAllocations", dev(), False),
    ],
)
def test_matches(expression: str, device: Device, expected: bool) -> None:
    assert Selector(expression).matches(device) is expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("?!", "Syntax error"),
        ("1", "must evaluate to bool or the unknown type, not int"),
        ('quantity("1") > 3', "found no matching overload for '_>_' applied to '(kubernetes.Quantity, int)'"),
    ],
)
def test_compile_errors(expression: str, message: str) -> None:
    sel = Selector(expression)
    assert sel.error is not None and message in sel.error
    with pytest.raises(CELRuntimeError, match=r"compilation failed|must evaluate"):
        sel.matches(dev())


@pytest.mark.parametrize(
    ("expression", "device", "message"),
    [
        # kube: a missing domain is an empty map, so the missing attribute is what is reported
        (
            'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
            dev(),
            "no such key: noSuchAttr",
        ),
        (
            'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
            dev(),
            "no such key: noSuchAttr",
        ),
        ('device.attributes["dra.example.com"].other == 1', dev({"name": {"int": 1}}), "no such key: other"),
        ("true", dev({"names": {"strings": ["a", "b"]}}), "attribute names: unsupported attribute value"),
        ("true", dev({"v": {"version": "1.0"}}), "attribute v: parse semantic version"),
        ('quantity("bad").sign() == 1', dev(), "quantities must match"),
        # a dyn result that is not a bool: kube's "could not be converted to bool", not the value itself
        (
            'device.attributes["dra.example.com"].name',
            dev({"name": {"string": "fish"}}),
            "CEL result of type string could not be converted to bool",
        ),
        (
            'device.attributes["dra.example.com"].name',
            dev({"name": {"int": 3}}),
            "CEL result of type int could not be converted to bool",
        ),
    ],
)
def test_runtime_errors(expression: str, device: Device, message: str) -> None:
    with pytest.raises(CELRuntimeError, match=message):
        Selector(expression).matches(device)


def test_cache_compiles_once_and_is_thread_safe() -> None:
    cache = SelectorCache(max_size=2)
    first = cache.get("true")
    assert cache.get("true") is first
    got: list[Selector] = []
    threads = [threading.Thread(target=lambda: got.append(cache.get("false"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(s.matches(dev()) is False for s in got)
    cache.get("1 == 1")
    cache.get("2 == 2")  # bounded: the oldest entry goes
    assert cache.get("true") is not first


def test_cel_library_loads_with_the_first_selector_not_with_the_plugin() -> None:
    """A daemon whose cluster has no device selectors never loads the CEL runtime (about 12 MB)."""
    code = (
        "import sys\n"
        "import pyscheduler.plugins.dynamic_resources\n"
        "from pyscheduler.plugins.dynamic_resources.cel import Selector\n"
        "before = 'cel_expr_python' in sys.modules\n"
        "ok = Selector('device.driver == \"d\"').error is None\n"
        "print(before, ok, 'cel_expr_python' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.split() == ["False", "True", "True"]
