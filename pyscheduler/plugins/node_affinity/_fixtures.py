"""NodeAffinity tests' shared support: node-selector term builders and a PreFilter-then-Filter driver."""

from typing import Any

from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.node_affinity import (
    NodeAffinity,
)
from pyscheduler.testing.builders import PodBuilder, make_cycle_state, make_node, make_node_info, make_pod

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def name_in(*names: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {REQ: {"nodeSelectorTerms": list(terms)}}}


def pod_required(*terms: dict[str, Any]) -> PodBuilder:
    return make_pod("p").affinity(required(*terms))


def code_of(status: Status | None) -> Code:
    return status.code if status else Code.SUCCESS


def run_filter(pl: NodeAffinity, pod: Pod, node_name: str, labels: dict[str, str]) -> Status | None:
    """PreFilter then Filter, as the framework would: Skip or a PreFilter rejection ends it."""
    info = make_node_info(make_node(node_name).labels(labels))
    state = make_cycle_state()
    result, status = pl.pre_filter(state, pod, [info])
    if status is not None:
        if status.is_skip():
            return None
        return status
    if result is not None and result.node_names is not None and node_name not in result.node_names:
        return Status.unresolvable("excluded by PreFilterResult")
    return pl.filter(state, pod, info)


ZONE_A = {"zone": "a"}

ADDED_REQUIRED = {REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("pool", "In", "batch")]}]}}


def pref(weight: int, *exprs: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "preference": {"matchExpressions": list(exprs)}}
