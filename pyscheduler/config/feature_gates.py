"""Feature gates: kube-scheduler's ``--feature-gates`` (``Name=true,Other=false``), with kube 1.36's gates.

Design
------
kube-scheduler accepts every gate its binary knows (the Kubernetes gates, client-go's, the logging and
metrics ones), validates the flag at start-up and refuses to start on a bad one. So does pyscheduler:
``parse`` checks the flag against ``KNOWN`` (every gate kube-scheduler 1.36 knows, with its 1.36 default,
stage and lock) and ``DEPENDENCIES`` (kube's dependency table), with kube's messages:

    unrecognized feature gate: Foo
    missing bool value for Foo
    invalid value of Foo=maybe, err: ...
    cannot set feature gate X to false, feature is locked to true
    GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]

``AllAlpha`` / ``AllBeta`` switch every (unlocked) alpha / beta gate, as kube's do; an explicit gate wins.

Most gates change nothing in pyscheduler. The ones that do (``ACTED_ON``):

- ``GenericWorkload``: pods with ``spec.schedulingGroup`` are scheduled a pod group at a time (the
  pod group scheduling cycle), PodGroups (scheduling.k8s.io/v1alpha2) are watched;
- ``GangScheduling``: the default profile gains GangScheduling (kube's ``applyGangScheduling``);
- ``TopologyAwareWorkloadScheduling``: the default profile gains TopologyPlacementGenerator and
  PodGroupPodsCount (weight 1), and pod groups are scheduled placement by placement.

Gates pyscheduler does not implement are refused at start-up rather than silently ignored where they
would change decisions (``NOT_IMPLEMENTED``): ``WorkloadAwarePreemption`` (alpha, off; kube's
PodGroupPostFilter, preempting for a whole pod group at once), also when ``AllAlpha=true`` turns it on.

The gates in force are process-wide, like kube's ``DefaultFeatureGate``: ``cli`` sets them once at
start-up (``set_current``); the config defaults and the app read ``current()``. Tests use ``overridden``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

ALPHA = "ALPHA"
BETA = "BETA"
GA = "GA"
DEPRECATED = "DEPRECATED"

GENERIC_WORKLOAD = "GenericWorkload"
GANG_SCHEDULING = "GangScheduling"
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"

# The gates whose value changes what pyscheduler does (see the module docstring).
ACTED_ON: tuple[str, ...] = (GENERIC_WORKLOAD, GANG_SCHEDULING, TOPOLOGY_AWARE_WORKLOAD_SCHEDULING)

# Gates that would change kube-scheduler's decisions and that pyscheduler does not implement: turning
# one on is refused by ``parse`` (name -> what is missing), so no run silently decides otherwise.
WORKLOAD_AWARE_PREEMPTION = "WorkloadAwarePreemption"
NOT_IMPLEMENTED: Mapping[str, str] = MappingProxyType(
    {
        WORKLOAD_AWARE_PREEMPTION: "pyscheduler does not implement workload-aware preemption (kube's "
        "PodGroupPostFilter); pod groups preempt pod by pod in the pod group cycle, as with the gate off",
    }
)

ALL_ALPHA = "AllAlpha"
ALL_BETA = "AllBeta"


@dataclass(frozen=True, slots=True)
class _G:
    default: bool
    stage: str
    locked: bool = False


# Every gate kube-scheduler 1.36 accepts: its 1.36 default, stage, and whether it is locked to the default
# (pkg/features/kube_features.go, client-go's known_features.go, component-base's logging, metrics and
# zpages gates).
KNOWN: Mapping[str, _G] = MappingProxyType(
    {
        "APIResponseCompression": _G(True, BETA),
        "APIServerIdentity": _G(True, BETA),
        "APIServerTracing": _G(True, GA, locked=True),
        "APIServingWithRoutine": _G(False, ALPHA),
        "AggregatedDiscoveryRemoveBetaType": _G(True, DEPRECATED, locked=True),
        "AllowDNSOnlyNodeCSR": _G(False, DEPRECATED),
        "AllowInsecureKubeletCertificateSigningRequests": _G(False, DEPRECATED),
        "AllowOverwriteTerminationGracePeriodSeconds": _G(False, DEPRECATED, locked=True),
        "AllowParsingUserUIDFromCertAuth": _G(True, BETA),
        "AllowServiceExternalIPs": _G(True, GA),
        "AllowUnsafeMalformedObjectDeletion": _G(False, ALPHA),
        "AnonymousAuthConfigurableEndpoints": _G(True, GA, locked=True),
        "AnyVolumeDataSource": _G(True, GA, locked=True),
        "AtomicFIFO": _G(True, BETA),
        "AuthorizeNodeWithSelectors": _G(True, GA, locked=True),
        "AuthorizePodWebsocketUpgradeCreatePermission": _G(True, BETA),
        "AuthorizeWithSelectors": _G(True, GA, locked=True),
        "BtreeWatchCache": _G(True, GA, locked=True),
        "CBORServingAndStorage": _G(False, ALPHA),
        "CPUManagerPolicyAlphaOptions": _G(False, ALPHA),
        "CPUManagerPolicyBetaOptions": _G(True, BETA),
        "CPUManagerPolicyOptions": _G(True, GA, locked=True),
        "CRDObservedGenerationTracking": _G(True, BETA),
        "CRDValidationRatcheting": _G(True, GA, locked=True),
        "CRIListStreaming": _G(False, ALPHA),
        "CSIServiceAccountTokenSecrets": _G(True, GA, locked=True),
        "CSIVolumeHealth": _G(False, ALPHA),
        "ChangeContainerStatusOnKubeletRestart": _G(False, DEPRECATED),
        "ClearingNominatedNodeNameAfterBinding": _G(True, BETA),
        "ClientsAllowCARotation": _G(True, BETA),
        "ClientsAllowCBOR": _G(False, ALPHA),
        "ClientsAllowTLSCacheGC": _G(True, BETA),
        "ClientsPreferCBOR": _G(False, ALPHA),
        "CloudControllerManagerWatchBasedRoutesReconciliation": _G(False, ALPHA),
        "CloudControllerManagerWebhook": _G(False, ALPHA),
        "ClusterTrustBundle": _G(False, BETA),
        "ClusterTrustBundleProjection": _G(False, BETA),
        "ComponentFlagz": _G(True, BETA),
        "ComponentStatusz": _G(True, BETA),
        "ConcurrentWatchObjectDecode": _G(False, BETA),
        "ConsistentListFromCache": _G(True, GA, locked=True),
        "ConstrainedImpersonation": _G(True, BETA),
        "ContainerCheckpoint": _G(True, BETA),
        "ContainerRestartRules": _G(True, BETA),
        "ContainerStopSignals": _G(False, ALPHA),
        "ContextualLogging": _G(True, BETA),
        "CoordinatedLeaderElection": _G(False, BETA),
        "CrossNamespaceVolumeDataSource": _G(False, ALPHA),
        "CustomCPUCFSQuotaPeriod": _G(True, GA),
        "CustomResourceFieldSelectors": _G(True, GA, locked=True),
        "DRAAdminAccess": _G(True, GA, locked=True),
        "DRAConsumableCapacity": _G(True, BETA),
        "DRADeviceBindingConditions": _G(True, BETA),
        "DRADeviceTaintRules": _G(False, BETA),
        "DRADeviceTaints": _G(True, BETA),
        "DRAExtendedResource": _G(True, BETA),
        "DRAListTypeAttributes": _G(False, ALPHA),
        "DRANodeAllocatableResources": _G(False, ALPHA),
        "DRAPartitionableDevices": _G(True, BETA),
        "DRAPrioritizedList": _G(True, GA),
        "DRAResourceClaimDeviceStatus": _G(True, BETA),
        "DRAResourceClaimGranularStatusAuthorization": _G(True, BETA),
        "DRAResourcePoolStatus": _G(False, ALPHA),
        "DRASchedulerFilterTimeout": _G(True, BETA),
        "DRAWorkloadResourceClaims": _G(False, ALPHA),
        "DeclarativeValidation": _G(True, GA, locked=True),
        "DeclarativeValidationBeta": _G(True, BETA),
        "DeclarativeValidationTakeover": _G(False, DEPRECATED),
        "DeploymentReplicaSetTerminatingReplicas": _G(True, BETA),
        "DetectCacheInconsistency": _G(True, BETA),
        "DisableAllocatorDualWrite": _G(True, GA, locked=True),
        "DisableCPUQuotaWithExclusiveCPUs": _G(True, DEPRECATED),
        "DisableNodeKubeProxyVersion": _G(True, DEPRECATED, locked=True),
        "DynamicResourceAllocation": _G(True, GA, locked=True),
        "EnvFiles": _G(True, BETA),
        "EventedPLEG": _G(False, ALPHA),
        "ExecProbeTimeout": _G(True, GA, locked=True),
        "ExtendWebSocketsToKubelet": _G(True, BETA),
        "ExternalServiceAccountTokenSigner": _G(True, GA, locked=True),
        "GangScheduling": _G(False, ALPHA),
        "GenericWorkload": _G(False, ALPHA),
        "GitRepoVolumeDriver": _G(False, DEPRECATED, locked=True),
        "GracefulNodeShutdown": _G(True, BETA),
        "GracefulNodeShutdownBasedOnPodPriority": _G(True, BETA),
        "HPAConfigurableTolerance": _G(True, BETA),
        "HPAScaleToZero": _G(False, ALPHA),
        "HostnameOverride": _G(True, BETA),
        "ImageMaximumGCAge": _G(True, GA, locked=True),
        "ImageVolume": _G(True, GA, locked=True),
        "ImageVolumeWithDigest": _G(False, ALPHA),
        "InOrderInformers": _G(True, GA, locked=True),
        "InOrderInformersBatchProcess": _G(True, BETA),
        "InPlacePodLevelResourcesVerticalScaling": _G(True, BETA),
        "InPlacePodVerticalScaling": _G(True, GA, locked=True),
        "InPlacePodVerticalScalingExclusiveCPUs": _G(False, ALPHA),
        "InPlacePodVerticalScalingExclusiveMemory": _G(False, ALPHA),
        "InPlacePodVerticalScalingInitContainers": _G(True, BETA),
        "InformerResourceVersion": _G(True, GA),
        "JobBackoffLimitPerIndex": _G(True, GA, locked=True),
        "JobManagedBy": _G(True, GA, locked=True),
        "JobPodReplacementPolicy": _G(True, GA, locked=True),
        "JobSuccessPolicy": _G(True, GA, locked=True),
        "KMSv1": _G(False, DEPRECATED),
        "KubeletCgroupDriverFromCRI": _G(True, GA, locked=True),
        "KubeletCrashLoopBackOffMax": _G(True, BETA),
        "KubeletEnsureSecretPulledImages": _G(True, BETA),
        "KubeletFineGrainedAuthz": _G(True, GA, locked=True),
        "KubeletInUserNamespace": _G(False, ALPHA),
        "KubeletPSI": _G(True, GA, locked=True),
        "KubeletPodResourcesDynamicResources": _G(True, GA, locked=True),
        "KubeletPodResourcesGet": _G(True, GA, locked=True),
        "KubeletPodResourcesListUseActivePods": _G(True, DEPRECATED),
        "KubeletRegistrationGetOnExistsOnly": _G(False, DEPRECATED),
        "KubeletSeparateDiskGC": _G(True, BETA),
        "KubeletServiceAccountTokenForCredentialProviders": _G(True, BETA),
        "KubeletTracing": _G(True, GA, locked=True),
        "ListFromCacheSnapshot": _G(True, BETA),
        "LocalStorageCapacityIsolationFSQuotaMonitoring": _G(False, BETA),
        "LogarithmicScaleDown": _G(True, GA, locked=True),
        "LoggingAlphaOptions": _G(False, ALPHA),
        "LoggingBetaOptions": _G(True, BETA),
        "ManifestBasedAdmissionControlConfig": _G(False, ALPHA),
        "MatchLabelKeysInPodAffinity": _G(True, GA, locked=True),
        "MatchLabelKeysInPodTopologySpread": _G(True, BETA),
        "MatchLabelKeysInPodTopologySpreadSelectorMerge": _G(True, BETA),
        "MaxUnavailableStatefulSet": _G(False, BETA),
        "MemoryQoS": _G(False, ALPHA),
        "MultiCIDRServiceAllocator": _G(True, GA, locked=True),
        "MutableCSINodeAllocatableCount": _G(True, GA, locked=True),
        "MutablePVNodeAffinity": _G(False, ALPHA),
        "MutablePodResourcesForSuspendedJobs": _G(True, BETA),
        "MutableSchedulingDirectivesForSuspendedJobs": _G(True, BETA),
        "MutatingAdmissionPolicy": _G(True, GA),
        "NFTablesProxyMode": _G(True, GA, locked=True),
        "NativeHistograms": _G(False, ALPHA),
        "NodeDeclaredFeatures": _G(True, BETA),
        "NodeInclusionPolicyInPodTopologySpread": _G(True, GA, locked=True),
        "NodeLogQuery": _G(True, GA, locked=True),
        "NodeSwap": _G(True, GA, locked=True),
        "NominatedNodeNameForExpectation": _G(True, BETA),
        "OpenAPIEnums": _G(True, BETA),
        "OpportunisticBatching": _G(True, BETA),
        "OrderedNamespaceDeletion": _G(True, GA, locked=True),
        "PLEGOnDemandRelist": _G(True, BETA),
        "PersistentVolumeClaimUnusedSinceTime": _G(False, ALPHA),
        "PodAndContainerStatsFromCRI": _G(False, ALPHA),
        "PodCertificateRequest": _G(False, BETA),
        "PodDeletionCost": _G(True, BETA),
        "PodLevelResourceManagers": _G(False, ALPHA),
        "PodLevelResources": _G(True, BETA),
        "PodLifecycleSleepAction": _G(True, GA, locked=True),
        "PodLifecycleSleepActionAllowZero": _G(True, GA, locked=True),
        "PodLogsQuerySplitStreams": _G(False, ALPHA),
        "PodObservedGenerationTracking": _G(True, GA, locked=True),
        "PodReadyToStartContainersCondition": _G(True, BETA),
        "PodSchedulingReadiness": _G(True, GA, locked=True),
        "PodTopologyLabelsAdmission": _G(True, BETA),
        "PodsAPI": _G(False, ALPHA),
        "PortForwardWebsockets": _G(True, BETA),
        "PreferSameTrafficDistribution": _G(True, GA, locked=True),
        "PreventStaticPodAPIReferences": _G(True, BETA),
        "ProcMountType": _G(True, GA, locked=True),
        "QOSReserved": _G(False, ALPHA),
        "RecoverVolumeExpansionFailure": _G(True, GA, locked=True),
        "RecursiveReadOnlyMounts": _G(True, GA, locked=True),
        "ReduceDefaultCrashLoopBackOffDecay": _G(False, ALPHA),
        "RelaxedDNSSearchValidation": _G(True, GA, locked=True),
        "RelaxedEnvironmentVariableValidation": _G(True, GA, locked=True),
        "RelaxedServiceNameValidation": _G(True, BETA),
        "ReloadKubeletClientCAFile": _G(True, BETA),
        "ReloadKubeletServerCertificateFile": _G(True, BETA),
        "RemoteRequestHeaderUID": _G(True, BETA),
        "ResilientWatchCacheInitialization": _G(True, GA, locked=True),
        "ResourceHealthStatus": _G(True, BETA),
        "ResourceHealthStatusMessage": _G(True, BETA),
        "RestartAllContainersOnContainerExits": _G(True, BETA),
        "RetryGenerateName": _G(True, GA, locked=True),
        "RotateKubeletServerCertificate": _G(True, BETA),
        "RuntimeClassInImageCriApi": _G(False, ALPHA),
        "SELinuxChangePolicy": _G(True, GA, locked=True),
        "SELinuxMount": _G(False, BETA),
        "SELinuxMountReadWriteOncePod": _G(True, GA, locked=True),
        "SchedulerAsyncAPICalls": _G(False, BETA),
        "SchedulerAsyncPreemption": _G(True, BETA),
        "SchedulerPopFromBackoffQ": _G(True, BETA),
        "SchedulerQueueingHints": _G(True, GA, locked=True),
        "SeparateCacheWatchRPC": _G(False, DEPRECATED),
        "SeparateTaintEvictionController": _G(True, GA, locked=True),
        "ServiceAccountNodeAudienceRestriction": _G(True, BETA),
        "ServiceAccountTokenJTI": _G(True, GA, locked=True),
        "ServiceAccountTokenNodeBinding": _G(True, GA, locked=True),
        "ServiceAccountTokenNodeBindingValidation": _G(True, GA, locked=True),
        "ServiceAccountTokenPodNodeInfo": _G(True, GA, locked=True),
        "ServiceCIDRStatusFieldWiping": _G(True, DEPRECATED),
        "ShardedListAndWatch": _G(False, ALPHA),
        "SidecarContainers": _G(True, GA, locked=True),
        "SizeBasedListCostEstimate": _G(True, BETA),
        "StaleControllerConsistencyDaemonSet": _G(True, BETA),
        "StaleControllerConsistencyJob": _G(True, BETA),
        "StaleControllerConsistencyReplicaSet": _G(True, BETA),
        "StaleControllerConsistencyStatefulSet": _G(True, BETA),
        "StatefulSetSemanticRevisionComparison": _G(True, BETA),
        "StorageCapacityScoring": _G(False, ALPHA),
        "StorageNamespaceIndex": _G(True, DEPRECATED),
        "StorageVersionAPI": _G(False, ALPHA),
        "StorageVersionHash": _G(True, BETA),
        "StorageVersionMigrator": _G(False, BETA),
        "StreamingCollectionEncodingToJSON": _G(True, GA, locked=True),
        "StreamingCollectionEncodingToProtobuf": _G(True, GA, locked=True),
        "StrictIPCIDRValidation": _G(True, BETA),
        "StructuredAuthenticationConfiguration": _G(True, GA, locked=True),
        "StructuredAuthenticationConfigurationEgressSelector": _G(True, BETA),
        "StructuredAuthenticationConfigurationJWKSMetrics": _G(True, BETA),
        "SupplementalGroupsPolicy": _G(True, GA, locked=True),
        "SystemdWatchdog": _G(True, GA, locked=True),
        "TaintTolerationComparisonOperators": _G(False, ALPHA),
        "TokenRequestServiceAccountUIDValidation": _G(True, BETA),
        "TopologyAwareWorkloadScheduling": _G(False, ALPHA),
        "TopologyManagerPolicyAlphaOptions": _G(False, ALPHA),
        "TopologyManagerPolicyBetaOptions": _G(True, BETA),
        "TopologyManagerPolicyOptions": _G(True, GA, locked=True),
        "TranslateStreamCloseWebsocketRequests": _G(True, BETA),
        "UnauthenticatedHTTP2DOSMitigation": _G(True, BETA),
        "UnknownVersionInteroperabilityProxy": _G(True, BETA),
        "UnlockWhileProcessingFIFO": _G(True, BETA),
        "UserNamespacesHostNetworkSupport": _G(False, ALPHA),
        "UserNamespacesSupport": _G(True, GA, locked=True),
        "VolumeAttributesClass": _G(True, GA, locked=True),
        "VolumeLimitScaling": _G(False, ALPHA),
        "WatchCacheInitializationPostStartHook": _G(True, BETA),
        "WatchList": _G(True, BETA),
        "WatchListClient": _G(True, BETA),
        "WinDSR": _G(True, GA, locked=True),
        "WinOverlay": _G(True, GA, locked=True),
        "WindowsCPUAndMemoryAffinity": _G(False, ALPHA),
        "WindowsGracefulNodeShutdown": _G(True, BETA),
        "WindowsHostNetwork": _G(False, DEPRECATED),
        "WorkloadAwarePreemption": _G(False, ALPHA),
        "WorkloadWithJob": _G(False, ALPHA),
    }
)

# kube's defaultKubernetesFeatureGateDependencies (only the non-empty entries): a gate on needs these on.
DEPENDENCIES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "AuthorizeNodeWithSelectors": ("AuthorizeWithSelectors",),
        "ClusterTrustBundleProjection": ("ClusterTrustBundle",),
        "DRAAdminAccess": ("DynamicResourceAllocation",),
        "DRAConsumableCapacity": ("DynamicResourceAllocation",),
        "DRADeviceBindingConditions": (
            "DynamicResourceAllocation",
            "DRAResourceClaimDeviceStatus",
        ),
        "DRADeviceTaintRules": ("DRADeviceTaints",),
        "DRADeviceTaints": ("DynamicResourceAllocation",),
        "DRAExtendedResource": ("DynamicResourceAllocation",),
        "DRAListTypeAttributes": ("DynamicResourceAllocation",),
        "DRANodeAllocatableResources": ("DynamicResourceAllocation",),
        "DRAPartitionableDevices": ("DynamicResourceAllocation",),
        "DRAPrioritizedList": ("DynamicResourceAllocation",),
        "DRAResourceClaimGranularStatusAuthorization": (
            "DynamicResourceAllocation",
            "DRAResourceClaimDeviceStatus",
        ),
        "DRAResourcePoolStatus": ("DynamicResourceAllocation",),
        "DRASchedulerFilterTimeout": ("DynamicResourceAllocation",),
        "DRAWorkloadResourceClaims": (
            "DynamicResourceAllocation",
            "GenericWorkload",
        ),
        "DeclarativeValidationTakeover": ("DeclarativeValidation",),
        "DisableAllocatorDualWrite": ("MultiCIDRServiceAllocator",),
        "ExtendWebSocketsToKubelet": ("NodeDeclaredFeatures",),
        "GangScheduling": ("GenericWorkload",),
        "GracefulNodeShutdownBasedOnPodPriority": ("GracefulNodeShutdown",),
        "ImageVolumeWithDigest": ("ImageVolume",),
        "InPlacePodLevelResourcesVerticalScaling": (
            "InPlacePodVerticalScaling",
            "PodLevelResources",
            "NodeDeclaredFeatures",
        ),
        "InPlacePodVerticalScalingExclusiveCPUs": ("InPlacePodVerticalScaling",),
        "InPlacePodVerticalScalingExclusiveMemory": ("InPlacePodVerticalScaling",),
        "InPlacePodVerticalScalingInitContainers": (
            "InPlacePodVerticalScaling",
            "NodeDeclaredFeatures",
        ),
        "MatchLabelKeysInPodTopologySpreadSelectorMerge": ("MatchLabelKeysInPodTopologySpread",),
        "PodCertificateRequest": ("AuthorizeNodeWithSelectors",),
        "PodLevelResourceManagers": ("PodLevelResources",),
        "PodLifecycleSleepActionAllowZero": ("PodLifecycleSleepAction",),
        "ProcMountType": ("UserNamespacesSupport",),
        "ResourceHealthStatus": ("DynamicResourceAllocation",),
        "ResourceHealthStatusMessage": ("ResourceHealthStatus",),
        "RestartAllContainersOnContainerExits": (
            "ContainerRestartRules",
            "NodeDeclaredFeatures",
        ),
        "ServiceAccountTokenNodeBinding": ("ServiceAccountTokenNodeBindingValidation",),
        "StaleControllerConsistencyDaemonSet": ("AtomicFIFO",),
        "StaleControllerConsistencyJob": ("AtomicFIFO",),
        "StaleControllerConsistencyReplicaSet": ("AtomicFIFO",),
        "StaleControllerConsistencyStatefulSet": ("AtomicFIFO",),
        "StorageVersionAPI": ("APIServerIdentity",),
        "StructuredAuthenticationConfigurationEgressSelector": ("StructuredAuthenticationConfiguration",),
        "StructuredAuthenticationConfigurationJWKSMetrics": ("StructuredAuthenticationConfiguration",),
        "TopologyAwareWorkloadScheduling": ("GenericWorkload",),
        "UnknownVersionInteroperabilityProxy": ("APIServerIdentity",),
        "UserNamespacesHostNetworkSupport": (
            "UserNamespacesSupport",
            "NodeDeclaredFeatures",
        ),
        "WindowsGracefulNodeShutdown": ("GracefulNodeShutdown",),
        "WorkloadAwarePreemption": ("GangScheduling",),
        "WorkloadWithJob": ("GenericWorkload",),
    }
)


class FeatureGateError(ValueError):
    """A bad ``--feature-gates`` value; the text is kube's message (several joined with ", ")."""


