import random
from collections.abc import Callable, Sequence
from typing import Any, cast

import pytest

from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from pyscheduler.framework.helpers.names import label_value_error, qualified_name_error
from pyscheduler.framework.interfaces import Handle, NodeScore, PreFilterResult
from pyscheduler.framework.node_table import NodeBatch, NodeTable
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod
from pyscheduler.plugins.node_affinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NAME,
    PLUGIN,
    PRE_FILTER_STATE_KEY,
    NodeAffinity,
    NodeAffinityArgs,
)
from pyscheduler.plugins.node_affinity import batch as batch_mod
from pyscheduler.testing import score_list
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

ADDED_REQUIRED = {REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("pool", "In", "batch")]}]}}


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


# ------------------------------------------------------------------------------------------- Score


def pref(weight: int, *exprs: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "preference": {"matchExpressions": list(exprs)}}


NODES = {
    "n1": {"zone": "a", "disk": "ssd"},
    "n2": {"zone": "a"},
    "n3": {"zone": "b", "disk": "ssd"},
    "n4": {},
}


@pytest.mark.parametrize(
    ("pod_pref", "added_pref", "expected"),
    [
        pytest.param(None, None, None, id="no preferences: Skip"),
        pytest.param([], None, {"n1": 0, "n2": 0, "n3": 0, "n4": 0}, id="empty list scores zero"),
        pytest.param(
            [pref(10, expr("zone", "In", "a"))], None, {"n1": 100, "n2": 100, "n3": 0, "n4": 0}, id="one term"
        ),
        pytest.param(
            [pref(30, expr("zone", "In", "a")), pref(70, expr("disk", "In", "ssd"))],
            None,
            {"n1": 100, "n2": 30, "n3": 70, "n4": 0},
            id="weights add up",
        ),
        pytest.param(
            [pref(2, expr("zone", "In", "a")), pref(1, expr("disk", "In", "ssd"))],
            None,
            {"n1": 100, "n2": 66, "n3": 33, "n4": 0},
            id="normalized with integer division",
        ),
        pytest.param(
            [pref(0, expr("zone", "In", "a")), pref(5, expr("disk", "Exists"))],
            None,
            {"n1": 100, "n2": 0, "n3": 100, "n4": 0},
            id="weight 0 ignored",
        ),
        pytest.param(
            [pref(5, expr("zone", "In", "a"), expr("disk", "Exists"))],
            None,
            {"n1": 100, "n2": 0, "n3": 0, "n4": 0},
            id="expressions ANDed",
        ),
        pytest.param(
            None,
            [pref(50, expr("disk", "In", "ssd"))],
            {"n1": 100, "n2": 0, "n3": 100, "n4": 0},
            id="added preferred alone",
        ),
        pytest.param(
            [pref(50, expr("zone", "In", "a"))],
            [pref(25, expr("disk", "In", "ssd"))],
            {"n1": 100, "n2": 66, "n3": 33, "n4": 0},
            id="added preferred adds to the pod's",
        ),
        pytest.param(
            [{"weight": 10, "preference": {"matchFields": [name_in("n4")]}}],
            None,
            {"n1": 0, "n2": 0, "n3": 0, "n4": 100},
            id="matchFields in preferences",
        ),
    ],
)
def test_score(
    pod_pref: list[dict[str, Any]] | None,
    added_pref: list[dict[str, Any]] | None,
    expected: dict[str, int] | None,
) -> None:
    added = {PREF: added_pref} if added_pref is not None else None
    pl = NodeAffinity(NodeAffinityArgs(added_affinity=added))
    b = make_pod("p")
    if pod_pref is not None:
        b.affinity({"nodeAffinity": {PREF: pod_pref}})
    pod = b.obj()
    infos = [make_node_info(make_node(n).labels(labels)) for n, labels in NODES.items()]
    state = make_cycle_state()
    status = pl.pre_score(state, pod, infos)
    if expected is None:
        assert status is not None and status.is_skip()
        return
    assert status is None
    scores = []
    for info in infos:
        s, st = pl.score(state, pod, info)
        assert st is None
        scores.append(NodeScore(info.name, s))
    ext = pl.score_extensions()
    assert ext is not None
    assert ext.normalize_score(state, pod, scores) is None
    assert {s.name: s.score for s in scores} == expected


