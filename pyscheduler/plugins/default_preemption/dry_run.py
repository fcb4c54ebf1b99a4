"""What a node's dry run must redo per step, decided once per preemption attempt.

kube's SelectVictimsOnNode clones the node and the cycle state, removes the lower-priority pods (telling
the PreFilter extensions), runs every Filter plugin (with nominated pods), and then, per pod it tries to
put back, every Filter plugin again. kube does that for ~100 candidate nodes on 16 goroutines; one
Python thread must do less per node while deciding the same. What can be left out without changing a
verdict:

- **Filter plugins that never look at the node's pods** (those that say so with
  ``filter_ignores_node_pods = True``, the flag ``framework/pods_adjusted.py`` reads too: node name,
  cordon, taints, node affinity, declared features, volume zones). Once the first Filter pass of a dry
  run (every pod of lower priority gone) has passed, they pass on that node at every later step: taking
  pods off and putting them back changes nothing they read. The reprieve steps run only the other
  plugins (``ReprieveFilter``) and count the left-out ones in ``scheduler_plugin_evaluation_total`` as
  the full pass would have: one evaluation each, up to the first plugin that rejects.
- **The PreFilter extensions** (RemovePod / AddPod) when every plugin that has them was skipped in this
  cycle's PreFilter: the framework would call none of them.
- **The clone of the cycle state** when, besides, every Filter plugin that runs is one whose Filter
  only reads the state (the pod-independent ones and NodeResourcesFit): nothing would change it.

- **Every step, when NodeResourcesFit is the only plugin left to re-run** and the pod asks for no
  scalar resource (``by_resources``): ``victims.victims_by_resources`` finds the victims with the
  plugin's arithmetic on the node's totals, and one Filter pass on a clone without those victims
  checks the outcome (a rejection sends the node back to the dry run above).

The first Filter pass of each dry run, and every step on a node that has pods of equal or higher
priority nominated to it, still go through the framework's ``run_filter_plugins_with_nominated_pods``,
so the statuses reported when no node can help are exactly the full pass's. Without a framework on
the handle (plugin tests with a stand-in) there is no plan and every step is the full one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.status import Code
from pyscheduler.framework.types import NodeInfo, Pod

# Depends on the node's pods (their requests and count) but only reads the cycle state in Filter.
RESOURCES_FIT = "NodeResourcesFit"

FilterFn = Callable[[CycleState, Pod, NodeInfo], Any]


class ReprieveFilter:
    """The Filter pass of a reprieve step with the pod-independent plugins left out (see the module
    docstring): whether the pod fits, the evaluations counted as a full pass would count them."""

    __slots__ = ("_last_dependent", "evaluations", "steps")

    def __init__(
        self, steps: Sequence[tuple[tuple[str, str], FilterFn | None]], evaluations: dict[Any, int]
    ) -> None:
        self.steps = tuple(steps)  # (evaluation key, Filter or None: passes here), in Filter order
        self.evaluations = evaluations
        dependent = [i for i, (_, f) in enumerate(self.steps) if f is not None]
        self._last_dependent = dependent[-1] if dependent else -1

    def dependent(self) -> list[str]:
        """The plugins a reprieve step runs."""
        return [key[0] for key, f in self.steps if f is not None]

    def count(self, fitted: Sequence[bool]) -> None:
        """Count the evaluations of reprieve steps decided without running them, when one plugin alone
        can reject (``dependent()`` has one name): a step that fitted evaluated every plugin, one that
        did not stopped at that plugin."""
        ev = self.evaluations
        n_fit = fitted.count(True)
        n_miss = len(fitted) - n_fit
        last = self._last_dependent
        for i, (key, _) in enumerate(self.steps):
            n = n_fit + n_miss if i <= last else n_fit
            if n:
                ev[key] = ev.get(key, 0) + n

    def fits(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> bool:
        ev = self.evaluations
        for key, f in self.steps:
            ev[key] = ev.get(key, 0) + 1
            if f is None:
                continue
            try:
                s = f(state, pod, node_info)
            except Exception:  # the full pass turns it into an Error status: not a fit either
                return False
            if s is not None and s.code != Code.SUCCESS:
                return False
        return True


@dataclass(frozen=True, slots=True)
class DryRunPlan:
    """What a dry run needs in this cycle."""

    clone_state: bool  # False: the dry run may use the cycle state itself (nothing changes it)
    run_extensions: bool  # False: no PreFilter extension would run (all their plugins skipped)
    reprieve: ReprieveFilter  # the reprieve steps' Filter pass
    # NodeResourcesFit is the only plugin whose verdict the dry run can change, nothing changes the
    # state: victims.victims_by_resources may find the victims (checked by one Filter pass)
    by_resources: bool = False


def plan_dry_run(framework: Any, state: CycleState) -> DryRunPlan | None:
    """The plan for this cycle (``state``'s skipped plugins), or None without a usable framework."""
    filter_plugins = getattr(framework, "filter_plugins", None)
    pre_filter_plugins = getattr(framework, "pre_filter_plugins", None)
    evaluations = getattr(framework, "evaluations", None)
    if filter_plugins is None or pre_filter_plugins is None or not isinstance(evaluations, dict):
        return None
    skip = state.skip_filter_plugins
    run_extensions = any(
        p.name not in skip and p.pre_filter_extensions() is not None for p in pre_filter_plugins
    )
    running = [p for p in filter_plugins if p.name not in skip]
    steps: list[tuple[tuple[str, str], FilterFn | None]] = [
        ((p.name, "Filter"), None if _ignores_node_pods(p) else p.filter) for p in running
    ]
    clone_state = run_extensions or not all(_ignores_node_pods(p) or _is_resources_fit(p) for p in running)
    reprieve = ReprieveFilter(steps, evaluations)
    by_resources = not clone_state and reprieve.dependent() == [RESOURCES_FIT]
    return DryRunPlan(clone_state, run_extensions, reprieve, by_resources)


def _ignores_node_pods(plugin: Any) -> bool:
    """The plugin's verdict on a node depends only on the pod, the Node object and its own PreFilter
    state, never on the node's pods, and its Filter does not write the cycle state: what its
    ``filter_ignores_node_pods`` flag says (``framework/pods_adjusted.py`` trusts the same flag)."""
    return getattr(plugin, "filter_ignores_node_pods", False) is True


def _is_resources_fit(plugin: Any) -> bool:
    """Our NodeResourcesFit (not an out-of-tree plugin registered under its name)."""
    return plugin.name == RESOURCES_FIT and type(plugin).__module__.startswith("pyscheduler.plugins.")
