"""Filter a chunk of nodes in forked worker processes: KubeSchedulerConfiguration's ``parallelism``.

Design
------
kube-scheduler's parallelizer runs Filter over a chunk of nodes with ``parallelism`` goroutines. One
CPython process holds one GIL, so here the extra workers are processes. A worker needs everything the
Filter plugins read: the snapshot's NodeInfos and node table, the CycleState PreFilter just wrote, the
plugins' own indexes. Shipping that per cycle would cost more than filtering, so a worker is forked at the
moment of the Filter call: it starts with the parent's memory as it is then (copy on write), filters its
shard of the chunk, sends the statuses back through a pipe (pickled: rejections are mostly a few shared
Status objects, so the message stays small) and exits. The parent filters the first shard itself
meanwhile.

    chunk ─► split into ``workers`` shards in node order ─► shard 0: parent · shards 1..k-1: forked children
          ─► statuses concatenated in node order (what the single-process batch returns)

Decisions are unchanged: each node's status depends only on the pod, the CycleState and that node, so
the concatenation equals the single-process result, and the caller's stopping point (kube's
numFeasibleNodesToFind, nextStartNodeIndex) is computed on it as before. Whenever a shard comes back with
an Error, a worker fails or does not answer in time, the parent filters the whole chunk itself.

Sharding is used only when it pays (``shards``): a fork, the pipe and the reaping cost milliseconds of CPU
and grow with the process's memory, while a vectorised Filter pass over 1,000 nodes costs less than one. The
estimate is the Filter time per node measured on this profile's earlier single-process chunks. Plugins
whose Filter writes into the CycleState for later extension points (VolumeBinding, DynamicResources)
make a cycle single-process: a child's writes would be lost. They skip themselves at PreFilter for pods
without volumes or claims, so most cycles still qualify.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import select
import signal
import time
from collections.abc import Sequence

import structlog

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.node_table import NodeBatch
from pyscheduler.framework.runtime import Framework
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod

log = structlog.get_logger("pyscheduler.parallel")

# Filter plugins whose Filter only reads the CycleState (the in-tree ones checked); any other plugin that
# the cycle runs (not skipped at PreFilter) keeps the cycle in one process.
READ_ONLY_FILTERS = frozenset(
    {
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    }
)
# Shard only when the single-process Filter of a chunk is expected to take longer than this. A fork of the
# daemon (80-100 MiB) with its pipe and reaping took ~10 ms of CPU on the 2-core machine, and a forced
# shard of every chunk cost 12.7 ms CPU per pod on SchedulingBasic at 1,000 nodes against 0.68 ms in one
# process: with two workers the parent saves half the chunk's Filter time, so the chunk must cost well
# over twice the fork (docs/architecture.md, "Parallelism"). No benchmark workload reaches this today.
MIN_SERIAL_SECONDS = 0.05
# The fewest nodes a shard gets.
MIN_NODES_PER_SHARD = 256
# A child that has not answered after this long (plus 20x the expected work) is killed and its shard
# filtered by the parent.
CHILD_TIMEOUT_SECONDS = 2.0


# Set (to anything but "" or "0") in the environment: shard every chunk of two nodes or more, whatever
# it costs, with ``parallelism`` workers even past the CPUs this process may use. For tests and the
# differential run (python -m bench.differential --py-parallelism 2), which must exercise the sharded path.
FORCE_ENV = "PYSCHEDULER_FORCE_SHARDS"


def usable_cpus() -> int:
    """The CPUs this process may run on (taskset, cgroup cpusets), not the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class ForkFilter:
    """Runs ``Framework.run_filter_plugins_counted`` over a chunk with up to ``workers`` processes: the
    configured parallelism, capped at the CPUs this process may use (more processes than CPUs only
    queue)."""

    def __init__(
        self,
        workers: int,
        min_serial_seconds: float = MIN_SERIAL_SECONDS,
        min_shard: int = MIN_NODES_PER_SHARD,
        force: bool | None = None,
    ) -> None:
        if force is None:
            force = os.environ.get(FORCE_ENV, "") not in ("", "0")
        self.force = force
        self.workers = max(1, workers if force else min(workers, usable_cpus()))
        self.min_serial_seconds = 0.0 if force else min_serial_seconds
        self.min_shard = 1 if force else max(1, min_shard)
        # per profile: seconds of Filter per node, an average over recent single-process chunks
        self._per_node: dict[str, float] = {}
        self.sharded = 0  # chunks filtered with workers (for benchmarks and tests)
        self.fallbacks = 0  # sharded chunks the parent filtered again itself

    def shards(self, fwk: Framework, state: CycleState, n: int) -> int:
        """How many shards a chunk of ``n`` nodes is worth (1: single process)."""
        if self.workers <= 1 or n < 2 * self.min_shard:
            return 1
        skip = state.skip_filter_plugins
        for p in fwk.filter_plugins:
            if p.name not in skip and p.name not in READ_ONLY_FILTERS:
                return 1
        if self.force:
            return min(self.workers, n // self.min_shard)
        est = self._per_node.get(fwk.profile_name)
        if est is None:  # no measure yet: learn from one single-process chunk first
            return 1
        if est * n < self.min_serial_seconds:
            return 1
        return min(self.workers, n // self.min_shard)

    def run(
        self, fwk: Framework, state: CycleState, pod: Pod, chunk: Sequence[NodeInfo]
    ) -> tuple[list[Status | None], int]:
        k = self.shards(fwk, state, len(chunk))
        if k <= 1:
            t = time.perf_counter()
            out = fwk.run_filter_plugins_counted(state, pod, chunk)
            if len(chunk):
                per = (time.perf_counter() - t) / len(chunk)
                old = self._per_node.get(fwk.profile_name)
                self._per_node[fwk.profile_name] = per if old is None else 0.8 * old + 0.2 * per
            return out
        got = self._run_sharded(fwk, state, pod, chunk, k)
        if got is None:
            self.fallbacks += 1
            return fwk.run_filter_plugins_counted(state, pod, chunk)
        if not self.sharded:
            log.info("filter sharded over worker processes", shards=k, nodes=len(chunk), pod=pod.key)
        self.sharded += 1
        return got

    def _run_sharded(
        self, fwk: Framework, state: CycleState, pod: Pod, chunk: Sequence[NodeInfo], k: int
    ) -> tuple[list[Status | None], int] | None:
        n = len(chunk)
        bounds = [n * i // k for i in range(k + 1)]
        parts = [_part(chunk, bounds[i], bounds[i + 1]) for i in range(k)]
        children: list[tuple[int, int]] = []  # (pid, read end)
        answered: set[int] = set()
        ok = True
        try:
            for part in parts[1:]:
                r, w = os.pipe()
                pid = os.fork()
                if pid == 0:  # the child: filter, send, exit without running the parent's cleanups
                    os.close(r)
                    _child(fwk, state, pod, part, w)
                os.close(w)
                children.append((pid, r))
            before = dict(fwk.evaluations)
            results, passing = fwk.run_filter_plugins_counted(state, pod, parts[0])
            if _has_error(results):
                ok = False
            deadline = (
                time.monotonic() + CHILD_TIMEOUT_SECONDS + 20 * self._per_node.get(fwk.profile_name, 0) * n
            )
            counts: dict[tuple[str, str], int] = {}
            for pid, r in children:
                got = _receive(r, deadline) if ok else None
                if got is None:
                    ok = False
                    continue
                answered.add(pid)
                res, pas, ev = got
                if _has_error(res):
                    ok = False
                    continue
                results.extend(res)
                passing += pas
                for key, v in ev.items():
                    counts[key] = counts.get(key, 0) + v
        finally:
            for pid, r in children:
                os.close(r)
                _reap(pid, pid in answered)
        if not ok:
            # the parent's own shard was counted in evaluations; the rerun counts the chunk again
            fwk.evaluations.clear()
            fwk.evaluations.update(before)
            return None
        for key, v in counts.items():
            fwk.evaluations[key] = fwk.evaluations.get(key, 0) + v
        return results, passing


def _part(chunk: Sequence[NodeInfo], lo: int, hi: int) -> Sequence[NodeInfo]:
    if isinstance(chunk, NodeBatch):
        return chunk.subset(list(range(lo, hi)))
    return chunk[lo:hi]


def _has_error(results: list[Status | None]) -> bool:
    return any(s is not None and s.code == Code.ERROR for s in {id(s): s for s in results}.values())


def _child(fwk: Framework, state: CycleState, pod: Pod, part: Sequence[NodeInfo], w: int) -> None:
    code = 0
    try:
        gc.disable()  # a collection would touch (copy) every page of the parent's heap
        state.record_plugin_metrics = False
        before = dict(fwk.evaluations)
        results, passing = fwk.run_filter_plugins_counted(state, pod, part)
        ev = {key: v - before.get(key, 0) for key, v in fwk.evaluations.items() if v != before.get(key, 0)}
        data = pickle.dumps((results, passing, ev), protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            view = view[os.write(w, view) :]
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _receive(r: int, deadline: float) -> tuple[list[Status | None], int, dict[tuple[str, str], int]] | None:
    buf = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([r], [], [], left)
        if not ready:
            return None
        data = os.read(r, 1 << 20)
        if not data:
            break
        buf += data
    try:
        got = pickle.loads(buf)
    except Exception:
        return None
    return got  # type: ignore[no-any-return]


def _reap(pid: int, answered: bool) -> None:
    """Wait for a child; one that did not answer is killed first (it may hang on a lock another thread
    of the parent held when it was forked)."""
    if not answered:
        if os.waitpid(pid, os.WNOHANG)[0] != 0:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
