"""Differential test: pyscheduler against the real kube-scheduler 1.36, scenario by scenario, on one cluster.

Usage: ``make differential`` (all scenarios), ``make differential ARGS="--scenario fit-cpu"``,
``python -m bench.differential --list``. See docs/differential.md for how to read the output.

Design
------
One ``LocalCluster`` (etcd + kube-apiserver + KWOK, no controller manager) serves the whole run; a
kube-controller-manager running only the controllers a scenario needs is added for it: the PV binder
when WaitForFirstConsumer binding must complete, the resourceclaim controller for DRA scenarios (it
makes a pod's claims from its ResourceClaimTemplates and deallocates a claim once its last pod is gone).
For each scenario, the same cluster state is built twice, once per scheduler, and only one scheduler
process runs at a time::

    for scheduler in (kube-scheduler, pyscheduler):
        create namespaces, objects (+ their status), nodes, existing (bound) pods, batch pods
        start the scheduler (same profile: each side's full default plugins, kube's 1.36 set
                             with DynamicResources included)
        batch pods: wait until each is bound or reported unschedulable
        node_updates (if any): patch the nodes' status, then wait for the pending batch pods again
        for each pod, in order:
            [DRA: delete the bound pods the scenario's ``delete_before`` names for it, and wait until
             the resourceclaim controller has released their claims]
            list the cluster (pods; plus nodes and other objects on the kube-scheduler pass)
            create the pod; wait until it is bound, or its PodScheduled condition says it is not
            (a pod that may preempt, or got a nominated node, is given time to finish preempting)
            pending -> delete it, so it cannot change later decisions
            pyscheduler pass only: reconcile the cluster to the pod set kube-scheduler's pass had at
            this point (delete/recreate pods bound elsewhere, restore or remove victims), so every
            later decision is taken from the same state in both passes
        stop the scheduler; delete pods, objects and nodes

Judging one pod (kube outcome K, pyscheduler outcome P):

- feasibility agrees when both bound or both pending;
- placement agrees when both are pending, or both bound to the same node, or both bound and the nodes
  tie for the best total score. Ties are judged in memory: the cluster state kube-scheduler saw
  (listed just before the pod was created) is loaded into a ``Snapshot`` + ``ObjectStore`` and
  pyscheduler's own framework (same profile) scores every feasible node; the nodes agree when their
  totals are equal. A pod that preempted (on either side) agrees only with the same node and the
  same victims;
- message agreement (both pending): the FailedScheduling event notes (else the PodScheduled
  condition messages) are equal;
- device agreement (DRA; both bound to the same node): each of the pod's claims holds the same devices
  (request, driver/pool/device, admin access, consumed capacity). On one node the allocator's choice is
  determined; on tied nodes it is not compared.

``--kube-only`` runs kube-scheduler alone and prints what it did with each pod (node and devices, or
the message): the way to check a new scenario before comparing.

The run prints one line per scenario, then ``agreement: feasibility A/N, placement B/N`` and
``messages: C/M``, writes every disagreement (with the in-memory scores) to
bench/results/differential-<UTC date>.json, and exits 1 if feasibility disagrees anywhere (2 if a
scenario could not be run).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime as dt
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.scenarios import SCENARIOS, Scenario, by_name
from pyscheduler.parallel import FORCE_ENV
from pyscheduler.testing.cluster import LocalCluster, free_port, stop_process_group
from pyscheduler.testing.daemon import SchedulerProcess

JSON = dict[str, Any]

SCHEDULER_NAME = "diff-scheduler"
# Both schedulers run their full default profile (kube 1.36's includes DynamicResources).
PROFILE: JSON = {"schedulerName": SCHEDULER_NAME}
API_VERSION = "kubescheduler.config.k8s.io/v1"
RESULTS_DIR = Path(__file__).resolve().parent / "results"

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


# ------------------------------------------------------------------------------------------ records


@dataclass
class Outcome:
    """What one scheduler did with one pod."""

    node: str = ""  # "" = pending
    reason: str = ""  # PodScheduled condition reason when pending (Unschedulable, SchedulingGated, ...)
    message: str = ""  # FailedScheduling event note, else the condition message
    condition_message: str = ""
    nominated: str = ""
    victims: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # DRA: the pod's claim (its name in spec.resourceClaims, or "extended-resources") -> the devices its
    # allocation holds, "request driver/pool/device" each (sorted); recorded once the pod is bound
    devices: dict[str, list[str]] = field(default_factory=dict)

    @property
    def bound(self) -> bool:
        return bool(self.node)

    def describe(self) -> str:
        if self.node:
            extra = f" evicting {','.join(self.victims)}" if self.victims else ""
            return f"{self.node}{extra}"
        return f"pending[{self.reason or '?'}]"


@dataclass
class Evaluation:
    """pyscheduler's framework run in memory on the state kube-scheduler saw before the pod."""

    feasible: list[str] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)
    detail: dict[str, dict[str, int]] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)
    error: str = ""

    def best(self) -> list[str]:
        if not self.totals:
            return list(self.feasible)
        top = max(self.totals.values())
        return sorted(n for n, t in self.totals.items() if t == top)


@dataclass
class PodResult:
    scenario: str
    pod: str
    kube: Outcome
    py: Outcome
    evaluation: Evaluation | None
    feasibility: bool
    placement: bool
    message: bool | None  # None when not both pending
    note: str = ""
    kube_scores: dict[str, dict[str, int]] | None = None  # from kube-scheduler's log, when it scored
    devices: bool | None = None  # None unless both bound to the same node with DRA claims

    def _score_pairs(self) -> list[tuple[str, str, int, int | None]]:
        """(node, plugin, kube's score, pyscheduler's in-memory score) for every node kube-scheduler scored;
        a plugin one side skipped counts as 0; None means pyscheduler found the node infeasible."""
        if not self.kube_scores or self.evaluation is None or not self.evaluation.feasible:
            return []
        out: list[tuple[str, str, int, int | None]] = []
        for node, plugins in sorted(self.kube_scores.items()):
            ours = self.evaluation.detail.get(node)
            for plugin in sorted(set(plugins) | set(ours or {})):
                out.append(
                    (node, plugin, plugins.get(plugin, 0), None if ours is None else ours.get(plugin, 0))
                )
        return out

    def score_mismatches(self) -> list[tuple[str, str, int, int | None]]:
        return [t for t in self._score_pairs() if t[2] != t[3]]

    def scores_compared(self) -> int:
        return len(self._score_pairs())

    def disagrees(self) -> bool:
        return not self.feasibility or not self.placement or self.message is False or self.devices is False


@dataclass
class ScenarioResult:
    name: str
    pods: list[PodResult] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0
    kube_only: list[tuple[str, Outcome]] = field(default_factory=list)  # --kube-only: kube's outcomes


