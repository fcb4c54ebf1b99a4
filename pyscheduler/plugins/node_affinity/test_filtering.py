"""NodeAffinity PreFilter/Filter: nodeSelector, required terms, matchFields, and the profile's addedAffinity."""

import pytest

from pyscheduler.framework.interfaces import PreFilterResult
from pyscheduler.framework.status import Code
from pyscheduler.plugins.node_affinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NAME,
    PRE_FILTER_STATE_KEY,
    NodeAffinity,
    NodeAffinityArgs,
)
from pyscheduler.plugins.node_affinity._fixtures import (
    ADDED_REQUIRED,
    PREF,
    REQ,
    UNRESOLVABLE,
    ZONE_A,
    code_of,
    expr,
    name_in,
    pod_required,
    required,
    run_filter,
)
from pyscheduler.testing.builders import PodBuilder, make_cycle_state, make_node, make_node_info, make_pod


@pytest.mark.parametrize(
    ("pod", "node_name", "labels", "code"),
    [
        pytest.param(make_pod("p"), "n1", {}, Code.SUCCESS, id="no constraints"),
        pytest.param(
            make_pod("p").node_selector(ZONE_A), "n1", ZONE_A, Code.SUCCESS, id="nodeSelector match"
        ),
        pytest.param(
            make_pod("p").node_selector(ZONE_A), "n1", {"zone": "b"}, UNRESOLVABLE, id="nodeSelector value"
        ),
        pytest.param(
            make_pod("p").node_selector(ZONE_A), "n1", {}, UNRESOLVABLE, id="nodeSelector missing label"
        ),
        pytest.param(
            make_pod("p").node_selector({"zone": "a", "disk": "ssd"}),
            "n1",
            ZONE_A,
            UNRESOLVABLE,
            id="nodeSelector needs every label",
        ),
        pytest.param(
            pod_required({"matchExpressions": [expr("zone", "In", "a", "b")]}), "n1", ZONE_A, Code.SUCCESS
        ),
        pytest.param(
            pod_required({"matchExpressions": [expr("zone", "In", "b")]}),
            "n1",
            ZONE_A,
            UNRESOLVABLE,
            id="In miss",
        ),
        pytest.param(
            pod_required({"matchExpressions": [expr("zone", "NotIn", "b")]}),
            "n1",
            ZONE_A,
            Code.SUCCESS,
            id="NotIn",
        ),
        pytest.param(
            pod_required({"matchExpressions": [expr("zone", "NotIn", "b")]}),
            "n1",
            {},
            Code.SUCCESS,
            id="NotIn matches a node without the label",
        ),
        pytest.param(
            pod_required({"matchExpressions": [expr("zone", "NotIn", "a")]}),
            "n1",
            ZONE_A,
            UNRESOLVABLE,
            id="NotIn x",
        ),
        pytest.param(
            pod_required({"matchExpressions": [expr("gpu", "Exists")]}),
            "n1",
            {"gpu": ""},
            Code.SUCCESS,
            id="Exists",
        ),
        pytest.param(
            pod_required({"matchExpressions": [expr("gpu", "DoesNotExist")]}),
            "n1",
            {"gpu": "1"},
            UNRESOLVABLE,
            id="DoesNotExist",
        ),
        pytest.param(
            pod_required({"matchExpressions": [expr("cores", "Gt", "8")]}),
            "n1",
            {"cores": "16"},
            Code.SUCCESS,
            id="Gt",
        ),
        pytest.param(
            pod_required({"matchExpressions": [expr("cores", "Gt", "8")]}),
            "n1",
            {"cores": "8"},
            UNRESOLVABLE,
            id="Gt=",
        ),
        pytest.param(
            pod_required({"matchExpressions": [expr("cores", "Lt", "8")]}),
            "n1",
            {"cores": "4"},
            Code.SUCCESS,
            id="Lt",
        ),
        pytest.param(
            pod_required({"matchExpressions": [expr("cores", "Lt", "8")]}),
            "n1",
            {"cores": "four"},
            UNRESOLVABLE,
            id="Lt on a non-integer label",
        ),
        pytest.param(
            pod_required({"matchExpressions": [expr("zone", "In", "a"), expr("gpu", "Exists")]}),
            "n1",
            ZONE_A,
            UNRESOLVABLE,
            id="expressions of a term are ANDed",
        ),
        pytest.param(
            pod_required(
                {"matchExpressions": [expr("zone", "In", "b")]},
                {"matchExpressions": [expr("zone", "In", "a")]},
            ),
            "n1",
            ZONE_A,
            Code.SUCCESS,
            id="terms are ORed",
        ),
        pytest.param(pod_required(), "n1", ZONE_A, UNRESOLVABLE, id="no terms match nothing"),
        pytest.param(
            pod_required({"matchExpressions": []}),
            "n1",
            ZONE_A,
            UNRESOLVABLE,
            id="an empty term matches nothing",
        ),
        pytest.param(
            pod_required(
                {"matchExpressions": [expr("zone", "Bogus", "a")]},
                {"matchExpressions": [expr("zone", "In", "a")]},
            ),
            "n1",
            ZONE_A,
            Code.SUCCESS,
            id="a term that does not parse is ignored, others count",
        ),
        pytest.param(
            pod_required({"matchExpressions": [expr("zone", "In")]}),
            "n1",
            ZONE_A,
            UNRESOLVABLE,
            id="In without values never matches",
        ),
        pytest.param(
            make_pod("p")
            .node_selector(ZONE_A)
            .affinity(required({"matchExpressions": [expr("gpu", "Exists")]})),
            "n1",
            ZONE_A,
            UNRESOLVABLE,
            id="nodeSelector AND affinity: affinity fails",
        ),
        pytest.param(
            make_pod("p")
            .node_selector({"zone": "b"})
            .affinity(required({"matchExpressions": [expr("zone", "In", "a")]})),
            "n1",
            ZONE_A,
            UNRESOLVABLE,
            id="nodeSelector AND affinity: selector fails",
        ),
        pytest.param(
            pod_required({"matchFields": [name_in("n1")]}), "n1", {}, Code.SUCCESS, id="matchFields name"
        ),
        pytest.param(
            pod_required({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}),
            "n1",
            {},
            UNRESOLVABLE,
            id="matchFields NotIn",
        ),
        pytest.param(
            pod_required({"matchFields": [name_in("n1")], "matchExpressions": [expr("zone", "In", "b")]}),
            "n1",
            ZONE_A,
            UNRESOLVABLE,
            id="fields AND expressions",
        ),
        pytest.param(
            make_pod("p").affinity({"nodeAffinity": {REQ: {}}}),
            "n1",
            ZONE_A,
            UNRESOLVABLE,
            id="required {} selects none",
        ),
        pytest.param(
            make_pod("p").affinity({"nodeAffinity": {PREF: []}}),
            "n1",
            ZONE_A,
            Code.SUCCESS,
            id="only preferred",
        ),
    ],
)
def test_filter(pod: PodBuilder, node_name: str, labels: dict[str, str], code: Code) -> None:
    status = run_filter(NodeAffinity(), pod.obj(), node_name, labels)
    assert code_of(status) == code
    if status:
        assert status.reasons == (ERR_REASON_POD,)
        assert status.plugin == NAME


