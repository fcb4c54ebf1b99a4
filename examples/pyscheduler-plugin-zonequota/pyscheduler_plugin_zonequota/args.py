"""ZoneQuota's arguments: what users write under ``pluginConfig[].args``.

pyscheduler turns the camelCase keys of the file into these snake_case fields, refuses unknown keys and
wrong types, then calls ``validate`` before the scheduler starts. An ``ArgsError`` names the field, so a
bad value stops ``pyscheduler run`` with a message such as
``profiles[0].pluginConfig[0].args.maxPodsPerZone: must be at least 1, got 0``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyscheduler.framework.plugin_args import ArgsError

DEFAULT_ZONE_LABEL = "topology.kubernetes.io/zone"


@dataclass(frozen=True)
class ZoneQuotaArgs:
    # At most this many pods of one namespace run in one zone.
    max_pods_per_zone: int = 10
    # The node label that names a node's zone.
    zone_label: str = DEFAULT_ZONE_LABEL
    # Only pods of these namespaces are limited; empty means every namespace.
    namespaces: tuple[str, ...] = ()

    def validate(self, path: str) -> None:
        if self.max_pods_per_zone < 1:
            raise ArgsError(f"{path}.maxPodsPerZone", f"must be at least 1, got {self.max_pods_per_zone}")
        if not self.zone_label:
            raise ArgsError(f"{path}.zoneLabel", "must not be empty")
        for i, namespace in enumerate(self.namespaces):
            if not namespace:
                raise ArgsError(f"{path}.namespaces[{i}]", "must not be empty")
