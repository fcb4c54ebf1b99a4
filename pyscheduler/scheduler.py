"""The scheduling loop: pop a pod, run its profile's framework, assume, and bind off-thread.

Design
------
One scheduling thread runs ``schedule_one`` in a loop; binding cycles run on a small thread pool so the
next pod's scheduling cycle does not wait for API round trips (kube-scheduler's goroutine per binding).

    queue.pop ─► snapshot update ─► PreFilter ─► Filter (a sample of nodes) ─┬─► PreScore ─► Score ─► pick
                                                                            └─► (none fit) PostFilter
    pick ─► cache.assume (counts at once) ─► Reserve ─► Permit ─► [binding thread] WaitOnPermit ─► PreBind
         ─► Bind ─► cache.finish_binding ─► Scheduled event ─► PostBind

Any failure after assume runs Unreserve (reverse order), forgets the assumed pod and requeues it with
backoff; events and status patches go through asynchronous writers and never block the loop. The
scheduling core does no I/O itself: binding is a plugin (DefaultBinder) and everything else is
submitted to ``recorder``/``writer`` callables, so tests can run it with fakes.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import operator
import random
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.queue import QueuedPodInfo, SchedulingQueue
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.clock import Clock
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import Action, ClusterEvent, Resource
from pyscheduler.framework.fit_error import FitError
from pyscheduler.framework.interfaces import Diagnosis, NodeScore
from pyscheduler.framework.node_table import NodeBatch
from pyscheduler.framework.runtime import Framework
from pyscheduler.framework.scores import Scores
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo
from pyscheduler.parallel import ForkFilter
from pyscheduler.scheduler_protocols import Extender, Metrics, Recorder, StatusWriter

log = structlog.get_logger("pyscheduler.scheduler")

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_MSG = "no nodes available to schedule pods"
# what forgetting an assumed pod is to the queue: its node's capacity is free again
ASSIGNED_POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE, "AssignedPodDelete")
# Binding cycles in flight at once. Each blocks on API round trips (Binding, then the Scheduled event is
# queued), so this bounds threads, not work: kube-scheduler runs every binding cycle in its own
# goroutine. At 16, a busy API server (pods being created by 30 clients) served the binds at ~290/s while
# pods arrived at ~450/s, and the backlog set the latency (p99 8.9 s at 5,000 nodes); at 64 the binds
# keep up (p99 1.3 s). The pods assumed meanwhile are counted by the cache, so nothing overcommits.
BIND_WORKERS = 64
# Binding cycles submitted and not finished past which the scheduling thread waits for one to finish
# before its next cycle (``Scheduler.wait_for_binders``). Without it, one GIL: the CPU-bound scheduling
# thread keeps the GIL for its 5 ms switch interval at a time, the binder threads (each needing the GIL a
# few times per Binding) get a turn ~200 times a second, and 10,000 pods found pending at start-up were
# all assumed in ~6 s while ~1,000 were bound, the API server idle; the Bindings then came at full speed.
# Waiting here keeps the two in step, as kube-scheduler's goroutines are on their own cores. Decisions do
# not change: the cache counts assumed pods as it counts bound ones, and the queue order is the same.
BIND_BACKLOG = 2 * BIND_WORKERS
# The longest the scheduling thread waits for a binding cycle to finish; one that waited in vain does not
# wait again until some binding cycle finishes (pods held by Permit or a slow PreBind block nothing).
BIND_BACKLOG_WAIT = 0.05


@dataclass
class ScheduleResult:
    node: str
    evaluated: int
    feasible: int


#: CycleState key: the pod was nominated in memory when it was assumed (kube's assume drops that)
NOMINATED_AT_ASSUME_KEY = "pyscheduler/nominated-at-assume"


def _was_nominated(state: CycleState) -> bool:
    return bool(state.get(NOMINATED_AT_ASSUME_KEY, False))


def _count_none(items: Sequence[object]) -> int:
    """How many items are None, at C speed (list.count(None) calls each Status's __eq__)."""
    return len(items) - sum(map(operator.is_not, items, itertools.repeat(None)))


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """kube-scheduler's adaptive sample size (percentageOfNodesToScore)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    adaptive = percentage or 0
    if adaptive >= 100:
        return num_all_nodes
    if adaptive <= 0:
        adaptive = 50 - num_all_nodes // 125
        if adaptive < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            adaptive = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    num = num_all_nodes * adaptive // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


def _record_chunk(
    chunk: Sequence[NodeInfo], results: list[Status | None], passing: int, need: int, diagnosis: Diagnosis
) -> tuple[list[int], int]:
    """Record a filtered chunk's rejections in ``diagnosis``; returns the indexes of its feasible nodes
    kept and how many of its nodes count as processed. Node by node, kube stops at the to_find-th
    feasible node (``need`` more are wanted here): nodes after it in an over-fetched chunk are neither
    feasible nor recorded as rejected. An Error ends the batch and leaves the nodes it did not finish
    None, so it fails the cycle wherever it is in the chunk."""
    # Written with C-level iterators: where most nodes fail (a node selector to a small pool, a
    # resource one node offers) a chunk holds thousands of rejections, recorded for every pod.
    n = len(results)
    rejected = list(itertools.compress(range(n), map(operator.is_not, results, itertools.repeat(None))))
    statuses = list(map(results.__getitem__, rejected))
    kinds = dict(zip(map(id, statuses), statuses, strict=True))  # mostly a shared few
    for st in kinds.values():
        if st is not None and st.code == Code.ERROR:
            raise RuntimeError(st.message())
    ok = list(itertools.compress(range(n), map(operator.is_, results, itertools.repeat(None))))
    used = n
    if passing > need:
        ok = ok[:need]
        used = ok[-1] + 1
        if rejected and rejected[-1] >= used:
            cut = bisect.bisect_left(rejected, used)
            rejected, statuses = rejected[:cut], statuses[:cut]
            kinds = dict(zip(map(id, statuses), statuses, strict=True))
    diagnosis.defer(chunk, rejected, statuses)  # type: ignore[arg-type]
    for st in kinds.values():
        if st is not None and st.plugin:
            if st.code == Code.PENDING:
                diagnosis.pending_plugins.add(st.plugin)
            else:
                diagnosis.unschedulable_plugins.add(st.plugin)
    return ok, used


class _SortedOthers(Sequence[str]):
    """The scored nodes but the chosen one, best first, ties in a random order (kube's heap of scored
    nodes with a random tie-breaker each): what opportunistic batching hands the next pods of the same
    signature. Sorted on first read; most are never read (the next pod fits the same node again)."""

    def __init__(self, nodes: Sequence[NodeInfo], totals: Scores, chosen: int, rng: random.Random) -> None:
        self._nodes, self._totals, self._chosen, self._rng = nodes, totals, chosen, rng
        self._names: list[str] | None = None

    def __len__(self) -> int:
        return len(self._nodes) - 1

    def _sorted(self) -> list[str]:
        if self._names is None:
            tie_break = np.random.default_rng(self._rng.getrandbits(64)).random(len(self._totals))
            order = np.lexsort((tie_break, -self._totals)).tolist()
            self._names = [self._nodes[i].name for i in order if i != self._chosen]
        return self._names

    def __getitem__(self, i: Any) -> Any:
        return self._sorted()[i]


class Scheduler:
    def __init__(
        self,
        *,
        profiles: Mapping[str, Framework],
        queue: SchedulingQueue,
        cache: Cache,
        snapshot: Snapshot,
        clock: Clock,
        recorder: Recorder,
        status_writer: StatusWriter,
        metrics: Metrics | None = None,
        percentage_of_nodes_to_score: int | None = None,
        extenders: Sequence[Extender] = (),
        bind_workers: int = BIND_WORKERS,
        bind_backlog: int = BIND_BACKLOG,
        rng: random.Random | None = None,
        can_bind: Callable[[], bool] = lambda: True,
        parallelism: int = 1,
        opportunistic_batching: bool = True,
    ) -> None:
        self.profiles = dict(profiles)
        self.queue = queue
        self.cache = cache
        self.snapshot = snapshot
        self.clock = clock
        self.recorder = recorder
        self.status_writer = status_writer
        self.metrics = metrics
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.extenders = list(extenders)
        self.rng = rng or random.Random()
        self.can_bind = can_bind
        self.next_start_node_index = 0
        # parallelism > 1: big Filter chunks are split over forked workers (pyscheduler.parallel)
        self.fork_filter = ForkFilter(parallelism) if parallelism > 1 else None
        # the node names a pod group cycle is trying (kube's AssumePlacement); None: all nodes
        self.placement: frozenset[str] | None = None
        # pods with spec.schedulingGroup are scheduled a group at a time (GenericWorkload)
        self.pod_groups = False
        self._binders = ThreadPoolExecutor(max_workers=bind_workers, thread_name_prefix="bind")
        self._inflight_binds = 0
        self._inflight_lock = threading.Condition()
        self.bind_backlog = bind_backlog  # 0: never wait for the binders
        self.bind_backlog_wait = BIND_BACKLOG_WAIT
        self._binds_finished = 0  # binding cycles finished so far (wait_for_binders)
        self._backlog_stuck_at = -1  # _binds_finished when a wait for the binders last ran out
        self._stop = threading.Event()
        # OpportunisticBatching (kube 1.36, beta, on): a pod signed like the one before it may take the
        # next node of that pod's scores (framework/batch.py); the hint of the cycle under way
        self.batching = opportunistic_batching
        self._hint = ""
        self._batch_cycle: tuple[Hashable | None, int] = (None, 0)  # (signature, scheduling cycle)
        if opportunistic_batching:
            for fwk in self.profiles.values():
                if self.extenders:
                    fwk.signer.disable_for_extenders()
                if fwk.signer.disabled_because:
                    log.info(
                        f"Disabling signatures for profile because {fwk.signer.disabled_because}.",
                        profile=fwk.profile_name,
                        plugins=list(fwk.signer.unsupported),
                    )

    # ------------------------------------------------------------------------------------ loop
    def run(self, stop: threading.Event | None = None, pop_timeout: float = 0.5) -> None:
        stop = stop or self._stop
        while not stop.is_set():
            try:
                self.wait_for_binders()
                self.schedule_one(pop_timeout)
            except Exception:  # the loop never dies
                log.exception("scheduling loop error")

    def stop(self) -> None:
        self._stop.set()

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

    def schedule_one(self, pop_timeout: float | None = None) -> bool:
        """One scheduling cycle; False if no pod was available."""
        qpi = self.queue.pop(pop_timeout)
        if qpi is None:
            return False
        pod: Pod = qpi.pod
        fwk = self.profiles.get(pod.scheduler_name)
        if fwk is None:  # a profile was removed? never schedule foreign pods
            self.queue.done(pod.uid)
            return True
        if self.pod_groups and pod.scheduling_group:
            from pyscheduler.scheduler_podgroup import schedule_pod_group

            schedule_pod_group(self, qpi)
            return True
        if pod.deleting or self.cache.is_assumed(pod.uid):
            self.queue.done(pod.uid)
            return True
        start = self.clock.now()
        state = CycleState()
        metrics = self.metrics
        if metrics is not None:
            state.record_plugin_metrics = metrics.sample_plugins()
        try:
            result = self.schedule_pod(fwk, state, pod)
        except FitError as fe:
            if metrics is not None:
                metrics.algorithm(self.clock.now() - start)
            self._on_fit_error(fwk, state, qpi, fe, start)
            return True
        except Exception as e:  # plugin or extender error
            st = Status.as_error(e)
            self.handle_failure(fwk, qpi, st, None, start, clear_nomination=True)
            return True
        if metrics is not None:
            metrics.algorithm(self.clock.now() - start)

        # From here on every failure clears the pod's nomination (kube's clearNominatedNode).
        assumed = pod.with_node_name(result.node)
        try:
            self.cache.assume_pod(assumed)
        except Exception as e:
            self.handle_failure(fwk, qpi, Status.as_error(e), None, start, clear_nomination=True)
            return True
        # An assumed pod is no longer nominated (kube's assume): Filter would count it twice on its node.
        if self.queue.nominated_node_name(pod.uid) is not None:
            self.queue.delete_nominated_pod_if_exists(pod)
            state.write(NOMINATED_AT_ASSUME_KEY, True)
        s = fwk.run_reserve_plugins_reserve(state, assumed, result.node)
        if s is not None and not s.is_success():
            fwk.run_reserve_plugins_unreserve(state, assumed, result.node)
            self._forget(assumed)
            self.handle_failure(
                fwk, qpi, s, None, start, clear_nomination=True, was_nominated=_was_nominated(state)
            )
            return True
        s = fwk.run_permit_plugins(state, assumed, result.node)
        if s is not None and not s.is_success() and not s.is_wait():
            fwk.run_reserve_plugins_unreserve(state, assumed, result.node)
            self._forget(assumed)
            self.handle_failure(
                fwk, qpi, s, None, start, clear_nomination=True, was_nominated=_was_nominated(state)
            )
            return True
        if s is not None and s.is_wait():
            # Plugins like Coscheduling expect the waiting pod's siblings to be tried next.
            pass
        self.submit_binding(fwk, state, qpi, assumed, result, start)
        return True

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

    # ------------------------------------------------------------------------------------ cycle
    def schedule_pod(self, fwk: Framework, state: CycleState, pod: Pod) -> ScheduleResult:
        self.cache.update_snapshot(self.snapshot)
        all_nodes: Sequence[NodeInfo] = self.snapshot.list()
        if self.placement is not None:  # a pod group cycle trying one placement: only its nodes
            all_nodes = [ni for ni in all_nodes if ni.name in self.placement]
        if not all_nodes:
            raise FitError(pod, 0, Diagnosis(pre_filter_msg=NO_NODES_MSG))
        batching = self.batching
        if batching:  # kube signs the pod when it is queued; the signature depends on the pod alone
            signature = fwk.signer.sign(pod)
            cycle = self.queue.scheduling_cycle() if self.queue is not None else 0
            self._batch_cycle = (signature, cycle)
        self._hint = ""
        feasible, diagnosis = self.find_nodes_that_fit(fwk, state, pod, all_nodes)
        if not feasible:
            raise FitError(pod, len(all_nodes), diagnosis)
        if len(feasible) == 1:
            if batching:
                fwk.batch.store(signature, self._hint, feasible[0].name, (), cycle)
            return ScheduleResult(feasible[0].name, 1 + diagnosis.rejected_count(), 1)  # kube's form
        if not isinstance(feasible, NodeBatch):
            table = self.snapshot.node_table() if hasattr(self.snapshot, "node_table") else None
            feasible = NodeBatch(feasible, table)
        totals = self._prioritize_totals(fwk, state, pod, feasible)
        index = self._select_index(totals)
        host = feasible[index].name
        if batching:
            fwk.batch.store(
                signature, self._hint, host, _SortedOthers(feasible, totals, index, self.rng), cycle
            )
        return ScheduleResult(host, len(feasible) + diagnosis.rejected_count(), len(feasible))

    def _node_hint(self, fwk: Framework, state: CycleState, pod: Pod) -> str:
        """kube's GetNodeHint, after PreFilter (see framework/batch.py)."""
        signature, cycle = self._batch_cycle

        def rejects(name: str) -> bool | None:
            ni = self.snapshot.get(name)
            if ni is None:
                return None
            st = fwk.run_filter_plugins(state, pod, ni)
            return st is not None and st.is_rejected()

        return fwk.batch.node_hint(signature, cycle, rejects)

    def find_nodes_that_fit(
        self, fwk: Framework, state: CycleState, pod: Pod, all_nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodeInfo], Diagnosis]:
        diagnosis = Diagnosis()
        pre_res, s, plugins = fwk.run_pre_filter_plugins(state, pod, all_nodes)
        if s is not None and not s.is_success():
            if not s.is_rejected():
                raise RuntimeError(s.message())
            diagnosis.node_to_status = {n.name: s for n in all_nodes}
            diagnosis.pre_filter_msg = s.message()
            if s.plugin:
                diagnosis.unschedulable_plugins.add(s.plugin)
            diagnosis.unschedulable_plugins |= plugins
            return [], diagnosis

        # OpportunisticBatching: the next node of the previous pod's scores, if it may be reused. It
        # is asked for even when the pod is nominated (kube does too), and taken only when it is not.
        hint = self._hint = self._node_hint(fwk, state, pod) if self.batching else ""
        # A pod nominated by an earlier preemption tries its nominated node first; a hinted pod its hint.
        first = pod.nominated_node_name or hint
        if first:
            ni = self.snapshot.get(first)
            if self.placement is not None and first not in self.placement:
                ni = None
            if ni is not None and (
                pre_res is None or pre_res.all_nodes() or ni.name in (pre_res.node_names or ())
            ):
                st = fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)
                if st is None or st.is_success():
                    feasible = self._filter_with_extenders(pod, [ni], diagnosis)
                    if feasible:
                        return feasible, diagnosis

        nodes: Sequence[NodeInfo] = all_nodes
        if pre_res is not None and not pre_res.all_nodes():
            names = pre_res.node_names or frozenset()
            nodes = [n for n in all_nodes if n.name in names]
            diagnosis.absent_nodes_status = Status.unresolvable(
                f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]"
            )
            diagnosis.unschedulable_plugins |= plugins
        began = time.perf_counter()  # kube times the Filter extension point over the whole search
        try:
            feasible = self._find_nodes_that_pass_filters(fwk, state, pod, nodes, diagnosis)
        except BaseException:
            fwk.observe_extension_point("Filter", Code.ERROR, began)
            raise
        fwk.observe_extension_point("Filter", Code.SUCCESS, began)
        feasible = self._filter_with_extenders(pod, feasible, diagnosis)
        if not feasible:
            diagnosis.settle()  # a FitError reads them: name them against this cycle's snapshot
        return feasible, diagnosis

    def _find_nodes_that_pass_filters(
        self, fwk: Framework, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], diagnosis: Diagnosis
    ) -> list[NodeInfo]:
        n = len(nodes)
        if n == 0:
            return []
        percentage = (
            fwk.percentage_of_nodes_to_score
            if fwk.percentage_of_nodes_to_score is not None
            else self.percentage_of_nodes_to_score
        )
        to_find = num_feasible_nodes_to_find(percentage, n)
        start = self.next_start_node_index % n
        if not fwk.has_filter_plugins():
            out = [nodes[(start + i) % n] for i in range(to_find)]
            self.next_start_node_index = (start + to_find) % n
            return out
        feasible: list[NodeInfo] = []
        nominated: frozenset[str] = frozenset()
        if self.queue is not None and self.queue.has_nominated_pods():
            nominated = self.queue.nominated_node_names()
        processed = 0
        # the feasible nodes' table rows, while every chunk knows its rows (then scoring need not look
        # them up)
        row_parts: list[Any] | None = []
        for chunk, results, passing in self._filter_in_chunks(
            fwk, state, pod, nodes, start, to_find, nominated
        ):
            chunk_rows = chunk.known_rows if isinstance(chunk, NodeBatch) else None
            if chunk_rows is None:
                row_parts = None
            if passing == len(results) and passing <= to_find - len(feasible):  # all fit: nothing to record
                feasible.extend(chunk)
                if row_parts is not None:
                    row_parts.append(chunk_rows)
                processed += len(chunk)
            else:
                ok, used = _record_chunk(chunk, results, passing, to_find - len(feasible), diagnosis)
                feasible.extend([chunk[i] for i in ok])
                if row_parts is not None and chunk_rows is not None:
                    row_parts.append(chunk_rows[ok])
                processed += used
            if len(feasible) >= to_find:
                break
        self.next_start_node_index = (start + processed) % n
        if row_parts:
            return NodeBatch(feasible, self.snapshot.node_table(), np.concatenate(row_parts))
        return feasible

    def _filter_in_chunks(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        start: int,
        to_find: int,
        nominated: frozenset[str] = frozenset(),
    ) -> Iterator[tuple[Sequence[NodeInfo], list[Status | None], int]]:
        """Filter the nodes from ``start`` on (wrapping), a chunk at a time. Node by node, kube stops at
        the ``to_find``-th feasible node; a chunk of exactly the number still wanted can never pass that
        point. When every Filter plugin is batched, a chunk after the first is sized by the pass rate
        seen so far (a quarter more than expected to be needed), so a search where most nodes fail takes
        two or three batch calls rather than one per halving; the caller drops what lies past the
        stopping point, so the nodes checked and recorded are the same. Nodes in ``nominated`` (some
        pod is nominated there) go node by node through the nominated-pods pass."""
        n = len(nodes)
        table = self.snapshot.node_table() if hasattr(self.snapshot, "node_table") else None
        # The snapshot's own list: node i is row i of its table, so a chunk's rows are a range.
        own = table is not None and nodes is self.snapshot.list() and table.size == n
        over = fwk.filters_are_batched(state)
        done = found = 0
        while done < n and found < to_find:
            wanted = to_find - found
            if over and done:
                size = min(n - done, max(wanted, -(-wanted * done * 5 // max(found, 1) // 4)))
            else:
                size = min(wanted, n - done)
            first = (start + done) % n
            rows = np.arange(first, first + size, dtype=np.int64) % n if own else None
            if first + size <= n:
                chunk = NodeBatch(nodes[first : first + size], table, rows)
            else:
                chunk = NodeBatch([*nodes[first:], *nodes[: first + size - n]], table, rows)
            if nominated and any(ni.name in nominated for ni in chunk):
                results = self._filter_with_nominated(fwk, state, pod, chunk, nominated)
                passing = _count_none(results)
            elif self.fork_filter is not None:
                results, passing = self.fork_filter.run(fwk, state, pod, chunk)
            else:
                results, passing = fwk.run_filter_plugins_counted(state, pod, chunk)
            done += size
            found += passing  # the batch leaves passing nodes None
            yield chunk, results, passing

    def _filter_with_nominated(
        self, fwk: Framework, state: CycleState, pod: Pod, chunk: NodeBatch, nominated: frozenset[str]
    ) -> list[Status | None]:
        """Filter ``chunk``, whose nodes in ``nominated`` have pods nominated to them. Only nodes with
        nominated pods of priority >= the pod's (other than itself) take the nominated-pods pass; on the
        others that pass is one plain Filter pass, so they join the batch with the rest."""
        results: list[Status | None] = [None] * len(chunk)
        ge: list[tuple[int, list[PodInfo]]] = []
        plain: list[int] = []
        for i, ni in enumerate(chunk):
            pis = fwk.ge_nominated_pods(pod, ni.name) if ni.name in nominated else None
            if pis:
                ge.append((i, pis))
            else:
                plain.append(i)
        adjusted = fwk.adjusted_filter(state) if ge else None
        if adjusted is not None:  # one batch for all, no clones (framework/pods_adjusted.py)
            out = adjusted.with_nominated_batch(fwk.run_filter_plugins_batch, state, pod, chunk, ge)
            if out is not None:
                return out
        if plain:
            subset = chunk if not ge else chunk.subset(plain)
            for i, s in zip(plain, fwk.run_filter_plugins_batch(state, pod, subset), strict=True):
                results[i] = s
        run = fwk.run_filter_plugins_with_nominated_pods
        for i, pis in ge:
            st = run(state, pod, chunk[i], pis)
            results[i] = None if st is None or st.code == Code.SUCCESS else st
        return results

    def _filter_with_extenders(
        self, pod: Pod, feasible: list[NodeInfo], diagnosis: Diagnosis
    ) -> list[NodeInfo]:
        for ext in self.extenders:
            if not feasible:
                break
            if not ext.is_interested(pod):
                continue
            try:
                kept, failed, failed_unresolvable = ext.filter(pod, feasible)
            except Exception as e:
                if ext.is_ignorable():
                    log.warning("skipping ignorable extender", extender=ext.name, error=str(e))
                    continue
                raise
            # No plugin is named: a pod only extenders rejected is retried after backoff (kube does the
            # same), since no cluster event is registered for what an extender looks at.
            for name, reason in failed.items():
                if name not in failed_unresolvable:
                    diagnosis.node_to_status[name] = Status.unschedulable(reason)
            for name, reason in failed_unresolvable.items():
                diagnosis.node_to_status[name] = Status.unresolvable(reason)
            feasible = kept
        return feasible

    def prioritize_nodes(
        self, fwk: Framework, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> list[NodeScore]:
        """Every node's total score: weighted plugin scores plus extenders' (kube's prioritizeNodes)."""
        totals = self._prioritize_totals(fwk, state, pod, nodes)
        return [NodeScore(n.name, t) for n, t in zip(nodes, totals.tolist(), strict=True)]

    def _prioritize_totals(
        self, fwk: Framework, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> Scores:
        if not fwk.has_score_plugins() and not self.extenders:
            return np.ones(len(nodes), dtype=np.int64)
        s = fwk.run_pre_score_plugins(state, pod, nodes)
        if s is not None and not s.is_success():
            raise RuntimeError(s.message())
        node_totals, s = fwk.run_score_plugins_totals(state, pod, nodes)
        if s is not None and not s.is_success():
            raise RuntimeError(s.message())
        if not self.extenders:
            return node_totals
        totals = {n.name: t for n, t in zip(nodes, node_totals.tolist(), strict=True)}
        for ext in self.extenders:
            if not ext.is_interested(pod):
                continue
            try:
                ext_scores, weight = ext.prioritize(pod, nodes)
            except Exception as e:
                log.warning(
                    "extender prioritize failed; ignoring its scores", extender=ext.name, error=str(e)
                )
                continue
            # kube: extender scores (0..10) * weight * (MaxNodeScore / MaxExtenderPriority)
            for name, v in ext_scores.items():
                if name in totals:
                    totals[name] += v * weight * 10
        return np.array([totals.get(n.name, 0) for n in nodes], dtype=np.int64)

    def select_host(self, scores: list[NodeScore]) -> str:
        """Highest score; ties broken uniformly at random, as kube does."""
        return scores[self._select_index(np.array([ns.score for ns in scores], dtype=np.int64))].name

    def _select_index(self, totals: Scores) -> int:
        """The index of the highest total; among ties, the k-th with k uniform (kube's reservoir
        sampling picks each tied node with the same probability). The RNG is drawn only on a tie."""
        if not len(totals):
            raise RuntimeError("empty priority list")
        ties = np.flatnonzero(totals == totals.max())
        return int(ties[0 if len(ties) == 1 else self.rng.randrange(len(ties))])

    # ------------------------------------------------------------------------------------ binding
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
                self._binding_failed(fwk, qpi, assumed, s, start, _was_nominated(state))
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
            self._binding_failed(fwk, qpi, assumed, Status.as_error(e), start, _was_nominated(state))
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

    def _forget(self, assumed: Pod) -> None:
        self.cache.forget_pod(assumed)  # False (nothing to forget) is logged by the cache

    def _binding_failed(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        assumed: Pod,
        status: Status,
        start: float,
        was_nominated: bool = False,
    ) -> None:
        """kube's handleBindingCycleError (after Unreserve): forget the assumed pod and hand it back. The
        capacity it held on its node is free again, as if an assigned pod were deleted there: the pods
        turned away because of it are requeued (AssignedPodDelete), else they wait for an unrelated event
        or the 5-minute flush (a gang member timing out in Permit held its node that long for others). A
        rejected pod (Permit) is itself unschedulable: it is handed back first and not moved. Whatever
        failed (Permit rejected or timed out, PreBind, Bind), the pod's nomination is cleared, in memory
        and in its status (kube's clearNominatedNode): a preemptor whose binding failed holds no node."""
        freed = self.cache.forget_pod(assumed)
        if freed and not status.is_rejected():
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, assumed, None)
        self.handle_failure(fwk, qpi, status, None, start, clear_nomination=True, was_nominated=was_nominated)
        if freed and status.is_rejected():
            uid = assumed.uid
            self.queue.move_all_to_active_or_backoff(
                ASSIGNED_POD_DELETE, assumed, None, lambda p: p.uid != uid
            )

    # ------------------------------------------------------------------------------------ failures
    def clear_nomination(self, pod: Pod, *, was_nominated: bool = False) -> None:
        """kube's clearNominatedNode: the pod is nominated nowhere, in memory and in its status. The API
        write happens only where there is something to clear: the pod's status names a node, or it was
        nominated in memory (``was_nominated``: until it was assumed), whose status write may still be on
        its way (the writer keeps a pod's writes in order, so the clearing lands after it); and only for
        a pod the queue still holds (one deleted or bound meanwhile is left alone)."""
        uid = pod.uid
        in_memory = self.queue.nominated_node_name(uid) is not None
        if in_memory:
            self.queue.delete_nominated_pod_if_exists(pod)
        if (pod.nominated_node_name or in_memory or was_nominated) and self.queue.where(uid) is not None:
            self.status_writer.nominated_node(pod, "")

    def _on_fit_error(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, fe: FitError, start: float
    ) -> None:
        nominated = self.run_post_filter(fwk, state, qpi.pod, fe)
        qpi.unschedulable_plugins = set(fe.diagnosis.unschedulable_plugins)
        qpi.pending_plugins = set(fe.diagnosis.pending_plugins)
        st = Status(Code.UNSCHEDULABLE, (fe.message(),))
        # kube clears the nomination when no PostFilter ran (none configured, or no nodes at all)
        ran_post_filter = fwk.has_post_filter_plugins() and fe.num_all_nodes > 0
        self.handle_failure(
            fwk, qpi, st, nominated, start, fit_error=True, clear_nomination=not ran_post_filter
        )

    def run_post_filter(self, fwk: Framework, state: CycleState, pod: Pod, fe: FitError) -> str | None:
        """PostFilter (preemption) for a pod no node fits; its message joins ``fe``. Returns the node
        the pod is nominated to, if any."""
        nominated = None
        if fwk.has_post_filter_plugins() and fe.num_all_nodes > 0:
            statuses = dict(fe.diagnosis.node_to_status)
            if fe.diagnosis.absent_nodes_status is not None:
                for ni in self.snapshot.list():
                    if self.placement is None or ni.name in self.placement:
                        statuses.setdefault(ni.name, fe.diagnosis.absent_nodes_status)
            result, s = fwk.run_post_filter_plugins(state, pod, statuses)
            if s.code == Code.ERROR:
                log.warning("postfilter error", pod=pod.key, error=s.message())
            if not s.is_success() and s.reasons:
                # kube sets PostFilterMsg from any status, an Error's too: a pod an earlier PreFilter
                # plugin rejected reads "... . not found" (DynamicResources' PostFilter finds no state)
                fe.diagnosis.post_filter_msg = s.message()
            if result is not None and result.nominated_node_name:
                nominated = result.nominated_node_name
            elif result is not None and result.mode == "clear":
                self.clear_nomination(pod)
        return nominated

    def handle_failure(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        status: Status,
        nominated: str | None,
        start: float,
        fit_error: bool = False,
        *,
        clear_nomination: bool = False,
        was_nominated: bool = False,
    ) -> None:
        """kube's handleSchedulingFailure: hand the pod back to the queue, nominate it on ``nominated``
        (preemption's node) or, with ``clear_nomination``, clear its nomination (kube's
        clearNominatedNode: ``was_nominated`` says the pod was nominated in memory when it was assumed),
        then the FailedScheduling event and PodScheduled=False."""
        pod: Pod = qpi.pod
        is_error = status.code == Code.ERROR
        if not fit_error and status.plugin and not is_error:
            qpi.unschedulable_plugins = {status.plugin}
        msg = status.message() or str(status.code)
        reason = "SchedulerError" if is_error else "Unschedulable"
        if self.metrics is not None:
            self.metrics.attempt(
                "error" if is_error else "unschedulable", fwk.profile_name, self.clock.now() - start
            )
        try:
            self.queue.add_unschedulable_if_not_present(qpi, error=is_error)
        except Exception:
            log.exception("requeue failed", pod=pod.key)
        if nominated:  # not for a pod deleted (or bound elsewhere) during this attempt: the queue dropped it
            self.queue.add_nominated_pod(
                PodInfo(dataclasses.replace(pod, nominated_node_name=nominated)), nominated, if_queued=True
            )
            self.status_writer.nominated_node(pod, nominated)
        elif clear_nomination:
            self.clear_nomination(qpi.pod, was_nominated=was_nominated)
        self.recorder.event(pod, "Warning", "FailedScheduling", "Scheduling", msg)
        self.status_writer.pod_scheduled_condition(pod, "False", reason, msg)
        # an Error (a plugin raised, an API call failed) is kube's "Error scheduling pod; retrying", at
        # error level; the plugin's traceback is logged once a minute by the framework's observer
        (log.error if is_error else log.info)(
            "unschedulable" if not is_error else "scheduling error",
            pod=pod.key,
            profile=fwk.profile_name,
            attempt=qpi.attempts,
            reason=msg,
            duration_ms=round((self.clock.now() - start) * 1000, 2),
        )