@dataclass
class Report:
    scenarios: list[ScenarioResult] = field(default_factory=list)
    started: str = ""
    seconds: float = 0.0

    def all_pods(self) -> list[PodResult]:
        return [p for s in self.scenarios for p in s.pods]

    @property
    def n(self) -> int:
        return len(self.all_pods())

    @property
    def feasibility(self) -> int:
        return sum(p.feasibility for p in self.all_pods())

    @property
    def placement(self) -> int:
        return sum(p.placement for p in self.all_pods())

    @property
    def messages(self) -> tuple[int, int]:
        judged = [p for p in self.all_pods() if p.message is not None]
        return sum(bool(p.message) for p in judged), len(judged)

    @property
    def errors(self) -> list[ScenarioResult]:
        return [s for s in self.scenarios if s.error]

    @property
    def devices(self) -> tuple[int, int]:
        judged = [p for p in self.all_pods() if p.devices is not None]
        return sum(bool(p.devices) for p in judged), len(judged)

    @property
    def scores(self) -> tuple[int, int]:
        compared = sum(p.scores_compared() for p in self.all_pods())
        return compared - sum(len(p.score_mismatches()) for p in self.all_pods()), compared

    def summary_lines(self) -> list[str]:
        c, m = self.messages
        e, t = self.scores
        d, dn = self.devices
        return [
            f"agreement: feasibility {self.feasibility}/{self.n}, placement {self.placement}/{self.n}",
            f"messages: {c}/{m}",
            f"DRA devices (pods on the same node): {d}/{dn} pods with equal allocations",
            f"plugin scores (kube-scheduler's log vs pyscheduler in memory): {e}/{t} node-plugin scores equal",
        ]

    def exit_code(self) -> int:
        if self.feasibility != self.n:
            return 1
        return 2 if self.errors else 0

    def to_json(self) -> JSON:
        c, m = self.messages
        return {
            "started": self.started,
            "seconds": round(self.seconds, 1),
            "kube_scheduler": "v1.36 (LocalCluster binary)",
            "profile": PROFILE,
            "summary": {
                "pods": self.n,
                "feasibility": self.feasibility,
                "placement": self.placement,
                "messages": c,
                "messages_compared": m,
                "plugin_scores_equal": self.scores[0],
                "plugin_scores_compared": self.scores[1],
                "devices": self.devices[0],
                "devices_compared": self.devices[1],
            },
            "scenarios": [
                {
                    "name": s.name,
                    "pods": len(s.pods),
                    "seconds": round(s.seconds, 1),
                    **({"error": s.error} if s.error else {}),
                    **(
                        {"kube_only": [{"pod": n, **_outcome_json(o)} for n, o in s.kube_only]}
                        if s.kube_only
                        else {}
                    ),
                }
                for s in self.scenarios
            ],
            "disagreements": [_pod_json(p) for p in self.all_pods() if p.disagrees()],
            "score_mismatches": [
                {"scenario": p.scenario, "pod": p.pod, "node": n, "plugin": pl, "kube": ks, "py": ps}
                for p in self.all_pods()
                for n, pl, ks, ps in p.score_mismatches()
            ],
            "pods": [
                {
                    "scenario": p.scenario,
                    "pod": p.pod,
                    "kube": p.kube.describe(),
                    "py": p.py.describe(),
                    "feasibility": p.feasibility,
                    "placement": p.placement,
                    "message": p.message,
                }
                for p in self.all_pods()
            ],
        }


def _pod_json(p: PodResult) -> JSON:
    out: JSON = {
        "scenario": p.scenario,
        "pod": p.pod,
        "kind": [
            k
            for k, bad in (
                ("feasibility", not p.feasibility),
                ("placement", not p.placement),
                ("message", p.message is False),
                ("devices", p.devices is False),
            )
            if bad
        ],
        "kube": _outcome_json(p.kube),
        "py": _outcome_json(p.py),
    }
    if p.note:
        out["note"] = p.note
    if p.evaluation is not None:
        out["scores"] = asdict(p.evaluation)
        out["scores"]["best"] = p.evaluation.best()
    if p.kube_scores:
        out["kube_scores"] = {n: {**d, "total": sum(d.values())} for n, d in sorted(p.kube_scores.items())}
    return out


def _outcome_json(o: Outcome) -> JSON:
    d = {k: v for k, v in asdict(o).items() if v not in ("", [], {}, None)}
    d["seconds"] = round(o.seconds, 2)
    return d


# ------------------------------------------------------------------------------------------ cluster access


def _ns_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _key(obj: Mapping[str, Any]) -> str:
    return f"{_ns_of(obj)}/{_name_of(obj)}"


def allocated_devices(claim: Mapping[str, Any]) -> list[str]:
    """A ResourceClaim's allocation as "request driver/pool/device" strings (sorted), with " admin" for
    admin access and the consumed capacity (consumable capacity); the shareID is a random UID, left out."""
    alloc = (claim.get("status") or {}).get("allocation") or {}
    out = []
    for r in (alloc.get("devices") or {}).get("results") or ():
        text = f"{r.get('request')} {r.get('driver')}/{r.get('pool')}/{r.get('device')}"
        if r.get("adminAccess"):
            text += " admin"
        consumed = r.get("consumedCapacity") or {}
        if consumed:
            text += " " + ",".join(f"{k}={v}" for k, v in sorted(consumed.items()))
        out.append(text)
    return sorted(out)


class Api:
    """Thin helpers over ``LocalCluster.request`` for the objects scenarios use."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        ok: Iterable[int] = (200, 201, 202),
        content_type: str = "application/json",
    ) -> Any:
        status, out = self.cluster.request(method, path, body, content_type=content_type)
        if status not in tuple(ok):
            raise RunError(f"{method} {path}: HTTP {status}: {str(out)[:400]}")
        return out

    def get(self, path: str) -> Any:
        status, out = self.cluster.request("GET", path)
        if status == 404:
            return None
        if status != 200:
            raise RunError(f"GET {path}: HTTP {status}: {str(out)[:400]}")
        return out

    def items(self, path: str) -> list[JSON]:
        out = self.get(path)
        return list(out.get("items") or []) if out else []

    @staticmethod
    def collection(kind: str, ns: str = "") -> str:
        if kind == "Pod":
            return f"/api/v1/namespaces/{ns}/pods"
        if kind == "Node":
            return "/api/v1/nodes"
        path, namespaced = KINDS[kind]
        return path.format(ns=ns) if namespaced else path

    def path_of(self, obj: Mapping[str, Any]) -> str:
        return f"{self.collection(str(obj['kind']), _ns_of(obj))}/{_name_of(obj)}"

    def create(self, obj: JSON) -> JSON:
        body = {k: v for k, v in obj.items() if k != "status" or obj["kind"] in ("Node",)}
        ok: tuple[int, ...] = (200, 201, 409) if obj["kind"] == "Namespace" else (200, 201)
        out: JSON = self.call("POST", self.collection(str(obj["kind"]), _ns_of(obj)), body, ok=ok)
        status = obj.get("status")
        if status and obj["kind"] not in ("Node", "Pod", "Namespace"):
            for attempt in range(5):  # a controller may update the object in between: retry on conflict
                cur = self.call("GET", self.path_of(obj))
                cur["status"] = copy.deepcopy(status)
                code, put = self.cluster.request("PUT", self.path_of(obj) + "/status", cur)
                if code == 200:
                    out = put
                    break
                if code != 409 or attempt == 4:
                    raise RunError(f"PUT {self.path_of(obj)}/status: HTTP {code}: {str(put)[:400]}")
        return out

    def drop_finalizers(self, obj: Mapping[str, Any]) -> None:
        self.call(
            "PATCH",
            self.path_of(obj),
            {"metadata": {"finalizers": None}},
            ok=(200, 404),
            content_type="application/merge-patch+json",
        )

    def delete(self, obj: Mapping[str, Any], grace0: bool = False) -> None:
        if obj["kind"] in FINALIZED_KINDS:
            self.drop_finalizers(obj)
        q = "?gracePeriodSeconds=0" if grace0 else ""
        self.call("DELETE", self.path_of(obj) + q, ok=(200, 202, 404))

    def wait_gone(self, paths: Iterable[str], timeout: float = 30.0) -> None:
        left = list(paths)
        deadline = time.monotonic() + timeout
        while left:
            left = [p for p in left if self.get(p) is not None]
            if not left:
                return
            if time.monotonic() > deadline:
                raise RunError(f"still present after {timeout:.0f}s: {left[:5]}")
            time.sleep(POLL)

    def bound_pods(self) -> dict[str, str]:
        """ns/name -> node of every bound, not terminating pod in the cluster."""
        out: dict[str, str] = {}
        for p in self.items("/api/v1/pods"):
            if (
                p["spec"].get("nodeName")
                and not p["metadata"].get("deletionTimestamp")
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            ):
                out[_key(p)] = p["spec"]["nodeName"]
        return out


# ------------------------------------------------------------------------------------------ schedulers


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _spawn(argv: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    """A child in its own session that is killed if this process dies (even by SIGKILL)."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


