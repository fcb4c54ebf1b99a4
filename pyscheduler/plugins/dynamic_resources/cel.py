"""The CEL environment of DRA device selectors, as kube 1.36 declares it (k8s.io/dynamic-resource-allocation/cel).

A selector sees one variable, ``device``, with ``driver`` (string), ``attributes`` (domain -> name -> value)
and ``capacity`` (domain -> name -> Quantity). An attribute or capacity name without a domain belongs to
the device's driver. Looking up a domain the device has nothing in gives an empty map, so
``device.attributes["other.example.com"].x`` is a "no such key" runtime error and ``has()`` is false,
as in kube. The quantity and semver libraries of the Kubernetes CEL base environment are declared
(``quantity``, ``isQuantity``, ``sign``, ``compareTo``, ``isGreaterThan``, ``isLessThan``, ``asInteger``,
``isInteger``, ``asApproximateFloat``, ``add``, ``sub``; ``semver``, ``isSemver``, ``major``, ``minor``,
``patch``), and so is ``cel.bind``.

The library is cel-expr-python (Google's C++ CEL runtime). It type-checks against abstract types
(``kubernetes.Quantity``, ``kubernetes.Semver``), which gives kube's compile errors, but it cannot carry
Python objects of an abstract type at run time. So each expression is compiled twice: once checked in
the strict environment (errors reported, nothing evaluated) and once unchecked in a runtime environment
where a Quantity or a Semver is a tagged string whose overloads dispatch on that tag. Only expressions
that passed the check are ever evaluated, so the tagged strings never meet a user's plain string.

Not replicated: kube's cost estimation and runtime cost limit (the library exposes neither).

The library and the two environments are loaded on the first selector compiled (``_runtime``), not at
import: they take about 12 MB of the daemon's memory, which a cluster without device selectors never needs.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pyscheduler.framework.quantity import QuantityError, parse_quantity

_Q_TAG = "\x01kubernetes.Quantity:"
_V_TAG = "\x01kubernetes.Semver:"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# semver 2.0.0, as blang/semver's Parse accepts it (no leading "v", no missing parts).
_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


class CELRuntimeError(Exception):
    """A selector failed while evaluating against one device (kube: the device does not match, with an error)."""


@dataclass(frozen=True, slots=True)
class Semver:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...]

    def key(self) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        # A version without pre-release parts ranks above any with them.
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)


def parse_semver(text: str) -> Semver:
    m = _SEMVER_RE.match(text)
    if not m:
        raise ValueError(f"invalid semantic version: {text!r}")
    pre = tuple(m.group(4).split(".")) if m.group(4) else ()
    return Semver(int(m.group(1)), int(m.group(2)), int(m.group(3)), pre)


def _q(value: Fraction) -> str:
    return f"{_Q_TAG}{value.numerator}/{value.denominator}"


def _unq(tagged: str) -> Fraction:
    if not tagged.startswith(_Q_TAG):
        raise CELRuntimeError("no such overload")
    return Fraction(tagged[len(_Q_TAG) :])


def _v(text: str) -> str:
    return _V_TAG + text


def _unv(tagged: str) -> Semver:
    return parse_semver(tagged[len(_V_TAG) :])


def quantity_value(text: str) -> str:
    """The runtime form of a capacity value (a quantity string from a ResourceSlice)."""
    return _q(parse_quantity(text))


def semver_value(text: str) -> str:
    """The runtime form of a version attribute; raises ValueError as kube does for a bad version."""
    parse_semver(text)
    return _v(text)


def _cmp(a: Any, b: Any) -> int:
    return int(a > b) - int(a < b)


def _compare(a: str, b: str) -> int:
    if a.startswith(_V_TAG) and b.startswith(_V_TAG):
        return _cmp(_unv(a).key(), _unv(b).key())
    return _cmp(_unq(a), _unq(b))


def _to_quantity(s: str) -> str:
    try:
        return _q(parse_quantity(s))
    except QuantityError as e:
        raise CELRuntimeError(str(e)) from None


def _is_quantity(s: str) -> bool:
    try:
        parse_quantity(s)
    except QuantityError:
        return False
    return True


def _to_semver(s: str) -> str:
    parse_semver(s)
    return _v(s)


def _is_semver(s: str) -> bool:
    return _SEMVER_RE.match(s) is not None


def _normalize_semver(s: str) -> str:
    """kube's semver(s, true): drop a leading "v", fill a missing minor/patch with 0, strip leading zeros."""
    s = s.removeprefix("v")
    core, sep, rest = s.partition("-") if "-" in s.split("+")[0] else s.partition("+")
    parts = core.split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        return s + sep + rest  # let the strict parser report it
    parts = [str(int(p)) for p in parts] + ["0"] * (3 - len(parts))
    return ".".join(parts) + sep + rest


