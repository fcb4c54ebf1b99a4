"""Resource: an amount of compute resources, as kube-scheduler's framework.Resource counts them.

CPU in millicores, memory and ephemeral storage in bytes, the pod count, and every other resource
(extended resources, hugepages, attachable volumes) by name in ``scalar``. ``Resource.from_list`` parses
an API ResourceList (``{"cpu": "100m", "memory": "1Gi"}``), remembering each distinct list it has seen
(pods of one template repeat theirs); a quantity that cannot be parsed, or a negative one, is a
``MalformedObject``. NodeInfo adds and subtracts pods' requests in place. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pyscheduler.framework.quantity import QuantityError, int_value, milli_value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"

# kube-scheduler's defaults for containers that request nothing, used only when scoring
# (pkg/scheduler/util: DefaultMilliCPURequest, DefaultMemoryRequest).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


class MalformedObject(ValueError):
    """An API object the scheduler cannot interpret (bad quantity, wrong type). The pod stays pending."""


def _negative(qty: Any) -> bool:
    """A quantity written with a minus sign and not zero (int64 wrap-around alone does not count)."""
    if isinstance(qty, str):
        return qty.startswith("-") and qty.strip("-+0.") != ""
    return isinstance(qty, (int, float)) and qty < 0


_RESOURCE_LISTS: dict[tuple[tuple[str, Any], ...], Resource] = {}
_RESOURCE_LISTS_MAX = 4096


class Resource:
    """An amount of compute resources: CPU in millicores, memory and storage in bytes, plus pods and
    extended resources (``scalar``). Mutable: NodeInfo adds and subtracts pods in place."""

    __slots__ = ("allowed_pod_number", "ephemeral_storage", "memory", "milli_cpu", "scalar")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar: dict[str, int] = dict(scalar) if scalar else {}

    @classmethod
    def from_list(cls, resources: Mapping[str, Any] | None) -> Resource:
        """Parse a ResourceList (``{"cpu": "100m", "memory": "1Gi", "pods": "110"}``)."""
        if not resources:
            return cls()
        # Pods from one template repeat the same lists: parse each distinct one once.
        key = tuple(resources.items())
        if not all(type(v) is str for _, v in key):  # numbers (True == 1) or malformed: no caching
            return cls._parse_list(resources)
        cached = _RESOURCE_LISTS.get(key)
        if cached is not None:
            return cached.clone()
        r = cls._parse_list(resources)
        if len(_RESOURCE_LISTS) >= _RESOURCE_LISTS_MAX:
            _RESOURCE_LISTS.clear()
        _RESOURCE_LISTS[key] = r.clone()
        return r

    @classmethod
    def _parse_list(cls, resources: Mapping[str, Any]) -> Resource:
        r = cls()
        for name, qty in resources.items():
            try:
                if name == CPU:
                    r.milli_cpu = milli_value(qty)
                elif name == MEMORY:
                    r.memory = int_value(qty)
                elif name == EPHEMERAL_STORAGE:
                    r.ephemeral_storage = int_value(qty)
                elif name == PODS:
                    r.allowed_pod_number = int_value(qty)
                else:
                    r.scalar[name] = int_value(qty)
            except (QuantityError, TypeError) as e:
                raise MalformedObject(f"resource {name!r}: {e}") from e
            if _negative(qty):
                # The API server refuses these (must be greater than or equal to 0); one that got past
                # it anyway would make a node look roomier than it is.
                raise MalformedObject(f"resource {name!r}: must be greater than or equal to 0: {qty!r}")
        return r

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def set(self, name: str, value: int) -> None:
        if name == CPU:
            self.milli_cpu = value
        elif name == MEMORY:
            self.memory = value
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = value
        elif name == PODS:
            self.allowed_pod_number = value
        else:
            self.scalar[name] = value

    def names(self) -> Iterator[str]:
        """Names of the resources this value mentions (cpu and memory always)."""
        yield CPU
        yield MEMORY
        if self.ephemeral_storage:
            yield EPHEMERAL_STORAGE
        yield from self.scalar

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) + v

    def sub(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) - v

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        self.allowed_pod_number = max(self.allowed_pod_number, other.allowed_pod_number)
        for k, v in other.scalar.items():
            self.scalar[k] = max(self.scalar.get(k, 0), v)

    def clone(self) -> Resource:
        return Resource(
            self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, self.scalar
        )

    def is_zero(self) -> bool:
        return not (
            self.milli_cpu or self.memory or self.ephemeral_storage or any(v for v in self.scalar.values())
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return (
            self.milli_cpu == other.milli_cpu
            and self.memory == other.memory
            and self.ephemeral_storage == other.ephemeral_storage
            and self.allowed_pod_number == other.allowed_pod_number
            and {k: v for k, v in self.scalar.items() if v} == {k: v for k, v in other.scalar.items() if v}
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = [f"cpu={self.milli_cpu}m", f"memory={self.memory}"]
        if self.ephemeral_storage:
            parts.append(f"ephemeral-storage={self.ephemeral_storage}")
        if self.allowed_pod_number:
            parts.append(f"pods={self.allowed_pod_number}")
        parts.extend(f"{k}={v}" for k, v in sorted(self.scalar.items()))
        return f"Resource({', '.join(parts)})"
