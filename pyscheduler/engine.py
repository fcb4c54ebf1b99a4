"""In-process scheduling: the real scheduler core on in-memory objects, with no cluster and no threads.

Design
------
``Engine`` builds the app exactly as the daemon does (``pyscheduler.app.build_app``: the validated
configuration, every plugin of each profile, the ``SchedulingQueue`` with the profile's QueueSort, the
cache, snapshot and ``Scheduler``) and feeds it objects through the daemon's own watch handlers
(``event_handlers``: ``PodHandler``, ``NodeHandler``, ``ObjectHandler``). What the daemon gets from other threads or from
the API server is done here, in line and in a fixed order:

    daemon                                   engine
    binding cycle on a thread pool           run right after the scheduling cycle (``_InlineBinds``);
                                             a pod a Permit plugin holds waits until it is allowed,
                                             rejected, or the run ends (reported as ``waiting``)
    bind → API → watch event (pod bound)     ``_EngineApi.bind`` queues the pod-bound event, delivered
                                             after the binding cycle: the pod counts on its node next
    preemption: victims evicted (goroutine)  eviction jobs run after the cycle; ``delete_pod`` delivers
                                             the pod-deleted event, which wakes the preemptor
    queue flusher (1 s tick, backoff)        when nothing is active, the fake clock moves past the
                                             longest backoff and the queue is flushed
    time                                     ``FakeClock``; kube's random tie-break uses a seeded RNG

Nothing here does I/O; the daemon's layers stay as they are (the engine sits beside ``app``). Used by
``pyscheduler.testing.schedule`` and by ``pyscheduler simulate``/``capacity`` (``pyscheduler.whatif``),
which run it with ``score_breakdown=False`` (each pod's top node totals only, from the batch scores),
``add_pods(..., deep_copy=False)`` and ``run(on_cycle=...)`` for the progress bar.

    engine = Engine(config=None, seed=0)
    engine.add_nodes([...]); engine.add_objects({"PersistentVolumeClaim": [...]})
    results = engine.schedule([...])       # {"ns/name": PodResult}
"""

from __future__ import annotations

import copy
import math
import os
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyscheduler.app import (
    DRA_OBJECT_KINDS,
    OBJECT_KINDS,
    POD_GROUP_KINDS,
    App,
    build_app,
)
from pyscheduler.config.load import load_config, parse_config
from pyscheduler.config.parsing import parse_yaml
from pyscheduler.event_handlers import ClaimHandler, NodeHandler, ObjectHandler, PodHandler
from pyscheduler.framework.clock import Clock
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.framework.interfaces import PostFilterResult
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.runtime import Framework
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import JSON, Node, Pod

__all__ = ["Engine", "NodeScores", "PodResult", "schedule"]

# Cap on clock jumps per run: each advances past the longest backoff (10 s by default), so 20 rounds stay
# below podMaxInUnschedulablePodsDuration (5 min) and a pod nothing can help is not retried for ever.
MAX_ROUNDS = 20
TOP_NODES = 3


@dataclass(frozen=True)
class NodeScores:
    """One node's total score in a pod's last scoring and each plugin's weighted part of it."""

    node: str
    total: int
    plugins: dict[str, int]


@dataclass
class PodResult:
    """What happened to one pod. ``node`` is set when it was bound; ``message`` is the last
    FailedScheduling text, exactly as the daemon posts it in the event and PodScheduled condition."""

    key: str
    node: str | None = None
    message: str | None = None
    reason: str | None = None  # "Unschedulable" or "SchedulerError" (the PodScheduled condition's)
    attempts: int = 0
    nominated_node: str | None = None
    victims: list[str] = field(default_factory=list)  # "ns/name" of the pods its preemption evicted
    preempted_by: str | None = None  # set on a victim
    waiting: list[str] = field(default_factory=list)  # Permit plugins still holding it at the end
    scores: list[NodeScores] = field(default_factory=list)  # the top nodes of its last scoring

    @property
    def scheduled(self) -> bool:
        return self.node is not None


# ------------------------------------------------------------------------------------ fakes of the I/O


class _EngineRecorder:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def event(self, pod: Pod, type: str, reason: str, action: str, note: str) -> None:
        self.engine._on_event(pod, reason, note)

    def flush(self, timeout: float) -> None:
        return None

    def stop(self) -> None:
        return None