def _configuration(kubeconfig: Path | None) -> JSON:
    cfg: JSON = {
        "apiVersion": API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        "profiles": [copy.deepcopy(PROFILE)],
    }
    if kubeconfig is not None:
        cfg["clientConnection"] = {"kubeconfig": str(kubeconfig)}
        cfg["leaderElection"] = {"leaderElect": False}
    return cfg


class KubeScheduler:
    """The real kube-scheduler binary against our cluster: no leader election, HTTPS on a free loopback
    port (only /readyz is read, an always-allowed path, so no delegated authn/authz is needed)."""

    label = "kube"

    def __init__(self, cluster: LocalCluster, workdir: Path, feature_gates: str = "") -> None:
        self.cluster = cluster
        self.feature_gates = feature_gates
        self.dir = Path(tempfile.mkdtemp(prefix="kube-scheduler-", dir=workdir))
        self.config_path = self.dir / "config.yaml"
        self.config_path.write_text(json.dumps(_configuration(cluster.kubeconfig), indent=1))
        self.log_path = self.dir / "kube-scheduler.log"
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        self.port = free_port()
        argv = [
            self.cluster.binary("kube-scheduler"),
            f"--config={self.config_path}",
            f"--secure-port={self.port}",
            "--bind-address=127.0.0.1",
            f"--v={os.environ.get('DIFF_KUBE_V', '10')}",
        ]
        if self.feature_gates:
            argv.append(f"--feature-gates={self.feature_gates}")
        self.proc = _spawn(argv, self.log_path)
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RunError(f"kube-scheduler exited with {self.proc.returncode}:\n{self.log_tail()}")
            url = f"https://127.0.0.1:{self.port}/readyz"
            with (
                contextlib.suppress(OSError, urllib.error.URLError),
                urllib.request.urlopen(url, timeout=1, context=ctx) as r,
            ):
                if r.status == 200:
                    return
            time.sleep(POLL)
        raise RunError(f"kube-scheduler not ready after {timeout:.0f}s:\n{self.log_tail()}")

    def log_tail(self, n: int = 30) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    def scores(self) -> dict[str, dict[str, dict[str, int]]]:
        """ns/name -> node -> plugin -> weighted score, from the last scoring cycle of each pod in the log
        (``--v=10`` logs "Plugin scored node for pod" per plugin and node; a pod with one feasible node
        is not scored)."""
        return parse_kube_scores(self.log_path.read_text(errors="replace") if self.log_path.exists() else "")

    def stop(self) -> None:
        stop_process_group(self.proc, 10)


_PLUGIN_SCORE = re.compile(
    r'"Plugin scored node for pod" pod="([^"]+)" plugin="([^"]+)" node="([^"]+)" score=(-?\d+)'
)
_FINAL_SCORE = re.compile(
    r'"Calculated node\'s final score for pod" pod="([^"]+)" node="([^"]+)" score=(-?\d+)'
)


def parse_kube_scores(log: str) -> dict[str, dict[str, dict[str, int]]]:
    out: dict[str, dict[str, dict[str, int]]] = {}
    finished: set[str] = set()
    for line in log.splitlines():
        m = _PLUGIN_SCORE.search(line)
        if m:
            pod, plugin, node, score = m.groups()
            if pod in finished:  # a new scoring cycle for this pod
                finished.discard(pod)
                out[pod] = {}
            out.setdefault(pod, {}).setdefault(node, {})[plugin] = int(score)
            continue
        m = _FINAL_SCORE.search(line)
        if m:
            finished.add(m.group(1))
    return out


class PyScheduler:
    """``pyscheduler run`` (through the test harness's SchedulerProcess) with the same profile."""

    label = "py"
    # --py-parallelism: None keeps the configuration's default (16, capped at the usable CPUs, sharding
    # only past the crossover); 1 is one process; more forces every Filter chunk onto forked shards
    # (pyscheduler.parallel.FORCE_ENV) so that path is what the run compares
    parallelism: int | None = None

    def __init__(self, cluster: LocalCluster, workdir: Path, feature_gates: str = "") -> None:
        gates = (f"--feature-gates={feature_gates}",) if feature_gates else ()
        config = _configuration(None)
        env: dict[str, str] = {}
        if self.parallelism is not None:
            config["parallelism"] = self.parallelism
            if self.parallelism > 1:
                env[FORCE_ENV] = "1"
        self.proc = SchedulerProcess(
            cluster.kubeconfig, config, name="pyscheduler-diff", extra_args=gates, env=env
        )
        self.dir = self.proc.dir

    def start(self, timeout: float = 60.0) -> None:
        self.proc.start(wait_ready=timeout)

    def log_tail(self, n: int = 30) -> str:
        return self.proc.log_tail(n)

    def stop(self) -> None:
        self.proc.stop(timeout=15)


PV_CONTROLLER = "persistentvolume-binder-controller"
# creates a pod's claims from its ResourceClaimTemplates, and deallocates a claim once its last pod is gone
CLAIM_CONTROLLER = "resourceclaim-controller"