def test_raw_score_and_score_without_pre_score() -> None:
    pod = (
        make_pod("p")
        .preferred_node_affinity(30, "zone", ["a"])
        .preferred_node_affinity(20, "disk", ["ssd"])
        .obj()
    )
    info = make_node_info(make_node("n1").labels(NODES["n1"]))
    assert NodeAffinity().score(make_cycle_state(), pod, info) == (50, None)


def test_pre_score_error_on_unparsable_preference() -> None:
    pod = make_pod("p").affinity({"nodeAffinity": {PREF: [pref(5, expr("cores", "Gt", "many"))]}}).obj()
    status = NodeAffinity().pre_score(make_cycle_state(), pod, [])
    assert status is not None and status.code == Code.ERROR


# -------------------------------------------------------------------------------------------- args

ARGS_PATH = "profiles[0].pluginConfig[0].args"
A = f"{ARGS_PATH}.addedAffinity"
T0 = f"{A}.{REQ}.nodeSelectorTerms[0]"


@pytest.mark.parametrize(
    ("added", "path"),
    [
        pytest.param(
            {REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "Near", "a")]}]}},
            f"{T0}.matchExpressions[0].operator",
            id="unknown operator",
        ),
        pytest.param(
            {REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In")]}]}},
            f"{T0}.matchExpressions[0].values",
            id="In without values",
        ),
        pytest.param(
            {REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "Exists", "a")]}]}},
            f"{T0}.matchExpressions[0].values",
            id="Exists with values",
        ),
        pytest.param(
            {REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("cores", "Gt", "many")]}]}},
            f"{T0}.matchExpressions[0].values",
            id="Gt needs an integer",
        ),
        pytest.param(
            {REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("-bad-", "Exists")]}]}},
            f"{T0}.matchExpressions[0].key",
            id="invalid label key",
        ),
        pytest.param(
            {REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "not ok")]}]}},
            f"{T0}.matchExpressions[0].values[0]",
            id="invalid label value",
        ),
        pytest.param(
            {
                REQ: {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]}
                    ]
                }
            },
            f"{T0}.matchFields[0].key",
            id="matchFields only on metadata.name",
        ),
        pytest.param(
            {REQ: {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}]}},
            f"{T0}.matchFields[0].operator",
            id="matchFields only In/NotIn",
        ),
        pytest.param(
            {REQ: {"nodeSelectorTerms": [{"matchFields": [name_in("a", "b")]}]}},
            f"{T0}.matchFields[0].values",
            id="matchFields In takes one value",
        ),
        pytest.param(
            {
                REQ: {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [expr("zone", "In", "a")]},
                        {"matchLabels": {}},
                    ]
                }
            },
            f"{A}.{REQ}.nodeSelectorTerms[1].matchLabels",
            id="unknown term field",
        ),
        pytest.param(
            {"requiredDuringSchedulingRequiredDuringExecution": {}},
            f"{A}.requiredDuringSchedulingRequiredDuringExecution",
            id="unknown field",
        ),
        pytest.param({REQ: {"terms": []}}, f"{A}.{REQ}.terms", id="unknown selector field"),
        pytest.param({REQ: {"nodeSelectorTerms": {}}}, f"{A}.{REQ}.nodeSelectorTerms", id="terms not a list"),
        pytest.param(
            {PREF: [{"weight": "10", "preference": {"matchExpressions": [expr("zone", "In", "a")]}}]},
            f"{A}.{PREF}[0].weight",
            id="weight not an integer",
        ),
        pytest.param(
            {PREF: [pref(1, expr("zone", "In", "a")), pref(1, expr("zone", "Bad", "a"))]},
            f"{A}.{PREF}[1].preference.matchExpressions[0].operator",
            id="bad preferred term",
        ),
        pytest.param({PREF: {}}, f"{A}.{PREF}", id="preferred not a list"),
        pytest.param(5, A, id="not an object"),
    ],
)
def test_bad_args_name_the_field(added: Any, path: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode({"addedAffinity": added}, ARGS_PATH)
    assert e.value.path == path
    assert str(e.value).startswith(path + ": ")


@pytest.mark.parametrize(
    "added",
    [
        pytest.param(None, id="none"),
        pytest.param(ADDED_REQUIRED, id="required"),
        pytest.param({REQ: {"nodeSelectorTerms": []}}, id="required without terms"),
        pytest.param({PREF: [pref(10, expr("zone", "In", "a")), {"weight": 0}]}, id="preferred"),
        pytest.param(
            {
                REQ: {
                    "nodeSelectorTerms": [
                        {"matchFields": [name_in("n1")], "matchExpressions": [expr("a/b", "Exists")]}
                    ]
                }
            },
            id="fields and prefixed key",
        ),
    ],
)
def test_good_args(added: Any) -> None:
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeAffinityArgs"}
    if added is not None:
        raw["addedAffinity"] = added
    args = PLUGIN.decode(raw, ARGS_PATH)
    assert isinstance(args, NodeAffinityArgs)
    assert args.added_affinity == added
    assert isinstance(PLUGIN.new(args, cast(Handle, cast(Any, None))), NodeAffinity)


def test_default_args() -> None:
    args = PLUGIN.decode(None, ARGS_PATH)
    assert args == NodeAffinityArgs()
    assert PLUGIN.name == "NodeAffinity"


def test_required_without_terms_rejects_every_node() -> None:
    pl = NodeAffinity(NodeAffinityArgs(added_affinity={REQ: {"nodeSelectorTerms": []}}))
    status = run_filter(pl, make_pod("p").obj(), "n1", ZONE_A)
    assert status is not None and status.reasons == (ERR_REASON_ENFORCED,)


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("zone", True),
        ("topology.kubernetes.io/zone", True),
        ("a_b.c-d", True),
        ("", False),
        ("/zone", False),
        ("Example.com/zone", False),
        ("a/b/c", False),
        ("-zone", False),
        ("x" * 63, True),
        ("x" * 64, False),
    ],
)
def test_qualified_name(key: str, ok: bool) -> None:
    assert (qualified_name_error(key) is None) is ok


