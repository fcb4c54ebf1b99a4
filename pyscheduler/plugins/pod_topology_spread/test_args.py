"""PodTopologySpreadArgs: defaults, decoding and validation messages."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.plugins.pod_topology_spread import (
    PLUGIN,
    PodTopologySpreadArgs,
)
from pyscheduler.plugins.pod_topology_spread._fixtures import (
    DNS,
    SA,
    ZONE,
)

# ------------------------------------------------------------------------------------------- args


def test_default_args() -> None:
    args = PLUGIN.decode(None, "args")
    assert args == PodTopologySpreadArgs(default_constraints=(), defaulting_type="System")
    assert PLUGIN.name == "PodTopologySpread"


GOOD = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS}


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"defaultingType": "Bogus"}, "args.defaultingType"),
        ({"defaultConstraints": [GOOD]}, "args.defaultingType"),  # System with constraints
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "maxSkew": 0}]},
            "args.defaultConstraints[0].maxSkew",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "maxSkew": "1"}]},
            "args.defaultConstraints[0].maxSkew",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "topologyKey": ""}]},
            "args.defaultConstraints[0].topologyKey",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "topologyKey": "-bad-"}]},
            "args.defaultConstraints[0].topologyKey",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "topologyKey": "a/b/c"}]},
            "args.defaultConstraints[0].topologyKey",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "whenUnsatisfiable": ""}]},
            "args.defaultConstraints[0].whenUnsatisfiable",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "whenUnsatisfiable": "Maybe"}]},
            "args.defaultConstraints[0].whenUnsatisfiable",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "labelSelector": {}}]},
            "args.defaultConstraints[0].labelSelector",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "minDomains": 0}]},
            "args.defaultConstraints[0].minDomains",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "nodeTaintsPolicy": "Sometimes"}]},
            "args.defaultConstraints[0].nodeTaintsPolicy",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [GOOD, {**GOOD, "maxSkew": 2}]},
            "args.defaultConstraints[1]",
        ),
        ({"defaultingType": "List", "defaultConstraints": ["x"]}, "args.defaultConstraints[0]"),
        ({"defaultConstraint": []}, "args.defaultConstraint"),
    ],
)
def test_bad_args(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert e.value.path == field


@pytest.mark.parametrize(
    "raw",
    [
        {"defaultingType": "List"},
        {"defaultingType": "List", "defaultConstraints": [GOOD, {**GOOD, "whenUnsatisfiable": SA}]},
        {
            "defaultingType": "List",
            "defaultConstraints": [{**GOOD, "topologyKey": "topology.kubernetes.io/zone"}],
        },
        {"defaultingType": "System", "defaultConstraints": []},
    ],
)
def test_good_args(raw: dict[str, Any]) -> None:
    PLUGIN.decode(raw, "args")
