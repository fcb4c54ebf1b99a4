"""What the ``Scheduler`` needs from its collaborators, as Protocols: the event recorder, the status
writer, the metrics and an HTTP extender. The daemon wires the real ones (``pyscheduler.app``); the
in-process engine and the tests hand in their own. No I/O here."""

from __future__ import annotations

from typing import Protocol

from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod


class Recorder(Protocol):
    def event(self, pod: Pod, type: str, reason: str, action: str, note: str) -> None: ...


class StatusWriter(Protocol):
    def pod_scheduled_condition(
        self, pod: Pod, status: str, reason: str, message: str, nominated_node_name: str | None = None
    ) -> None: ...

    def nominated_node(self, pod: Pod, node_name: str) -> None: ...


class Metrics(Protocol):
    def attempt(self, result: str, profile: str, seconds: float) -> None: ...

    def pod_scheduled(
        self, profile: str, attempts: int, sli_seconds: float, *, after_flush: bool = False
    ) -> None: ...

    def algorithm(self, seconds: float) -> None: ...

    def sample_plugins(self) -> bool: ...


class Extender(Protocol):
    """An HTTP extender as the scheduler uses it (see pyscheduler.extender)."""

    name: str

    def is_interested(self, pod: Pod) -> bool: ...

    def is_ignorable(self) -> bool: ...

    def filter(
        self, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[list[NodeInfo], dict[str, str], dict[str, str]]: ...

    def prioritize(self, pod: Pod, nodes: list[NodeInfo]) -> tuple[dict[str, int], int]: ...

    def is_binder(self) -> bool: ...

    def bind(self, pod: Pod, node_name: str) -> Status | None: ...

    def supports_preemption(self) -> bool: ...
