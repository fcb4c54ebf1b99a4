"""NodeResourcesFit PreFilter/Filter: requests against free capacity, init containers, overhead, extended
and ignored resources, kube's reasons."""

from typing import Any

import pytest

from pyscheduler.framework.plugin_args import decode_args
from pyscheduler.framework.status import Code
from pyscheduler.plugins.node_resources_fit import (
    NAME,
    PRE_FILTER_STATE_KEY,
    REASON_INSUFFICIENT_CPU,
    REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
    REASON_INSUFFICIENT_MEMORY,
    REASON_TOO_MANY_PODS,
    Fit,
    NodeResourcesFitArgs,
)
from pyscheduler.plugins.node_resources_fit._fixtures import (
    FOO,
    HUGE,
    code_of,
    node,
    run_filter,
)
from pyscheduler.testing.builders import (
    NodeBuilder,
    PodBuilder,
    make_cycle_state,
    make_node,
    make_node_info,
    make_pod,
)

# ----------------------------------------------------------------------------------------- Filter

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
OK = Code.SUCCESS

FILTER_CASES = [
    # (id, pod builder, node builder, existing pods, args, code, reasons)
    ("no requests fit", make_pod("p"), node(), [], None, OK, ()),
    (
        "no requests but pods full",
        make_pod("p"),
        node(pods=1),
        [make_pod("e")],
        None,
        U,
        (REASON_TOO_MANY_PODS,),
    ),
    (
        "node without pods allocatable",
        make_pod("p"),
        make_node("n1").capacity(cpu="4"),
        [],
        None,
        U,
        (REASON_TOO_MANY_PODS,),
    ),
    (
        "exact fit",
        make_pod("p").req(cpu="3", memory="6Gi"),
        node(),
        [make_pod("e").req(cpu="1", memory="2Gi")],
        None,
        OK,
        (),
    ),
    (
        "cpu short by existing pods",
        make_pod("p").req(cpu="1"),
        node(cpu="2"),
        [make_pod("e").req(cpu="1500m")],
        None,
        U,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "cpu above whole allocatable",
        make_pod("p").req(cpu="3"),
        node(cpu="2"),
        [],
        None,
        UU,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "memory short",
        make_pod("p").req(memory="5Gi"),
        node(),
        [make_pod("e").req(memory="4Gi")],
        None,
        U,
        (REASON_INSUFFICIENT_MEMORY,),
    ),
    (
        "memory above allocatable",
        make_pod("p").req(memory="9Gi"),
        node(),
        [],
        None,
        UU,
        (REASON_INSUFFICIENT_MEMORY,),
    ),
    (
        "ephemeral-storage short",
        make_pod("p").req(ephemeral_storage="2Gi"),
        node(ephemeral_storage="3Gi"),
        [make_pod("e").req(ephemeral_storage="2Gi")],
        None,
        U,
        (REASON_INSUFFICIENT_EPHEMERAL_STORAGE,),
    ),
    (
        "ephemeral-storage on node without it",
        make_pod("p").req(ephemeral_storage="1Gi"),
        node(),
        [],
        None,
        UU,
        (REASON_INSUFFICIENT_EPHEMERAL_STORAGE,),
    ),
    (
        "all reasons listed in kube's order",
        make_pod("p").req(cpu="2", memory="2Gi", ephemeral_storage="1"),
        node(cpu="2", memory="2Gi", pods=1, ephemeral_storage="1"),
        [make_pod("e").req(cpu="1", memory="1Gi", ephemeral_storage="1")],
        None,
        U,
        (
            REASON_TOO_MANY_PODS,
            REASON_INSUFFICIENT_CPU,
            REASON_INSUFFICIENT_MEMORY,
            REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
        ),
    ),
    (
        "one unresolvable makes all unresolvable",
        make_pod("p").req(cpu="1", memory="20Gi"),
        node(cpu="1"),
        [make_pod("e").req(cpu="500m")],
        None,
        UU,
        (REASON_INSUFFICIENT_CPU, REASON_INSUFFICIENT_MEMORY),
    ),
    (
        "extended resource fits",
        make_pod("p").res({FOO: 1}),
        node(**{FOO: 2}),
        [make_pod("e").res({FOO: 1})],
        None,
        OK,
        (),
    ),
    (
        "extended resource short",
        make_pod("p").res({FOO: 2}),
        node(**{FOO: 2}),
        [make_pod("e").res({FOO: 1})],
        None,
        U,
        ("Insufficient example.com/foo",),
    ),
    (
        "extended resource missing on node",
        make_pod("p").res({FOO: 1}),
        node(),
        [],
        None,
        UU,
        ("Insufficient example.com/foo",),
    ),
    (
        "extended resource in ignoredResources",
        make_pod("p").res({FOO: 1}),
        node(),
        [],
        {"ignoredResources": [FOO]},
        OK,
        (),
    ),
    (
        "extended resource in ignoredResourceGroups",
        make_pod("p").res({FOO: 1}),
        node(),
        [],
        {"ignoredResourceGroups": ["example.com"]},
        OK,
        (),
    ),
    (
        "other group not ignored",
        make_pod("p").res({FOO: 1}),
        node(),
        [],
        {"ignoredResourceGroups": ["example.org"]},
        UU,
        ("Insufficient example.com/foo",),
    ),
    (
        "ignored resource still counted for others",
        make_pod("p").req(cpu="5").res({FOO: 1}),
        node(),
        [],
        {"ignoredResources": [FOO]},
        UU,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "hugepages short",
        make_pod("p").res({HUGE: "4Mi"}),
        node(**{HUGE: "2Mi"}),
        [],
        None,
        UU,
        ("Insufficient hugepages-2Mi",),
    ),
    (
        "hugepages cannot be ignored (not extended)",
        make_pod("p").res({HUGE: "4Mi"}),
        node(),
        [],
        {"ignoredResources": [HUGE]},
        UU,
        ("Insufficient hugepages-2Mi",),
    ),
    (
        "kubernetes.io resource cannot be ignored by group",
        make_pod("p").res({"kubernetes.io/x": 1}),
        node(),
        [],
        {"ignoredResourceGroups": ["kubernetes.io"]},
        UU,
        ("Insufficient kubernetes.io/x",),
    ),
    ("zero extended request not checked", make_pod("p").res({FOO: 0}), node(), [], None, OK, ()),
    (
        "init container larger than containers",
        make_pod("p").req(cpu="1").init_req(cpu="3"),
        node(cpu="2"),
        [],
        None,
        UU,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "init container smaller than containers",
        make_pod("p").req(cpu="2").init_req(cpu="1"),
        node(cpu="2"),
        [],
        None,
        OK,
        (),
    ),
    (
        "sidecar adds to containers",
        make_pod("p").req(cpu="1500m").init_req(sidecar=True, cpu="1"),
        node(cpu="2"),
        [],
        None,
        UU,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "overhead adds to requests",
        make_pod("p").req(cpu="1500m").overhead(cpu="1"),
        node(cpu="2"),
        [],
        None,
        UU,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "existing pod's overhead counted",
        make_pod("p").req(cpu="1"),
        node(cpu="2"),
        [make_pod("e").req(cpu="500m").overhead(cpu="600m")],
        None,
        U,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "limits default requests",
        make_pod("p").res({"cpu": "3"}, limits=True),
        node(cpu="2"),
        [],
        None,
        UU,
        (REASON_INSUFFICIENT_CPU,),
    ),
]


