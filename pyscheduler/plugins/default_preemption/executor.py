"""Carrying out a preemption: evicting the victims of the chosen node (kube's preemption Executor).

For each victim not already being deleted:

- a pod held in Permit (a waiting pod) is preempted in memory: rejected, no API call, and its event
  says "(in kube-scheduler memory).";
- otherwise the victim gets the ``DisruptionTarget`` condition (reason ``PreemptionByScheduler``,
  message "<scheduler>: preempting to accommodate a higher priority pod") and is deleted (with a uid
  precondition); a victim already gone (404) is fine;
- then a Normal ``Preempted`` event (action ``Preempting``) is recorded on the victim:
  "Preempted by pod <preemptor uid> on node <node>".

Lower-priority pods nominated to the same node lose their nomination (they may no longer fit there).

With async preemption (kube's SchedulerAsyncPreemption, beta and on by default since 1.33) this runs
off the scheduling thread: the preemptor is remembered as "preempting" until it finishes, and the
plugin's PreEnqueue keeps it out of the active queue meanwhile. All victims but the last are evicted
first, up to 16 at a time; if one fails the last is spared. While the last one is being evicted the preemptor is let
through as soon as that victim is seen deleted or terminating (``extra["assigned_pod"]``, uid -> the
bound pod the scheduler's cache holds, which the daemon and the in-process engine provide; else
``extra["pod_lister"]``). On any failure the preemptor is activated again (``extra["activate"]``).

Unlike kube, the preemptor stays held after the last eviction's API call returns, until that view
shows the victim deleted or terminating. kube lets it through when the call returns; its informer
learns of the deletion within milliseconds, so the window is small. Ours runs on a thread that
shares the GIL with 10-25 ms scheduling cycles and can trail by a hundred milliseconds or more: a
preemptor requeued by another pod's deletion in that window found its last victim still in the
cache, not terminating, so it looked eligible, preempted again on another node and left its first
node to the next preemptor (the Preemption benchmark: chains of such moves, up to 10 preemptions
for one pod).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod

from .victims import Candidate

log = logging.getLogger("pyscheduler.plugins.default_preemption")

Runner = Callable[[Callable[[], None]], None]

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
EVENT_REASON_PREEMPTED = "Preempted"
EVENT_ACTION_PREEMPTING = "Preempting"
IN_MEMORY_SUFFIX = " (in kube-scheduler memory)."
WAITING_POD_MESSAGE = "preempted"
PARALLELISM = 16  # kube's default parallelism, which its Parallelizer evicts victims with
SWEEP_AT = 256  # held preemptions before the next one looks for entries to forget (at least)


def disruption_condition(preemptor: Pod) -> dict[str, str]:
    return {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": PREEMPTION_BY_SCHEDULER,
        "message": f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod",
    }


def preempted_event_note(preemptor: Pod, node: str, in_memory: bool = False) -> str:
    note = f"Preempted by pod {preemptor.uid} on node {node}"
    return note + IN_MEMORY_SUFFIX if in_memory else note


def thread_runner(job: Callable[[], None]) -> None:
    """Run ``job`` on its own daemon thread (kube's goroutine)."""
    threading.Thread(target=job, name="preemption", daemon=True).start()


def is_not_found(e: BaseException) -> bool:
    check = getattr(e, "is_not_found", None)
    if callable(check):
        return bool(check())
    return getattr(e, "status", None) == 404 or type(e).__name__ in ("NotFound", "NotFoundError")


@dataclass(frozen=True, slots=True)
class _PendingVictim:
    namespace: str
    name: str
    uid: str


class Executor:
    def __init__(self, handle: Any, plugin_name: str, *, runner: Runner | None = None) -> None:
        self._handle = handle
        self._plugin = plugin_name
        self._runner: Runner = runner or thread_runner
        self._lock = threading.Lock()
        self._preempting: set[str] = set()
        self._last_victim: dict[str, _PendingVictim] = {}
        self._kept_at_sweep = 0  # entries the last sweep left: the next waits until there are twice as many

    # ------------------------------------------------------------------------------ handle helpers
    def _extra(self) -> Mapping[str, Any]:
        extra = getattr(self._handle, "extra", None)
        return extra if isinstance(extra, Mapping) else {}

    def _metric(self, name: str) -> Any:
        return getattr(self._extra().get("metrics"), name, None)

    # ------------------------------------------------------------------------------ one victim
    def preempt_pod(self, node: str, preemptor: Pod, victim: Pod) -> None:
        """Evict one victim; raises on an API error other than "not found"."""
        in_memory = False
        get_waiting = getattr(self._handle, "get_waiting_pod", None)
        wp = get_waiting(victim.uid) if callable(get_waiting) else None
        if wp is not None:
            preempt = getattr(wp, "preempt", None)
            ok = (
                preempt(self._plugin, WAITING_POD_MESSAGE)
                if callable(preempt)
                else wp.reject(self._plugin, WAITING_POD_MESSAGE)
            )
            in_memory = ok is not False
            if in_memory:
                log.info("%s preempted waiting pod %s on node %s", preemptor.key, victim.key, node)
        if not in_memory:
            client = getattr(self._handle, "client", None)
            patch = getattr(client, "patch_pod_status", None)
            delete = getattr(client, "delete_pod", None)
            if not callable(delete):
                log.warning("no API client to delete preemption victim %s for %s", victim.key, preemptor.key)
                return
            if callable(patch):
                try:
                    patch(victim.namespace, victim.name, condition=disruption_condition(preemptor))
                except Exception as e:
                    if not is_not_found(e):
                        raise
                    log.info("preemption victim %s is already deleted", victim.key)
                    return
            try:
                deleted = delete(victim.namespace, victim.name, uid=victim.uid)
            except Exception as e:
                if not is_not_found(e):
                    raise
                deleted = False
            if deleted is False:
                log.info("preemption victim %s is already deleted", victim.key)
                return
        recorder = self._extra().get("recorder")
        if recorder is None:
            log.info("preempted %s on node %s for %s (no event recorder)", victim.key, node, preemptor.key)
            return
        try:
            recorder.event(
                victim,
                "Normal",
                EVENT_REASON_PREEMPTED,
                EVENT_ACTION_PREEMPTING,
                preempted_event_note(preemptor, node, in_memory),
            )
        except Exception:
            log.exception("could not record the Preempted event of %s", victim.key)

    # ------------------------------------------------------------------------------ nominations
    def clear_lower_priority_nominations(self, preemptor: Pod, node: str) -> None:
        """Lower-priority pods nominated to ``node`` may not fit any more: drop their nomination so they
        look for another place at once. Raises if a write fails."""
        nominated = getattr(self._handle, "nominated_pods_for_node", None)
        infos = nominated(node) if callable(nominated) else ()
        pods = [pi.pod for pi in infos if pi.pod.priority < preemptor.priority]
        if not pods:
            return
        writer = self._extra().get("status_writer")
        if writer is None:
            log.warning("no status writer to clear the nomination of %d pod(s) on node %s", len(pods), node)
            return
        errors = []
        for p in pods:
            try:
                writer.nominated_node(p, "")
            except Exception as e:
                errors.append(e)
        if errors:
            raise errors[0]

    # ------------------------------------------------------------------------------ synchronous
    def prepare_candidate(self, c: Candidate, preemptor: Pod) -> Status | None:
        """Evict the victims now; an API failure is an Error status (kube's prepareCandidate)."""
        self._observe_victims(len(c.victims))
        for victim in c.victims:
            if victim.deleting:
                continue  # graceful deletion already started
            try:
                self.preempt_pod(c.name, preemptor, victim)
            except Exception as e:
                log.warning("preemption of %s for %s failed: %s", victim.key, preemptor.key, e)
                return Status.as_error(e)
        try:
            self.clear_lower_priority_nominations(preemptor, c.name)
        except Exception as e:  # not critical
            log.warning("could not clear nominatedNodeName on node %s: %s", c.name, e)
        return None

    # ------------------------------------------------------------------------------ asynchronous
    def prepare_candidate_async(self, c: Candidate, preemptor: Pod) -> None:
        """Start evicting the victims off the scheduling thread (kube's prepareCandidateAsync)."""
        victims = [v for v in c.victims if not v.deleting]
        if not victims:
            return
        self._observe_victims(len(c.victims))
        uid = preemptor.uid
        with self._lock:
            self._preempting.add(uid)
            self._last_victim.pop(uid, None)  # one an earlier preemption left behind
            sweep = len(self._last_victim) > max(SWEEP_AT, 2 * self._kept_at_sweep)
        if sweep:
            self._sweep()

        def job() -> None:
            failed = False
            clock = getattr(self._handle, "clock", None)
            began = clock.now() if clock is not None else 0.0
            try:
                try:
                    self.clear_lower_priority_nominations(preemptor, c.name)
                except Exception as e:
                    log.warning("could not clear nominatedNodeName on node %s: %s", c.name, e)
                    failed = True
                if self._preempt_in_parallel(c.name, preemptor, victims[:-1]):
                    failed = True  # kube cancels the rest and spares the last victim
                else:
                    last = victims[-1]
                    with self._lock:
                        self._last_victim[uid] = _PendingVictim(last.namespace, last.name, last.uid)
                    try:
                        self.preempt_pod(c.name, preemptor, last)
                    except Exception as e:
                        log.warning("async preemption of %s for %s failed: %s", last.key, preemptor.key, e)
                        failed = True
            except Exception:  # never let the job die silently
                log.exception("async preemption for %s failed", preemptor.key)
                failed = True
            finally:
                with self._lock:
                    self._preempting.discard(uid)
                    if failed or not self._has_view():
                        self._last_victim.pop(uid, None)
                    # else the preemptor stays held until the view shows the last victim going (above)
            observe = self._metric("preemption_goroutine")  # scheduler_preemption_goroutines_*
            if observe is not None and clock is not None:
                with contextlib.suppress(Exception):  # metrics must never break scheduling
                    observe("error" if failed else "success", clock.now() - began)
            if failed:
                self._activate(preemptor)

        self._runner(job)

    def _preempt_in_parallel(self, node: str, preemptor: Pod, victims: list[Pod]) -> bool:
        """Evict ``victims`` on up to PARALLELISM threads at once, as kube does (each eviction is two API
        calls; in sequence they held the preemptor back by that many round trips); after a failure no
        new eviction starts. True if one failed."""
        if not victims:
            return False
        pending = iter(victims)
        lock = threading.Lock()
        failed = threading.Event()

        def work() -> None:
            while not failed.is_set():
                with lock:
                    victim = next(pending, None)
                if victim is None:
                    return
                try:
                    self.preempt_pod(node, preemptor, victim)
                except Exception as e:
                    log.warning("async preemption of %s for %s failed: %s", victim.key, preemptor.key, e)
                    failed.set()

        workers = [
            threading.Thread(target=work, name="preemption-victim", daemon=True)
            for _ in range(min(PARALLELISM, len(victims)) - 1)
        ]
        for t in workers:
            t.start()
        work()  # this thread is one of the workers
        for t in workers:
            t.join()
        return failed.is_set()

    def is_pod_running_preemption(self, uid: str) -> bool:
        """True while an async preemption for this pod is under way (kube's IsPodRunningPreemption), and
        after it until the scheduler's view shows its last victim deleted or terminating."""
        with self._lock:
            running = uid in self._preempting
            victim = self._last_victim.get(uid)
        if victim is None:
            return running  # True: the victims before the last are still being evicted
        if self._victim_present(victim):
            return True
        if not running:
            with self._lock:
                if self._last_victim.get(uid) is victim:
                    del self._last_victim[uid]
        return False

    def _has_view(self) -> bool:
        extra = self._extra()
        return callable(extra.get("assigned_pod")) or callable(extra.get("pod_lister"))

    def _victim_present(self, victim: _PendingVictim) -> bool:
        """Whether the scheduler's view still shows the victim bound and not terminating (True when it
        cannot tell)."""
        assigned = self._extra().get("assigned_pod")  # uid -> the bound pod the scheduler knows, or None
        if callable(assigned):
            try:
                pod = assigned(victim.uid)
            except Exception:
                return True
            return pod is not None and not pod.deleting
        lister = self._extra().get("pod_lister")
        if not callable(lister):
            return True
        try:
            current = lister(victim.namespace, victim.name)
        except Exception:
            return True
        if current is None:
            return False  # the last victim is gone
        if isinstance(current, Pod):
            return current.uid == victim.uid and not current.deleting
        meta = (current.get("metadata") or {}) if isinstance(current, Mapping) else {}
        if meta.get("uid") and meta.get("uid") != victim.uid:
            return False
        return not meta.get("deletionTimestamp")

    def _sweep(self) -> None:
        """Forget the finished preemptions whose last victim is gone: a preemptor deleted while held is
        never asked again, and would leave its entry behind. It runs on the scheduling thread (PostFilter)
        and reads every entry, so the next one waits until the entries have doubled: with thousands of
        preemptors legitimately held, a sweep per preemption would cost a cache read per held pod."""
        with self._lock:
            done = [(uid, v) for uid, v in self._last_victim.items() if uid not in self._preempting]
        gone = [uid for uid, v in done if not self._victim_present(v)]
        with self._lock:
            for uid in gone:
                if uid not in self._preempting:
                    self._last_victim.pop(uid, None)
            self._kept_at_sweep = len(self._last_victim)

    def _activate(self, pod: Pod) -> None:
        activate = self._extra().get("activate")
        if not callable(activate):
            log.info("async preemption for %s failed; it is retried on the next cluster event", pod.key)
            return
        try:
            activate([pod])
        except Exception:
            log.exception("could not activate %s after a failed preemption", pod.key)

    def _observe_victims(self, n: int) -> None:
        h = self._metric("preemption_victims")
        if h is not None:
            try:
                h.observe(n)
            except Exception:  # metrics must never break scheduling
                log.debug("preemption_victims metric failed", exc_info=True)
