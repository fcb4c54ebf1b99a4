"""LabelMatch: a pod labelled ``<label>=<value>`` fits only nodes that carry the same label and value.

Behaviour
---------
- Filter: a pod without the label fits every node. A pod with it fits a node whose label has exactly the
  same value; any other node (label missing or another value) is rejected with
  ``node(s) didn't have label <label>=<value>`` (UnschedulableAndUnresolvable: evicting pods cannot
  relabel a node, so preemption is not tried for it).
- PostFilter (runs when no node fits): if no node in the cluster has ``<label>=<value>`` at all, the
  pod's FailedScheduling event gets a hint: ``no node has label <label>=<value>; label a node or remove
  the label from the pod``. In every case it returns Unschedulable (it nominates nothing).
- Queueing hint: a pod it rejected is retried when a node is added or relabelled so that it now carries
  the pod's value; other node changes leave it alone.

Args (``pluginConfig[].args``)::

    label: scheduler.pyscheduler.io/filter     # the label key compared on pods and nodes (the default)

Enable it at ``filter`` and ``postFilter`` (or in ``multiPoint``, which does both).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from pyscheduler.framework.interfaces import Handle, PostFilterResult
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Node, NodeInfo, Pod

NAME = "LabelMatch"
DEFAULT_LABEL = "scheduler.pyscheduler.io/filter"

# Filter's reason, per node; format with label and value.
ERR_REASON_MISMATCH = "node(s) didn't have label {label}={value}"
# PostFilter's hint when no node at all carries the pod's value.
ERR_REASON_NO_NODE = "no node has label {label}={value}; label a node or remove the label from the pod"


_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def label_key_error(key: str) -> str | None:
    """Why ``key`` is not a valid label key (``[prefix/]name``, as the API validates it), or None."""
    prefix, sep, name = key.rpartition("/")
    if sep and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return "the prefix must be a lowercase DNS subdomain of at most 253 characters"
    if not name or len(name) > 63 or not _NAME.fullmatch(name):
        return (
            "the name must be 1-63 characters: alphanumerics, '-', '_' or '.', "
            "starting and ending with an alphanumeric"
        )
    return None


@dataclass(frozen=True)
class LabelMatchArgs:
    label: str = DEFAULT_LABEL

    def validate(self, path: str) -> None:
        err = label_key_error(self.label)
        if err is not None:
            raise ArgsError(f"{path}.label", f"{self.label!r} is not a valid label key: {err}")


class LabelMatch:
    name = NAME

    def __init__(self, args: LabelMatchArgs, handle: Handle) -> None:
        self.label = args.label
        self._handle = handle

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        want = pod.labels.get(self.label)
        if want is None:
            return None
        node = node_info.node
        if node is not None and node.labels.get(self.label) == want:
            return None
        return Status.unresolvable(ERR_REASON_MISMATCH.format(label=self.label, value=want), plugin=NAME)

    def post_filter(
        self, state: CycleState, pod: Pod, filtered_node_status: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        want = pod.labels.get(self.label)
        if want is None:
            return None, Status.unschedulable(plugin=NAME)
        for ni in self._handle.snapshot.list():
            if ni.node is not None and ni.node.labels.get(self.label) == want:
                # Some node carries the value: it failed for other reasons, which the event already lists.
                return None, Status.unschedulable(plugin=NAME)
        return None, Status.unschedulable(
            ERR_REASON_NO_NODE.format(label=self.label, value=want), plugin=NAME
        )

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            )
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        want = pod.labels.get(self.label)
        if want is None:
            return QueueingHint.QUEUE  # not rejected by us; let the other plugins' hints decide
        new = _labels(new_obj)
        if new is None or new.get(self.label) != want:
            return QueueingHint.SKIP
        old = _labels(old_obj)
        if old is not None and old.get(self.label) == want:
            return QueueingHint.SKIP  # it matched before: this change is not what helps
        return QueueingHint.QUEUE


def _labels(obj: Any) -> Mapping[str, str] | None:
    """A node's labels from a Node record or the API's JSON (None for no node)."""
    if obj is None:
        return None
    if isinstance(obj, Node):
        return obj.labels
    if isinstance(obj, Mapping):
        meta = obj.get("metadata")
        labels = meta.get("labels") if isinstance(meta, Mapping) else None
        return labels if isinstance(labels, Mapping) else {}
    return None


def new(args: LabelMatchArgs | None, handle: Handle) -> LabelMatch:
    return LabelMatch(args or LabelMatchArgs(), handle)


PLUGIN = PluginSpec(NAME, new, LabelMatchArgs, "a labelled pod only fits nodes with the same label and value")
