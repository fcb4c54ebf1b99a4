"""Reading the text of a ``KubeSchedulerConfiguration``: strict YAML and Go durations.

YAML: one document, duplicate keys refused (kube's strict decoding), syntax errors and documents nested
too deeply for the parser reported as a ``ConfigError`` naming the line. Durations: Go's
``time.ParseDuration`` grammar (ASCII digits, a unit on each part) within an int64 of nanoseconds.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

import yaml

from pyscheduler.config.types import ConfigError

# ------------------------------------------------------------------------------------------- YAML


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys (kube's strict decoding does)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key: let the normal constructor report it
            break
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key!r}",
                key_node.start_mark,
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_yaml(text: str, source: str = "<config>") -> Any:
    """One YAML document; syntax errors are ConfigErrors naming the line."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = e.problem or e.context or "invalid YAML"
        if mark is None:
            raise ConfigError("", f"{source}: invalid YAML: {problem}") from e
        raise ConfigError(
            "", f"{source}:{mark.line + 1}:{mark.column + 1}: invalid YAML: {problem}", line=mark.line + 1
        ) from e
    except yaml.YAMLError as e:
        raise ConfigError("", f"{source}: invalid YAML: {e}") from e
    except RecursionError as e:
        raise ConfigError("", f"{source}: invalid YAML: nested too deeply") from e


# -------------------------------------------------------------------------------------- durations

_DURATION_UNITS = {
    "ns": Fraction(1, 10**9),
    "us": Fraction(1, 10**6),
    "\u00b5s": Fraction(1, 10**6),
    "\u03bcs": Fraction(1, 10**6),
    "ms": Fraction(1, 1000),
    "s": Fraction(1),
    "m": Fraction(60),
    "h": Fraction(3600),
}
# ASCII digits only, as Go's time.ParseDuration (Python's \\d also matches other scripts' digits)
_DURATION_PART = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
# a Go time.Duration is an int64 of nanoseconds
_MAX_DURATION_NS = 2**63 - 1


def parse_duration(value: Any, path: str = "") -> float:
    """Seconds from a Go duration string (``time.ParseDuration``: "300ms", "-1.5h", "2h45m", "0")."""
    if not isinstance(value, str):
        raise ConfigError(path, f'must be a duration string such as "15s", got {value!r}')
    s = value
    sign = 1
    if s[:1] in ("+", "-"):
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return 0.0
    total = Fraction(0)
    pos = 0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None:
            break
        total += Fraction(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if not s or pos != len(s):
        raise ConfigError(
            path, f'invalid duration {value!r}: use a Go duration such as "15s", "1m30s" or "500ms"'
        )
    if total * 10**9 > _MAX_DURATION_NS + (1 if sign < 0 else 0):
        raise ConfigError(
            path, f"invalid duration {value!r}: out of range (at most 2562047h47m16.854775807s)"
        )
    return float(sign * total)


def fmt_seconds(seconds: float) -> str:
    return f"{seconds:g}s"
