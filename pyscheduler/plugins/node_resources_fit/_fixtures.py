"""NodeResourcesFit tests' shared support: a node builder, a PreFilter-then-Filter driver and the scoring
strategy args builder."""

from typing import Any

from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod
from pyscheduler.plugins.node_resources_fit import (
    Fit,
)
from pyscheduler.testing.builders import (
    NodeBuilder,
    make_cycle_state,
    make_node,
)

GI = 1024**3
FOO = "example.com/foo"
HUGE = "hugepages-2Mi"


def node(
    cpu: str | int = "4", memory: str | int = "8Gi", pods: str | int = 110, **extra: str | int
) -> NodeBuilder:
    b = make_node("n1").capacity(cpu=cpu, memory=memory, pods=pods)
    if extra:
        b.res({k.replace("_", "-"): v for k, v in extra.items()})
    return b


def run_filter(plugin: Fit, pod: Pod, info: NodeInfo, prefilter: bool = True) -> Status | None:
    state = make_cycle_state()
    if prefilter:
        result, status = plugin.pre_filter(state, pod, [info])
        assert result is None and status is None
    return plugin.filter(state, pod, info)


def code_of(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code


def strategy(
    type_: str, resources: list[dict[str, Any]] | None = None, shape: list[tuple[int, int]] | None = None
) -> dict[str, Any]:
    s: dict[str, Any] = {"type": type_}
    if resources is not None:
        s["resources"] = resources
    if shape is not None:
        s["requestedToCapacityRatio"] = {"shape": [{"utilization": u, "score": v} for u, v in shape]}
    return {"scoringStrategy": s}