@dataclass(frozen=True)
class FeatureGates:
    """The gates explicitly set; everything else has its 1.36 default."""

    explicit: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        if name in self.explicit:
            return self.explicit[name]
        spec = KNOWN.get(name)
        if spec is None:
            raise KeyError(f"unknown feature gate {name!r}")
        if not spec.locked:
            if spec.stage == ALPHA and self.explicit.get(ALL_ALPHA):
                return True
            if spec.stage == BETA and ALL_BETA in self.explicit:
                return self.explicit[ALL_BETA]
        return spec.default

    def as_mapping(self) -> Mapping[str, bool]:
        """Every known gate's value (what plugins get as ``handle.extra["feature_gates"]``)."""
        return MappingProxyType({name: self.enabled(name) for name in KNOWN})

    def describe(self) -> str:
        """``Name=true,...`` of the gates set explicitly (for the start-up log)."""
        return ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(self.explicit.items()))


DEFAULT = FeatureGates()


def _bool(name: str, text: str) -> bool:
    """Go's strconv.ParseBool, as kube parses each value."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise FeatureGateError(
        f'invalid value of {name}={text}, err: strconv.ParseBool: parsing "{text}": invalid syntax'
    )


def parse(text: str) -> FeatureGates:
    """A ``--feature-gates`` value (``A=true,B=false``; blanks around names and values ignored) into
    validated gates. Raises FeatureGateError with kube's message(s)."""
    pairs: dict[str, bool] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, eq, raw = item.partition("=")
        key = key.strip()
        if not eq:
            raise FeatureGateError(f"missing bool value for {key}")
        pairs[key] = _bool(key, raw.strip())
    errors: list[str] = []
    for name, on in pairs.items():
        if name in (ALL_ALPHA, ALL_BETA):
            continue
        spec = KNOWN.get(name)
        if spec is None:
            errors.append(f"unrecognized feature gate: {name}")
        elif spec.locked and on != spec.default:
            v, d = ("true" if on else "false"), ("true" if spec.default else "false")
            errors.append(f"cannot set feature gate {name} to {v}, feature is locked to {d}")
    if errors:
        raise FeatureGateError(", ".join(errors))
    gates = FeatureGates(MappingProxyType(pairs))
    for name in sorted(DEPENDENCIES):
        if gates.enabled(name):
            off = [d for d in DEPENDENCIES[name] if not gates.enabled(d)]
            if off:
                errors.append(
                    f"{name} is enabled, but depends on features that are disabled: [{' '.join(off)}]"
                )
    for name, why in NOT_IMPLEMENTED.items():
        if gates.enabled(name):
            errors.append(f"{name} is enabled, but {why}")
    if errors:
        raise FeatureGateError(", ".join(errors))
    return gates


_current: FeatureGates = DEFAULT


def current() -> FeatureGates:
    """The gates this process runs with (kube 1.36 defaults until ``set_current``)."""
    return _current


def set_current(gates: FeatureGates) -> None:
    global _current
    _current = gates


def enabled(name: str) -> bool:
    return _current.enabled(name)


@contextlib.contextmanager
def overridden(gates: FeatureGates | str) -> Iterator[FeatureGates]:
    """Run with other gates (tests): ``with overridden("GenericWorkload=true,GangScheduling=true"):``."""
    g = parse(gates) if isinstance(gates, str) else gates
    before = current()
    set_current(g)
    try:
        yield g
    finally:
        set_current(before)
