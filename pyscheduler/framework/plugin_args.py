"""Typed plugin arguments, decoded from ``pluginConfig[].args`` and validated at start.

A plugin's args are a frozen dataclass whose fields are snake_case versions of the camelCase keys users
write (``hardPodAffinityWeight`` -> ``hard_pod_affinity_weight``). ``decode_args`` builds one from a
mapping, refusing unknown keys and wrong types, and calls the class's ``validate(path)`` if it has one.
Every error is an ``ArgsError`` whose message starts with the field's path in the config file, e.g.
``profiles[0].pluginConfig[1].args.hardPodAffinityWeight: must be in the range 0-100, got 101``.

Nested structures (lists of objects, sub-objects) are left as plain JSON values for the plugin's
``validate`` to check: a field annotated ``Any`` or ``JSON`` takes whatever the user wrote.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, get_type_hints


class ArgsError(ValueError):
    """A bad plugin argument or config field; ``path`` is where it is in the config file."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.detail = message


T = TypeVar("T")


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _check(value: Any, tp: Any, path: str) -> Any:
    """Check (and lightly coerce: int -> float) one value against a type annotation."""
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _check_union(value, tp, path)
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            raise ArgsError(path, f"must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}")
        return value
    if origin in (tuple, list):
        if not isinstance(value, list | tuple):
            raise ArgsError(path, f"must be a list, got {type(value).__name__}")
        args = typing.get_args(tp)
        item_tp = args[0] if args else Any
        return tuple(_check(v, item_tp, f"{path}[{i}]") for i, v in enumerate(value))
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise ArgsError(path, f"must be an object, got {type(value).__name__}")
        args = typing.get_args(tp)
        vt = args[1] if len(args) == 2 else Any
        return {str(k): _check(v, vt, f"{path}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, Mapping):
            raise ArgsError(path, f"must be an object, got {type(value).__name__}")
        return decode_args(tp, value, path)
    return _check_scalar(value, tp, path)


def _check_union(value: Any, tp: Any, path: str) -> Any:
    """``X | Y | None``: None where allowed, else the first alternative that accepts the value."""
    alts = [a for a in typing.get_args(tp) if a is not type(None)]
    if value is None and len(alts) < len(typing.get_args(tp)):
        return None
    if len(alts) == 1:  # Optional[X]: X's own error, with its full path
        return _check(value, alts[0], path)
    errors = []
    for alt in typing.get_args(tp):
        if alt is type(None):
            if value is None:
                return None
            continue
        try:
            return _check(value, alt, path)
        except ArgsError as e:
            errors.append(e.detail)
    raise ArgsError(path, errors[0] if errors else "invalid value")


def _check_scalar(value: Any, tp: Any, path: str) -> Any:
    """bool, int, float (an int is taken and made a float) and str; any other annotation takes the
    value as it is."""
    if tp is bool:
        if not isinstance(value, bool):
            raise ArgsError(path, f"must be a boolean, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgsError(path, f"must be an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ArgsError(path, f"must be a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ArgsError(path, f"must be a string, got {value!r}")
        return value
    return value


def decode_args(cls: type[T], raw: Mapping[str, Any] | None, path: str = "args") -> T:
    """Build ``cls`` (a dataclass) from user JSON; unknown keys and wrong types are ArgsErrors."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ArgsError(path, f"must be an object, got {type(raw).__name__}")
    assert dataclasses.is_dataclass(cls)
    hints = get_type_hints(cls)
    fields = {camel(f.name): f for f in dataclasses.fields(cls) if f.init}
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        if key in ("apiVersion", "kind"):
            continue
        f = fields.get(key)
        if f is None:
            raise ArgsError(
                f"{path}.{key}", f"unknown field; known fields: {', '.join(sorted(fields)) or 'none'}"
            )
        kwargs[f.name] = _check(value, hints[f.name], f"{path}.{key}")
    obj = cls(**kwargs)
    validate = getattr(obj, "validate", None)
    if callable(validate):
        validate(path)
    return obj


def encode_args(obj: Any) -> dict[str, Any]:
    """The camelCase JSON form of an args dataclass (for ``pyscheduler plugins`` and logs)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            v = encode_args(v)
        elif isinstance(v, tuple):
            v = [encode_args(x) if dataclasses.is_dataclass(x) and not isinstance(x, type) else x for x in v]
        out[camel(f.name)] = v
    return out


@dataclass(frozen=True)
class ResourceSpec:
    """A resource a scoring plugin looks at and its weight (kube's config.ResourceSpec; 0 or unset
    means 1). Shared by NodeResourcesFit's scoring strategy and NodeResourcesBalancedAllocation."""

    name: str = ""
    weight: int = 0

    def __post_init__(self) -> None:
        if self.weight == 0:
            object.__setattr__(self, "weight", 1)


def default_resources() -> tuple[ResourceSpec, ...]:
    """cpu and memory, weight 1 each: both plugins' default."""
    return (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
