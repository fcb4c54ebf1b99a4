"""Reading kube's FailedScheduling text back into its parts.

The daemon (like kube-scheduler) posts ``0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had
untolerated taint(s). preemption: 0/5 nodes are available: 5 Preemption is not helpful for
scheduling.``: the filter part is ``<count> <reason>`` pairs, sorted and joined by ", ". ``filter_reasons``
gives {reason: node count} for the filter part; a message of another shape (a plugin error, no nodes at
all) comes back whole as one reason counting 0 nodes, so nothing is lost.
"""

from __future__ import annotations

import re

_HEAD = re.compile(r"^(\d+)/(\d+) nodes are available: ")
_SPLIT = re.compile(r", (?=\d+ )")
_PAIR = re.compile(r"^(\d+) (.+)$", re.S)
_END = ". "  # the filter part ends with "." and PostFilter's text follows after a space


def filter_part(message: str) -> str:
    """The message without what PostFilter added after it (``preemption: ...``, and with DRA on
    ``no new claims to deallocate, preemption: ...``)."""
    i = message.find(_END)
    return message[: i + 1] if i >= 0 else message


def filter_reasons(message: str) -> dict[str, int]:
    """{reason: how many nodes gave it} from a FailedScheduling message's filter part."""
    head = _HEAD.match(message)
    if head is None:
        return {message: 0}
    body = filter_part(message)[head.end() :]
    if body.endswith("."):
        body = body[:-1]
    out: dict[str, int] = {}
    for part in _SPLIT.split(body):
        m = _PAIR.match(part)
        if m is None:
            return {message: 0}
        out[m.group(2)] = out.get(m.group(2), 0) + int(m.group(1))
    return out