@pytest.mark.parametrize(
    ("pod", "node_b", "existing", "raw_args", "code", "reasons"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(
    pod: PodBuilder,
    node_b: NodeBuilder,
    existing: list[PodBuilder],
    raw_args: dict[str, Any] | None,
    code: Code,
    reasons: tuple[str, ...],
) -> None:
    plugin = Fit(decode_args(NodeResourcesFitArgs, raw_args))
    info = make_node_info(node_b, *existing)
    status = run_filter(plugin, pod.obj(), info)
    assert code_of(status) == code
    if status is not None:
        assert status.reasons == reasons
        assert status.plugin == NAME


@pytest.mark.parametrize("prefilter", [True, False])
def test_filter_without_prefilter_state_is_computed(prefilter: bool) -> None:
    plugin = Fit()
    pod = make_pod("p").req(cpu="3").obj()
    status = run_filter(plugin, pod, make_node_info(node(cpu="2")), prefilter=prefilter)
    assert status is not None and status.reasons == (REASON_INSUFFICIENT_CPU,)


def test_prefilter_state_is_shared_by_clone() -> None:
    state = make_cycle_state()
    Fit().pre_filter(state, make_pod("p").req(cpu="1").obj(), [])
    assert state.clone().read(PRE_FILTER_STATE_KEY) is state.read(PRE_FILTER_STATE_KEY)