def uses_dra(sc: Scenario) -> bool:
    """The scenario creates resource.k8s.io objects or pods with ResourceClaims."""
    return any(o.get("kind") in DRA_KINDS for o in sc.objects) or any(
        p.get("spec", {}).get("resourceClaims") for p in (*sc.pods, *sc.batch, *sc.existing)
    )


def controllers_for(sc: Scenario) -> tuple[str, ...]:
    """The kube-controller-manager controllers a scenario needs (none for most). The PV binder runs only
    where WaitForFirstConsumer binding must complete: elsewhere it would race our writes of pre-bound
    PV/PVC objects and their status."""
    out = []
    if sc.needs_pv_controller:
        out.append(PV_CONTROLLER)
    if uses_dra(sc):
        out.append(CLAIM_CONTROLLER)
    return tuple(out)


class ControllerManager:
    """kube-controller-manager running only the controllers given (the PV binder completes
    WaitForFirstConsumer bindings; the resourceclaim controller serves DRA scenarios)."""

    def __init__(
        self,
        cluster: LocalCluster,
        workdir: Path,
        controllers: Sequence[str],
        extra_args: Sequence[str] = (),
    ) -> None:
        self.cluster = cluster
        self.controllers = tuple(controllers)
        self.extra_args = tuple(extra_args)
        self.log_path = workdir / "kube-controller-manager.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        argv = [
            self.cluster.binary("kube-controller-manager"),
            f"--kubeconfig={self.cluster.kubeconfig}",
            "--leader-elect=false",
            f"--controllers={','.join(self.controllers)}",
            *self.extra_args,
            "--secure-port=0",
            "--use-service-account-credentials=false",
            "--v=1",
        ]
        self.proc = _spawn(argv, self.log_path)
        time.sleep(1.0)
        if self.proc.poll() is not None:
            raise RunError(
                f"kube-controller-manager exited: {self.log_path.read_text(errors='replace')[-2000:]}"
            )

    def stop(self) -> None:
        p = self.proc
        if p is None or p.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)


# ------------------------------------------------------------------------------------------ in-memory scores


class _Evaluator:
    """pyscheduler's framework, built from the same profile, run over a listed cluster state."""

    def __init__(self) -> None:
        from pyscheduler.config.load import parse_config
        from pyscheduler.plugins.registry import full_registry, plugin_extension_points

        self.registry = full_registry()

        def points(name: str) -> set[str]:
            spec = self.registry.get(name)
            return plugin_extension_points(spec) if spec else set()

        self.config = parse_config(_configuration(None), self.registry, points)

    def evaluate(
        self,
        nodes: Sequence[JSON],
        pods: Sequence[JSON],
        objects: Mapping[str, Sequence[JSON]],
        pod_json: JSON,
    ) -> Evaluation:
        from pyscheduler.app import build_frameworks
        from pyscheduler.backend.claims import ClaimTracker
        from pyscheduler.backend.objects import ObjectStore, slim
        from pyscheduler.backend.snapshot import Snapshot
        from pyscheduler.framework.clock import RealClock
        from pyscheduler.framework.cycle_state import CycleState
        from pyscheduler.framework.dra import ResourceClaim
        from pyscheduler.framework.runtime import FrameworkHandle
        from pyscheduler.framework.types import Node, Pod
        from pyscheduler.framework.waiting_pods import WaitingPods

        ev = Evaluation()
        try:
            snap = Snapshot.from_nodes(
                [Node.from_dict(copy.deepcopy(n)) for n in nodes],
                [
                    Pod.from_dict(copy.deepcopy(p))
                    for p in pods
                    if p["spec"].get("nodeName")
                    and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                ],
            )
            store = ObjectStore()
            claims = ClaimTracker()  # DynamicResources reads claims from the handle's assume cache
            for kind, items in objects.items():
                for o in items:
                    if kind == "ResourceClaim":
                        claims.on_add(ResourceClaim.from_dict(copy.deepcopy(o)))
                    else:
                        store.put(kind, slim(copy.deepcopy(o)))
            handle = FrameworkHandle(
                snapshot=snap,
                objects=store,
                client=None,
                waiting_pods=WaitingPods(),
                nominator=None,
                clock=RealClock(),
                extra={"claims": claims},
            )
            fwk = build_frameworks(self.config, self.registry, handle, None)[SCHEDULER_NAME]
            pod = Pod.from_dict(copy.deepcopy(pod_json))
            state = CycleState()
            all_nodes = list(snap.list())
            pre, s, _ = fwk.run_pre_filter_plugins(state, pod, all_nodes)
            if s is not None and not s.is_success():
                msg = "; ".join(s.reasons) or str(s.code)
                ev.rejected = {n.name: f"PreFilter {s.plugin}: {msg}" for n in all_nodes}
                return ev
            feasible = []
            for ni in all_nodes:
                if pre is not None and not pre.all_nodes() and ni.name not in (pre.node_names or ()):
                    ev.rejected[ni.name] = "not in PreFilterResult"
                    continue
                st = fwk.run_filter_plugins(state, pod, ni)
                if st is None or st.is_success():
                    feasible.append(ni)
                else:
                    ev.rejected[ni.name] = f"{st.plugin}: {'; '.join(st.reasons)}"
            ev.feasible = [n.name for n in feasible]
            if not feasible:
                return ev
            s = fwk.run_pre_score_plugins(state, pod, feasible)
            if s is not None and not s.is_success():
                ev.error = f"PreScore: {'; '.join(s.reasons)}"
                return ev
            scored, s = fwk.run_score_plugins(state, pod, feasible)
            if s is not None and not s.is_success():
                ev.error = f"Score: {'; '.join(s.reasons)}"
                return ev
            for name, total, detail in scored:
                ev.totals[name] = total
                ev.detail[name] = dict(detail)
        except Exception as e:  # a crash in a plugin is a finding, not a reason to stop the run
            ev.error = f"{type(e).__name__}: {e}"
        return ev


# ------------------------------------------------------------------------------------------ one pass


@dataclass
class PodRun:
    outcome: Outcome
    admitted: JSON  # the pod as the API server stored it (priority, overhead filled in)
    pre_nodes: list[JSON] = field(default_factory=list)
    pre_pods: list[JSON] = field(default_factory=list)
    pre_objects: dict[str, list[JSON]] = field(default_factory=dict)
    post: dict[str, str] = field(default_factory=dict)  # bound pods after the decision (ns/name -> node)


@dataclass
class Pass:
    batch: dict[str, Outcome] = field(default_factory=dict)
    batch_post: dict[str, str] = field(default_factory=dict)
    batch_late: dict[str, Outcome] = field(default_factory=dict)  # pending batch pods after node_updates
    pods: list[PodRun] = field(default_factory=list)
    scores: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # kube's logged scores


