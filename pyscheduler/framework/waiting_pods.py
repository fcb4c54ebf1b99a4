"""Pods held by Permit plugins, waiting to be allowed, rejected, or timed out.

State of one waiting pod::

    permit returned WAIT for plugins {A, B} (each with its own timeout)
        │
        ├── allow(A), allow(B)  ──► all plugins allowed ──► SUCCESS (binding cycle goes on)
        ├── reject(X, msg)      ──► UNSCHEDULABLE(msg)   (Unreserve runs, pod is requeued)
        └── clock passes the earliest deadline ──► UNSCHEDULABLE("rejected due to timeout after …")

Waiting uses the framework's Clock, so tests drive timeouts by advancing a fake clock: ``wait()`` wakes
every ``poll`` seconds of real time to look at the clock, and at once on allow or reject.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from pyscheduler.framework.clock import Clock
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod


class WaitingPod:
    def __init__(self, pod: Pod, node_name: str, plugin_timeouts: dict[str, float], clock: Clock) -> None:
        self._pod = pod
        self._node_name = node_name
        self._clock = clock
        now = clock.now()
        self._timeouts = dict(plugin_timeouts)
        self._deadlines = {p: now + t for p, t in plugin_timeouts.items()}
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._result: Status | None = None

    @property
    def pod(self) -> Pod:
        return self._pod

    @property
    def node_name(self) -> str:
        return self._node_name

    def pending_plugins(self) -> list[str]:
        with self._lock:
            return sorted(self._deadlines)

    def allow(self, plugin: str) -> None:
        with self._lock:
            if self._result is not None:
                return
            self._deadlines.pop(plugin, None)
            if self._deadlines:
                return
            self._result = Status.success()
        self._done.set()

    def reject(self, plugin: str, message: str) -> None:
        with self._lock:
            if self._result is not None:
                return
            self._result = Status.unschedulable(message, plugin=plugin)
        self._done.set()

    def _check_timeout(self) -> None:
        now = self._clock.now()
        with self._lock:
            if self._result is not None or not self._deadlines:
                return
            plugin, deadline = min(self._deadlines.items(), key=lambda kv: kv[1])
            if now < deadline:
                return
            waited = self._timeouts[plugin]
            self._result = Status.unschedulable(
                f"rejected due to timeout after waiting {waited:g}s at plugin {plugin}", plugin=plugin
            )
        self._done.set()

    def wait(self, poll: float = 0.05) -> Status:
        """Block until allowed, rejected or timed out (by the clock)."""
        while not self._done.is_set():
            self._check_timeout()
            self._done.wait(poll)
        assert self._result is not None
        return self._result

    def result(self) -> Status | None:
        """The outcome if decided (checking the clock first), else None."""
        self._check_timeout()
        with self._lock:
            return self._result


class WaitingPods:
    """The map of waiting pods, shared by every profile (a plugin may allow pods of another profile)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: dict[str, WaitingPod] = {}

    def add(self, wp: WaitingPod) -> None:
        with self._lock:
            self._pods[wp.pod.uid] = wp

    def remove(self, uid: str) -> None:
        with self._lock:
            self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        with self._lock:
            return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPod]:
        with self._lock:
            return iter(list(self._pods.values()))

    def __len__(self) -> int:
        with self._lock:
            return len(self._pods)

    def reject(self, uid: str, plugin: str, message: str) -> bool:
        wp = self.get(uid)
        if wp is None:
            return False
        wp.reject(plugin, message)
        return True
