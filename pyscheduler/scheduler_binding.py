"""The binding cycle: WaitOnPermit ─► PreBind ─► Bind ─► cache.finish_binding ─► Scheduled event ─►
PostBind, for an assumed, reserved and permitted pod, on a thread pool (``BindingCycles``).

Binding cycles run off the scheduling thread so the next pod's scheduling cycle does not wait for API
round trips (kube-scheduler's goroutine per binding). The pool is ``BIND_WORKERS`` threads; the
scheduling thread waits for one to finish (``wait_for_binders``) while ``BIND_BACKLOG`` or more are in
flight, so the two keep in step under one GIL. A failure anywhere here runs Unreserve and hands the pod
back (``scheduler_failure.py``, kube's handleBindingCycleError).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import structlog

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.queue import QueuedPodInfo, SchedulingQueue
from pyscheduler.framework.clock import Clock
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.runtime import Framework
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod
from pyscheduler.scheduler_failure import was_nominated_at_assume
from pyscheduler.scheduler_protocols import Extender, Metrics, Recorder
from pyscheduler.scheduler_search import ScheduleResult

log = structlog.get_logger("pyscheduler.scheduler")

# Binding cycles in flight at once. Each blocks on API round trips (Binding, then the Scheduled event is
# queued), so this bounds threads, not work: kube-scheduler runs every binding cycle in its own
# goroutine. At 16, a busy API server (pods being created by 30 clients) served the binds at ~290/s while
# pods arrived at ~450/s, and the backlog set the latency (p99 8.9 s at 5,000 nodes); at 64 the binds
# keep up (p99 1.3 s). The pods assumed meanwhile are counted by the cache, so nothing overcommits.
BIND_WORKERS = 64
# Binding cycles submitted and not finished past which the scheduling thread waits for one to finish
# before its next cycle (``wait_for_binders``). Without it, one GIL: the CPU-bound scheduling
# thread keeps the GIL for its 5 ms switch interval at a time, the binder threads (each needing the GIL a
# few times per Binding) get a turn ~200 times a second, and 10,000 pods found pending at start-up were
# all assumed in ~6 s while ~1,000 were bound, the API server idle; the Bindings then came at full speed.
# Waiting here keeps the two in step, as kube-scheduler's goroutines are on their own cores. Decisions do
# not change: the cache counts assumed pods as it counts bound ones, and the queue order is the same.
BIND_BACKLOG = 2 * BIND_WORKERS
# The longest the scheduling thread waits for a binding cycle to finish; one that waited in vain does not
# wait again until some binding cycle finishes (pods held by Permit or a slow PreBind block nothing).
BIND_BACKLOG_WAIT = 0.05


class BindingCycles:
    """The binding cycles of ``Scheduler``: their thread pool, the backlog the scheduling thread waits
    on, and the cycle itself."""

    cache: Cache
    queue: SchedulingQueue
    clock: Clock
    recorder: Recorder
    metrics: Metrics | None
    extenders: list[Extender]
    can_bind: Callable[[], bool]

    if TYPE_CHECKING:

        def _binding_failed(
            self,
            fwk: Framework,
            qpi: QueuedPodInfo,
            assumed: Pod,
            status: Status,
            start: float,
            was_nominated: bool = False,
        ) -> None: ...

    def _start_binders(self, bind_workers: int, bind_backlog: int) -> None:
        """The pool of ``bind_workers`` threads and the backlog counters (``Scheduler.__init__``)."""
        self._binders = ThreadPoolExecutor(max_workers=bind_workers, thread_name_prefix="bind")
        self._inflight_binds = 0
        self._inflight_lock = threading.Condition()
        self.bind_backlog = bind_backlog  # 0: never wait for the binders
        self.bind_backlog_wait = BIND_BACKLOG_WAIT
        self._binds_finished = 0  # binding cycles finished so far (wait_for_binders)
        self._backlog_stuck_at = -1  # _binds_finished when a wait for the binders last ran out

    def drain_binds(self, timeout: float) -> bool:
        """Wait until in-flight binding cycles end (SIGTERM path); False if the bound passed."""
        deadline = time.monotonic() + timeout
        with self._inflight_lock:
            while self._inflight_binds:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._inflight_lock.wait(left)
        return True

    def wait_for_binders(self) -> bool:
        """With ``bind_backlog`` binding cycles or more in flight, wait (GIL released) until one finishes,
        at most ``bind_backlog_wait`` seconds; True if it waited. After a wait that ran out with none finished, do not wait
        again until one has: binding cycles held for long (Permit, PreBind) must not slow scheduling."""
        with self._inflight_lock:
            if not self.bind_backlog or self._inflight_binds < self.bind_backlog:
                return False
            finished = self._binds_finished
            if finished == self._backlog_stuck_at:
                return False
            if not self._inflight_lock.wait_for(
                lambda: self._binds_finished != finished, self.bind_backlog_wait
            ):
                self._backlog_stuck_at = finished
            return True

    def binding_cycles_in_flight(self) -> int:
        """Binding cycles submitted and not finished (scheduler_goroutines{operation="binding"})."""
        return self._inflight_binds

    def shutdown(self) -> None:
        self._binders.shutdown(wait=False, cancel_futures=True)

    def submit_binding(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        assumed: Pod,
        result: ScheduleResult,
        start: float,
    ) -> None:
        """Run the binding cycle of an assumed, reserved and permitted pod off the scheduling thread."""
        with self._inflight_lock:
            self._inflight_binds += 1
        pending = getattr(self.metrics, "async_api_pending", None)
        if pending is not None:  # its Binding call waits for a binder thread (docs/metrics.md)
            pending("pod_binding", 1)
        self._binders.submit(self._binding_cycle, fwk, state, qpi, assumed, result, start, pending)

    def _binding_cycle(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        assumed: Pod,
        result: ScheduleResult,
        start: float,
        pending: Callable[[str, int], None] | None = None,
    ) -> None:
        if pending is not None:
            pending("pod_binding", -1)
        # A pod handed back by handle_failure has left the queue's in-flight set and may be popped again at
        # once; a done() after that would end the *next* attempt's tracking (its deletion then went
        # unnoticed and the deleted pod was requeued forever). So done() only when it was not handed back.
        handed_back = False
        try:
            s = fwk.wait_on_permit(assumed)
            if s is None or s.is_success():
                s = fwk.run_pre_bind_plugins(state, assumed, result.node)
            if s is None or s.is_success():
                if not self.can_bind():
                    s = Status.as_error("not the leader any more: binding stopped")
                else:
                    s = self._bind(fwk, state, assumed, result.node)
            if s is not None and not s.is_success():
                fwk.run_reserve_plugins_unreserve(state, assumed, result.node)
                handed_back = True
                self._binding_failed(fwk, qpi, assumed, s, start, was_nominated_at_assume(state))
                return
            self.cache.finish_binding(assumed)
            self.recorder.event(
                assumed,
                "Normal",
                "Scheduled",
                "Binding",
                f"Successfully assigned {assumed.namespace}/{assumed.name} to {result.node}",
            )
            elapsed = self.clock.now() - start
            if self.metrics is not None:
                self.metrics.attempt("scheduled", fwk.profile_name, elapsed)
                first = qpi.initial_attempt_timestamp or start
                self.metrics.pod_scheduled(
                    fwk.profile_name, qpi.attempts, self.clock.now() - first, after_flush=qpi.flushed
                )
            log.debug(  # kube-scheduler logs this at -v=2; info-level work per pod costs throughput
                "scheduled",
                pod=assumed.key,
                node=result.node,
                profile=fwk.profile_name,
                attempt=qpi.attempts,
                evaluated=result.evaluated,
                feasible=result.feasible,
                duration_ms=round(elapsed * 1000, 2),
            )
            fwk.run_post_bind_plugins(state, assumed, result.node)
        except Exception as e:
            log.exception("binding cycle error", pod=assumed.key)
            try:
                fwk.run_reserve_plugins_unreserve(state, assumed, result.node)
            except Exception:  # Unreserve plugins' own errors are reported by the framework; this is ours
                log.exception("unreserve after a binding cycle error failed", pod=assumed.key)
            handed_back = True
            self._binding_failed(fwk, qpi, assumed, Status.as_error(e), start, was_nominated_at_assume(state))
        finally:
            if not handed_back:
                self.queue.done(assumed.uid)
            with self._inflight_lock:
                self._inflight_binds -= 1
                self._binds_finished += 1
                self._inflight_lock.notify_all()

    def _bind(self, fwk: Framework, state: CycleState, pod: Pod, node: str) -> Status | None:
        for ext in self.extenders:
            if not (ext.is_binder() and ext.is_interested(pod)):
                continue
            s = ext.bind(pod, node)
            if s is not None and not s.is_success() and ext.is_ignorable():
                log.info("skipping ignorable extender in bind", extender=ext.name, error=s.message())
                continue
            return s
        return fwk.run_bind_plugins(state, pod, node)
