"""The filtering extension points of ``Framework``: PreFilter (with its AddPod/RemovePod extensions),
Filter (one node, a batch of nodes, and kube's pass with nominated pods) and PostFilter.

- PreFilter: a Skip excludes that plugin's Filter for this pod; results are intersected; a rejection
  ends the cycle; PreFilter results that leave no node report which plugins narrowed the set;
- Filter: plugins in order, the first non-success decides the node (Error is fatal for the cycle). The
  batch pass runs plugin by plugin over the nodes every earlier plugin passed, each plugin's
  ``filter_nodes`` answering for all of them where it has one; node by node (preemption's what-if,
  nominated pods) Filter is not timed per plugin: that is the hot loop;
- PostFilter: runs only when no node fits; first success or first non-Unschedulable status wins.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.helpers.gofmt import go_string_slice
from pyscheduler.framework.interfaces import PostFilterResult, PreFilterResult
from pyscheduler.framework.node_table import NodeBatch
from pyscheduler.framework.pods_adjusted import AdjustedFilter, plan_adjusted_filter
from pyscheduler.framework.runtime_base import RuntimeBase
from pyscheduler.framework.status import Code, Status, filter_outcome, wrapped_error
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo


class FilterPoints(RuntimeBase):
    """PreFilter, Filter and PostFilter of ``Framework``."""

    def run_pre_filter_plugins(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Returns (merged result, status, plugins that rejected or narrowed the node set)."""
        start = t = time.perf_counter()
        result: PreFilterResult | None = None
        narrowed: set[str] = set()
        rejected: set[str] = set()
        status: Status | None = None
        ev = self.evaluations
        for p in self.pre_filter_plugins:
            try:
                r, s = p.pre_filter(state, pod, nodes)
            except Exception as e:
                t = self._took(p.name, "PreFilter", t, state, Code.ERROR)
                ev[(p.name, "PreFilter")] += 1
                status = self._error(p.name, "PreFilter", e)
                break
            t = self._took(p.name, "PreFilter", t, state, s)
            if s is not None and s.is_skip():
                state.skip_filter_plugins.add(p.name)
                continue
            ev[(p.name, "PreFilter")] += 1
            if s is not None and not s.is_success():
                if s.is_rejected():
                    s = s.with_plugin(p.name)
                    rejected.add(p.name)
                else:
                    s = wrapped_error("PreFilter", p.name, s)
                status = s
                break
            if r is not None and not r.all_nodes():
                narrowed.add(p.name)
                result = r if result is None else result.merge(r)
                if result.node_names is not None and not result.node_names:
                    status = Status.unschedulable(
                        f"node(s) didn't satisfy plugin(s) {go_string_slice(sorted(narrowed))} simultaneously"
                        if len(narrowed) > 1
                        else f"node(s) didn't satisfy plugin {next(iter(narrowed))}",
                    )
                    rejected |= narrowed
                    break
        self._observe("PreFilter", status, start, t)
        return result, status, rejected | narrowed

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        skip = state.skip_filter_plugins
        ev = self.evaluations
        for p, key in self._filter_keys:
            if skip and p.name in skip:
                continue
            ev[key] += 1
            try:
                s = p.filter(state, pod, node_info)
            except Exception as e:
                return self._error(p.name, "Filter", e)
            if s is not None and s.code != Code.SUCCESS:
                return filter_outcome(p.name, s)
        return None

    def run_filter_plugins_batch(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> list[Status | None]:
        """``run_filter_plugins`` for every node of ``nodes``, plugin by plugin: each plugin sees only the
        nodes every earlier plugin passed, so a node's status is that of the first plugin that rejects
        it, as node by node. Plugins with ``filter_nodes`` answer for all of them in one call. An Error
        status ends the pass (the cycle fails on it); nodes not reached are left None."""
        return self.run_filter_plugins_counted(state, pod, nodes)[0]

    def run_filter_plugins_counted(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[list[Status | None], int]:
        """``run_filter_plugins_batch`` and how many of its statuses are None (the nodes that passed),
        known without scanning them."""
        out: list[Status | None] = [None] * len(nodes)
        live = list(range(len(nodes)))
        sub: Sequence[NodeInfo] = nodes
        skip = state.skip_filter_plugins
        t = time.perf_counter()
        ev = self.evaluations
        for p, batch in self._filter_batch:
            if skip and p.name in skip:
                continue
            name = p.name
            ev[(name, "Filter")] += len(sub)
            try:
                if batch is not None:
                    results = batch(state, pod, sub)
                    if type(results) is not list:
                        results = list(results)
                else:
                    f = p.filter
                    results = [f(state, pod, ni) for ni in sub]
            except Exception as e:
                t = self._took(name, "Filter", t, state, Code.ERROR)
                err = self._error(name, "Filter", e)
                for i in live:
                    out[i] = err
                return out, 0
            t = self._took(name, "Filter", t, state)
            if len(results) != len(live):
                err = Status.as_error(
                    f"filter_nodes returned {len(results)} statuses for {len(live)} nodes", name
                )
                for i in live:
                    out[i] = err
                return out, 0
            # All passed (the common case): nothing to record. list.count(None) is a C loop while the
            # items are None; it would call Status.__eq__ on each rejection, so a list that starts with
            # one goes straight to the loop below.
            if not results or (results[0] is None and results.count(None) == len(results)):
                continue
            kept = _record_rejections(name, live, results, out)
            if kept is None:  # an error: the pass ends
                return out, sum(1 for x in out if x is None)
            if len(kept) != len(live):
                live = kept
                if not live:
                    break
                sub = _subset(nodes, live)
        return out, len(live)

    def run_filter_plugins_with_nominated_pods(
        self,
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        nominated: Sequence[PodInfo] | None = None,
    ) -> Status | None:
        """kube's RunFilterPluginsWithNominatedPods: if pods of equal or higher priority are nominated to
        this node, the pod must fit both with and without them (they may not land there after all).
        ``nominated``: those pods, when the caller has picked them already (see ``ge_nominated_pods``).

        The first pass runs on a clone of the node and an overlay of the state (``CycleState.overlay``:
        a value is cloned when a plugin first reads it, not every plugin's up front); ``state`` itself is
        left alone until that pass is over, so the overlay sees what a clone would."""
        if nominated is None:
            nominated = self.ge_nominated_pods(pod, node_info.name)
        if not nominated:
            return self.run_filter_plugins(state, pod, node_info)
        adjusted = self.adjusted_filter(state)
        if adjusted is not None:  # the same first pass, without the clones
            s = adjusted.run(state, pod, node_info, nominated)
            if s is not None and not s.is_success():
                return s
            return self.run_filter_plugins(state, pod, node_info)
        st = state.overlay()
        ni = node_info.clone()
        for pi in nominated:
            ni.add_pod(pi)
            s = self.run_pre_filter_extension_add_pod(st, pod, pi, ni)
            if s is not None and not s.is_success():
                return s
        s = self.run_filter_plugins(st, pod, ni)
        if s is not None and not s.is_success():
            return s
        return self.run_filter_plugins(state, pod, node_info)

    def adjusted_filter(self, state: CycleState) -> AdjustedFilter | None:
        """This cycle's Filter pass for a node with pods added or removed without a copy of it, when
        one is exact (``framework/pods_adjusted.py``)."""
        return plan_adjusted_filter(
            state, self.filter_plugins, self._pre_filter_exts, self.evaluations, self._error
        )

    def ge_nominated_pods(self, pod: Pod, node_name: str) -> list[PodInfo]:
        """The pods other than ``pod`` nominated to ``node_name`` with priority >= ``pod``'s (kube's
        addGENominatedPods): the ones the nominated-pods pass adds."""
        return ge_nominated(pod, self.handle.nominated_pods_for_node(node_name))

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension("add_pod", state, pod_to_schedule, pod_to_add, node_info)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension("remove_pod", state, pod_to_schedule, pod_to_remove, node_info)

    def _run_pre_filter_extension(
        self, method: str, state: CycleState, pod_to_schedule: Pod, other: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        point = "AddPod" if method == "add_pod" else "RemovePod"
        for p, ext in self._pre_filter_exts:
            if p.name in state.skip_filter_plugins:
                continue
            fn = ext.add_pod if method == "add_pod" else ext.remove_pod
            try:
                s = fn(state, pod_to_schedule, other, node_info)
            except Exception as e:
                return self._error(p.name, point, e)
            if s is not None and not s.is_success():
                return s.with_plugin(p.name)
        return None

    def run_post_filter_plugins(
        self, state: CycleState, pod: Pod, filtered: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        start = t = time.perf_counter()
        reasons: list[str] = []
        result: PostFilterResult | None = None
        final: Status | None = None
        for p in self.post_filter_plugins:
            try:
                r, s = p.post_filter(state, pod, filtered)
            except Exception as e:
                t = self._took(p.name, "PostFilter", t, state, Code.ERROR)
                final = self._error(p.name, "PostFilter", e)
                break
            t = self._took(p.name, "PostFilter", t, state, s)
            if s is None or s.is_success():
                final = Status.success()
                result = r
                break
            if s.code != Code.UNSCHEDULABLE:
                final = s.with_plugin(p.name)
                result = r
                break
            reasons.extend(s.reasons)
            if r is not None:
                result = r
        if final is None:
            final = Status.unschedulable(*reasons)
        self._observe("PostFilter", final, start, t)
        return result, final

    def filters_are_batched(self, state: CycleState) -> bool:
        """Whether every Filter plugin this cycle runs (those PreFilter did not skip) answers for many
        nodes in one call (``filter_nodes``): then checking a few nodes more than needed costs next to
        nothing, and the search may over-fetch."""
        skip = state.skip_filter_plugins
        return all(batch is not None or p.name in skip for p, batch in self._filter_batch)


def _record_rejections(
    name: str, live: Sequence[int], results: Sequence[Status | None], out: list[Status | None]
) -> list[int] | None:
    """One Filter plugin's answers for the nodes at positions ``live``: each rejection into ``out``
    (named for the plugin), the positions that passed returned. None if a Status is neither a success
    nor a rejection: its wrapped error is in ``out`` and the pass ends there."""
    kept: list[int] = []
    last: Status | None = None  # a batch hook may give many nodes one shared Status
    last_out: Status | None = None
    for i, s in zip(live, results, strict=True):
        if s is None or s.code == Code.SUCCESS:
            kept.append(i)
            continue
        if s is last:
            out[i] = last_out
            continue
        if not s.is_rejected():
            out[i] = wrapped_error("Filter", name, s)
            return None
        last = s
        last_out = out[i] = s if s.plugin == name else s.with_plugin(name)
    return kept


def _subset(nodes: Sequence[NodeInfo], idx: list[int]) -> Sequence[NodeInfo]:
    """nodes[i] for i in idx, still a NodeBatch (rows carried over) when ``nodes`` is one."""
    if isinstance(nodes, NodeBatch):
        return nodes.subset(idx)
    return [nodes[i] for i in idx]


def ge_nominated(pod: Pod, nominated: Iterable[PodInfo]) -> list[PodInfo]:
    """Of the pods nominated to a node, those other than ``pod`` with priority >= ``pod``'s (kube's
    addGENominatedPods): the ones the nominated-pods pass adds."""
    uid, priority = pod.uid, pod.priority
    return [pi for pi in nominated if pi.pod.uid != uid and pi.pod.priority >= priority]
