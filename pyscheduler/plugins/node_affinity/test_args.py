"""NodeAffinityArgs: decoding and kube's validation messages for addedAffinity."""

from typing import Any

import pytest

from pyscheduler.framework.helpers.names import label_value_error, qualified_name_error
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.plugins.node_affinity import (
    ERR_REASON_ENFORCED,
    PLUGIN,
    NodeAffinity,
    NodeAffinityArgs,
)
from pyscheduler.plugins.node_affinity._fixtures import (
    ADDED_REQUIRED,
    PREF,
    REQ,
    ZONE_A,
    expr,
    name_in,
    pref,
    run_filter,
)
from pyscheduler.testing import make_handle
from pyscheduler.testing.builders import make_pod

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
    assert isinstance(PLUGIN.new(args, make_handle()), NodeAffinity)


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
