"""PodTopologySpread's args (``defaultConstraints``, ``defaultingType``), their validation with field
paths, and the constants the constraints are spelled with."""

from __future__ import annotations

import re
from dataclasses import dataclass

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


_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def label_name_error(key: str) -> str | None:
    """Why ``key`` is not a valid label name (apimachinery's IsQualifiedName), or None."""
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return "prefix part must be non-empty"
        if len(prefix) > 253:
            return "prefix part must be no more than 253 characters"
        if not _DNS1123_SUBDOMAIN.match(prefix):
            return "prefix part must be a lowercase RFC 1123 subdomain"
    else:
        return (
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', "
            "with an optional DNS subdomain prefix and '/'"
        )
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _QUALIFIED_NAME.match(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


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
            err = label_name_error(key)
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
            if mlk is not None and (
                not isinstance(mlk, list | tuple) or not all(isinstance(k, str) for k in mlk)
            ):
                raise ArgsError(f"{p}.matchLabelKeys", "must be a list of strings")
            if (key, when) in seen:
                raise ArgsError(p, f"Duplicate value: {{{key}, {when}}}")
            seen.add((key, when))
