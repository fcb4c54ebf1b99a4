"""Utilisation per node and per zone, and fragmentation: what the requests of the pods on each node take
of its allocatable, before and after a simulation.

Fragmentation answers "how much of the free capacity can the average pod use?": the average pod is the
mean CPU and memory request of the pods counted; on each schedulable node (cordoned nodes are left out)
the number of average pods that fit in what is free (CPU, memory and pod count alike) is counted, and

    usable[r]        = sum over nodes of fits * average[r] / sum over nodes of free[r]
    fragmentation[r] = 1 - usable[r]

So 0 means every free CPU (or byte) can hold a share of an average pod, 0.4 that 40% is stranded in
pieces too small or beside a resource that ran out. Only resources count here, not taints or affinity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pyscheduler.framework.types import Node, Pod

ZONE_LABEL = "topology.kubernetes.io/zone"
NO_ZONE = "(no zone)"


@dataclass
class NodeUsage:
    name: str
    zone: str
    schedulable: bool
    cpu: int  # allocatable, millicores
    memory: int  # allocatable, bytes
    pods: int  # allocatable pod count
    cpu_requested: int = 0
    memory_requested: int = 0
    pod_count: int = 0

    @property
    def cpu_fraction(self) -> float:
        return self.cpu_requested / self.cpu if self.cpu else 0.0

    @property
    def memory_fraction(self) -> float:
        return self.memory_requested / self.memory if self.memory else 0.0

    def add(self, pod: Pod) -> None:
        self.cpu_requested += pod.requests.milli_cpu
        self.memory_requested += pod.requests.memory
        self.pod_count += 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "zone": self.zone,
            "schedulable": self.schedulable,
            "cpu": {
                "allocatable_m": self.cpu,
                "requested_m": self.cpu_requested,
                "fraction": _r(self.cpu_fraction),
            },
            "memory": {
                "allocatable": self.memory,
                "requested": self.memory_requested,
                "fraction": _r(self.memory_fraction),
            },
            "pods": {"allocatable": self.pods, "count": self.pod_count},
        }


def _r(x: float) -> float:
    return round(x, 4)


@dataclass
class Usage:
    """Requests against allocatable on each node (by name, in the snapshot's order)."""

    nodes: dict[str, NodeUsage]

    @classmethod
    def of(cls, nodes: Iterable[Node], pods: Iterable[Pod]) -> Usage:
        out: dict[str, NodeUsage] = {}
        for n in nodes:
            a = n.allocatable
            out[n.name] = NodeUsage(
                n.name,
                n.labels.get(ZONE_LABEL, NO_ZONE),
                not n.unschedulable,
                a.milli_cpu,
                a.memory,
                a.allowed_pod_number,
            )
        for p in pods:
            u = out.get(p.node_name)
            if u is not None:
                u.add(p)
        return cls(out)

    def zones(self) -> dict[str, NodeUsage]:
        out: dict[str, NodeUsage] = {}
        for u in self.nodes.values():
            z = out.get(u.zone)
            if z is None:
                z = out[u.zone] = NodeUsage(u.zone, u.zone, True, 0, 0, 0)
            z.cpu += u.cpu
            z.memory += u.memory
            z.pods += u.pods
            z.cpu_requested += u.cpu_requested
            z.memory_requested += u.memory_requested
            z.pod_count += u.pod_count
        return dict(sorted(out.items()))

    def total(self) -> NodeUsage:
        t = NodeUsage("(cluster)", "", True, 0, 0, 0)
        for z in self.zones().values():
            t.cpu += z.cpu
            t.memory += z.memory
            t.pods += z.pods
            t.cpu_requested += z.cpu_requested
            t.memory_requested += z.memory_requested
            t.pod_count += z.pod_count
        return t

    def nodes_in_use(self) -> int:
        return sum(1 for u in self.nodes.values() if u.pod_count)

    def fragmentation(self, average: Mapping[str, float]) -> dict[str, Any]:
        """See the module docstring; ``average``: {"cpu": millicores, "memory": bytes}."""
        avg_cpu, avg_mem = float(average.get("cpu", 0)), float(average.get("memory", 0))
        free_cpu = free_mem = used_cpu = used_mem = 0.0
        slots = 0
        for u in self.nodes.values():
            if not u.schedulable:
                continue
            fc = max(0, u.cpu - u.cpu_requested)
            fm = max(0, u.memory - u.memory_requested)
            fits = max(0, u.pods - u.pod_count)
            if avg_cpu > 0:
                fits = min(fits, int(fc // avg_cpu))
            if avg_mem > 0:
                fits = min(fits, int(fm // avg_mem))
            free_cpu += fc
            free_mem += fm
            used_cpu += fits * avg_cpu
            used_mem += fits * avg_mem
            slots += fits
        return {
            "average_pod": {"cpu_m": round(avg_cpu), "memory": round(avg_mem)},
            "free": {"cpu_m": round(free_cpu), "memory": round(free_mem)},
            "average_pod_slots": slots,
            "fragmentation": {
                "cpu": _r(1 - used_cpu / free_cpu) if free_cpu and avg_cpu else 0.0,
                "memory": _r(1 - used_mem / free_mem) if free_mem and avg_mem else 0.0,
            },
        }

    def to_dict(self, per_node: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "cluster": self.total().to_dict(),
            "zones": {name: z.to_dict() for name, z in self.zones().items()},
            "nodes_in_use": self.nodes_in_use(),
        }
        if per_node:
            out["nodes"] = {name: u.to_dict() for name, u in self.nodes.items()}
        return out


def average_pod(pods: Iterable[Pod]) -> dict[str, float]:
    """The mean CPU (millicores) and memory (bytes) request of ``pods``."""
    n = cpu = mem = 0
    for p in pods:
        n += 1
        cpu += p.requests.milli_cpu
        mem += p.requests.memory
    return {"cpu": cpu / n, "memory": mem / n} if n else {"cpu": 0.0, "memory": 0.0}