@pytest.mark.parametrize(("value", "ok"), [("", True), ("a.b-c_d", True), ("a b", False), ("x" * 64, False)])
def test_label_value(value: str, ok: bool) -> None:
    assert (label_value_error(value) is None) is ok


# ------------------------------------------------------------------------------------------ events


def test_events_registered() -> None:
    (registered,) = NodeAffinity().events_to_register()
    assert ClusterEvent(Resource.NODE, Action.ADD).matches(registered.event)
    assert ClusterEvent(Resource.NODE, Action.UPDATE_NODE_LABEL).matches(registered.event)
    assert not ClusterEvent(Resource.NODE, Action.UPDATE_NODE_TAINT).matches(registered.event)
    assert registered.hint is not None


PodFn = Callable[[], PodBuilder]


@pytest.mark.parametrize(
    ("pod", "added", "old", "new", "hint"),
    [
        pytest.param(
            lambda: make_pod("p").node_selector(ZONE_A),
            None,
            None,
            ZONE_A,
            QueueingHint.QUEUE,
            id="added, matches",
        ),
        pytest.param(
            lambda: make_pod("p").node_selector(ZONE_A),
            None,
            None,
            {},
            QueueingHint.SKIP,
            id="added, no match",
        ),
        pytest.param(
            lambda: make_pod("p").node_selector(ZONE_A),
            None,
            {},
            ZONE_A,
            QueueingHint.QUEUE,
            id="label added",
        ),
        pytest.param(
            lambda: make_pod("p").node_selector(ZONE_A),
            None,
            ZONE_A,
            {"zone": "a", "x": "y"},
            QueueingHint.SKIP,
            id="matched before too",
        ),
        pytest.param(
            lambda: make_pod("p").node_selector(ZONE_A),
            ADDED_REQUIRED,
            None,
            ZONE_A,
            QueueingHint.SKIP,
            id="node outside the enforced affinity",
        ),
        pytest.param(
            lambda: make_pod("p").node_selector(ZONE_A),
            ADDED_REQUIRED,
            None,
            {"zone": "a", "pool": "batch"},
            QueueingHint.QUEUE,
            id="node inside the enforced affinity",
        ),
        pytest.param(
            lambda: pod_required({"matchExpressions": [expr("cores", "Gt", "x")]}),
            None,
            None,
            {},
            QueueingHint.QUEUE,
            id="unparsable pod term: queue",
        ),
    ],
)
def test_node_change_hint(
    pod: PodFn,
    added: dict[str, Any] | None,
    old: dict[str, str] | None,
    new: dict[str, str],
    hint: QueueingHint,
) -> None:
    pl = NodeAffinity(NodeAffinityArgs(added_affinity=added))
    old_node = make_node("n1").labels(old).obj() if old is not None else None
    assert (
        pl.is_schedulable_after_node_change(pod().obj(), old_node, make_node("n1").labels(new).obj()) == hint
    )


