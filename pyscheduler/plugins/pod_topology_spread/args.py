"""PodTopologySpread's args (``defaultConstraints``, ``defaultingType``), their validation with field
paths, and the constants the constraints are spelled with."""

from __future__ import annotations

from dataclasses import dataclass

from pyscheduler.framework.helpers.names import qualified_name_error
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.types import JSON

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

SYSTEM_DEFAULT_CONSTRAINTS: tuple[JSON, ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)


@dataclass(frozen=True)
class PodTopologySpreadArgs:
    """``defaultConstraints`` (v1 TopologySpreadConstraint JSON, without labelSelector) and
    ``defaultingType`` ("System": kube's built-in defaults; "List": ``defaultConstraints``)."""

    default_constraints: tuple[JSON, ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING

    def validate(self, path: str) -> None:
        if self.defaulting_type not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            raise ArgsError(
                f"{path}.defaultingType",
                f'Unsupported value: "{self.defaulting_type}": supported values: "System", "List"',
            )
        if self.defaulting_type == SYSTEM_DEFAULTING and self.default_constraints:
            raise ArgsError(
                f"{path}.defaultingType",
                'Invalid value: "System": when .defaultConstraints are not empty',
            )
        seen: set[tuple[str, str]] = set()
        for i, c in enumerate(self.default_constraints):
            p = f"{path}.defaultConstraints[{i}]"
            key, when = _validate_default_constraint(c, p)
            if (key, when) in seen:
                raise ArgsError(p, f"Duplicate value: {{{key}, {when}}}")
            seen.add((key, when))


def _validate_default_constraint(c: JSON, p: str) -> tuple[str, str]:
    """One of ``defaultConstraints`` (at path ``p``) as kube's validation checks it; returns its
    (topologyKey, whenUnsatisfiable) for the duplicate check."""
    skew = c.get("maxSkew")
    if isinstance(skew, bool) or not isinstance(skew, int):
        raise ArgsError(f"{p}.maxSkew", f"must be an integer, got {skew!r}")
    if skew <= 0:
        raise ArgsError(f"{p}.maxSkew", f"Invalid value: {skew}: not in valid range (0, inf)")
    key = c.get("topologyKey")
    if not key:
        raise ArgsError(f"{p}.topologyKey", "Required value: can not be empty")
    if not isinstance(key, str):
        raise ArgsError(f"{p}.topologyKey", f"must be a string, got {key!r}")
    err = qualified_name_error(key)
    if err:
        raise ArgsError(f"{p}.topologyKey", f'Invalid value: "{key}": {err}')
    when = c.get("whenUnsatisfiable")
    if not when:
        raise ArgsError(f"{p}.whenUnsatisfiable", "Required value: can not be empty")
    if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        raise ArgsError(
            f"{p}.whenUnsatisfiable",
            f'Unsupported value: "{when}": supported values: "DoNotSchedule", "ScheduleAnyway"',
        )
    if c.get("labelSelector") is not None:
        raise ArgsError(
            f"{p}.labelSelector",
            "Forbidden: constraint must not define a selector, as they deduced for each pod",
        )
    md = c.get("minDomains")
    if md is not None and (isinstance(md, bool) or not isinstance(md, int) or md <= 0):
        raise ArgsError(f"{p}.minDomains", f"Invalid value: {md!r}: must be greater than zero")
    for field_name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        v = c.get(field_name)
        if v is not None and v not in (HONOR, IGNORE):
            raise ArgsError(
                f"{p}.{field_name}", f'Unsupported value: "{v}": supported values: "Honor", "Ignore"'
            )
    mlk = c.get("matchLabelKeys")
    if mlk is not None and (not isinstance(mlk, list | tuple) or not all(isinstance(k, str) for k in mlk)):
        raise ArgsError(f"{p}.matchLabelKeys", "must be a list of strings")
    return key, when
