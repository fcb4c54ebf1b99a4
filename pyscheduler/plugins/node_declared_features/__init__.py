"""NodeDeclaredFeatures: a pod that needs a node feature goes only to nodes whose kubelet declares it.

Kubelets from 1.35 on write the features they support into ``Node.status.declaredFeatures``. From the
pod's spec the plugin infers which features the pod needs (see ``features``: in 1.36, a container
restart rule with action ``RestartAllContainers``, or ``hostNetwork`` with ``hostUsers: false``). A node
must declare all of them. A node that declares nothing (an older kubelet) takes only pods that need
nothing. Names a node declares that this version does not know are ignored.

Extension points: PreFilter, Filter, EnqueueExtensions. Args: none. On by default in kube 1.36 (feature
gate NodeDeclaredFeatures, beta); last in the default multiPoint list, without a score.

- PreFilter: infers the pod's required features; none (nearly every pod) returns Skip, so Filter does
  not run for the pod.
- Filter: "node(s) didn't match Pod's required features", code UnschedulableAndUnresolvable (evicting
  pods cannot give a node a feature).

Queueing hints (kube's):

- Node Add / UpdateNodeDeclaredFeature: queue on a new node, or when an update changes the node's
  declared features (the list, in order); skip otherwise.
- Pod Update: queue only when the rejected pod itself changed what it requires.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    as_node,
    as_pod,
)
from pyscheduler.framework.helpers import signers
from pyscheduler.framework.interfaces import Handle, PreFilterExtensions, PreFilterResult
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import MalformedObject, NodeInfo, Pod

from .features import FEATURES, KNOWN, required_features

__all__ = [
    "ERR_REASON_UNSATISFIED",
    "FEATURES",
    "KNOWN",
    "NAME",
    "PLUGIN",
    "NodeDeclaredFeatures",
    "required_features",
]

NAME = "NodeDeclaredFeatures"
ERR_REASON_UNSATISFIED = "node(s) didn't match Pod's required features"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class _Required:
    features: frozenset[str]

    def clone(self) -> _Required:
        return self


class NodeDeclaredFeatures:
    # Filter never reads the node's pods (framework/pods_adjusted.py)
    filter_ignores_node_pods = True
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching: what this plugin's answers read of the pod (kube's SignPod)."""
        return [(signers.FEATURES, tuple(sorted(required_features(pod))))], None

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        reqs = required_features(pod)
        if not reqs:
            return None, Status.skip(plugin=NAME)
        state.write(PRE_FILTER_STATE_KEY, _Required(reqs))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        req: _Required | None = state.get(PRE_FILTER_STATE_KEY)
        reqs = req.features if req is not None else required_features(pod)  # PreFilter did not run
        if not reqs:
            return None
        node = node_info.node
        declared = node.declared_features if node is not None else ()
        if reqs.issubset(declared):
            return None
        return Status.unresolvable(ERR_REASON_UNSATISFIED, plugin=NAME)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_DECLARED_FEATURE),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, Action.UPDATE), self.is_schedulable_after_pod_update
            ),
        ]

    @staticmethod
    def is_schedulable_after_node_change(pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        try:
            old, new = as_node(old_obj), as_node(new_obj)
        except (ValueError, MalformedObject):
            return QueueingHint.QUEUE
        if new is None:
            return QueueingHint.QUEUE  # not a node: be safe, as kube is on a conversion error
        if old is not None and old.declared_features == new.declared_features:
            return QueueingHint.SKIP
        log.debug("node declared features updated, queueing", pod=pod.key, node=new.name)
        return QueueingHint.QUEUE

    @staticmethod
    def is_schedulable_after_pod_update(pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        try:
            old, new = as_pod(old_obj), as_pod(new_obj)
        except (ValueError, MalformedObject):
            return QueueingHint.QUEUE
        if old is None or new is None:
            return QueueingHint.QUEUE
        if new.uid != pod.uid:
            return QueueingHint.SKIP
        if required_features(old) == required_features(new):
            return QueueingHint.SKIP
        log.debug("pod feature requirements changed, queueing", pod=pod.key)
        return QueueingHint.QUEUE


def new(args: None, handle: Handle) -> NodeDeclaredFeatures:
    return NodeDeclaredFeatures()


PLUGIN = PluginSpec(NAME, new, None, "pods needing a node feature go only to nodes that declare it")
