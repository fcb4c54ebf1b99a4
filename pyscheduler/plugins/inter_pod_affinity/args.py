"""InterPodAffinity's args (``hardPodAffinityWeight``, ``ignorePreferredTermsOfExistingPods``) and
their validation with field paths."""

from __future__ import annotations

from dataclasses import dataclass

from pyscheduler.framework.plugin_args import ArgsError


@dataclass(frozen=True)
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False

    def validate(self, path: str) -> None:
        w = self.hard_pod_affinity_weight
        if w < 0 or w > 100:
            raise ArgsError(
                f"{path}.hardPodAffinityWeight", f"Invalid value: {w}: not in valid range [0, 100]"
            )
