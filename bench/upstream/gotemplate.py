"""The subset of Go's text/template that scheduler_perf's templates use, rendered in Python.

Actions are ``{{ .Index }}``, ``{{ .Count }}`` and the two functions scheduler_perf registers,
``{{ Mod A B }}`` and ``{{ DivideInt A B }}`` (Go integer division, truncating), whose arguments are
integers or ``.Index``/``.Count``. Anything else raises ``TemplateError`` naming the action, so a newer
course with richer templates fails loudly instead of rendering wrong objects.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_ACTION = re.compile(r"\{\{\s*(.*?)\s*\}\}")


class TemplateError(ValueError):
    pass


def _arg(token: str, data: Mapping[str, int]) -> int:
    if token.startswith("."):
        key = token[1:]
        if key not in data:
            raise TemplateError(f"unknown field {token!r} (have {', '.join('.' + k for k in data)})")
        return data[key]
    try:
        return int(token)
    except ValueError:
        raise TemplateError(f"not an integer or a field: {token!r}") from None


def _go_div(a: int, b: int) -> int:
    if b == 0:
        raise TemplateError("DivideInt by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _eval(action: str, data: Mapping[str, int]) -> str:
    parts = action.split()
    if len(parts) == 1:
        return str(_arg(parts[0], data))
    fn, args = parts[0], [_arg(t, data) for t in parts[1:]]
    if len(args) != 2:
        raise TemplateError(f"{fn} takes two arguments: {{{{{action}}}}}")
    if fn == "Mod":
        if args[1] == 0:
            raise TemplateError("Mod by zero")
        return str(args[0] % args[1] if args[0] >= 0 else -((-args[0]) % args[1]))
    if fn == "DivideInt":
        return str(_go_div(args[0], args[1]))
    raise TemplateError(f"unsupported template function {fn!r} in {{{{{action}}}}}")


def render(text: str, data: Mapping[str, int]) -> str:
    """``text`` with every action replaced; ``data`` holds Index and Count."""
    return _ACTION.sub(lambda m: _eval(m.group(1), data), text)
