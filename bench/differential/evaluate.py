"""In-memory scores for judging ties: pyscheduler's framework, built from the same profile, run over the
cluster state kube-scheduler saw just before a pod was created."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from bench.differential.common import JSON, SCHEDULER_NAME
from bench.differential.records import Evaluation
from bench.differential.schedulers import configuration


class Evaluator:
    """pyscheduler's framework, built from the same profile, run over a listed cluster state."""

    def __init__(self) -> None:
        from pyscheduler.plugins.registry import full_registry, plugin_extension_points

        self.registry = full_registry()

        def points(name: str) -> set[str]:
            spec = self.registry.get(name)
            return plugin_extension_points(spec) if spec else set()

        self._points = points
        self._configs: dict[str, Any] = {}
        self.config = self.config_for(())

    def config_for(self, plugin_config: Sequence[JSON]) -> Any:
        """The parsed configuration with a scenario's pluginConfig (parsed once per distinct one)."""
        from pyscheduler.config.load import parse_config

        key = json.dumps(list(plugin_config), sort_keys=True)
        got = self._configs.get(key)
        if got is None:
            got = parse_config(configuration(None, plugin_config), self.registry, self._points)
            self._configs[key] = got
        return got

    def evaluate(
        self,
        nodes: Sequence[JSON],
        pods: Sequence[JSON],
        objects: Mapping[str, Sequence[JSON]],
        pod_json: JSON,
        plugin_config: Sequence[JSON] = (),
    ) -> Evaluation:
        from pyscheduler.app import build_frameworks
        from pyscheduler.backend.claims import ClaimTracker
        from pyscheduler.backend.objects import ObjectStore, slim
        from pyscheduler.backend.snapshot import Snapshot
        from pyscheduler.framework.clock import RealClock
        from pyscheduler.framework.cycle_state import CycleState
        from pyscheduler.framework.dra import ResourceClaim
        from pyscheduler.framework.runtime import FrameworkHandle
        from pyscheduler.framework.types import Node, Pod
        from pyscheduler.framework.waiting_pods import WaitingPods

        ev = Evaluation()
        try:
            snap = Snapshot.from_nodes(
                [Node.from_dict(copy.deepcopy(n)) for n in nodes],
                [
                    Pod.from_dict(copy.deepcopy(p))
                    for p in pods
                    if p["spec"].get("nodeName")
                    and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                ],
            )
            store = ObjectStore()
            claims = ClaimTracker()  # DynamicResources reads claims from the handle's assume cache
            for kind, items in objects.items():
                for o in items:
                    if kind == "ResourceClaim":
                        claims.on_add(ResourceClaim.from_dict(copy.deepcopy(o)))
                    else:
                        store.put(kind, slim(copy.deepcopy(o)))
            handle = FrameworkHandle(
                snapshot=snap,
                objects=store,
                client=None,
                waiting_pods=WaitingPods(),
                nominator=None,
                clock=RealClock(),
                extra={"claims": claims},
            )
            config = self.config_for(plugin_config)
            fwk = build_frameworks(config, self.registry, handle, None)[SCHEDULER_NAME]
            pod = Pod.from_dict(copy.deepcopy(pod_json))
            state = CycleState()
            all_nodes = list(snap.list())
            pre, s, _ = fwk.run_pre_filter_plugins(state, pod, all_nodes)
            if s is not None and not s.is_success():
                msg = "; ".join(s.reasons) or str(s.code)
                ev.rejected = {n.name: f"PreFilter {s.plugin}: {msg}" for n in all_nodes}
                return ev
            feasible = []
            for ni in all_nodes:
                if pre is not None and not pre.all_nodes() and ni.name not in (pre.node_names or ()):
                    ev.rejected[ni.name] = "not in PreFilterResult"
                    continue
                st = fwk.run_filter_plugins(state, pod, ni)
                if st is None or st.is_success():
                    feasible.append(ni)
                else:
                    ev.rejected[ni.name] = f"{st.plugin}: {'; '.join(st.reasons)}"
            ev.feasible = [n.name for n in feasible]
            if not feasible:
                return ev
            s = fwk.run_pre_score_plugins(state, pod, feasible)
            if s is not None and not s.is_success():
                ev.error = f"PreScore: {'; '.join(s.reasons)}"
                return ev
            scored, s = fwk.run_score_plugins(state, pod, feasible)
            if s is not None and not s.is_success():
                ev.error = f"Score: {'; '.join(s.reasons)}"
                return ev
            for name, total, detail in scored:
                ev.totals[name] = total
                ev.detail[name] = dict(detail)
        except Exception as e:  # a crash in a plugin is a finding, not a reason to stop the run
            ev.error = f"{type(e).__name__}: {e}"
        return ev
