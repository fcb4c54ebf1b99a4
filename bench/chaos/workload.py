"""The workload driver: a seeded random mix of what a busy cluster does to a scheduler.

Every tick it creates bare pods of mixed sizes and priorities (the high ones preempt once the pool is
full), pods with required pod anti-affinity or zone topology spread, Coscheduling gangs (when
``gangs`` is set; some with a member that fits nowhere, so the others wait in Permit), scales Deployments up and down,
deletes pending and bound pods, and adds, cordons and deletes nodes. All objects live in one namespace
and use ``schedulerName: chaos-scheduler``; nodes carry the label ``chaos-pool=<pool>`` and are created
by ``LocalCluster.create_nodes`` (KWOK keeps them Ready).
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from bench.chaos.checker import SCHEDULER_NAME
from pyscheduler.testing.cluster import LocalCluster

SIZES = [("100m", "128Mi"), ("250m", "256Mi"), ("500m", "512Mi"), ("1", "1Gi"), ("2", "4Gi")]
PRIORITIES = ["chaos-low", "chaos-mid", "chaos-high"]
ZONES = ["zone-a", "zone-b", "zone-c"]


def ensure_priority_classes(cluster: LocalCluster) -> None:
    for i, name in enumerate(PRIORITIES):
        cluster.api(
            "POST",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": 1000 * (i + 1),
            },
            ok=(200, 201, 409),
        )


def pod_spec(rng: random.Random, pool: str) -> dict[str, Any]:
    cpu, mem = rng.choice(SIZES)
    return {
        "schedulerName": SCHEDULER_NAME,
        "priorityClassName": rng.choice(PRIORITIES),
        "nodeSelector": {"chaos-pool": pool},
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": mem}}}
        ],
    }


class Workload:
    def __init__(self, cluster: LocalCluster, namespace: str, pool: str, nodes: int, seed: int = 1) -> None:
        self.cluster = cluster
        self.ns = namespace
        self.pool = pool
        self.rng = random.Random(seed)
        self.node_names: list[str] = []
        self.next_node = 0
        self.n_pods = 0
        self.errors: list[str] = []
        self.initial_nodes = nodes
        self.deployments = [f"web-{i}" for i in range(3)]
        self._stop = threading.Event()
        self.actions: dict[str, int] = {}
        self.n_gangs = 0
        self.gangs = False  # also create Coscheduling gangs (the scheduler must run Coscheduling)
        # steady churn (the soak): ``max_pods`` caps the bare pods alive; past it a create becomes a
        # delete, so deletions keep pace with creations. Bare pods to delete are picked from this
        # driver's own record (no LIST of thousands of pods per action on a busy API server).
        self.max_pods: int | None = None
        self.live: list[str] = []
        # the soak with nodes held flat (``node_churn`` off: no node added, cordoned or deleted, so memory
        # growth is the pods'), and smaller nodes (``node_cpu``) so that the pool fills and preemption runs
        self.node_churn = True
        self.node_cpu = "4"
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ setup
    def setup(self) -> None:
        c = self.cluster
        c.api(
            "POST",
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns}},
            ok=(200, 201, 409),
        )
        ensure_priority_classes(c)
        self.add_nodes(self.initial_nodes)
        for name in self.deployments:
            spec = pod_spec(self.rng, self.pool)
            spec["priorityClassName"] = "chaos-mid"
            c.api(
                "POST",
                f"/apis/apps/v1/namespaces/{self.ns}/deployments",
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": name},
                    "spec": {
                        "replicas": 2,
                        "selector": {"matchLabels": {"app": name}},
                        "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
                    },
                },
            )

    def add_nodes(self, count: int) -> None:
        with self._lock:
            start = self.next_node
            self.next_node += count
        names = self.cluster.create_nodes(
            count,
            prefix=f"{self.pool}",
            start=start,
            labels={"chaos-pool": self.pool},
            zones=ZONES,
            cpu=self.node_cpu,
            memory="16Gi",
            pods=30,
        )
        with self._lock:
            self.node_names.extend(names)

    def recreate_node(self, name: str) -> None:
        """Create a node again under a name this workload gave (same index: same zone, labels, size)."""
        idx = int(name.rsplit("-", 1)[1])
        self.cluster.create_nodes(
            1,
            prefix=f"{self.pool}",
            start=idx,
            labels={"chaos-pool": self.pool},
            zones=ZONES,
            cpu=self.node_cpu,
            memory="16Gi",
            pods=30,
        )

    def create_gang(self, size: int, cpu: str = "500m", unschedulable_member: bool = False) -> list[str]:
        """``size`` pods of one Coscheduling group (label ``scheduling.x-k8s.io/pod-group``, annotation
        ``scheduling.x-k8s.io/min-available: size``). With ``unschedulable_member`` the last one asks
        for more cpu than any node has: the others reach Permit and wait there for it."""
        self.n_gangs += 1
        group = f"gang-{self.n_gangs}"
        names = []
        for i in range(size):
            spec = pod_spec(self.rng, self.pool)
            big = unschedulable_member and i == size - 1
            spec["priorityClassName"] = "chaos-mid"
            spec["containers"][0]["resources"]["requests"] = {"cpu": "5" if big else cpu, "memory": "128Mi"}
            name = f"{group}-{i}"
            self._api(
                "POST",
                f"/api/v1/namespaces/{self.ns}/pods",
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": name,
                        "labels": {"chaos": "gang", "scheduling.x-k8s.io/pod-group": group},
                        "annotations": {"scheduling.x-k8s.io/min-available": str(size)},
                    },
                    "spec": spec,
                },
            )
            names.append(name)
        return names

    # ------------------------------------------------------------------ actions
    def _create_pod(self, rng: random.Random, extra: str = "") -> None:
        spec = pod_spec(rng, self.pool)
        labels = {"chaos": "bare"}
        if extra == "anti":
            group = f"g{rng.randrange(4)}"
            labels = {"group": group}
            spec["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"group": group}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            }
        elif extra == "spread":
            labels = {"spread": "s"}
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"spread": "s"}},
                }
            ]
        with self._lock:
            self.n_pods += 1
            name = f"p-{self.n_pods}"
        self._api(
            "POST",
            f"/api/v1/namespaces/{self.ns}/pods",
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec},
        )
        with self._lock:
            self.live.append(name)

    def _delete_live_pod(self, rng: random.Random) -> None:
        """Delete a bare pod this driver created (bound or pending), from its own record."""
        with self._lock:
            if not self.live:
                return
            i = rng.randrange(len(self.live))
            self.live[i], self.live[-1] = self.live[-1], self.live[i]
            name = self.live.pop()
        self._api("DELETE", f"/api/v1/namespaces/{self.ns}/pods/{name}?gracePeriodSeconds=0")

    def _api(self, method: str, path: str, body: Any = None) -> Any:
        if method == "PATCH_MERGE":
            status, out = self.cluster.request(
                "PATCH", path, body, content_type="application/merge-patch+json"
            )
        else:
            status, out = self.cluster.request(method, path, body)
        if status not in (200, 201, 202, 404, 409):
            self.errors.append(f"{method} {path}: {status}")
        return out

    def _pods(self, pending: bool) -> list[str]:
        sel = "spec.nodeName%3D" if pending else "spec.nodeName%21%3D"
        out = self._api(
            "GET", f"/api/v1/namespaces/{self.ns}/pods?fieldSelector={sel}&labelSelector=chaos%3Dbare"
        )
        return (
            [p["metadata"]["name"] for p in (out or {}).get("items") or []] if isinstance(out, dict) else []
        )

    def tick(self, rng: random.Random | None = None) -> None:
        rng = rng or self.rng
        r = rng.random()
        steady = self.max_pods is not None
        if not self.node_churn and r >= 0.88:
            r = rng.random() * 0.88  # nodes held flat: one of the pod actions instead
        if steady and len(self.live) >= (self.max_pods or 0) and 0.12 <= r < 0.55:
            r = 0.80  # at the cap: this create becomes a delete

        if self.gangs and r < 0.12:
            self.create_gang(rng.randrange(2, 5), unschedulable_member=rng.random() < 0.3)
            act = "create-gang"
        elif r < 0.55:
            self._create_pod(rng, rng.choice(["", "", "", "anti", "spread"]))
            act = "create-pod"
        elif r < 0.65:
            name = rng.choice(self.deployments)
            self._api(
                "PATCH_MERGE",
                f"/apis/apps/v1/namespaces/{self.ns}/deployments/{name}/scale",
                {"spec": {"replicas": rng.randrange(0, 12)}},
            )
            act = "scale-deployment"
        elif r < 0.75:
            pending = self._pods(pending=True)
            if pending:
                self._api(
                    "DELETE",
                    f"/api/v1/namespaces/{self.ns}/pods/{rng.choice(pending)}?gracePeriodSeconds=0",
                )
            act = "delete-pending-pod"
        elif r < 0.88 and steady:
            self._delete_live_pod(rng)
            act = "delete-pod"
        elif r < 0.88:
            bound = self._pods(pending=False)
            if bound:
                self._api(
                    "DELETE",
                    f"/api/v1/namespaces/{self.ns}/pods/{rng.choice(bound)}?gracePeriodSeconds=0",
                )
            act = "delete-bound-pod"
        elif r < 0.93:
            self.add_nodes(1)
            act = "add-node"
        elif r < 0.97 and len(self.node_names) > 2:
            name = rng.choice(self.node_names)
            self._api("PATCH_MERGE", f"/api/v1/nodes/{name}", {"spec": {"unschedulable": rng.random() < 0.7}})
            act = "cordon-node"
        elif len(self.node_names) > 2:
            with self._lock:
                name = self.node_names.pop(rng.randrange(len(self.node_names)))
            self._api("DELETE", f"/api/v1/nodes/{name}")
            act = "delete-node"
        else:
            act = "idle"
        with self._lock:
            self.actions[act] = self.actions.get(act, 0) + 1

    def run(self, seconds: float, rate: float, rng: random.Random | None = None) -> None:
        """Ticks at ``rate`` per second for ``seconds``; a tick that overruns delays the next ones
        (closed loop), so the achieved rate is in ``actions``."""
        end = time.monotonic() + seconds
        while time.monotonic() < end and not self._stop.is_set():
            t0 = time.monotonic()
            try:
                self.tick(rng)
            except Exception as e:  # an API server that is down for a fault: keep driving
                with self._lock:
                    self.errors.append(repr(e)[:200])
            self._stop.wait(max(0.0, 1.0 / rate - (time.monotonic() - t0)))

    def start(self, seconds: float, rate: float, workers: int = 1) -> None:
        """``workers`` threads share ``rate``, each with its own seeded random stream (one slow API
        call then delays only a share of the actions)."""
        if workers <= 1:
            self._threads = [
                threading.Thread(target=self.run, args=(seconds, rate), name="workload", daemon=True)
            ]
        else:
            seed = self.rng.randrange(1 << 30)
            self._threads = [
                threading.Thread(
                    target=self.run,
                    args=(seconds, rate / workers, random.Random(seed + i)),
                    name=f"workload-{i}",
                    daemon=True,
                )
                for i in range(workers)
            ]
        for t in self._threads:
            t.start()

    def join(self) -> None:
        for t in self._threads:
            t.join()

    def teardown(self) -> None:
        self._stop.set()
        self.join()
        self.cluster.request("DELETE", f"/api/v1/namespaces/{self.ns}")
        for n in self.node_names:
            self.cluster.request("DELETE", f"/api/v1/nodes/{n}")