@pytest.mark.parametrize(
    ("pod", "skip", "names"),
    [
        pytest.param(make_pod("p"), True, None, id="nothing to check: Skip"),
        pytest.param(
            make_pod("p").affinity({"nodeAffinity": {PREF: []}}), True, None, id="preferred only: Skip"
        ),
        pytest.param(make_pod("p").node_selector(ZONE_A), False, None, id="nodeSelector: all nodes"),
        pytest.param(
            pod_required({"matchExpressions": [expr("zone", "In", "a")]}), False, None, id="labels only"
        ),
        pytest.param(
            pod_required({"matchFields": [name_in("n1", "n2")]}), False, {"n1", "n2"}, id="one term"
        ),
        pytest.param(
            pod_required({"matchFields": [name_in("n1")]}, {"matchFields": [name_in("n2")]}),
            False,
            {"n1", "n2"},
            id="union of terms",
        ),
        pytest.param(
            pod_required({"matchFields": [name_in("n1", "n2"), name_in("n2", "n3")]}),
            False,
            {"n2"},
            id="intersection within a term",
        ),
        pytest.param(
            pod_required({"matchFields": [name_in("n1")]}, {"matchExpressions": [expr("zone", "In", "a")]}),
            False,
            None,
            id="a term without names allows all nodes",
        ),
        pytest.param(
            pod_required({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}),
            False,
            None,
            id="NotIn does not narrow",
        ),
    ],
)
def test_pre_filter_result(pod: PodBuilder, skip: bool, names: set[str] | None) -> None:
    state = make_cycle_state()
    result, status = NodeAffinity().pre_filter(state, pod.obj(), [])
    if skip:
        assert status is not None and status.is_skip()
        assert state.get(PRE_FILTER_STATE_KEY) is None
        return
    assert status is None
    assert state.get(PRE_FILTER_STATE_KEY) is not None
    if names is None:
        assert result is None
    else:
        assert result == PreFilterResult(frozenset(names))


