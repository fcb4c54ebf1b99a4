"""PrioritySort: the default queue order, highest priority first, then first come, first served.

``less(a, b)`` is true when pod ``a`` should be scheduled before ``b``: its ``spec.priority`` (0 when
unset) is higher, or equal with an earlier queue timestamp (when the pod entered the queue, kept across
retries). Exactly kube-scheduler's PrioritySort.

Extension point: QueueSort (a profile has exactly one). Args: none.
"""

from __future__ import annotations

from pyscheduler.framework.interfaces import Handle, QueuedPodInfoView
from pyscheduler.framework.registry import PluginSpec

NAME = "PrioritySort"


class PrioritySort:
    name = NAME

    def less(self, a: QueuedPodInfoView, b: QueuedPodInfoView) -> bool:
        p1 = a.pod.priority
        p2 = b.pod.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)

    def sort_key(self, a: QueuedPodInfoView) -> tuple[int, float]:
        """The same order as ``less``, as a key the queue compares in C."""
        return (-a.pod.priority, a.timestamp)


def new(args: None, handle: Handle) -> PrioritySort:
    return PrioritySort()


PLUGIN = PluginSpec(NAME, new, None, "queue order: higher priority first, then earlier queue time")
