"""The handle plugins receive: ``FrameworkHandle``, the implementation of ``interfaces.Handle``.

One per scheduler, shared by its profiles: the scheduler points ``snapshot`` at the current cycle's
snapshot, and ``for_profile`` gives each profile's ``Framework`` a child whose ``run_*`` calls go to that
profile's plugins (kube-scheduler's frameworkImpl is its own handle; here the two are apart so a plugin
sees only what ``Handle`` declares). It holds the cluster object store, the API writer, the waiting pods,
the nominator and the clock; it does no I/O itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pyscheduler.framework.clock import Clock
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.interfaces import ApiWriter, ClusterObjects, SnapshotLister
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo
from pyscheduler.framework.waiting_pods import WaitingPod, WaitingPods

if TYPE_CHECKING:
    from pyscheduler.framework.runtime import Framework


class Nominator(Protocol):
    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...


class FrameworkHandle:
    """What plugins receive (the ``Handle`` protocol). One per scheduler, shared by its profiles; the
    scheduler points ``snapshot`` at the current cycle's snapshot and fills ``framework`` per profile
    through ``for_profile``."""

    def __init__(
        self,
        *,
        snapshot: SnapshotLister,
        objects: ClusterObjects | None,
        client: ApiWriter | None,
        waiting_pods: WaitingPods,
        nominator: Nominator | None,
        clock: Clock,
        framework: Framework | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self._snapshot = snapshot
        self._objects = objects
        self._client = client
        self.waiting_pods = waiting_pods
        self.nominator = nominator
        self.clock = clock
        self.framework = framework
        self.extra: dict[str, Any] = dict(extra or {})
        self._parent: FrameworkHandle | None = None  # set by for_profile: the snapshot is the parent's

    def for_profile(self, framework: Framework | None) -> FrameworkHandle:
        h = FrameworkHandle(
            snapshot=self._snapshot,
            objects=self._objects,
            client=self._client,
            waiting_pods=self.waiting_pods,
            nominator=self.nominator,
            clock=self.clock,
            framework=framework,
            extra=self.extra,
        )
        h._parent = self
        return h

    @property
    def snapshot(self) -> SnapshotLister:
        parent = self._parent
        return parent.snapshot if parent is not None else self._snapshot

    def set_snapshot(self, snapshot: SnapshotLister) -> None:
        self._snapshot = snapshot

    @property
    def objects(self) -> ClusterObjects:
        assert self._objects is not None, "no cluster object store configured"
        return self._objects

    @property
    def client(self) -> ApiWriter | None:
        return self._client

    def iterate_waiting_pods(self) -> Iterable[WaitingPod]:
        return iter(self.waiting_pods)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def reject_waiting_pod(self, uid: str) -> bool:
        return self.waiting_pods.reject(uid, "", "removed")

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return self.nominator.nominated_pods_for_node(node_name) if self.nominator is not None else []

    def nominated_node_name(self, uid: str) -> str | None:
        """The node this scheduler holds the pod nominated to in memory (its status may not show it
        yet), if its nominator keeps such a record."""
        of = getattr(self.nominator, "nominated_node_name", None)
        return of(uid) if callable(of) else None

    def nominated_pods_by_node(self) -> Mapping[str, Sequence[PodInfo]] | None:
        """Every node with nominated pods, and those pods, in one read: for a pass over many nodes
        (preemption's dry runs), where a read per node would take the nominator's lock each time.
        None: this nominator is read node by node only (``nominated_pods_for_node``)."""
        if self.nominator is None:
            return {}
        whole = getattr(self.nominator, "nominated_pods_by_node", None)
        return whole() if callable(whole) else None

    def _fw(self) -> Framework:
        assert self.framework is not None, "handle is not bound to a profile"
        return self.framework

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._fw().run_filter_plugins_with_nominated_pods(state, pod, node_info)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._fw().run_pre_filter_extension_add_pod(state, pod_to_schedule, pod_to_add, node_info)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._fw().run_pre_filter_extension_remove_pod(
            state, pod_to_schedule, pod_to_remove, node_info
        )

    def now(self) -> float:
        return self.clock.now()
