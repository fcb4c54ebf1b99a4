"""The scheduling queue: kube-scheduler's PriorityQueue with its nominator, split along its seams.

    records.py           QueuedPodInfo, the queue names and event labels, is_pod_updated
    heap.py              the uid-addressable heaps behind activeQ and backoffQ
    hints.py             queueing hints: which events may help a parked pod, and how soon to retry it
    gated.py             the gated pool, indexed by the PreEnqueue plugin that gated each pod
    keyed.py             parked pods filed by the keys of the plugins' HintIndex (which pods an event can concern)
    backoff.py           backoffQ: the heap by backoff expiry and its ordering windows
    nominator.py         pods nominated to a node by preemption, counted there by Filter
    inspection.py        the read-only views: counts for the metrics, the pods per pool, where a pod is
    scheduling_queue.py  SchedulingQueue: the pools, the state machine of one pod (drawn in its docstring),
                         in-flight event recording, backoff

Callers import from this package; the modules are its parts.
"""

from pyscheduler.backend.queue.records import (
    ACTIVE,
    BACKOFF,
    BACKOFF_COMPLETE,
    EVENT_UNSCHEDULED_POD_ADD,
    EVENT_UNSCHEDULED_POD_UPDATE,
    GATED,
    IN_FLIGHT,
    SCHEDULE_ATTEMPT_FAILURE,
    UNSCHEDULABLE,
    QueuedPodInfo,
    event_label,
    is_pod_updated,
)
from pyscheduler.backend.queue.scheduling_queue import SchedulingQueue

__all__ = [
    "ACTIVE",
    "BACKOFF",
    "BACKOFF_COMPLETE",
    "EVENT_UNSCHEDULED_POD_ADD",
    "EVENT_UNSCHEDULED_POD_UPDATE",
    "GATED",
    "IN_FLIGHT",
    "SCHEDULE_ATTEMPT_FAILURE",
    "UNSCHEDULABLE",
    "QueuedPodInfo",
    "SchedulingQueue",
    "event_label",
    "is_pod_updated",
]