def _to_semver_normalize(s: str, normalize: bool) -> str:
    return _to_semver(_normalize_semver(s) if normalize else s)


def _is_semver_normalize(s: str, normalize: bool) -> bool:
    return _is_semver(_normalize_semver(s) if normalize else s)


def _as_integer(a: str) -> int:
    v = _unq(a)
    n = math.ceil(v)
    if v.denominator != 1 or not _INT64_MIN <= n <= _INT64_MAX:
        raise CELRuntimeError("cannot convert value to integer")
    return n


def _is_integer(a: str) -> bool:
    v = _unq(a)
    return v.denominator == 1 and _INT64_MIN <= v <= _INT64_MAX


_Overloads = dict[str, list[tuple[str, Any, list[Any], bool, Any]]]


def _functions(t: Any) -> tuple[_Overloads, Any, Any]:
    """name -> [(overload id, return, params, member, impl)], the types those of the checked environment;
    and the abstract Quantity and Semver types."""
    q = t.AbstractType("kubernetes.Quantity")
    v = t.AbstractType("kubernetes.Semver")
    table: _Overloads = {
        "quantity": [("string_to_quantity", q, [t.STRING], False, _to_quantity)],
        "isQuantity": [("is_quantity_string", t.BOOL, [t.STRING], False, _is_quantity)],
        "sign": [("quantity_sign", t.INT, [q], True, lambda a: _cmp(_unq(a), 0))],
        "isGreaterThan": [
            ("quantity_is_greater_than", t.BOOL, [q, q], True, lambda a, b: _compare(a, b) > 0),
            ("semver_is_greater_than", t.BOOL, [v, v], True, lambda a, b: _compare(a, b) > 0),
        ],
        "isLessThan": [
            ("quantity_is_less_than", t.BOOL, [q, q], True, lambda a, b: _compare(a, b) < 0),
            ("semver_is_less_than", t.BOOL, [v, v], True, lambda a, b: _compare(a, b) < 0),
        ],
        "compareTo": [
            ("quantity_compare_to", t.INT, [q, q], True, _compare),
            ("semver_compare_to", t.INT, [v, v], True, _compare),
        ],
        "asApproximateFloat": [("quantity_get_float", t.DOUBLE, [q], True, lambda a: float(_unq(a)))],
        "asInteger": [("quantity_get_int", t.INT, [q], True, _as_integer)],
        "isInteger": [("quantity_is_integer", t.BOOL, [q], True, _is_integer)],
        "add": [
            ("quantity_add", q, [q, q], True, lambda a, b: _q(_unq(a) + _unq(b))),
            ("quantity_add_int", q, [q, t.INT], True, lambda a, b: _q(_unq(a) + b)),
        ],
        "sub": [
            ("quantity_sub", q, [q, q], True, lambda a, b: _q(_unq(a) - _unq(b))),
            ("quantity_sub_int", q, [q, t.INT], True, lambda a, b: _q(_unq(a) - b)),
        ],
        "semver": [
            ("string_to_semver", v, [t.STRING], False, _to_semver),
            ("string_bool_to_semver", v, [t.STRING, t.BOOL], False, _to_semver_normalize),
        ],
        "isSemver": [
            ("is_semver_string", t.BOOL, [t.STRING], False, _is_semver),
            ("is_semver_string_bool", t.BOOL, [t.STRING, t.BOOL], False, _is_semver_normalize),
        ],
        "major": [("semver_major", t.INT, [v], True, lambda a: _unv(a).major)],
        "minor": [("semver_minor", t.INT, [v], True, lambda a: _unv(a).minor)],
        "patch": [("semver_patch", t.INT, [v], True, lambda a: _unv(a).patch)],
    }
    return table, q, v


