"""What every part of the differential run shares: the scheduler name and profile, the timeouts, the object
kinds it creates (and their collection paths), the feature gates a gang scenario needs, ``RunError``,
and ``wait_for``, the one polling loop."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from bench.scenarios import Scenario

JSON = dict[str, Any]

SCHEDULER_NAME = "diff-scheduler"
# Both schedulers run their full default profile (kube 1.36's includes DynamicResources).
PROFILE: JSON = {"schedulerName": SCHEDULER_NAME}
API_VERSION = "kubescheduler.config.k8s.io/v1"
RESULTS_DIR = Path(__file__).resolve().parent.parent / "results"

DECISION_TIMEOUT = 20.0  # a pod neither bound nor reported unschedulable by then counts as pending
PREEMPT_TIMEOUT = 25.0  # a nominated pod gets this long to be bound after its victims go
PREEMPT_SETTLE = 1.5  # an unschedulable pod that could preempt: wait this long for a nomination
GATED_SETTLE = 1.0  # a gated pod: make sure nobody binds it anyway
EVENT_WAIT = 1.5  # how long to look for the FailedScheduling event after the condition appeared
POLL = 0.05

# kind -> (collection path, namespaced); creation follows this order, deletion the reverse.
KINDS: dict[str, tuple[str, bool]] = {
    "Namespace": ("/api/v1/namespaces", False),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1/priorityclasses", False),
    "RuntimeClass": ("/apis/node.k8s.io/v1/runtimeclasses", False),
    "StorageClass": ("/apis/storage.k8s.io/v1/storageclasses", False),
    "PersistentVolume": ("/api/v1/persistentvolumes", False),
    "PersistentVolumeClaim": ("/api/v1/namespaces/{ns}/persistentvolumeclaims", True),
    "CSINode": ("/apis/storage.k8s.io/v1/csinodes", False),
    "PodDisruptionBudget": ("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", True),
    "Service": ("/api/v1/namespaces/{ns}/services", True),
    # scheduling.k8s.io alpha (workload-aware scheduling; the cluster serves it, see GANG_APISERVER_ARGS)
    "PodGroup": ("/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups", True),
    # Dynamic Resource Allocation (resource.k8s.io/v1)
    "DeviceClass": ("/apis/resource.k8s.io/v1/deviceclasses", False),
    "ResourceSlice": ("/apis/resource.k8s.io/v1/resourceslices", False),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates", True),
    "ResourceClaim": ("/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims", True),
}
DRA_KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaimTemplate", "ResourceClaim")
# A scenario that creates a PodGroup runs both schedulers with these gates (bench/scenarios_gang.py); the
# differential's API server always serves the alpha API they need.
GANG_FEATURE_GATES = "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"
GANG_APISERVER_ARGS = (
    f"--feature-gates={GANG_FEATURE_GATES}",
    "--runtime-config=scheduling.k8s.io/v1alpha2=true",
)


def feature_gates_for(sc: Scenario) -> str:
    """The ``--feature-gates`` both schedulers run a scenario with ("" for kube 1.36's defaults)."""
    return GANG_FEATURE_GATES if any(o.get("kind") == "PodGroup" for o in sc.objects) else ""


# What the in-memory framework reads besides nodes and pods (pyscheduler.app.OBJECT_KINDS' paths).
EVAL_KINDS: dict[str, str] = {
    "PersistentVolumeClaim": "/api/v1/persistentvolumeclaims",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "CSINode": "/apis/storage.k8s.io/v1/csinodes",
    "CSIDriver": "/apis/storage.k8s.io/v1/csidrivers",
    "PodDisruptionBudget": "/apis/policy/v1/poddisruptionbudgets",
    "Namespace": "/api/v1/namespaces",
    "Service": "/api/v1/services",
    "ReplicaSet": "/apis/apps/v1/replicasets",
    "StatefulSet": "/apis/apps/v1/statefulsets",
    "ReplicationController": "/api/v1/replicationcontrollers",
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
    "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/resourceclaimtemplates",
    "ResourceClaim": "/apis/resource.k8s.io/v1/resourceclaims",  # into a ClaimTracker, not the store
}
# A claim the scheduler allocated carries resource.kubernetes.io/delete-protection until the
# resourceclaim controller deallocates it: teardown drops it, as it does the PV protection finalizers.
FINALIZED_KINDS = ("PersistentVolume", "PersistentVolumeClaim", "PodGroup", "ResourceClaim")


class RunError(RuntimeError):
    pass


T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], timeout: float = math.inf, interval: float = POLL) -> T | None:
    """Call ``probe`` every ``interval`` seconds until it returns something other than None, and return
    that; None once ``timeout`` seconds have passed (``probe`` has then been called once after the
    deadline). Without a timeout the probe decides itself when to give up (returning its verdict)."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got is not None:
            return got
        if time.monotonic() > deadline:
            return None
        time.sleep(interval)
