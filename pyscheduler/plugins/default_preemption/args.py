"""DefaultPreemptionArgs: how many nodes the dry run must shortlist before it may stop."""

from __future__ import annotations

from dataclasses import dataclass

from pyscheduler.framework.plugin_args import ArgsError

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100


@dataclass(frozen=True)
class DefaultPreemptionArgs:
    """``minCandidateNodesPercentage`` (0-100, default 10) and ``minCandidateNodesAbsolute`` (>= 0,
    default 100): the dry run stops once it has found max(percentage of the potential nodes, absolute)
    candidates (at least one not violating a PodDisruptionBudget). They cannot both be 0."""

    min_candidate_nodes_percentage: int = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
    min_candidate_nodes_absolute: int = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE

    def validate(self, path: str) -> None:
        """kube's ValidateDefaultPreemptionArgs (the first error it reports)."""
        pct, absolute = self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        pct_path = f"{path}.minCandidateNodesPercentage"
        abs_path = f"{path}.minCandidateNodesAbsolute"
        if pct < 0 or pct > 100:
            raise ArgsError(pct_path, f"Invalid value: {pct}: not in valid range [0, 100]")
        if absolute < 0:
            raise ArgsError(abs_path, f"Invalid value: {absolute}: not in valid range [0, inf)")
        if pct == 0 and absolute == 0:
            raise ArgsError(
                pct_path,
                f"Invalid value: {pct}: cannot be zero at the same time as minCandidateNodesAbsolute",
            )

    def num_candidates(self, num_nodes: int) -> int:
        """kube's calculateNumCandidates: max(nodes * percentage / 100, absolute), at most ``num_nodes``."""
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        n = max(n, self.min_candidate_nodes_absolute)
        return min(n, num_nodes)