@dataclass(frozen=True)
class _Runtime:
    """cel-expr-python's types and the two environments (see the module docstring)."""

    types: Any  # cel.Type
    check: Any  # the strict environment: compile errors, return type
    run: Any  # the unchecked one that evaluates


@functools.cache
def _runtime() -> _Runtime:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_bindings

    t = cel.Type
    table, q, v = _functions(t)

    def decls(runtime: bool) -> list[Any]:
        out = []
        for name, overloads in table.items():
            found = []
            seen: set[tuple[str, ...]] = set()
            for oid, ret, params, member, impl in overloads:
                if runtime:  # a Quantity or a Semver is a tagged string at run time
                    ret = t.STRING if ret in (q, v) else ret
                    params = [t.STRING if p in (q, v) else p for p in params]
                    sig = tuple(p.name() for p in params)
                    if sig in seen:  # quantity and semver overloads share one string signature at run time
                        continue
                    seen.add(sig)
                found.append(cel.Overload(oid, ret, params, is_member=member, impl=impl))
            out.append(cel.FunctionDecl(name, found))
        return out

    # The checked environment cannot declare kube's kubernetes.DRADevice object type without protobuf
    # descriptors; a map of dyn stands in (field selection works; field names are not checked).
    check = cel.NewEnv(
        variables={"device": t.Map(t.STRING, t.DYN)},
        functions=decls(False),
        extensions=[ext_bindings.ExtBindings()],
    )
    run = cel.NewEnv(
        variables={"device": t.DYN}, functions=decls(True), extensions=[ext_bindings.ExtBindings()]
    )
    return _Runtime(t, check, run)


# `attributes["domain"]` / `capacity["domain"]` with a literal domain: see Selector._domains.
_DOMAIN_LOOKUP = re.compile(r"""(?:attributes|capacity)\s*\[\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*\]""")
_NO_SUCH_KEY = re.compile(r'Key not found in map\s*:\s*"?(.*?)"?$')


class Device:
    """One device as a selector sees it; built once per device and reused across expressions."""

    __slots__ = ("allow_multiple_allocations", "attributes", "capacity", "driver", "error")

    def __init__(
        self,
        driver: str,
        attributes: Mapping[str, Mapping[str, Any]],
        capacity: Mapping[str, str],
        allow_multiple_allocations: bool = False,
    ) -> None:
        """``attributes``: name -> the API's DeviceAttribute ({"int": 1} / {"bool"} / {"string"} / {"version"});
        ``capacity``: name -> quantity string."""
        self.driver = driver
        # Declared in the device type since DRAConsumableCapacity (beta, on by default in 1.36).
        self.allow_multiple_allocations = allow_multiple_allocations
        self.error: str | None = None
        self.attributes: dict[str, dict[str, Any]] = {}
        self.capacity: dict[str, dict[str, str]] = {}
        for name, attr in attributes.items():
            domain, ident = _qualified(name, driver)
            try:
                value = _attribute_value(attr)
            except ValueError as e:
                # kube: "attribute <name>: <why>", and the device matches no selector.
                self.error = f"attribute {name}: {e}"
                continue
            self.attributes.setdefault(domain, {})[ident] = value
        for name, qty in capacity.items():
            domain, ident = _qualified(name, driver)
            try:
                self.capacity.setdefault(domain, {})[ident] = quantity_value(qty)
            except QuantityError as e:
                self.error = f"capacity {name}: {e}"


