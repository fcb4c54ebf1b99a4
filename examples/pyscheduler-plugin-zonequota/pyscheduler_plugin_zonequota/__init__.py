"""pyscheduler-plugin-zonequota: the ZoneQuota scheduler plugin for pyscheduler.

Installing this package registers ``PLUGIN`` under the ``pyscheduler.plugins`` entry-point group (see
pyproject.toml); pyscheduler finds it at start, and a profile enables it by name.
"""

from __future__ import annotations

from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.registry import PluginSpec

from .args import ZoneQuotaArgs
from .plugin import ERR_NO_ZONE, ERR_ZONE_FULL, NAME, ZoneCounts, ZoneQuota

__all__ = [
    "ERR_NO_ZONE",
    "ERR_ZONE_FULL",
    "NAME",
    "PLUGIN",
    "ZoneCounts",
    "ZoneQuota",
    "ZoneQuotaArgs",
    "new",
]


def new(args: ZoneQuotaArgs, handle: Handle) -> ZoneQuota:
    """The factory: pyscheduler calls it once per profile that enables ZoneQuota, with the decoded args."""
    return ZoneQuota(args, handle)


PLUGIN = PluginSpec(
    NAME,
    new,
    ZoneQuotaArgs,
    "at most maxPodsPerZone pods of a namespace per zone; prefers zones with fewer",
)