class _InlineWriter:
    """The async writer, in line: status patches apply at once."""

    def submit(self, fn: Callable[..., Any], *args: Any, key: str | None = None, **kw: Any) -> None:
        fn(*args, **kw)  # ``key`` only picks the AsyncWriter's worker: not an argument of ``fn``

    def flush(self, timeout: float) -> None:
        return None

    def stop(self) -> None:
        return None


class _EngineApi:
    """The API client as the core and the plugins call it; writes become watch events for the engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        self.engine._after_cycle.append(lambda: self.engine._bound(pod, node_name))
        return None

    def delete_pod(self, namespace: str, name: str, uid: str = "", **kw: Any) -> None:
        self.engine._deleted(f"{namespace}/{name}")

    def patch_pod_status(
        self,
        namespace: str,
        name: str,
        condition: JSON | None = None,
        nominated_node_name: str | None = None,
        **kw: Any,
    ) -> None:
        r = self.engine._result(f"{namespace}/{name}")
        if nominated_node_name is not None:
            r.nominated_node = nominated_node_name or None
        if condition is not None:
            r.reason = condition.get("reason")

    def patch(self, kind: str, namespace: str, name: str, body: JSON) -> None:
        self.engine._patch(kind, namespace, name, body)

    def patch_pod_group_status(self, namespace: str, name: str, condition: JSON) -> None:
        self.engine._patch("PodGroup", namespace, name, {"status": {"conditions": [dict(condition)]}})

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"the in-process engine has no API call {name!r}")


class _InlineBinds:
    """Stands in for the Scheduler's binding thread pool: binding cycles run after the scheduling cycle,
    in submission order; one a Permit plugin holds is kept until the hold ends."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.pending: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        self.pending.append((fn, args))

    def run_ready(self) -> bool:
        ran = False
        waiting = self.engine.app.waiting_pods
        while True:
            for i, (fn, args) in enumerate(self.pending):
                assumed: Pod = args[3]
                wp = waiting.get(assumed.uid)
                if wp is None or wp.result() is not None:
                    del self.pending[i]
                    fn(*args)
                    self.engine._drain()
                    ran = True
                    break
            else:
                return ran

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        self.pending.clear()


# ------------------------------------------------------------------------------------ the engine


def load_engine_config(config: Any, registry: Mapping[str, PluginSpec]) -> Any:
    """A KubeSchedulerConfiguration as a dict, YAML text, or a path; None means the default profile.
    Validated by the daemon's loader (a ConfigError says what is wrong and where)."""
    from pyscheduler.cli import _extension_points

    eps = _extension_points(registry)
    if config is None or isinstance(config, os.PathLike):
        return load_config(None if config is None else os.fspath(config), registry, eps)
    if isinstance(config, Mapping):
        return parse_config(copy.deepcopy(dict(config)), registry, eps)
    if isinstance(config, str):
        if "\n" not in config and (config.endswith((".yaml", ".yml", ".json")) or os.path.exists(config)):
            return load_config(config, registry, eps)
        return parse_config(parse_yaml(config, "<config>"), registry, eps)
    raise TypeError(f"config must be a dict, YAML text or a path, not {type(config).__name__}")


def _as_json(obj: Any) -> JSON:
    if isinstance(obj, Mapping):
        return copy.deepcopy(dict(obj))
    json_fn = getattr(obj, "json", None)
    if callable(json_fn):  # a builder
        return copy.deepcopy(json_fn())
    raise TypeError(f"expected a builder or a JSON dict, not {type(obj).__name__}")


