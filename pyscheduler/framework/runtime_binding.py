"""The extension points of ``Framework`` after a node is chosen: Reserve/Unreserve and Permit (run on
the scheduling thread), then WaitOnPermit, PreBind, Bind and PostBind (the binding cycle's thread).

- Reserve in order, Unreserve of every reserve plugin in reverse order on failure (idempotent);
- Permit: any rejection rejects; WAIT registers a waiting pod (``waiting_pods.py``) with the shortest
  timeout per plugin, capped at ``MAX_PERMIT_TIMEOUT``; ``wait_on_permit`` blocks the binding thread
  until it is allowed, rejected or timed out;
- PreBind: plugins in order, those PreFilter marked skipped left out;
- Bind: the first plugin that does not return Skip binds; PostBind is informational.
"""

from __future__ import annotations

import time

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.runtime_base import RuntimeBase
from pyscheduler.framework.status import Code, Status, wrapped_error
from pyscheduler.framework.types import Pod
from pyscheduler.framework.waiting_pods import WaitingPod

MAX_PERMIT_TIMEOUT = 15 * 60.0

WAIT_REASON = "one or more plugins asked to wait and no plugin rejected pod"


class BindingPoints(RuntimeBase):
    """Reserve, Permit, WaitOnPermit, PreBind, Bind and PostBind of ``Framework``."""

    def run_reserve_plugins_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        start = t = time.perf_counter()
        status: Status | None = None
        for p in self.reserve_plugins:
            try:
                s = p.reserve(state, pod, node_name)
            except Exception as e:
                t = self._took(p.name, "Reserve", t, state, Code.ERROR)
                status = self._error(p.name, "Reserve", e)
                break
            t = self._took(p.name, "Reserve", t, state, s)
            if s is not None and not s.is_success():
                status = s.with_plugin(p.name) if s.is_rejected() else wrapped_error("Reserve", p.name, s)
                break
        self._observe("Reserve", status, start, t)
        return status

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for p in reversed(self.reserve_plugins):
            try:
                p.unreserve(state, pod, node_name)
            except Exception as e:
                self._error(p.name, "Unreserve", e)

    def run_permit_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        start = t = time.perf_counter()
        timeouts: dict[str, float] = {}
        status: Status | None = None
        wait_status: Status | None = None
        for p in self.permit_plugins:
            try:
                s, timeout = p.permit(state, pod, node_name)
            except Exception as e:
                t = self._took(p.name, "Permit", t, state, Code.ERROR)
                status = self._error(p.name, "Permit", e)
                break
            t = self._took(p.name, "Permit", t, state, s)
            if s is None or s.is_success():
                continue
            if s.is_wait():
                timeouts[p.name] = min(max(timeout, 0.0), MAX_PERMIT_TIMEOUT)
                wait_status = s
                continue
            status = s.with_plugin(p.name) if s.is_rejected() else wrapped_error("Permit", p.name, s)
            if status.is_rejected():
                status = Status(
                    Code.UNSCHEDULABLE if status.code == Code.PENDING else status.code, status.reasons, p.name
                )
            break
        if status is None and timeouts:
            self.handle.waiting_pods.add(WaitingPod(pod, node_name, timeouts, self.handle.clock))
            # kube 1.36: the last waiting plugin's status, with this reason appended
            assert wait_status is not None
            status = Status.wait(*wait_status.reasons, WAIT_REASON, plugin=wait_status.plugin or "")
        self._observe("Permit", status, start, t)
        return status

    def wait_on_permit(self, pod: Pod) -> Status | None:
        wp = self.handle.waiting_pods.get(pod.uid)
        if wp is None:
            return None
        start = time.perf_counter()
        try:
            s = wp.wait()
        finally:
            self.handle.waiting_pods.remove(pod.uid)
        if self.metrics is not None:
            self.metrics.permit_wait(s.code, time.perf_counter() - start)
        return None if s.is_success() else s

    # ---------------------------------------------------------------------------------- binding
    def run_pre_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        start = t = time.perf_counter()
        status: Status | None = None
        for p in self.pre_bind_plugins:
            if p.name in state.skip_pre_bind_plugins:
                continue
            try:
                s = p.pre_bind(state, pod, node_name)
            except Exception as e:
                t = self._took(p.name, "PreBind", t, state, Code.ERROR)
                status = self._error(p.name, "PreBind", e)
                break
            t = self._took(p.name, "PreBind", t, state, s)
            if s is not None and not s.is_success() and not s.is_skip():
                status = s.with_plugin(p.name) if s.is_rejected() else wrapped_error("PreBind", p.name, s)
                break
        self._observe("PreBind", status, start, t)
        return status

    def run_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        start = t = time.perf_counter()
        status: Status | None = Status.skip()
        for p in self.bind_plugins:
            try:
                s = p.bind(state, pod, node_name)
            except Exception as e:
                t = self._took(p.name, "Bind", t, state, Code.ERROR)
                status = self._error(p.name, "Bind", e)
                break
            t = self._took(p.name, "Bind", t, state, s)
            if s is not None and s.is_skip():
                continue
            if s is None or s.is_success():
                status = None
            else:
                status = s.with_plugin(p.name) if s.is_rejected() else wrapped_error("Bind", p.name, s)
            break
        if status is not None and status.is_skip():
            status = Status.as_error("no bind plugin bound the pod")
        self._observe("Bind", status, start, t)
        return status

    def run_post_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> None:
        start = t = time.perf_counter()
        for p in self.post_bind_plugins:
            try:
                p.post_bind(state, pod, node_name)
            except Exception as e:
                t = self._took(p.name, "PostBind", t, state, Code.ERROR)
                self._error(p.name, "PostBind", e)
                continue
            t = self._took(p.name, "PostBind", t, state)
        self._observe("PostBind", None, start, t)
