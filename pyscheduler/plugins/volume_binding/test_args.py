"""VolumeBindingArgs: defaults, decoding and validation messages."""

from __future__ import annotations

import pytest

from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.plugins.volume_binding import (
    NAME,
    PLUGIN,
    VolumeBindingArgs,
)
from pyscheduler.plugins.volume_binding._fixtures import (
    Obj,
)

# ------------------------------------------------------------------------------------- args


def test_args_defaults() -> None:
    args = PLUGIN.decode(None, "args")
    assert args == VolumeBindingArgs(bind_timeout_seconds=600, shape=None)
    assert PLUGIN.name == NAME == "VolumeBinding"


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        pytest.param({"bindTimeoutSeconds": -1}, "args.bindTimeoutSeconds", id="negative timeout"),
        pytest.param({"bindTimeoutSeconds": "10"}, "args.bindTimeoutSeconds", id="timeout as a string"),
        pytest.param({"shape": []}, "args.shape", id="empty shape"),
        # StorageCapacityScoring is off in kube 1.36: even a well-formed shape is refused
        pytest.param(
            {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
            "args.shape",
            id="shape while StorageCapacityScoring is off",
        ),
        pytest.param({"bindTimeout": 5}, "args.bindTimeout", id="unknown field"),
    ],
)
def test_bad_args(raw: Obj, path: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert e.value.path == path


def test_good_args() -> None:
    args = PLUGIN.decode({"bindTimeoutSeconds": 0, "shape": None}, "args")
    assert args.bind_timeout_seconds == 0
    assert args.shape is None