class Engine:
    """The scheduler core in process (see the module docstring). Not thread-safe; one run at a time."""

    def __init__(
        self,
        config: Any = None,
        *,
        registry: Mapping[str, PluginSpec] | None = None,
        seed: int = 0,
        clock: Clock | None = None,
        top_nodes: int = TOP_NODES,
        score_breakdown: bool = True,
    ) -> None:
        from pyscheduler.plugins.registry import full_registry
        from pyscheduler.testing.clock import FakeClock

        self.registry = registry if registry is not None else full_registry()
        self.config = load_engine_config(config, self.registry)
        self.clock: Any = clock or FakeClock()
        self.top_nodes = top_nodes
        # False: keep only each pod's top node totals (no per-plugin parts), from the batch totals the
        # daemon computes; what a long simulation wants (``pyscheduler simulate``).
        self.score_breakdown = score_breakdown
        self._after_cycle: list[Callable[[], None]] = []
        self._results: dict[str, PodResult] = {}
        self._pods: dict[str, Pod] = {}  # every pod the engine knows, by "ns/name" (latest version)
        self._nodes: dict[str, Node] = {}
        self._preemptor: str | None = None  # the pod whose PostFilter (or eviction job) is running
        self._last_scores: dict[str, list[NodeScores]] = {}
        self.app: App = build_app(
            self.config,
            self.registry,
            _EngineApi(self),
            clock=self.clock,
            recorder=_EngineRecorder(self),
            writer=_InlineWriter(),
            rng=random.Random(seed),
            extra={"preemption_runner": self._defer_eviction},
            # no "slow plugin call" warnings: they speak of a daemon's machine, not of the answer, and a
            # loaded laptop would print them into simulate's output
            slow_plugin_threshold=math.inf,
        )
        self._binds = _InlineBinds(self)
        self.app.scheduler._binders.shutdown(wait=False)
        self.app.scheduler._binders = self._binds  # type: ignore[assignment]
        for fwk in self.app.profiles.values():
            self._instrument(fwk)
        self._pod_handler = PodHandler(self.app)
        self._node_handler = NodeHandler(self.app)
        self.default_scheduler_name = next(iter(self.app.profiles))

    # -------------------------------------------------------------------------------- inputs
    def add_nodes(self, nodes: Iterable[Any]) -> None:
        for n in nodes:
            node = n if isinstance(n, Node) else Node.from_dict(_as_json(n))
            old = self._nodes.get(node.name)
            self._nodes[node.name] = node
            if old is None:
                self._node_handler.on_add(node)
            else:
                self._node_handler.on_update(old, node)

    def add_objects(self, objects: Mapping[str, Iterable[Any]] | Iterable[Any]) -> None:
        """Other kinds plugins read (PVC, PV, StorageClass, CSINode, PDB, Namespace...): a mapping kind →
        objects, or objects that carry their ``kind``."""
        items: list[tuple[str, JSON]] = []
        if isinstance(objects, Mapping):
            items = [(k, _as_json(o)) for k, objs in objects.items() for o in objs]
        else:
            for o in objects:
                d = _as_json(o)
                items.append((str(d.get("kind", "")), d))
        kinds = self._kinds()
        for kind, d in items:
            if kind == "ResourceClaim":
                ClaimHandler(self.app).on_add(ResourceClaim.from_dict(d))
                continue
            if kind not in kinds:
                names = ", ".join(sorted([*kinds, "ResourceClaim"]))
                raise ValueError(f"unknown object kind {kind!r}; known: {names}")
            ObjectHandler(self.app, kind, kinds[kind][1]).on_add(d)

    def _kinds(self) -> dict[str, Any]:
        """The kinds the daemon would watch: DRA's, and PodGroups with the GenericWorkload gate on."""
        return {
            **OBJECT_KINDS,
            **DRA_OBJECT_KINDS,
            **(POD_GROUP_KINDS if self.app.pod_groups_enabled else {}),
        }

    def add_pods(self, pods: Iterable[Any], *, deep_copy: bool = True) -> list[str]:
        """Pods: bound ones (``spec.nodeName``) go to the cache, pending ones to the queue. A pod without
        ``schedulerName`` gets the first profile's. Returns their keys. ``deep_copy=False``: JSON dicts
        are copied only at the top, spec and metadata (the caller promises not to change the rest)."""
        keys = []
        for p in pods:
            if deep_copy or not isinstance(p, Mapping):
                d = _as_json(p)
            else:
                d = {**p, "spec": dict(p.get("spec") or {}), "metadata": dict(p.get("metadata") or {})}
            spec = d.setdefault("spec", {})
            meta = d.setdefault("metadata", {})
            spec.setdefault("schedulerName", self.default_scheduler_name)
            meta.setdefault("namespace", "default")
            meta.setdefault("uid", f"uid-{meta['namespace']}-{meta.get('name', '')}")
            meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
            pod = Pod.from_dict(d)
            if pod.key in self._pods:
                raise ValueError(f"pod {pod.key} given twice")
            self._pods[pod.key] = pod
            self._results[pod.key] = PodResult(pod.key, node=pod.node_name or None)
            self._pod_handler.on_add(pod)
            keys.append(pod.key)
        return keys

    # -------------------------------------------------------------------------------- running
    def run(
        self, max_rounds: int = MAX_ROUNDS, on_cycle: Callable[[], None] | None = None
    ) -> dict[str, PodResult]:
        """Schedule until the queue has nothing left to try; every pod's result, by "ns/name".
        ``on_cycle`` is called after each scheduling cycle (a progress bar)."""
        sched, queue = self.app.scheduler, self.app.queue
        backoff = float(self.config.pod_max_backoff_seconds)
        for round_ in range(max_rounds + 1):
            did = False
            while True:
                progressed = self._binds.run_ready()
                if sched.schedule_one(0):
                    did = True
                    self._drain()
                    if on_cycle is not None:
                        on_cycle()
                    continue
                if not progressed:
                    break
            if (round_ > 0 and not did) or not any(queue.pending_pods().values()):
                break
            # What the daemon's flusher does over time: backoffs expire, then the queue is flushed.
            self.clock.advance(backoff + 0.001)
            queue.flush()
        self._finish()
        return dict(self._results)

    def schedule(self, pods: Iterable[Any], max_rounds: int = MAX_ROUNDS) -> dict[str, PodResult]:
        self.add_pods(pods)
        return self.run(max_rounds)

    def _finish(self) -> None:
        for wp in self.app.waiting_pods:
            r = self._result(wp.pod.key)
            r.waiting = list(wp.pending_plugins())
        for key, scores in self._last_scores.items():
            r = self._result(key)
            # the node the pod got first among its equals, then the top ``top_nodes``
            ordered = sorted(scores, key=lambda s: (-s.total, s.node != r.node))
            r.scores = ordered[: self.top_nodes]

    # -------------------------------------------------------------------------------- hooks
    def _instrument(self, fwk: Framework) -> None:
        """Keep the per-plugin breakdown of each scoring: the loop calls ``run_score_plugins_totals``;
        this answers it from ``run_score_plugins`` (same plugins, same normalisation, same weights)."""
        engine = self

        def totals(state: CycleState, pod: Pod, nodes: Sequence[Any]) -> tuple[Any, Status | None]:
            rows, st = fwk.run_score_plugins(state, pod, nodes)
            if st is not None and not st.is_success():
                return np.zeros(0, dtype=np.int64), st
            ranked = sorted(rows, key=lambda r: -r[1])
            best = ranked[0][1] if ranked else 0
            # the top nodes, plus every node tied at the top (the pick among them is the RNG's)
            kept = [r for i, r in enumerate(ranked) if i < engine.top_nodes or r[1] == best]
            engine._last_scores[pod.key] = [NodeScores(n, int(t), dict(pl)) for n, t, pl in kept]
            return np.array([t for _, t, _ in rows], dtype=np.int64), st

        batch_totals = fwk.run_score_plugins_totals

        def top_totals(state: CycleState, pod: Pod, nodes: Sequence[Any]) -> tuple[Any, Status | None]:
            scores, st = batch_totals(state, pod, nodes)
            if st is None and len(scores):
                # the top nodes by total (enough to tell a tie at the top), no per-plugin parts
                k = min(engine.top_nodes, len(scores))
                top = np.argpartition(-scores, k - 1)[:k] if len(scores) > k else np.arange(len(scores))
                kept = sorted(top.tolist(), key=lambda i: -int(scores[i]))
                engine._last_scores[pod.key] = [NodeScores(nodes[i].name, int(scores[i]), {}) for i in kept]
            return scores, st

        fwk.run_score_plugins_totals = totals if engine.score_breakdown else top_totals  # type: ignore[method-assign]
        pre_filter = fwk.run_pre_filter_plugins
        post_filter = fwk.run_post_filter_plugins

        def run_pre_filter(state: CycleState, pod: Pod, nodes: Sequence[Any]) -> Any:
            engine._last_scores.pop(pod.key, None)  # a new attempt: earlier scores no longer apply
            if pod.key in engine._results:
                engine._results[pod.key].scores = []
            return pre_filter(state, pod, nodes)

        def run_post_filter(
            state: CycleState, pod: Pod, filtered: Mapping[str, Status]
        ) -> tuple[PostFilterResult | None, Status]:
            engine._preemptor = pod.key
            try:
                return post_filter(state, pod, filtered)
            finally:
                engine._preemptor = None

        fwk.run_pre_filter_plugins = run_pre_filter  # type: ignore[method-assign]
        fwk.run_post_filter_plugins = run_post_filter  # type: ignore[method-assign]

    def _drain(self) -> None:
        while self._after_cycle:
            self._after_cycle.pop(0)()

    def _result(self, key: str) -> PodResult:
        r = self._results.get(key)
        if r is None:
            r = self._results[key] = PodResult(key)
        return r

    def _on_event(self, pod: Pod, reason: str, note: str) -> None:
        r = self._result(pod.key)
        if reason == "FailedScheduling":
            r.attempts += 1
            r.message = note
        elif reason == "Scheduled":
            r.attempts += 1
            r.message = None
            r.reason = None

    def _bound(self, pod: Pod, node_name: str) -> None:
        old = self._pods.get(pod.key) or pod
        new = old.with_node_name(node_name)
        self._pods[pod.key] = new
        r = self._result(pod.key)
        r.node = node_name
        r.nominated_node = None
        self._pod_handler.on_update(old, new)

    def _deleted(self, key: str) -> None:
        pod = self._pods.pop(key, None)
        if pod is None:
            return
        r = self._result(key)
        preemptor = self._preemptor_of(pod)
        r.preempted_by = preemptor
        r.node = None
        if preemptor is not None:
            self._result(preemptor).victims.append(key)
        self._pod_handler.on_delete(pod)

    def _preemptor_of(self, victim: Pod) -> str | None:
        """The pod whose PostFilter or eviction job is running; else the one nominated to the victim's node
        (an eviction by something else)."""
        if self._preemptor is not None:
            return self._preemptor
        for key, r in reversed(self._results.items()):
            if r.nominated_node == victim.node_name and r.node is None and key != victim.key:
                return key
        return None

    def _defer_eviction(self, job: Callable[[], None]) -> None:
        """DefaultPreemption's runner (a goroutine in kube): the job runs after the cycle, for its pod."""
        preemptor = self._preemptor

        def run() -> None:
            self._preemptor = preemptor
            try:
                job()
            finally:
                self._preemptor = None

        self._after_cycle.append(run)

    def _patch(self, kind: str, namespace: str, name: str, body: JSON) -> None:
        """A merge patch to a stored object (VolumeBinding's PV/PVC binding), seen back as a watch update."""
        existing = self.app.objects.get(kind, namespace, name)
        kinds = self._kinds()
        if existing is None or kind not in kinds:
            return
        merged = copy.deepcopy(dict(existing))
        _merge(merged, body)
        ObjectHandler(self.app, kind, kinds[kind][1]).on_update(dict(existing), merged)


def _merge(dst: JSON, patch: Mapping[str, Any]) -> None:
    for k, v in patch.items():
        if isinstance(v, Mapping) and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        elif v is None:
            dst.pop(k, None)
        else:
            dst[k] = copy.deepcopy(v)


def schedule(
    nodes: Iterable[Any],
    pods: Iterable[Any],
    *,
    config: Any = None,
    objects: Mapping[str, Iterable[Any]] | Iterable[Any] = (),
    seed: int = 0,
    registry: Mapping[str, PluginSpec] | None = None,
) -> dict[str, PodResult]:
    """Schedule ``pods`` on ``nodes`` with the real framework, in process; results by "ns/name" in the
    order the pods were given (bound pods in ``pods`` are placed as they are)."""
    engine = Engine(config, registry=registry, seed=seed)
    engine.add_nodes(nodes)
    engine.add_objects(objects)
    keys = engine.add_pods(pods)
    results = engine.run()
    return {k: results[k] for k in keys}
