"""Malformed KubeSchedulerConfiguration files, each refused through the daemon's own loader.

Every file goes through ``load_config`` (what ``pyscheduler run --config`` calls) with the real plugin
registry; the test asserts the field path (named as kube names it) and the part of the message a user
acts on. A few go through the CLI as a subprocess: exit code 2, one line on stderr, no traceback.

kube-scheduler 1.36 rules (pkg/scheduler/apis/config/validation/validation.go) and the param(s) covering each:

- leaderElection.resourceLock must be "leases" ............................ resource-lock
- componentbase leader election: lease/renew/retry > 0, lease > renew ..... lease-zero, renew-zero,
  retry-negative, lease-not-above-renew
- componentbase client connection: burst >= 0 ............................. burst-negative
- parallelism > 0 ......................................................... parallelism-zero, parallelism-negative
- profiles: schedulerName required, no duplicates ......................... profiles-empty-name,
  profiles-two-no-name, profiles-duplicate
- percentageOfNodesToScore in [0, 100], global and per profile ............ percentage-global, percentage-profile
- podInitialBackoffSeconds > 0; podMaxBackoffSeconds >= initial ........... initial-backoff-zero, max-below-initial
- plugins removed from v1 (AzureDisk/Cinder/EBS/GCEPD limits) refused in enabled lists and in
  pluginConfig (kube names the list entry, we add .name) ..................... removed-plugin, pluginconfig-removed
- pluginConfig: one entry per plugin; args must match the plugin's type ... pluginconfig-duplicate,
  pluginconfig-args-mismatch, queuesort-args-differ
- one queueSort plugin; the same queueSort (and args) in every profile .... queuesort-two, queuesort-one-profile,
  and test_two_queue_sort_plugins_are_refused
- extenders: weight > 0 with prioritizeVerb; managed resources are
  extended resource names, each once; at most one binder .................. extender-weight,
  extender-resource-name, extender-resource-dup, extender-two-binders
- strict v1 decoding: fields gone from v1 are unknown ..................... healthz-bind, metrics-bind;
  wrong types .............................................................. contenttype-type, interpod-ignore-ns-type
- Go durations: ASCII digits, a unit, within int64 nanoseconds ............ duration-unicode-digits,
  duration-no-unit, lease-go-range; and the Lease's int32 seconds ......... lease-int32

validation_pluginargs.go:

- DefaultPreemption: percentage in [0, 100], absolute >= 0, not both 0 .... preemption-*
- InterPodAffinity: hardPodAffinityWeight in [0, 100] ..................... interpod-weight
- PodTopologySpread: maxSkew > 0, no labelSelector, topologyKey required,
  whenUnsatisfiable supported, no duplicate {key, when}, defaultingType
  System/List, System only without constraints ............................ spread-*
- NodeResourcesBalancedAllocation: weight must be 1, no duplicate name .... balanced-weight, balanced-dup
- NodeResourcesFit: ignoredResourceGroups without '/', strategy type
  supported, requestedToCapacityRatio required/forbidden by type, shape
  sorted, non-empty, in range, resource weight in (0, 100] ................ fit-*
- NodeAffinity: addedAffinity is a valid node selector .................... nodeaffinity-added
- VolumeBinding: bindTimeoutSeconds >= 0; shape refused while the
  StorageCapacityScoring gate is off (1.36 default) ....................... volumebinding-timeout, volumebinding-shape
- DynamicResources args: covered by the plugin's own table tests (pyscheduler/plugins/dynamic_resources).

Plus: a deeply nested YAML document is a ConfigError, not a RecursionError (test_deep_yaml_is_refused).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pyscheduler.cli import _extension_points, _registry
from pyscheduler.config import ConfigError
from pyscheduler.config.load import load_config

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
REGISTRY: Any = _registry()


def load(tmp_path: Path, body: str) -> Any:
    f = tmp_path / "config.yaml"
    f.write_text(HEADER + body, encoding="utf-8")
    return load_config(str(f), REGISTRY, _extension_points(REGISTRY))


CASES = [
    pytest.param("parallelism: 0\n", "parallelism", "must be greater than zero", id="parallelism-zero"),
    pytest.param("parallelism: -3\n", "parallelism", "must be greater than zero", id="parallelism-negative"),
    pytest.param(
        "clientConnection: {burst: -1}\n",
        "clientConnection.burst",
        "must be non-negative",
        id="burst-negative",
    ),
    pytest.param(
        "leaderElection: {leaseDuration: 0s}\n",
        "leaderElection.leaseDuration",
        "must be greater than zero",
        id="lease-zero",
    ),
    pytest.param(
        "leaderElection: {renewDeadline: 0s}\n",
        "leaderElection.renewDeadline",
        "must be greater than zero",
        id="renew-zero",
    ),
    pytest.param(
        "leaderElection: {retryPeriod: -1s}\n",
        "leaderElection.retryPeriod",
        "must be greater than zero",
        id="retry-negative",
    ),
    pytest.param(
        "leaderElection: {leaseDuration: 10s, renewDeadline: 10s}\n",
        "leaderElection.leaseDuration",
        "must be greater than renewDeadline",
        id="lease-not-above-renew",
    ),
    pytest.param(
        "leaderElection: {resourceLock: endpoints}\n",
        "leaderElection.resourceLock",
        'must be "leases"',
        id="resource-lock",
    ),
    pytest.param(
        "leaderElection: {leaseDuration: 99999999999999999999h}\n",
        "leaderElection.leaseDuration",
        "out of range",
        id="lease-go-range",
    ),
    pytest.param(
        "leaderElection: {leaseDuration: 1000000h}\n",
        "leaderElection.leaseDuration",
        "32-bit integer",
        id="lease-int32",
    ),
    pytest.param(
        'leaderElection: {retryPeriod: "\u0661\u0662s"}\n',  # Arabic-Indic 12
        "leaderElection.retryPeriod",
        "invalid duration",
        id="duration-unicode-digits",
    ),
    pytest.param(
        'leaderElection: {retryPeriod: "15"}\n',
        "leaderElection.retryPeriod",
        "invalid duration",
        id="duration-no-unit",
    ),
    pytest.param(
        'profiles:\n- schedulerName: ""\n', "profiles[0].schedulerName", "required", id="profiles-empty-name"
    ),
    pytest.param(
        "profiles:\n- schedulerName: a\n- {}\n",
        "profiles[1].schedulerName",
        "required",
        id="profiles-two-no-name",
    ),
    pytest.param(
        "profiles:\n- schedulerName: a\n- schedulerName: a\n",
        "profiles[1].schedulerName",
        'duplicate profile name "a"',
        id="profiles-duplicate",
    ),
    pytest.param(
        "percentageOfNodesToScore: 101\n", "percentageOfNodesToScore", "0-100", id="percentage-global"
    ),
    pytest.param(
        "profiles:\n- percentageOfNodesToScore: -1\n",
        "profiles[0].percentageOfNodesToScore",
        "0-100",
        id="percentage-profile",
    ),
    pytest.param(
        "podInitialBackoffSeconds: 0\n",
        "podInitialBackoffSeconds",
        "must be greater than 0",
        id="initial-backoff-zero",
    ),
    pytest.param(
        "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
        "podMaxBackoffSeconds",
        "must be greater than or equal to podInitialBackoffSeconds",
        id="max-below-initial",
    ),
    pytest.param(
        "profiles:\n- plugins:\n    score:\n      enabled: [{name: EBSLimits}]\n",
        "profiles[0].plugins.score.enabled[0].name",
        'plugin "EBSLimits" was removed from kubescheduler.config.k8s.io/v1',
        id="removed-plugin",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - {name: NodeAffinity, args: {}}\n  - {name: NodeAffinity, args: {}}\n",
        "profiles[0].pluginConfig[1].name",
        'duplicate entry for plugin "NodeAffinity"',
        id="pluginconfig-duplicate",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - {name: GCEPDLimits, args: {}}\n",
        "profiles[0].pluginConfig[0].name",
        'plugin "GCEPDLimits" was removed from kubescheduler.config.k8s.io/v1',
        id="pluginconfig-removed",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args: {scoringStrategy: {type: LeastAllocated}}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy",
        "unknown field",
        id="pluginconfig-args-mismatch",
    ),
    pytest.param(
        "profiles:\n- plugins:\n    queueSort:\n      enabled: [{name: PrioritySort}, {name: PrioritySort}]\n",
        "profiles[0].plugins.queueSort.enabled[1].name",
        "enabled more than once",
        id="queuesort-two",
    ),
    pytest.param(
        "profiles:\n- schedulerName: a\n  plugins:\n    queueSort:\n      enabled: [{name: PrioritySort}]\n- schedulerName: b\n",
        "profiles[1].plugins.queueSort",
        "must be the same for all profiles",
        id="queuesort-one-profile",
    ),
    pytest.param(
        "profiles:\n- schedulerName: a\n- schedulerName: b\n  pluginConfig:\n  - {name: PrioritySort, args: {foo: 1}}\n",
        "profiles[1].pluginConfig[0].args.foo",
        "takes no arguments",
        id="queuesort-args-differ",
    ),
    pytest.param(
        "extenders:\n- {urlPrefix: 'http://x', prioritizeVerb: p, weight: -1}\n",
        "extenders[0].weight",
        "must be a positive integer",
        id="extender-weight",
    ),
    pytest.param(
        "extenders:\n- urlPrefix: 'http://x'\n  managedResources: [{name: 'example.com/bad name'}]\n",
        "extenders[0].managedResources[0].name",
        "qualified name",
        id="extender-resource-name",
    ),
    pytest.param(
        "extenders:\n- urlPrefix: 'http://x'\n  managedResources: [{name: example.com/gpu}, {name: example.com/gpu}]\n",
        "extenders[0].managedResources[1].name",
        "duplicate extender managed resource",
        id="extender-resource-dup",
    ),
    pytest.param(
        "extenders:\n- {urlPrefix: 'http://x', bindVerb: b}\n- {urlPrefix: 'http://y', bindVerb: b}\n",
        "extenders",
        "only one extender can implement bind",
        id="extender-two-binders",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args: {minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}\n",
        "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage",
        "cannot be zero at the same time as minCandidateNodesAbsolute",
        id="preemption-both-zero",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args: {minCandidateNodesPercentage: 101}\n",
        "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage",
        "not in valid range [0, 100]",
        id="preemption-percentage",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args: {minCandidateNodesAbsolute: -1}\n",
        "profiles[0].pluginConfig[0].args.minCandidateNodesAbsolute",
        "not in valid range [0, inf)",
        id="preemption-absolute",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args: {hardPodAffinityWeight: 101}\n",
        "profiles[0].pluginConfig[0].args.hardPodAffinityWeight",
        "not in valid range [0, 100]",
        id="interpod-weight",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args: {ignorePreferredTermsOfExistingPods: 1}\n",
        "profiles[0].pluginConfig[0].args.ignorePreferredTermsOfExistingPods",
        "must be a boolean",
        id="interpod-ignore-ns-type",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultingType: List, defaultConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]}\n",
        "profiles[0].pluginConfig[0].args.defaultConstraints[0].maxSkew",
        "not in valid range (0, inf)",
        id="spread-maxskew",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, labelSelector: {}}]}\n",
        "profiles[0].pluginConfig[0].args.defaultConstraints[0].labelSelector",
        "constraint must not define a selector",
        id="spread-selector",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultingType: Sometimes}\n",
        "profiles[0].pluginConfig[0].args.defaultingType",
        'Unsupported value: "Sometimes"',
        id="spread-defaulting-type",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultingType: System, defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]}\n",
        "profiles[0].pluginConfig[0].args.defaultingType",
        "when .defaultConstraints are not empty",
        id="spread-system-with-constraints",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: '', whenUnsatisfiable: ScheduleAnyway}]}\n",
        "profiles[0].pluginConfig[0].args.defaultConstraints[0].topologyKey",
        "can not be empty",
        id="spread-empty-key",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Maybe}]}\n",
        "profiles[0].pluginConfig[0].args.defaultConstraints[0].whenUnsatisfiable",
        'Unsupported value: "Maybe"',
        id="spread-when",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}, {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]}\n",
        "profiles[0].pluginConfig[0].args.defaultConstraints[1]",
        "Duplicate value: {zone, ScheduleAnyway}",
        id="spread-duplicate",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args: {resources: [{name: cpu, weight: 2}]}\n",
        "profiles[0].pluginConfig[0].args.resources[0].weight",
        "must be 1",
        id="balanced-weight",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args: {resources: [{name: cpu, weight: 1}, {name: cpu, weight: 1}]}\n",
        "profiles[0].pluginConfig[0].args.resources[1].name",
        'Duplicate value: "cpu"',
        id="balanced-dup",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {ignoredResourceGroups: [example.com/foo]}\n",
        "profiles[0].pluginConfig[0].args.ignoredResourceGroups[0]",
        "resource group name can't contain '/'",
        id="fit-ignored-group",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: Cheapest}}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.type",
        'Unsupported value: "Cheapest"',
        id="fit-strategy-type",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: RequestedToCapacityRatio, resources: [{name: cpu, weight: 1}]}}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio",
        "must be specified when type is RequestedToCapacityRatio",
        id="fit-rtcr-missing",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: LeastAllocated, resources: [{name: cpu, weight: 1}], requestedToCapacityRatio: {shape: [{utilization: 0, score: 0}]}}}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio",
        "must be nil when type is not RequestedToCapacityRatio",
        id="fit-rtcr-forbidden",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: RequestedToCapacityRatio, resources: [{name: cpu, weight: 1}], requestedToCapacityRatio: {shape: [{utilization: 50, score: 1}, {utilization: 10, score: 2}]}}}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
        "values must be sorted in increasing order",
        id="fit-shape-order",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: RequestedToCapacityRatio, resources: [{name: cpu, weight: 1}], requestedToCapacityRatio: {shape: []}}}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape",
        "at least one point must be specified",
        id="fit-shape-empty",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: RequestedToCapacityRatio, resources: [{name: cpu, weight: 1}], requestedToCapacityRatio: {shape: [{utilization: 0, score: 11}]}}}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[0].score",
        "not in valid range [0, 10]",
        id="fit-shape-score",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: LeastAllocated, resources: [{name: cpu, weight: 101}]}}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight",
        "not in valid range (0, 100]",
        id="fit-resource-weight",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args: {addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: Sometimes, values: [a]}]}]}}}\n",
        "profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator",
        "unsupported operator",
        id="nodeaffinity-added",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: VolumeBinding\n    args: {bindTimeoutSeconds: -1}\n",
        "profiles[0].pluginConfig[0].args.bindTimeoutSeconds",
        "should not be a negative value",
        id="volumebinding-timeout",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: VolumeBinding\n    args: {shape: [{utilization: 0, score: 0}]}\n",
        "profiles[0].pluginConfig[0].args.shape",
        "feature gate StorageCapacityScoring",
        id="volumebinding-shape",
    ),
    pytest.param(
        "healthzBindAddress: 0.0.0.0:10251\n", "healthzBindAddress", "unknown field", id="healthz-bind"
    ),
    pytest.param(
        "metricsBindAddress: 0.0.0.0:10251\n", "metricsBindAddress", "unknown field", id="metrics-bind"
    ),
    pytest.param(
        "clientConnection: {contentType: 5}\n",
        "clientConnection.contentType",
        "must be a string",
        id="contenttype-type",
    ),
]


@pytest.mark.parametrize(("body", "path", "message"), CASES)
def test_malformed_config_is_refused(tmp_path: Path, body: str, path: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        load(tmp_path, body)
    assert e.value.path == path
    assert message in str(e.value)
    assert str(e.value).startswith(f"{path}: ")


def test_every_case_is_valid_without_its_fault(tmp_path: Path) -> None:
    # the header alone loads: each refusal above comes from its body, not from the frame around it
    assert load(tmp_path, "").profiles[0].scheduler_name == "py-scheduler"


def test_two_queue_sort_plugins_are_refused(tmp_path: Path) -> None:
    body = (
        "profiles:\n- plugins:\n    queueSort:\n      enabled: [{name: PrioritySort}, {name: Coscheduling}]\n"
    )
    with pytest.raises(ConfigError) as e:
        load(tmp_path, body)
    assert e.value.path == "profiles[0].plugins.queueSort"
    assert "exactly one queueSort plugin" in str(e.value)


def test_queue_sort_written_in_every_profile_is_accepted(tmp_path: Path) -> None:
    qs = "  plugins:\n    queueSort:\n      enabled: [{name: PrioritySort}]\n"
    c = load(tmp_path, f"profiles:\n- schedulerName: a\n{qs}- schedulerName: b\n{qs}")
    assert [p.scheduler_name for p in c.profiles] == ["a", "b"]


def test_longest_go_duration_is_accepted(tmp_path: Path) -> None:
    c = load(tmp_path, "leaderElection: {leaseDuration: 2147483647s, renewDeadline: 10s}\n")
    assert c.leader_election.lease_duration == 2147483647


def test_deep_yaml_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load(tmp_path, "profiles: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nested too deeply" in str(e.value)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            "leaderElection: {leaseDuration: 99999999999999999999h}\n", "out of range", id="go-range"
        ),
        pytest.param(
            "healthzBindAddress: 0.0.0.0:10251\n", "healthzBindAddress: unknown field", id="healthz"
        ),
        pytest.param("profiles: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply", id="deep-yaml"),
        pytest.param(
            "profiles:\n- pluginConfig:\n  - {name: VolumeBinding, args: {shape: []}}\n",
            "profiles[0].pluginConfig[0].args.shape: Invalid value: unexpected field `shape`",
            id="volumebinding-shape",
        ),
    ],
)
def test_cli_refuses_bad_config_in_one_line(tmp_path: Path, body: str, expected: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(HEADER + body, encoding="utf-8")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyscheduler.cli",
            "run",
            "--config",
            str(f),
            "--kubeconfig",
            str(tmp_path / "none"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"pyscheduler: invalid configuration in {f}: ")
    assert expected in lines[0]