def _qualified(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _attribute_value(attr: Mapping[str, Any]) -> Any:
    if attr.get("int") is not None:
        return int(attr["int"])
    if attr.get("bool") is not None:
        return bool(attr["bool"])
    if attr.get("string") is not None:
        return str(attr["string"])
    if attr.get("version") is not None:
        try:
            return semver_value(str(attr["version"]))
        except ValueError as e:
            raise ValueError(f"parse semantic version: {e}") from None
    raise ValueError("unsupported attribute value")


class Selector:
    """One compiled selector expression. ``error`` is kube's compile error; such a selector never matches."""

    __slots__ = ("_domains", "_error_type", "_program", "error", "expression")

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.error: str | None = None
        self._program: Any = None
        self._domains: tuple[str, ...] = ()
        rt = _runtime()
        self._error_type = rt.types.ERROR  # what an evaluation that failed returns (read per device)
        try:
            checked = rt.check.compile(expression)
        except RuntimeError as e:
            self.error = "compilation failed: " + _strip_status(str(e))
            return
        out = checked.return_type()
        if out != rt.types.BOOL and out != rt.types.DYN:
            self.error = f"must evaluate to bool or the unknown type, not {out.name().lower()}"
            return
        self._program = rt.run.compile(expression, disable_check=True)
        # kube looks up a domain the device has nothing in as an empty map (so `.x` is "no such key: x",
        # not "no such key: <domain>"), while `"domain" in device.attributes` stays false. cel-cpp copies
        # the activation into its own maps, so instead each domain this expression indexes with a literal
        # gets an empty map; an expression computing the domain at run time is not covered.
        self._domains = tuple(a or b for a, b in _DOMAIN_LOOKUP.findall(expression))

    def matches(self, device: Device) -> bool:
        """Whether the device matches; CELRuntimeError for a compile error or a runtime error (kube's text)."""
        if self.error is not None:
            raise CELRuntimeError(self.error)
        if device.error is not None:
            raise CELRuntimeError(device.error)
        attributes: dict[str, Any] = dict(device.attributes)
        capacity: dict[str, Any] = dict(device.capacity)
        for d in self._domains:
            attributes.setdefault(d, {})
            capacity.setdefault(d, {})
        data = {
            "device": {
                "driver": device.driver,
                "allowMultipleAllocations": device.allow_multiple_allocations,
                "attributes": attributes,
                "capacity": capacity,
            }
        }
        try:
            value = self._program.eval(data=data)
            result = value.plain_value()
            kind = value.type()
        except (RuntimeError, CELRuntimeError, ValueError) as e:
            raise CELRuntimeError(_strip_status(str(e))) from None
        if kind == self._error_type:  # an error value comes back as its status text
            raise CELRuntimeError(_strip_status(str(result)))
        if isinstance(result, bool):
            return result
        # a dyn-typed expression (an attribute) that is not a bool at run time; kube's wording
        raise CELRuntimeError(
            f"CEL result of type {_cel_type_name(kind, result)} could not be converted to bool"
        )


def _cel_type_name(kind: Any, result: Any) -> str:
    if isinstance(result, str) and result.startswith((_Q_TAG, _V_TAG)):
        return "kubernetes.Quantity" if result.startswith(_Q_TAG) else "kubernetes.Semver"
    return str(kind.name()).lower()


def _strip_status(text: str) -> str:
    # cel-cpp prefixes absl status codes ("INVALID_ARGUMENT: ") and may suffix " [CODE]".
    text = re.sub(r"^[A-Z_]+: ", "", text.strip())
    text = re.sub(r" \[[A-Z_]+\]$", "", text)
    m = _NO_SUCH_KEY.match(text)
    return f"no such key: {m.group(1)}" if m else text  # cel-go's wording, which kube reports


class SelectorCache:
    """Compile each expression once (kube caches compiled selectors too); thread-safe, bounded."""

    def __init__(self, max_size: int = 10_000) -> None:
        self._lock = threading.Lock()
        self._max = max_size
        self._items: dict[str, Selector] = {}

    def get(self, expression: str) -> Selector:
        with self._lock:
            hit = self._items.get(expression)
            if hit is not None:
                return hit
        sel = Selector(expression)
        with self._lock:
            if len(self._items) >= self._max:
                self._items.pop(next(iter(self._items)))
            self._items[expression] = sel
        return sel
