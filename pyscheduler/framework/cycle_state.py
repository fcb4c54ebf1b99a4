"""CycleState: data plugins share within one scheduling cycle of one pod.

A plugin writes what its PreFilter or PreScore computed under its own key and reads it back in Filter
or Score. Preemption clones the state to try removing victims without touching the real cycle, so a
value that is mutated after PreFilter must implement ``clone()``.
"""

from __future__ import annotations

from typing import Any, Protocol


class StateData(Protocol):
    def clone(self) -> StateData: ...


class CycleState:
    __slots__ = (
        "_data",
        "record_plugin_metrics",
        "skip_filter_plugins",
        "skip_pre_bind_plugins",
        "skip_score_plugins",
    )

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        # kube's ShouldRecordPluginMetrics: this cycle times each plugin call (the scheduler samples 10%)
        self.record_plugin_metrics = False
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.skip_pre_bind_plugins: set[str] = set()

    def read(self, key: str) -> Any:
        """The value under key; KeyError if nothing was written (a plugin bug, reported as Error)."""
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        c = CycleState()
        for k, v in self._data.items():
            clone = getattr(v, "clone", None)
            c._data[k] = clone() if callable(clone) else v
        c.skip_filter_plugins = set(self.skip_filter_plugins)
        c.skip_score_plugins = set(self.skip_score_plugins)
        c.skip_pre_bind_plugins = set(self.skip_pre_bind_plugins)
        c.record_plugin_metrics = self.record_plugin_metrics
        return c

    def overlay(self) -> CycleState:
        """What ``clone()`` gives, each value cloned when first read instead of all at once: for a state
        used briefly while this one is left unchanged (the nominated pods' Filter pass, which reads one
        or two plugins' values where ``clone()`` copies every plugin's)."""
        return _Overlay(self)


class _Overlay(CycleState):
    __slots__ = ("_gone", "_parent")

    def __init__(self, parent: CycleState) -> None:
        self._data = {}
        self._parent = parent
        self._gone: set[str] = set()  # deleted here: not read through
        self.skip_filter_plugins = set(parent.skip_filter_plugins)
        self.skip_score_plugins = set(parent.skip_score_plugins)
        self.skip_pre_bind_plugins = set(parent.skip_pre_bind_plugins)
        self.record_plugin_metrics = parent.record_plugin_metrics

    def _through(self, key: str) -> bool:
        """Bring the parent's value for ``key`` over (cloned) if not yet; False when there is none."""
        if key in self._data:
            return True
        if key in self._gone or key not in self._parent._data:
            return False
        v = self._parent._data[key]
        clone = getattr(v, "clone", None)
        self._data[key] = clone() if callable(clone) else v
        return True

    def read(self, key: str) -> Any:
        self._through(key)
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data[key] if self._through(key) else default

    def write(self, key: str, value: Any) -> None:
        self._gone.discard(key)
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)
        self._gone.add(key)

    def clone(self) -> CycleState:
        for key in self._parent._data:
            self._through(key)
        return CycleState.clone(self)

    def overlay(self) -> CycleState:
        return self.clone()  # read through one level only
