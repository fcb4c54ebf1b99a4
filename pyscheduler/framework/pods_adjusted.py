"""Filter a node as if some pods were added to it or taken off it, without cloning the NodeInfo.

Two places run the Filter plugins on a changed copy of a node: the nominated pods' pass (kube's
RunFilterPluginsWithNominatedPods adds the pods of equal or higher priority nominated to the node, on a
clone of the node and the cycle state, telling the PreFilter extensions) and preemption's check of a
victim set found by arithmetic (the node without the victims). When many preemptors are nominated, every
later cycle takes that pass on every node with a nomination: the clone, the added pods and the state
overlay were a third of the scheduler's CPU on the Preemption benchmark.

The copy is not needed when, in this cycle, nothing but the pods' requests can change a verdict:

- no PreFilter extension would run (every plugin that has AddPod/RemovePod was skipped in PreFilter),
  so the cycle state is the same with or without the pods; and
- every Filter plugin that runs either never reads the node's pods (``filter_ignores_node_pods = True``
  on the plugin: its answer on the changed node is its answer on the node itself), or can answer for the
  changed node from the node and the pods (``filter_adjusted(state, pod, node_info, added, removed)``:
  NodeResourcesFit's arithmetic on the totals), reading the state only.

Then ``AdjustedFilter.run`` gives what ``run_filter_plugins`` on the changed clone would give: the same
plugins called in the same order, the same first rejection (same Status), the same evaluations counted.
A plugin may also offer ``filter_adjusted_many(state, pod, nodes, added)``: ``filter_adjusted`` on many
nodes, each with its own pods added, in one call (the nominated pods' pass over a chunk of nodes).
Otherwise ``plan_adjusted_filter`` answers None and the callers clone as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.status import Code, Status, filter_outcome
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo

# The cycle state key the plan is kept under (one per cycle: it depends on the skipped plugins only).
STATE_KEY = "__framework.pods_adjusted"

_RAISED = object()  # a plugin's adjusted Filter raised on that node

AdjustedFn = Callable[[CycleState, Pod, NodeInfo, Sequence[PodInfo], Sequence[PodInfo]], Any]
ErrorFn = Callable[[str, str, BaseException], Status]


class AdjustedFilter:
    """The Filter plugins of one cycle, each with how it answers for a node with pods added or removed."""

    __slots__ = ("_index", "_on_error", "_single", "evaluations", "steps")

    def __init__(
        self,
        steps: Sequence[tuple[Any, tuple[str, str], AdjustedFn | None]],
        evaluations: dict[Any, int],
        on_error: ErrorFn,
    ) -> None:
        # (plugin, evaluation key, filter_adjusted or None: the plugin ignores the node's pods)
        self.steps = tuple(steps)
        self.evaluations = evaluations
        self._on_error = on_error
        self._index = {p.name: i for i, (p, _, _) in enumerate(self.steps)}
        adjusting = [i for i, (_, _, f) in enumerate(self.steps) if f is not None]
        self._single = adjusting[0] if len(adjusting) == 1 else -1  # the one plugin that reads pods

    def run(
        self,
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        added: Sequence[PodInfo] = (),
        removed: Sequence[PodInfo] = (),
    ) -> Status | None:
        """``run_filter_plugins`` on ``node_info`` with ``added`` put on and ``removed`` taken off;
        ``node_info`` is not changed."""
        ev = self.evaluations
        for p, key, adjusted in self.steps:
            ev[key] += 1
            s: Status | None
            try:
                if adjusted is None:
                    s = p.filter(state, pod, node_info)
                else:
                    s = adjusted(state, pod, node_info, added, removed)
            except Exception as e:
                return self._on_error(p.name, "Filter", e)
            if s is not None and s.code != Code.SUCCESS:
                return filter_outcome(p.name, s)
        return None

    def with_nominated_batch(
        self,
        batch: Callable[[CycleState, Pod, Sequence[NodeInfo]], list[Status | None]],
        state: CycleState,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        nominated: Sequence[tuple[int, Sequence[PodInfo]]],
    ) -> list[Status | None] | None:
        """kube's RunFilterPluginsWithNominatedPods for every node of ``nodes``, where ``nominated``
        lists (position, the pods of equal or higher priority nominated there); the other nodes' pass
        is the plain one. ``batch`` is the framework's ``run_filter_plugins_batch``.

        The plain pass (the nominated pods' second pass) runs for all nodes at once; a node with
        nominated pods then takes its first pass (``_first_pass``), where the plugins that ignore the
        node's pods are not called again: up to the plain pass's rejecting plugin they pass, and that
        one rejects the same way. The evaluations counted are the node-by-node ones. None (nothing
        counted): an Error in the plain pass; the caller takes the node-by-node way."""
        ev = self.evaluations
        keys = [key for _, key, _ in self.steps]
        saved = [ev[k] for k in keys]
        results = batch(state, pod, nodes)
        index = self._index
        for r in results:
            if r is not None and (r.code == Code.ERROR or r.plugin not in index):
                for k, v in zip(keys, saved, strict=True):
                    ev[k] = v
                return None
        if self._single < 0:
            for i, pis in nominated:
                results[i] = self._first_pass(state, pod, nodes[i], pis, results[i])
            return results
        return self._single_reader_pass(state, pod, nodes, nominated, results)

    def _single_reader_pass(
        self,
        state: CycleState,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        nominated: Sequence[tuple[int, Sequence[PodInfo]]],
        results: list[Status | None],
    ) -> list[Status | None]:
        """``with_nominated_batch``'s first passes when one plugin alone reads the node's pods: that
        plugin asked once for every node whose first pass reaches it, ``results`` (the plain pass)
        changed where the first pass rejects, the evaluations set to the node-by-node ones."""
        ev = self.evaluations
        keys = [key for _, key, _ in self.steps]
        index = self._index
        a = self._single
        p, _, adjusted = self.steps[a]
        assert adjusted is not None
        last = len(keys) - 1
        # the nodes whose first pass reaches the one plugin that reads pods
        todo: list[tuple[int, Sequence[PodInfo], Status | None, int]] = []
        for i, pis in nominated:
            plain = results[i]
            k2 = last + 1 if plain is None else index[plain.plugin]
            if k2 >= a:  # else the first pass rejects there too, the same way; counted alike
                todo.append((i, pis, plain, k2))
        answers = self._adjusted_many(p, adjusted, state, pod, nodes, todo)
        uncounted: dict[int, int] = {}  # k2 -> nodes whose plain pass, counted up to k2, did not run
        for (i, pis, plain, k2), s in zip(todo, answers, strict=True):
            if s is _RAISED:  # the general way turns it into the Error status
                results[i] = self._first_pass(state, pod, nodes[i], pis, plain)
                continue
            if s is None or s.code == Code.SUCCESS:
                if k2 == a:  # passes with more pods where it failed with fewer: the general way
                    results[i] = self._first_pass(state, pod, nodes[i], pis, plain)
                elif plain is None:  # both passes ran every plugin
                    for key in keys:
                        ev[key] += 1
                # else: the first pass stops where the plain one did (a plugin that ignores the pods)
                continue
            results[i] = filter_outcome(p.name, s)
            uncounted[k2] = uncounted.get(k2, 0) + 1
        for k2, count in uncounted.items():
            for j in range(a + 1, min(k2, last) + 1):  # the plain pass did not run after all
                ev[keys[j]] -= count
        return results

    @staticmethod
    def _adjusted_many(
        plugin: Any,
        adjusted: AdjustedFn,
        state: CycleState,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        todo: Sequence[tuple[int, Sequence[PodInfo], Status | None, int]],
    ) -> list[Any]:
        """The pod-reading plugin's answer on each ``todo`` node with its pods added: its
        ``filter_adjusted_many`` when it has one (one call for all), else ``filter_adjusted`` node by
        node; ``_RAISED`` where a call raised."""
        many = getattr(plugin, "filter_adjusted_many", None)
        if callable(many) and todo:
            try:
                out: list[Any] = many(state, pod, [nodes[t[0]] for t in todo], [t[1] for t in todo])
                return out
            except Exception:  # node by node below: each raising node then takes the general way
                pass
        answers: list[Any] = []
        for i, pis, _, _ in todo:
            try:
                answers.append(adjusted(state, pod, nodes[i], pis, ()))
            except Exception:
                answers.append(_RAISED)
        return answers

    def _first_pass(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, added: Sequence[PodInfo], plain: Status | None
    ) -> Status | None:
        """The nominated pods' pass on one node whose plain pass (already counted) answered ``plain``:
        the first pass's rejection if it rejects, else ``plain``."""
        steps = self.steps
        n = len(steps)
        k2 = n if plain is None else self._index[plain.plugin]
        ev = self.evaluations
        rejected: Status | None = None
        k1 = n
        for k, (p, _, adjusted) in enumerate(steps):
            if adjusted is None and k < k2:
                continue  # passes, as in the plain pass
            if adjusted is None and k == k2:
                rejected, k1 = plain, k
                break
            try:
                s = (
                    p.filter(state, pod, node_info)
                    if adjusted is None
                    else adjusted(state, pod, node_info, added, ())
                )
            except Exception as e:
                rejected, k1 = self._on_error(p.name, "Filter", e), k
                break
            if s is not None and s.code != Code.SUCCESS:
                rejected, k1 = filter_outcome(p.name, s), k
                break
        # node by node: the first pass counts its plugins up to k1; the plain pass (counted by the
        # batch up to k2) runs only if the first one passed
        if rejected is None:
            for _, key, _ in steps:
                ev[key] += 1
            return plain
        for k in range(min(k1, k2, n - 1) + 1, max(k1, min(k2, n - 1)) + 1):
            ev[steps[k][1]] += 1 if k1 > k2 else -1
        return rejected


def plan_adjusted_filter(
    state: CycleState,
    filter_plugins: Sequence[Any],
    pre_filter_exts: Sequence[tuple[Any, Any]],
    evaluations: dict[Any, int],
    on_error: ErrorFn,
) -> AdjustedFilter | None:
    """This cycle's AdjustedFilter, or None when a copy of the node is needed (see the module
    docstring). Kept in ``state``: decided once per cycle."""
    cached = state.get(STATE_KEY, False)
    if cached is not False:
        return cached  # type: ignore[no-any-return]
    plan = _plan(state.skip_filter_plugins, filter_plugins, pre_filter_exts, evaluations, on_error)
    state.write(STATE_KEY, plan)
    return plan


def _plan(
    skip: set[str],
    filter_plugins: Sequence[Any],
    pre_filter_exts: Sequence[tuple[Any, Any]],
    evaluations: dict[Any, int],
    on_error: ErrorFn,
) -> AdjustedFilter | None:
    if any(p.name not in skip for p, _ in pre_filter_exts):
        return None
    steps: list[tuple[Any, tuple[str, str], AdjustedFn | None]] = []
    for p in filter_plugins:
        if p.name in skip:
            continue
        if getattr(p, "filter_ignores_node_pods", False) is True:
            steps.append((p, (p.name, "Filter"), None))
            continue
        adjusted = getattr(p, "filter_adjusted", None)
        if not callable(adjusted):
            return None
        steps.append((p, (p.name, "Filter"), adjusted))
    return AdjustedFilter(steps, evaluations, on_error)
