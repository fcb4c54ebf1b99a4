"""InterPodAffinityArgs: defaults, decoding and validation messages."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.plugins.inter_pod_affinity import (
    PLUGIN,
    InterPodAffinityArgs,
)

# ------------------------------------------------------------------------------------------- args


def test_default_args() -> None:
    assert PLUGIN.decode(None, "args") == InterPodAffinityArgs(1, False)
    assert PLUGIN.name == "InterPodAffinity"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"hardPodAffinityWeight": -1}, "args.hardPodAffinityWeight"),
        ({"hardPodAffinityWeight": 101}, "args.hardPodAffinityWeight"),
        ({"hardPodAffinityWeight": "1"}, "args.hardPodAffinityWeight"),
        ({"ignorePreferredTermsOfExistingPods": "yes"}, "args.ignorePreferredTermsOfExistingPods"),
        ({"hardPodAffinityWeigth": 1}, "args.hardPodAffinityWeigth"),
    ],
)
def test_bad_args(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert e.value.path == field


@pytest.mark.parametrize("w", [0, 1, 100])
def test_good_weights(w: int) -> None:
    assert PLUGIN.decode({"hardPodAffinityWeight": w}, "args").hard_pod_affinity_weight == w
