"""The strict reader under every part of a ``KubeSchedulerConfiguration``: one JSON object at a time.

``StrictObject`` wraps a decoded object at a field path (``profiles[0].plugins.score``): a key it was not
told about is an error with close matches suggested, ``null`` means "not set", and each typed getter
(``string``, ``boolean``, ``integer``, ``duration``, ``array``...) raises a ``ConfigError`` naming the
field's full path when the value has the wrong type or range. ``field_path`` builds those paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyscheduler.config.defaults import suggest
from pyscheduler.config.parsing import parse_duration
from pyscheduler.config.types import ConfigError

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def field_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def type_name(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return repr(value)


class StrictObject:
    """A JSON object read strictly: unknown keys are errors, ``null`` means "not set"."""

    def __init__(self, raw: Any, path: str, fields: Sequence[str], what: str = "an object") -> None:
        if not isinstance(raw, Mapping):
            raise ConfigError(path, f"must be {what}, got {type_name(raw)}")
        for key in raw:
            if not isinstance(key, str):
                raise ConfigError(path, f"field names must be strings, got {key!r}")
            if key not in fields:
                hint = suggest(key, fields)
                msg = f"unknown field{hint}" if hint else f"unknown field; known fields: {', '.join(fields)}"
                raise ConfigError(field_path(path, key), msg)
        self.raw: Mapping[str, Any] = raw
        self.path = path

    def at(self, key: str) -> str:
        return field_path(self.path, key)

    def get(self, key: str) -> Any:
        return self.raw.get(key)

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def string(self, key: str, default: str = "") -> str:
        v = self.raw.get(key)
        if v is None:
            return default
        if not isinstance(v, str):
            raise ConfigError(self.at(key), f"must be a string, got {v!r}")
        return v

    def boolean(self, key: str, default: bool = False) -> bool:
        v = self.raw.get(key)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise ConfigError(self.at(key), f"must be a boolean, got {v!r}")
        return v

    def integer(self, key: str, default: int, maximum: int = INT32_MAX) -> int:
        v = self.opt_integer(key, maximum)
        return default if v is None else v

    def opt_integer(self, key: str, maximum: int = INT32_MAX) -> int | None:
        v = self.raw.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError(self.at(key), f"must be an integer, got {v!r}")
        if not -maximum - 1 <= v <= maximum:
            bits = 32 if maximum == INT32_MAX else 64
            raise ConfigError(self.at(key), f"must fit in a {bits}-bit integer, got {v}")
        return v

    def number(self, key: str, default: float) -> float:
        v = self.raw.get(key)
        if v is None:
            return default
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ConfigError(self.at(key), f"must be a number, got {v!r}")
        return float(v)

    def duration(self, key: str, default: float) -> float:
        v = self.raw.get(key)
        return default if v is None else parse_duration(v, self.at(key))

    def array(self, key: str) -> list[Any]:
        v = self.raw.get(key)
        if v is None:
            return []
        if not isinstance(v, list):
            raise ConfigError(self.at(key), f"must be a list, got {type_name(v)}")
        return v


def read_percentage(obj: StrictObject, key: str) -> int | None:
    v = obj.opt_integer(key)
    if v is not None and not 0 <= v <= 100:
        raise ConfigError(obj.at(key), f"must be in the range 0-100, got {v}")
    return v
