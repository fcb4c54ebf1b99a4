"""The node features kube 1.36 knows, and which of them a pod needs to be scheduled.

This mirrors the feature registry of ``k8s.io/component-helpers/nodedeclaredfeatures`` at v0.36.3: each
feature has a name (the kubelet writes it into ``Node.status.declaredFeatures`` when the feature is on
there), a rule that says whether a pod *being scheduled* needs it, and an optional newest kube version
after which the feature is assumed everywhere (then it is never required).

Rules for scheduling (1.36):

- ``RestartAllContainersOnContainerExits``: some container or init container has a ``restartPolicyRules``
  entry whose action is ``RestartAllContainers``.
- ``UserNamespacesHostNetworkSupport``: ``hostNetwork: true`` together with ``hostUsers: false``.
- ``ExtendWebSocketsToKubelet``, ``InPlacePodLevelResourcesVerticalScaling``,
  ``InPlacePodVerticalScalingInitContainers``: never needed to schedule a pod (the last two matter only
  to in-place resizes, which the API server checks, not the scheduler).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyscheduler.framework.types import Pod

RESTART_ALL_CONTAINERS = "RestartAllContainers"  # the ContainerRestartRule action


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    needed_to_schedule: Callable[[Pod], bool]
    max_version: tuple[int, int, int] | None = None  # newer targets have it everywhere


def _never(pod: Pod) -> bool:
    return False


def _restarts_all_containers(pod: Pod) -> bool:
    return any(
        action == RESTART_ALL_CONTAINERS
        for c in (*pod.containers, *pod.init_containers)
        for action in c.restart_rule_actions
    )


def _user_namespace_with_host_network(pod: Pod) -> bool:
    return pod.host_network and pod.host_users is False


# Sorted by name, as upstream's framework sorts its registry.
FEATURES: tuple[Feature, ...] = tuple(
    sorted(
        (
            Feature("ExtendWebSocketsToKubelet", _never),
            Feature("InPlacePodLevelResourcesVerticalScaling", _never),
            Feature("InPlacePodVerticalScalingInitContainers", _never),
            Feature("RestartAllContainersOnContainerExits", _restarts_all_containers),
            Feature("UserNamespacesHostNetworkSupport", _user_namespace_with_host_network),
        ),
        key=lambda f: f.name,
    )
)

KNOWN: frozenset[str] = frozenset(f.name for f in FEATURES)

# The version the scheduler targets (kube-scheduler's own); features past their max_version are skipped.
TARGET_VERSION = (1, 36, 3)


def required_features(pod: Pod, target: tuple[int, int, int] = TARGET_VERSION) -> frozenset[str]:
    """The features a node must declare for this pod to be placed there (empty: any node will do)."""
    return frozenset(
        f.name
        for f in FEATURES
        if (f.max_version is None or target <= f.max_version) and f.needed_to_schedule(pod)
    )