class ScenarioRunner:
    def __init__(self, api: Api, sc: Scenario, log: Callable[[str], None] = lambda _: None) -> None:
        self.api = api
        self.sc = sc
        self.log = log
        self.specs: dict[str, JSON] = {}  # ns/name -> pod JSON as we create it (for reconciling)

    # ---------------------------------------------------------------------------- objects
    def _fill(self, obj: JSON) -> JSON:
        o = copy.deepcopy(obj)
        md = o.setdefault("metadata", {})
        md.pop("uid", None)
        kind = o.get("kind")
        if kind in (
            "Pod",
            "PersistentVolumeClaim",
            "PodDisruptionBudget",
            "Service",
            "PodGroup",
            "ResourceClaim",
            "ResourceClaimTemplate",
        ) and not md.get("namespace"):
            md["namespace"] = self.sc.namespace
        if kind == "PersistentVolume":
            ref = o.get("spec", {}).get("claimRef")
            if ref is not None and not ref.get("namespace"):
                ref["namespace"] = self.sc.namespace
        if kind == "Pod":
            o.pop("status", None)
            o["spec"]["schedulerName"] = SCHEDULER_NAME
        if kind == "Node":
            o["status"].setdefault(
                "conditions",
                [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kwok"}],
            )
        return o

    def namespaces(self) -> list[str]:
        names = {self.sc.namespace}
        names |= {_name_of(o) for o in self.sc.objects if o.get("kind") == "Namespace"}
        names |= {_ns_of(p) for p in (*self.sc.existing, *self.sc.pods, *self.sc.batch) if _ns_of(p)}
        return sorted(names)

    def objects(self) -> list[JSON]:
        order = list(KINDS)
        objs = [self._fill(o) for o in self.sc.objects]
        return sorted(objs, key=lambda o: order.index(o["kind"]))

    def setup(self) -> None:
        ns_obj = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": self.sc.namespace, "labels": dict(self.sc.namespace_labels)},
        }
        self.api.create(ns_obj)
        for o in self.objects():
            self.api.create(o)
        for n in self.sc.nodes:
            self.api.create(self._fill(n))
        for p in self.sc.existing:
            self.create_pod(p)
        for p in self.sc.existing:
            if p.get("status"):
                self.write_pod_status(p)
        for p in self.sc.batch:
            self.create_pod(p)

    def create_pod(self, p: JSON, node: str = "") -> JSON:
        body = self._fill(p)
        if node:
            body["spec"]["nodeName"] = node
        self.specs.setdefault(_key(body), self._fill(p))
        out: JSON = self.api.create(body)
        return out

    def write_pod_status(self, p: JSON, timeout: float = 30.0) -> None:
        """Write an existing pod's scenario ``status`` (in-place resize: containerStatuses[].resources and
        allocatedResources, status.resources, the PodResizePending condition) through the status
        subresource, as its kubelet would. Waits first for KWOK to have started the pod (podIP set), so
        that KWOK's own status does not overwrite it; container statuses are merged by name."""
        path = self.api.path_of(self._fill(p))
        want = p["status"]
        deadline = time.monotonic() + timeout
        while True:
            cur = self.api.get(path)
            if cur is not None and (cur.get("status") or {}).get("podIP"):
                break
            if time.monotonic() > deadline:
                raise RunError(f"{path}: KWOK did not start the pod within {timeout:.0f}s")
            time.sleep(POLL)
        for attempt in range(5):
            st = cur.setdefault("status", {})
            for key in ("containerStatuses", "initContainerStatuses"):
                by_name = {c["name"]: c for c in st.get(key) or ()}
                for c in want.get(key) or ():
                    if c["name"] in by_name:
                        by_name[c["name"]].update(copy.deepcopy(c))
                    else:
                        raise RunError(f"{path}: no {key} entry named {c['name']!r} to resize")
            for key in ("resources", "allocatedResources"):
                if key in want:
                    st[key] = copy.deepcopy(want[key])
            types = {c.get("type") for c in want.get("conditions") or ()}
            st["conditions"] = [c for c in st.get("conditions") or () if c.get("type") not in types] + [
                copy.deepcopy(c) for c in want.get("conditions") or ()
            ]
            code, out = self.api.cluster.request("PUT", path + "/status", cur)
            if code == 200:
                return
            if code != 409 or attempt == 4:
                raise RunError(f"PUT {path}/status: HTTP {code}: {str(out)[:400]}")
            cur = self.api.call("GET", path)

    def teardown(self) -> None:
        api = self.api
        paths = []
        for ns in self.namespaces():
            for p in api.items(f"/api/v1/namespaces/{ns}/pods"):
                api.delete({"kind": "Pod", **p}, grace0=True)
                paths.append(api.path_of({"kind": "Pod", **p}))
        api.wait_gone(paths)
        paths = []
        for o in reversed(self.objects()):
            if o["kind"] == "Namespace":
                continue
            api.delete(o)
            paths.append(api.path_of(o))
        # Claims the scheduler or the PV controller touched may carry finalizers again: drop them. The
        # same for ResourceClaims the resourceclaim controller or the scheduler made for the pods.
        for ns in self.namespaces():
            for c in api.items(KINDS["ResourceClaim"][0].format(ns=ns)):
                api.delete({"kind": "ResourceClaim", **c})
                paths.append(api.path_of({"kind": "ResourceClaim", **c}))
            for c in api.items(f"/api/v1/namespaces/{ns}/persistentvolumeclaims"):
                api.delete({"kind": "PersistentVolumeClaim", **c})
                paths.append(api.path_of({"kind": "PersistentVolumeClaim", **c}))
        for n in self.sc.nodes:
            api.call("DELETE", f"/api/v1/nodes/{_name_of(n)}", ok=(200, 202, 404))
            paths.append(f"/api/v1/nodes/{_name_of(n)}")
        try:
            api.wait_gone(paths, timeout=10)
        except RunError:
            for path in paths:  # finalizers re-added by a controller in the meantime
                obj = api.get(path)
                if obj is not None and obj.get("kind") in FINALIZED_KINDS:
                    api.delete(obj)
            api.wait_gone(paths)

    # ---------------------------------------------------------------------------- decisions
    def await_decision(
        self,
        ns: str,
        name: str,
        may_preempt: bool,
        timeout: float = DECISION_TIMEOUT,
        start: float | None = None,
    ) -> Outcome:
        """Poll the pod until it is bound or reported unschedulable; ``start`` is when it was created."""
        start = time.monotonic() if start is None else start
        path = f"/api/v1/namespaces/{ns}/pods/{name}"
        first_pending: float | None = None
        while True:
            p = self.api.get(path)
            now = time.monotonic()
            if p is None:
                return Outcome(reason="Deleted", seconds=now - start)
            if p["spec"].get("nodeName"):
                return Outcome(node=p["spec"]["nodeName"], seconds=now - start)
            st = p.get("status") or {}
            nominated = st.get("nominatedNodeName") or ""
            cond = next((c for c in st.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
            if cond is not None and cond.get("status") == "False":
                if first_pending is None:
                    first_pending = now
                reason = str(cond.get("reason") or "")
                if reason == "SchedulingGated":
                    settle = GATED_SETTLE
                elif nominated:
                    settle = PREEMPT_TIMEOUT
                elif may_preempt:
                    settle = PREEMPT_SETTLE
                else:
                    settle = 0.0
                # a DRA scenario may ask for more: a pod whose claim PostFilter deallocates is first
                # reported unschedulable, then retried once the claim update arrives
                settle = max(settle, float(getattr(self.sc, "settle", 0.0)))
                if now - first_pending >= settle:
                    out = Outcome(
                        reason=reason,
                        condition_message=str(cond.get("message") or ""),
                        nominated=nominated,
                        seconds=now - start,
                    )
                    out.message = out.condition_message
                    if reason != "SchedulingGated":
                        note = self.failed_scheduling_note(ns, p["metadata"]["uid"])
                        if note:
                            out.message = note
                    return out
            elif now - start > timeout:
                return Outcome(
                    reason="Timeout",
                    nominated=nominated,
                    seconds=now - start,
                    message="no decision within the timeout",
                )
            time.sleep(POLL)

    def failed_scheduling_note(self, ns: str, uid: str) -> str:
        deadline = time.monotonic() + EVENT_WAIT
        q = f"?fieldSelector=involvedObject.uid%3D{uid},reason%3DFailedScheduling"
        while True:
            items = self.api.items(f"/api/v1/namespaces/{ns}/events{q}")
            if items:
                items.sort(key=lambda e: e.get("eventTime") or e.get("lastTimestamp") or "")
                return str(items[-1].get("message") or "")
            if time.monotonic() > deadline:
                return ""
            time.sleep(0.1)

    def pod_claims(self, pod: Mapping[str, Any]) -> dict[str, str]:
        """The pod's claims: its name for each in spec.resourceClaims (and "extended-resources" for the
        claim the scheduler made for extended resources backed by DRA) -> the ResourceClaim's name."""
        spec, st = pod.get("spec") or {}, pod.get("status") or {}
        generated = {c.get("name"): c.get("resourceClaimName") for c in st.get("resourceClaimStatuses") or ()}
        out: dict[str, str] = {}
        for rc in spec.get("resourceClaims") or ():
            claim = rc.get("resourceClaimName") or generated.get(rc.get("name")) or ""
            out[str(rc.get("name"))] = str(claim)
        ext = (st.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
        if ext:
            out["extended-resources"] = str(ext)
        return out

    def claim_devices(self, ns: str, name: str, timeout: float = 5.0) -> dict[str, list[str]]:
        """A bound pod's claims -> the devices allocated to each (the scheduler writes the allocation in
        PreBind, before the binding: it is there once the pod is bound)."""
        pod = self.api.get(f"/api/v1/namespaces/{ns}/pods/{name}")
        if pod is None:
            return {}
        out: dict[str, list[str]] = {}
        for ref, claim_name in self.pod_claims(pod).items():
            path = f"{KINDS['ResourceClaim'][0].format(ns=ns)}/{claim_name}"
            deadline = time.monotonic() + timeout
            claim = self.api.get(path) if claim_name else None
            while claim is not None and not (claim.get("status") or {}).get("allocation"):
                if time.monotonic() > deadline:
                    break
                time.sleep(POLL)
                claim = self.api.get(path)
            out[ref] = allocated_devices(claim) if claim is not None else ["<no claim>"]
        return out

    def delete_with_claims(self, key: str, timeout: float = 30.0) -> None:
        """Delete a bound pod and wait until the resourceclaim controller has released its claims
        (deallocated, or deleted if they were made for the pod), so the next pod sees the devices free."""
        ns, name = key.split("/", 1)
        pod = self.api.get(f"/api/v1/namespaces/{ns}/pods/{name}")
        claims = list(self.pod_claims(pod).values()) if pod is not None else []
        self.delete_pod(key)
        deadline = time.monotonic() + timeout
        for claim_name in claims:
            path = f"{KINDS['ResourceClaim'][0].format(ns=ns)}/{claim_name}"
            while True:
                c = self.api.get(path)
                if c is None or not (c.get("status") or {}).get("allocation"):
                    break
                if time.monotonic() > deadline:
                    raise RunError(f"claim {ns}/{claim_name} still allocated {timeout:.0f}s after {key} went")
                time.sleep(POLL)

    def delete_pod(self, key: str) -> None:
        ns, name = key.split("/", 1)
        path = f"/api/v1/namespaces/{ns}/pods/{name}"
        self.api.call("DELETE", path + "?gracePeriodSeconds=0", ok=(200, 202, 404))
        self.api.wait_gone([path])

    def reconcile(self, target: Mapping[str, str]) -> None:
        """Make the bound pods of the scenario equal ``target`` (kube-scheduler's pass at this point)."""
        current = self.api.bound_pods()
        wrong = [k for k, n in current.items() if target.get(k) != n]
        for k in wrong:
            self.delete_pod(k)
        for k, n in target.items():
            if current.get(k) != n:
                self.create_pod(self.specs[k], node=n)

    # ---------------------------------------------------------------------------- one pass
    def run_pass(self, scheduler: KubeScheduler | PyScheduler, reference: Pass | None) -> Pass:
        result = Pass()
        self.setup()
        scheduler.start()
        try:
            for p in self.sc.batch:
                ns, name = _ns_of(self._fill(p)), _name_of(p)
                result.batch[name] = self.await_decision(ns, name, may_preempt=True)
            for p in self.sc.batch:  # devices once every batch pod is decided (a later one may preempt)
                o = result.batch[_name_of(p)]
                if o.bound:
                    o.devices = self.claim_devices(_ns_of(self._fill(p)), _name_of(p))
            if self.sc.node_updates:
                self.update_nodes()
                for name, o in result.batch.items():
                    if not o.bound:
                        result.batch_late[name] = self.await_binding(self.sc.namespace, name)
            for name, o in {**result.batch, **result.batch_late}.items():
                if not o.bound:
                    self.delete_pod(f"{self.sc.namespace}/{name}")
            result.batch_post = self.api.bound_pods()
            if reference is not None and result.batch_post != reference.batch_post:
                self.reconcile(reference.batch_post)
            deletions: Mapping[str, Sequence[str]] = getattr(self.sc, "delete_before", {})
            for i, p in enumerate(self.sc.pods):
                for gone in deletions.get(_name_of(p), ()):
                    self.delete_with_claims(f"{self.sc.namespace}/{gone}")
                result.pods.append(self.place(p, keep_state=reference is None))
                if reference is not None and result.pods[-1].post != reference.pods[i].post:
                    self.reconcile(reference.pods[i].post)
        finally:
            scheduler.stop()
        if isinstance(scheduler, KubeScheduler):
            result.scores = scheduler.scores()
        return result

    def update_nodes(self) -> None:
        for u in self.sc.node_updates:
            self.api.call(
                "PATCH",
                f"/api/v1/nodes/{_name_of(u)}/status",
                {"status": u["status"]},
                content_type="application/merge-patch+json",
            )

    def await_binding(self, ns: str, name: str, timeout: float = DECISION_TIMEOUT) -> Outcome:
        """Wait for a pod already reported unschedulable to be bound after a cluster change; still
        pending at ``timeout``: its latest PodScheduled condition and FailedScheduling note."""
        start = time.monotonic()
        path = f"/api/v1/namespaces/{ns}/pods/{name}"
        while True:
            p = self.api.get(path)
            now = time.monotonic()
            if p is None:
                return Outcome(reason="Deleted", seconds=now - start)
            if p["spec"].get("nodeName"):
                return Outcome(node=p["spec"]["nodeName"], seconds=now - start)
            if now - start > timeout:
                st = p.get("status") or {}
                cond: dict[str, Any] = next(
                    (c for c in st.get("conditions") or [] if c.get("type") == "PodScheduled"), {}
                )
                out = Outcome(
                    reason=str(cond.get("reason") or "Timeout"),
                    condition_message=str(cond.get("message") or ""),
                    seconds=now - start,
                )
                out.message = self.failed_scheduling_note(ns, p["metadata"]["uid"]) or out.condition_message
                return out
            time.sleep(POLL)

    def place(self, p: JSON, keep_state: bool) -> PodRun:
        api = self.api
        pre_pods = api.items("/api/v1/pods")
        before = {
            _key(x): x["spec"].get("nodeName", "")
            for x in pre_pods
            if x["spec"].get("nodeName") and not x["metadata"].get("deletionTimestamp")
        }
        run = PodRun(Outcome(), {})
        if keep_state:
            run.pre_pods = pre_pods
            run.pre_nodes = api.items("/api/v1/nodes")
            run.pre_objects = {kind: api.items(path) for kind, path in EVAL_KINDS.items()}
        created_at = time.monotonic()
        admitted = self.create_pod(p)
        run.admitted = admitted
        ns, name = _ns_of(admitted), _name_of(admitted)
        prio = int(admitted["spec"].get("priority") or 0)
        lower = [
            x for x in pre_pods if x["spec"].get("nodeName") and int(x["spec"].get("priority") or 0) < prio
        ]
        may_preempt = bool(lower) and admitted["spec"].get("preemptionPolicy") != "Never"
        out = self.await_decision(ns, name, may_preempt, start=created_at)
        if out.bound:
            out.devices = self.claim_devices(ns, name)
        else:
            self.delete_pod(f"{ns}/{name}")
        run.post = api.bound_pods()
        out.victims = sorted(k for k in before if k not in run.post)
        run.outcome = out
        return run


# ------------------------------------------------------------------------------------------ judging


def _devices_text(o: Outcome) -> str:
    return "; ".join(f"{claim}: {', '.join(devs) or '-'}" for claim, devs in sorted(o.devices.items()))


def kube_outcomes(sc: Scenario, kube: Pass) -> list[tuple[str, Outcome]]:
    """--kube-only: what kube-scheduler did with each pod, in the order judge() would list them."""
    out = [(_name_of(p), kube.batch[_name_of(p)]) for p in sc.batch]
    out += [(f"{n}@after-update", o) for n, o in sorted(kube.batch_late.items())]
    out += [(_name_of(p), kube.pods[i].outcome) for i, p in enumerate(sc.pods)]
    return out


def judge(sc: Scenario, kube: Pass, py: Pass, evaluator: _Evaluator) -> list[PodResult]:
    out: list[PodResult] = []
    for p in sc.batch:
        name = _name_of(p)
        k, q = kube.batch[name], py.batch[name]
        out.append(_judge_one(sc.name, name, k, q, None, kube.scores.get(f"{sc.namespace}/{name}")))
    for name in sorted(kube.batch_late.keys() | py.batch_late.keys()):
        # a pod pending on one side only was already judged a disagreement; judge the rest again
        k, q = kube.batch_late.get(name, kube.batch[name]), py.batch_late.get(name, py.batch[name])
        out.append(_judge_one(sc.name, f"{name}@after-update", k, q, None))
    for i, p in enumerate(sc.pods):
        k, q = kube.pods[i].outcome, py.pods[i].outcome
        kr = kube.pods[i]
        ev = None
        if k.bound or q.bound:
            ev = evaluator.evaluate(kr.pre_nodes, kr.pre_pods, kr.pre_objects, kr.admitted)
        out.append(_judge_one(sc.name, _name_of(p), k, q, ev, kube.scores.get(_key(kr.admitted))))
    return out


def _judge_one(
    scenario: str,
    name: str,
    k: Outcome,
    q: Outcome,
    ev: Evaluation | None,
    kube_scores: dict[str, dict[str, int]] | None = None,
) -> PodResult:
    feas = k.bound == q.bound
    note = ""
    if not feas:
        placement = False
    elif not k.bound:
        placement = True
    elif k.victims or q.victims:
        placement = k.node == q.node and k.victims == q.victims
        if not placement:
            note = "preemption differs (node or victims)"
    elif k.node == q.node:
        placement = True
    elif ev is None:
        placement = False
        note = "different nodes, no in-memory scores (batch pod)"
    else:
        kt, qt = ev.totals.get(k.node), ev.totals.get(q.node)
        placement = kt is not None and kt == qt
        if not placement:
            note = f"in-memory totals: kube's {k.node}={kt}, py's {q.node}={qt}"
        if kube_scores and k.node in kube_scores and q.node in kube_scores:
            ks, qs = sum(kube_scores[k.node].values()), sum(kube_scores[q.node].values())
            if ks != qs:
                placement = False
            note = (
                note + "; " if note else ""
            ) + f"kube-scheduler's logged totals: {k.node}={ks}, {q.node}={qs}"
    if ev is not None and q.bound and not q.victims and ev.totals and q.node not in ev.best() and feas:
        note = (
            (note + "; " if note else "") + f"the daemon's choice {q.node} is not among the nodes "
            f"pyscheduler ranks best in memory ({','.join(ev.best())}): its cache differed from the API state?"
        )
    if ev is not None and k.bound and not k.victims and ev.feasible and k.node not in ev.feasible:
        note = (
            note + "; " if note else ""
        ) + f"pyscheduler's filters reject kube's node {k.node}: {ev.rejected.get(k.node, '?')}"
    message: bool | None = None
    if not k.bound and not q.bound:
        message = k.message == q.message
    # DRA: on the same node the allocator's choice is determined (pools, slices and devices are tried in
    # a fixed order), so the devices must be the same; on tied nodes they differ by construction.
    devices: bool | None = None
    if k.bound and q.bound and k.node == q.node and (k.devices or q.devices):
        devices = k.devices == q.devices
    return PodResult(scenario, name, k, q, ev, feas, placement, message, note, kube_scores, devices)


# ------------------------------------------------------------------------------------------ driver


class Differential:
    """Owns the cluster (unless given one), the PV controller and the temp directory of a run."""

    def __init__(
        self, cluster: LocalCluster | None = None, keep_logs: bool = False, kube_only: bool = False
    ) -> None:
        self._own = cluster is None
        self.cluster = cluster or LocalCluster(
            with_kwok=True,
            with_controller_manager=False,
            name="differential",
            apiserver_args=GANG_APISERVER_ARGS,
        )
        self.keep_logs = keep_logs
        self.workdir = Path(tempfile.mkdtemp(prefix="differential-"))
        self.controllers: ControllerManager | None = None
        self.evaluator = _Evaluator()
        self.kube_only = kube_only

    def __enter__(self) -> Differential:
        if self._own:
            self.cluster.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.controllers is not None:
            self.controllers.stop()
        if self._own:
            self.cluster.stop()
        if not self.keep_logs:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def run(self, scenarios: Sequence[Scenario], out: Callable[[str], None] = print) -> Report:
        report = Report(started=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        t0 = time.monotonic()
        api = Api(self.cluster)
        width = max(len(s.name) for s in scenarios)
        for i, sc in enumerate(scenarios, 1):
            res = self.run_scenario(api, sc)
            report.scenarios.append(res)
            feas = sum(p.feasibility for p in res.pods)
            place = sum(p.placement for p in res.pods)
            judged = [p for p in res.pods if p.message is not None]
            if self.kube_only:
                out(
                    f"[{i:2d}/{len(scenarios)}] {sc.name:<{width}}  kube-scheduler only  ({res.seconds:.1f}s)"
                )
            line = (
                f"[{i:2d}/{len(scenarios)}] {sc.name:<{width}}  pods {len(res.pods):2d}  feasibility "
                f"{feas}/{len(res.pods)}  placement {place}/{len(res.pods)}  messages "
                f"{sum(bool(p.message) for p in judged)}/{len(judged)}  ({res.seconds:.1f}s)"
            )
            if not self.kube_only:
                out(line)
            if res.error:
                out(f"      ERROR: {res.error.splitlines()[0][:300]}")
            for name, o in res.kube_only:
                out(f"      {name}: {o.describe()}" + (f"  {_devices_text(o)}" if o.devices else ""))
                if not o.bound:
                    out(f"        {o.message}")
            for p in res.pods:
                if p.disagrees():
                    out(
                        f"      {p.pod}: kube={p.kube.describe()} py={p.py.describe()}"
                        + (f"  [{p.note}]" if p.note else "")
                    )
                    if p.message is False:
                        out(f"        kube: {p.kube.message}")
                        out(f"        py:   {p.py.message}")
                    if p.devices is False:
                        out(f"        kube: {_devices_text(p.kube)}")
                        out(f"        py:   {_devices_text(p.py)}")
        report.seconds = time.monotonic() - t0
        return report

    def run_scenario(self, api: Api, sc: Scenario) -> ScenarioResult:
        res = ScenarioResult(sc.name)
        t0 = time.monotonic()
        runner = ScenarioRunner(api, sc)
        try:
            wanted = controllers_for(sc)
            if wanted:
                self.controllers = ControllerManager(self.cluster, self.workdir, wanted)
                self.controllers.start()
            passes: list[Pass] = []
            for cls in (KubeScheduler,) if self.kube_only else (KubeScheduler, PyScheduler):
                sched = cls(self.cluster, self.workdir, feature_gates_for(sc))
                try:
                    passes.append(runner.run_pass(sched, passes[0] if passes else None))
                except Exception as e:
                    raise RunError(
                        f"{cls.label} pass: {e}\n--- {cls.label} log tail ---\n{sched.log_tail()}"
                    ) from e
                finally:
                    with contextlib.suppress(Exception):
                        runner.teardown()
                    if (
                        self.keep_logs
                    ):  # <workdir>/<scenario>-kube/kube-scheduler.log, <scenario>-py/scheduler.log
                        with contextlib.suppress(OSError):
                            shutil.move(str(sched.dir), str(self.workdir / f"{sc.name}-{cls.label}"))
                    else:
                        shutil.rmtree(sched.dir, ignore_errors=True)
            if self.kube_only:
                res.kube_only = kube_outcomes(sc, passes[0])
            else:
                res.pods = judge(sc, passes[0], passes[1], self.evaluator)
        except Exception as e:
            res.error = f"{type(e).__name__}: {e}"
        finally:
            if self.controllers is not None:
                self.controllers.stop()
                self.controllers = None
        res.seconds = time.monotonic() - t0
        return res


def run_differential(
    scenarios: Sequence[Scenario],
    cluster: LocalCluster | None = None,
    out: Callable[[str], None] = print,
    keep_logs: bool = False,
    kube_only: bool = False,
) -> Report:
    with Differential(cluster, keep_logs=keep_logs, kube_only=kube_only) as d:
        return d.run(scenarios, out)


def write_report(report: Report, path: Path | None = None) -> Path:
    if path is None:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        path = RESULTS_DIR / f"differential-{dt.datetime.now(dt.UTC).strftime('%Y-%m-%d')}.json"
    path.write_text(json.dumps(report.to_json(), indent=1) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.differential", description=__doc__.split("\n")[0])
    ap.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this scenario (repeatable; comma-separated lists work too)",
    )
    ap.add_argument("--list", action="store_true", help="list the scenarios and exit")
    ap.add_argument(
        "--kube-only",
        action="store_true",
        help="run kube-scheduler alone and print what it did with each pod (to check a new scenario)",
    )
    ap.add_argument(
        "--output",
        type=Path,
        default=None,
        help="where to write the JSON report (default bench/results/differential-<UTC date>.json)",
    )
    ap.add_argument(
        "--keep-logs", action="store_true", help="keep scheduler logs (their directory is printed)"
    )
    ap.add_argument(
        "--py-parallelism",
        type=int,
        default=None,
        metavar="N",
        help="pyscheduler's parallelism; N > 1 also forces every Filter chunk onto N forked shards",
    )
    args = ap.parse_args(argv)
    PyScheduler.parallelism = args.py_parallelism
    if args.list:
        width = max(len(s.name) for s in SCENARIOS)
        for s in SCENARIOS:
            print(f"{s.name:<{width}}  {s.placements():2d} pods  {','.join(s.plugins):<40}  {s.description}")
        return 0
    known = by_name()
    names = [n for arg in args.scenario for n in arg.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"unknown scenario(s): {', '.join(unknown)} (see --list)", file=sys.stderr)
        return 2
    selected = [known[n] for n in names] if names else list(SCENARIOS)
    print(
        f"differential: {len(selected)} scenario(s), {sum(s.placements() for s in selected)} pod placements, "
        f"kube-scheduler then pyscheduler, profile {SCHEDULER_NAME}",
        flush=True,
    )

    def out(line: str) -> None:
        print(line, flush=True)

    with Differential(keep_logs=args.keep_logs, kube_only=args.kube_only) as d:
        if args.keep_logs:
            out(f"logs: {d.workdir}")
        report = d.run(selected, out)
    if args.kube_only:
        for failed in report.errors:
            print(f"scenario {failed.name} could not be run: {failed.error.splitlines()[0]}", file=sys.stderr)
        return 2 if report.errors else 0
    for line in report.summary_lines():
        print(line)
    path = write_report(report, args.output)
    print(f"details: {path}  ({report.seconds:.0f}s)")
    for failed in report.errors:
        print(f"scenario {failed.name} could not be run: {failed.error.splitlines()[0]}", file=sys.stderr)
    return report.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