def test_pre_filter_conflicting_names() -> None:
    pod = pod_required({"matchFields": [name_in("n1"), name_in("n2")]}).obj()
    result, status = NodeAffinity().pre_filter(make_cycle_state(), pod, [])
    assert result is None
    assert status is not None
    assert status.code == UNRESOLVABLE
    assert status.reasons == (ERR_REASON_CONFLICT,)


def test_filter_without_pre_filter_state() -> None:
    pod = make_pod("p").node_selector(ZONE_A).obj()
    pl = NodeAffinity()
    assert pl.filter(make_cycle_state(), pod, make_node_info(make_node("n1").labels(ZONE_A))) is None
    status = pl.filter(make_cycle_state(), pod, make_node_info(make_node("n2")))
    assert code_of(status) == UNRESOLVABLE


# ------------------------------------------------------------------------------------- addedAffinity


@pytest.mark.parametrize(
    ("pod", "labels", "reason"),
    [
        pytest.param(make_pod("p"), {"pool": "batch"}, None, id="plain pod on an enforced node"),
        pytest.param(make_pod("p"), {}, ERR_REASON_ENFORCED, id="plain pod elsewhere"),
        pytest.param(
            make_pod("p").node_selector(ZONE_A), {"pool": "batch"}, ERR_REASON_POD, id="pod's own rules"
        ),
        pytest.param(
            make_pod("p").node_selector(ZONE_A), ZONE_A, ERR_REASON_ENFORCED, id="enforced checked first"
        ),
        pytest.param(
            make_pod("p").node_selector(ZONE_A), {"pool": "batch", "zone": "a"}, None, id="both match"
        ),
    ],
)
def test_added_required_affinity(pod: PodBuilder, labels: dict[str, str], reason: str | None) -> None:
    pl = NodeAffinity(NodeAffinityArgs(added_affinity=ADDED_REQUIRED))
    status = run_filter(pl, pod.obj(), "n1", labels)
    if reason is None:
        assert status is None
    else:
        assert status is not None
        assert status.code == UNRESOLVABLE
        assert status.reasons == (reason,)


def test_added_required_affinity_disables_skip() -> None:
    pl = NodeAffinity(NodeAffinityArgs(added_affinity=ADDED_REQUIRED))
    _, status = pl.pre_filter(make_cycle_state(), make_pod("p").obj(), [])
    assert status is None
    pl = NodeAffinity(NodeAffinityArgs(added_affinity={PREF: [{"weight": 1, "preference": {}}]}))
    _, status = pl.pre_filter(make_cycle_state(), make_pod("p").obj(), [])
    assert status is not None and status.is_skip()  # preferred-only added affinity does not filter