def test_node_change_hint_accepts_json() -> None:
    pod = make_pod("p").node_selector(ZONE_A).obj()
    hint = NodeAffinity().is_schedulable_after_node_change(pod, None, make_node("n1").labels(ZONE_A).json())
    assert hint == QueueingHint.QUEUE


# ------------------------------------------------------------------------------------ batch hooks


LABEL_VALUES = {
    "group": ["a", "b", "c"],
    "disk": ["ssd", "hdd"],
    "num": ["1", "5", "12", "x"],
    "tier": ["gold"],
}


def random_expr(rng: random.Random) -> dict[str, Any]:
    key = rng.choice([*LABEL_VALUES, "missing"])
    values = LABEL_VALUES.get(key, ["v"])
    op = rng.choice(["In", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
    if op in ("Gt", "Lt"):
        return expr(key if rng.random() < 0.7 else "num", op, rng.choice(["0", "4", "10"]))
    if op in ("Exists", "DoesNotExist"):
        return expr(key, op)
    return expr(key, op, *rng.sample(values, rng.randint(1, len(values))))


def random_term(rng: random.Random, n_nodes: int) -> dict[str, Any]:
    r = rng.random()
    if r < 0.05:
        return {}  # dropped: selects nothing
    if r < 0.1:
        return {"matchExpressions": [{"key": "group", "operator": "Bogus", "values": ["a"]}]}  # parse error
    term: dict[str, Any] = {"matchExpressions": [random_expr(rng) for _ in range(rng.randint(1, 2))]}
    if rng.random() < 0.1:
        op = rng.choice(["In", "NotIn"])
        term["matchFields"] = [
            {"key": "metadata.name", "operator": op, "values": [f"n{rng.randrange(n_nodes)}"]}
        ]
    return term


def random_affinity_pod(rng: random.Random, n_nodes: int) -> Pod:
    b = make_pod("p")
    if rng.random() < 0.4:
        b.node_selector(
            {k: rng.choice(LABEL_VALUES[k]) for k in rng.sample(sorted(LABEL_VALUES), rng.randint(1, 2))}
        )
    na: dict[str, Any] = {}
    if rng.random() < 0.7:
        na[REQ] = {"nodeSelectorTerms": [random_term(rng, n_nodes) for _ in range(rng.randint(0, 3))]}
    if rng.random() < 0.6:
        na[PREF] = [
            {"weight": rng.choice([0, 1, 5, 100]), "preference": random_term(rng, n_nodes)}
            for _ in range(rng.randint(0, 3))
        ]
    if na:
        b.affinity({"nodeAffinity": na})
    return b.obj()


def random_added_args(rng: random.Random, n_nodes: int) -> NodeAffinityArgs | None:
    if rng.random() < 0.5:
        return None
    added: dict[str, Any] = {}
    if rng.random() < 0.6:
        terms = [random_term(rng, n_nodes) for _ in range(rng.randint(1, 2))]
        terms = [t for t in terms if t and t["matchExpressions"][0]["operator"] != "Bogus"] or [
            {"matchExpressions": [expr("disk", "Exists")]}
        ]
        added[REQ] = {"nodeSelectorTerms": terms}
    if rng.random() < 0.6:
        added[PREF] = [{"weight": rng.randint(1, 50), "preference": {"matchExpressions": [random_expr(rng)]}}]
    return NodeAffinityArgs(added)


def random_nodes_snapshot(rng: random.Random) -> Snapshot:
    nodes = []
    for i in range(rng.randint(1, 30)):
        b = make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=10)
        for k, vs in LABEL_VALUES.items():
            if rng.random() < 0.8:
                b.label(k, rng.choice(vs))
        if rng.random() < 0.1:
            b.res({"example.com/foo": "2"})
        nodes.append(b.obj())
    pods = [
        make_pod(f"e{j}").req(cpu="100m").node(f"n{rng.randrange(len(nodes))}").obj()
        for j in range(rng.randint(0, 2 * len(nodes)))
    ]
    return Snapshot.from_nodes(nodes, pods)


def node_variants(rng: random.Random, snap: Snapshot) -> list[Sequence[NodeInfo]]:
    """A NodeBatch of all nodes, a shuffled sub-batch, a plain list, and a batch with stale clones."""
    table = snap.node_table()
    infos = list(snap.list())
    sub = rng.sample(infos, rng.randint(0, len(infos)))
    stale = []
    for ni in infos:
        if ni.pods and rng.random() < 0.3:
            c = ni.clone()
            c.remove_pod(c.pods[0].pod)
            stale.append(c)
        else:
            stale.append(ni)
    return [NodeBatch(infos, table), NodeBatch(sub, table), list(infos), NodeBatch(stale, table)]


def assert_same_scores(pl: NodeAffinity, state: Any, pod: Pod, nodes: Sequence[NodeInfo]) -> None:
    want: list[int] = []
    err: Status | None = None
    for ni in nodes:
        v, s = pl.score(state, pod, ni)
        if s is not None:
            err = s
            break
        want.append(v)
    got, s = pl.score_nodes(state, pod, nodes)
    if err is None:
        assert s is None
        assert list(got) == want
    else:
        assert s is not None
        assert (s.code, s.reasons, s.plugin) == (err.code, err.reasons, err.plugin)


def check_batch_equals_node_by_node(seed: int) -> None:
    rng = random.Random(seed)
    snap = random_nodes_snapshot(rng)
    n = len(snap.list())
    pl = NodeAffinity(random_added_args(rng, n))
    for _ in range(3):  # several pods against one plugin: cached answers must be keyed right
        pod = random_affinity_pod(rng, n)
        for variant in node_variants(rng, snap):
            for prepare in (True, False):
                state = make_cycle_state()
                if prepare:
                    pl.pre_filter(state, pod, variant)
                    pl.pre_score(state, pod, variant)
                assert list(pl.filter_nodes(state, pod, variant)) == [
                    pl.filter(state, pod, ni) for ni in variant
                ]
                assert_same_scores(pl, state, pod, variant)
                if isinstance(variant, NodeBatch):  # the same pod's next chunk: answered from ``last``
                    part = variant.subset(list(range(0, len(variant), 2)))
                    assert list(pl.filter_nodes(state, pod, part)) == [
                        pl.filter(state, pod, ni) for ni in part
                    ]
                    assert_same_scores(pl, state, pod, part)


@pytest.mark.parametrize("seed", range(300))
def test_batch_equals_node_by_node(seed: int) -> None:
    check_batch_equals_node_by_node(seed)


def test_batch_paths_are_exercised(monkeypatch: pytest.MonkeyPatch) -> None:
    """The random test must reach the cached per-row code, not only the node-by-node fallback."""
    calls = [0]
    real = batch_mod.per_row

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    import pyscheduler.plugins.node_affinity as mod

    monkeypatch.setattr(mod, "per_row", counting)
    for seed in range(40):
        check_batch_equals_node_by_node(seed)
    assert calls[0] > 40


def group_cluster(n: int = 40) -> tuple[Snapshot, list[NodeInfo]]:
    nodes = [make_node(f"n{i}").label("group", "ab"[i % 2]).obj() for i in range(n)]
    snap = Snapshot.from_nodes(nodes)
    return snap, list(snap.list())


def test_batch_filter_known_answers_and_cache_hit(monkeypatch: pytest.MonkeyPatch) -> None:
    snap, infos = group_cluster()
    pl = NodeAffinity()
    pod = pod_required({"matchExpressions": [expr("group", "In", "a")]}).obj()
    state = make_cycle_state()
    pl.pre_filter(state, pod, infos)
    got = pl.filter_nodes(state, pod, NodeBatch(infos, snap.node_table()))
    assert [s is None for s in got] == [int(ni.name[1:]) % 2 == 0 for ni in infos]
    assert all(s is None or s.reasons == (ERR_REASON_POD,) for s in got)
    # a second pod with the same requirement is answered from the cache
    monkeypatch.setattr(pl, "_filter_node", lambda *a: pytest.fail("not cached"))
    other = pod_required({"matchExpressions": [expr("group", "In", "a")]}).obj()
    state2 = make_cycle_state()
    pl.pre_filter(state2, other, infos)
    assert pl.filter_nodes(state2, other, NodeBatch(infos[:5], snap.node_table())) == got[:5]


def test_batch_cache_keyed_on_selector_and_affinity() -> None:
    snap, infos = group_cluster()
    table = snap.node_table()
    pl = NodeAffinity()
    want_a = [int(ni.name[1:]) % 2 == 0 for ni in infos]
    for pod, want in [
        (make_pod("p1").node_selector({"group": "a"}).obj(), want_a),
        (make_pod("p2").node_selector({"group": "b"}).obj(), [not w for w in want_a]),
        (pod_required({"matchExpressions": [expr("group", "In", "b")]}).obj(), [not w for w in want_a]),
        (
            pod_required({"matchExpressions": [expr("group", "In", "b")]})
            .node_selector({"group": "a"})
            .obj(),
            [False] * len(infos),
        ),
        (make_pod("p3").node_selector({"group": "a"}).obj(), want_a),
    ]:
        state = make_cycle_state()
        pl.pre_filter(state, pod, infos)
        assert [s is None for s in pl.filter_nodes(state, pod, NodeBatch(infos, table))] == want


def test_batch_cache_follows_node_changes() -> None:
    """A node relabelled in place bumps the table's node epoch: cached answers are recomputed."""
    snap, infos = group_cluster(6)
    table = snap.node_table()
    pl = NodeAffinity()
    pod = make_pod("p").node_selector({"group": "a"}).obj()
    state = make_cycle_state()
    pl.pre_filter(state, pod, infos)
    before = pl.filter_nodes(state, pod, NodeBatch(infos, table))
    ni = infos[1]
    assert before[1] is not None
    ni.set_node(make_node(ni.name).label("group", "a").obj())
    table.update([ni])
    after = pl.filter_nodes(state, pod, NodeBatch(infos, table))
    assert after[1] is None
    assert after == [pl.filter(state, pod, x) for x in infos]


def test_batch_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_mod, "MAX_ENTRIES", 4)
    snap, infos = group_cluster(8)
    table = snap.node_table()
    pl = NodeAffinity()
    for i in range(10):
        pod = make_pod("p").node_selector({"group": "a", "k": str(i)}).obj()
        state = make_cycle_state()
        pl.pre_filter(state, pod, infos)
        assert pl.filter_nodes(state, pod, NodeBatch(infos, table)) == [
            pl.filter(state, pod, x) for x in infos
        ]
    assert len(pl._filter_cache.entries) == 4


