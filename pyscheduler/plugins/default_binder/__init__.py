"""DefaultBinder: binds the pod to its node through the API (a ``pods/binding`` create).

Bind calls ``handle.client.bind(pod, node_name)``, which returns ``None`` on success or a Status; any
exception the client raises becomes an Error status (the pod is retried with backoff, and the framework
forgets its assumed placement), as kube's ``framework.AsStatus(err)`` does. The returned status carries
this plugin's name.

Extension point: Bind (it never returns Skip, so it should be the last Bind plugin). Args: none.
"""

from __future__ import annotations

from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod

NAME = "DefaultBinder"


class DefaultBinder:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        try:
            client: Any = self._handle.client
            status = client.bind(pod, node_name)
        except Exception as e:  # the API said no, or the connection broke
            return Status.as_error(e, plugin=NAME)
        if status is None:
            return None
        if not isinstance(status, Status):
            return Status.as_error(
                f"binding {pod.key} to {node_name}: unexpected result {status!r}", plugin=NAME
            )
        return status.with_plugin(NAME)


def new(args: None, handle: Handle) -> DefaultBinder:
    return DefaultBinder(handle)


PLUGIN = PluginSpec(NAME, new, None, "binds pods to nodes through the API")
