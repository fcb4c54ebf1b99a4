"""Go's fmt verbs where kube's messages depend on them."""

from __future__ import annotations

from collections.abc import Sequence


def go_string_slice(items: Sequence[str]) -> str:
    """Go's ``%v`` of a ``[]string``: ``[a b c]``."""
    return "[" + " ".join(items) + "]"