def test_batch_rows_without_node() -> None:
    """Rows whose NodeInfo has no Node: Filter rejects them, Score gives 0, as node by node."""
    table = NodeTable()
    infos = [NodeInfo(), NodeInfo(make_node("n1").label("group", "a").obj()), NodeInfo()]
    table.rebuild(infos)
    pl = NodeAffinity(
        NodeAffinityArgs(
            {PREF: [{"weight": 3, "preference": {"matchExpressions": [expr("group", "Exists")]}}]}
        )
    )
    pod = make_pod("p").node_selector({"group": "a"}).preferred_node_affinity(7, "group", ["a"]).obj()
    state = make_cycle_state()
    pl.pre_filter(state, pod, infos)
    pl.pre_score(state, pod, infos)
    batch = NodeBatch(infos, table)
    assert pl.filter_nodes(state, pod, batch) == [ERR_POD_STATUS, None, ERR_POD_STATUS]
    assert score_list(pl.score_nodes(state, pod, batch)) == ([0, 10, 0], None)
    # a preferred term that does not parse, PreScore skipped: an error only if some node is there
    bad = (
        make_pod("q")
        .affinity(
            {
                "nodeAffinity": {
                    PREF: [
                        {"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}}
                    ]
                }
            }
        )
        .obj()
    )
    assert score_list(pl.score_nodes(make_cycle_state(), bad, NodeBatch([infos[0]], table))) == ([0], None)
    _, s = pl.score_nodes(make_cycle_state(), bad, batch)
    assert s is not None and s.code == Code.ERROR


ERR_POD_STATUS = Status.unresolvable(ERR_REASON_POD, plugin=NAME)


def test_batch_plain_list_and_match_fields() -> None:
    snap, infos = group_cluster(10)
    pl = NodeAffinity(
        NodeAffinityArgs(
            {
                REQ: {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n3"]}]}
                    ]
                }
            }
        )
    )
    pod = make_pod("p").node_selector({"group": "b"}).obj()
    state = make_cycle_state()
    pl.pre_filter(state, pod, infos)
    for nodes in (infos, infos[:3], [], NodeBatch(infos, snap.node_table())):
        assert list(pl.filter_nodes(state, pod, nodes)) == [pl.filter(state, pod, ni) for ni in nodes]
    got = pl.filter_nodes(state, pod, NodeBatch(infos, snap.node_table()))
    by_name = {ni.name: s for ni, s in zip(infos, got, strict=True)}
    assert by_name["n3"] is not None and by_name["n3"].reasons == (ERR_REASON_ENFORCED,)
    assert by_name["n5"] is None and by_name["n4"] is not None
