"""``FitError``: no node fits the pod, and the FailedScheduling message users read about it.

kube-scheduler keeps FitError beside its framework types (types.go); the scheduling cycle raises it,
PostFilter (preemption) reads its diagnosis, and ``message`` words it as kube does: ``0/N nodes are
available:``, then the PreFilter message or each rejection reason with its node count, sorted, then what
PostFilter said.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyscheduler.framework.interfaces import Diagnosis
from pyscheduler.framework.types import Pod

NO_NODE_AVAILABLE = "0/{n} nodes are available"


@dataclass
class FitError(Exception):
    """No node fits: the FailedScheduling message users read."""

    pod: Pod
    num_all_nodes: int
    diagnosis: Diagnosis

    def __str__(self) -> str:
        return self.message()

    def message(self) -> str:
        msg = NO_NODE_AVAILABLE.format(n=self.num_all_nodes) + ":"
        d = self.diagnosis
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            counts: dict[str, int] = {}
            for st in d.node_to_status.values():
                for r in st.reasons:
                    counts[r] = counts.get(r, 0) + 1
            absent = self.num_all_nodes - len(d.node_to_status)
            if absent > 0 and d.absent_nodes_status is not None:
                for r in d.absent_nodes_status.reasons:
                    counts[r] = counts.get(r, 0) + absent
            parts = sorted(f"{v} {k}" for k, v in counts.items())
            if parts:
                msg += f" {', '.join(parts)}."
        if d.post_filter_msg:  # already ends with a period
            msg += f" {d.post_filter_msg}"
        return msg
