"""``--feature-gates``: kube's syntax, kube 1.36's gates and defaults, kube's errors, and the default
profile's gated plugins (kube's applyGangScheduling / applyTopologyAwareWorkloadScheduling)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pyscheduler.config import feature_gates as fg
from pyscheduler.config.defaults import default_plugins
from pyscheduler.config.types import MULTI_POINT

GANG_ON = "GenericWorkload=true,GangScheduling=true"
ALL_ON = GANG_ON + ",TopologyAwareWorkloadScheduling=true"


@pytest.mark.parametrize(
    ("name", "default"),
    [
        pytest.param("GenericWorkload", False, id="generic-workload-alpha-off"),
        pytest.param("GangScheduling", False, id="gang-alpha-off"),
        pytest.param("TopologyAwareWorkloadScheduling", False, id="tas-alpha-off"),
        pytest.param("NodeDeclaredFeatures", True, id="beta-on"),
        pytest.param("DynamicResourceAllocation", True, id="ga-locked-on"),
        pytest.param("ContextualLogging", True, id="logging-gate"),
    ],
)
def test_defaults_are_kube_136(name: str, default: bool) -> None:
    assert fg.DEFAULT.enabled(name) is default
    assert fg.parse("").enabled(name) is default


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("NoSuchGate=true", "unrecognized feature gate: NoSuchGate", id="unknown"),
        pytest.param("GangSchedulng=true", "unrecognized feature gate: GangSchedulng", id="misspelt"),
        pytest.param("GenericWorkload", "missing bool value for GenericWorkload", id="no-value"),
        pytest.param(
            "GenericWorkload=yes",
            'invalid value of GenericWorkload=yes, err: strconv.ParseBool: parsing "yes": invalid syntax',
            id="not-a-bool",
        ),
        pytest.param(
            "DynamicResourceAllocation=false",
            "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true",
            id="locked",
        ),
        pytest.param(
            "GangScheduling=true",
            "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]",
            id="dependency-off",
        ),
        pytest.param(
            "A=true,B=false",
            "unrecognized feature gate: A, unrecognized feature gate: B",
            id="every-unknown-named",
        ),
    ],
)
def test_bad_values_are_refused_with_kube_messages(text: str, message: str) -> None:
    with pytest.raises(fg.FeatureGateError) as e:
        fg.parse(text)
    assert str(e.value) == message


def test_explicit_values_and_all_alpha() -> None:
    g = fg.parse(" GenericWorkload = true , GangScheduling=1,")
    assert g.enabled("GenericWorkload") and g.enabled("GangScheduling")
    assert not g.enabled("TopologyAwareWorkloadScheduling")
    assert g.describe() == "GangScheduling=true,GenericWorkload=true"
    a = fg.parse("AllAlpha=true,TopologyAwareWorkloadScheduling=false,WorkloadAwarePreemption=false")
    assert a.enabled("GangScheduling") and a.enabled("GenericWorkload")
    assert not a.enabled("TopologyAwareWorkloadScheduling")  # an explicit gate wins over AllAlpha
    assert a.enabled("DynamicResourceAllocation")  # locked gates keep their value


@pytest.mark.parametrize(
    "text", ["GenericWorkload=true,GangScheduling=true,WorkloadAwarePreemption=true", "AllAlpha=true"]
)
def test_workload_aware_preemption_is_refused_not_ignored(text: str) -> None:
    # kube would preempt for the whole group at once; pyscheduler would not: starting anyway would
    # decide differently without a word
    with pytest.raises(fg.FeatureGateError) as e:
        fg.parse(text)
    assert str(e.value) == (
        "WorkloadAwarePreemption is enabled, but pyscheduler does not implement workload-aware preemption "
        "(kube's PodGroupPostFilter); pod groups preempt pod by pod in the pod group cycle, as with the "
        "gate off"
    )


def _default_names(gates: str) -> list[str]:
    sets, _ = default_plugins(None, fg.parse(gates))
    return [r.name for r in sets[MULTI_POINT].enabled]


def test_default_profile_follows_the_gates() -> None:
    base = _default_names("")
    assert "GangScheduling" not in base and "PodGroupPodsCount" not in base
    assert _default_names(GANG_ON) == [*base, "GangScheduling"]
    assert _default_names(ALL_ON) == [
        *base,
        "GangScheduling",
        "TopologyPlacementGenerator",
        "PodGroupPodsCount",
    ]
    sets, _ = default_plugins(None, fg.parse(ALL_ON))
    weights = {r.name: r.weight for r in sets[MULTI_POINT].enabled}
    assert weights["PodGroupPodsCount"] == 1 and weights["GangScheduling"] is None


def test_overridden_restores_the_process_gates() -> None:
    before = fg.current()
    with fg.overridden(GANG_ON) as g:
        assert fg.current() is g and fg.enabled("GangScheduling")
        assert "GangScheduling" in [r.name for r in default_plugins()[0][MULTI_POINT].enabled]
    assert fg.current() is before


def test_run_refuses_an_unknown_gate_before_anything_else() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pyscheduler.cli", "run", "--port", "0", "--feature-gates", "Bogus=true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1] == (
        "pyscheduler: invalid --feature-gates 'Bogus=true': unrecognized feature gate: Bogus"
    )
