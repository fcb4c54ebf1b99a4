"""What GangScheduling's extension points and hints share: the pod's PodGroup and the group states."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.podgroup import POD_GROUP_KIND, PodGroup, PodGroupStates
from pyscheduler.framework.types import Pod


def extras(handle: Handle) -> dict[str, Any]:
    extra = getattr(handle, "extra", None)
    return extra if isinstance(extra, dict) else {}


def pod_group_of(handle: Handle, pod: Pod) -> PodGroup | None:
    """The pod's PodGroup from the watched objects, or None if it does not exist (yet)."""
    obj = handle.objects.get(POD_GROUP_KIND, pod.namespace, pod.scheduling_group)
    return PodGroup.from_dict(obj) if obj is not None else None


def group_states(handle: Handle) -> PodGroupStates:
    states = extras(handle).get("pod_group_states")
    if states is None:
        raise RuntimeError("the scheduler keeps no pod group states (is the GenericWorkload gate on?)")
    return states  # type: ignore[no-any-return]


def activator(handle: Handle) -> Callable[[Iterable[Pod]], None] | None:
    fn = extras(handle).get("activate_pods")
    return fn if callable(fn) else None
