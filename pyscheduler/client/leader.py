"""Leader election on a coordination.k8s.io/v1 Lease, with kube-scheduler's defaults and two guarantees
the official Python client's elector lacks: losing the lease stops work at once, and a clean exit
releases the lease so a standby takes over without waiting for it to expire.

State machine (one thread)::

    follower ──(lease free, expired, or ours)──► acquire (create/update with our identity)
       ▲                                             │ ok
       │                                             ▼
       │                                          leader ── on_started_leading()
       │                                             │ renew every retry_period
       │                       no renew for renew_deadline, or lease taken
       └────────────── on_stopped_leading() ◄────────┘
    stop(release=True) while leader: write holderIdentity "" and leaseDurationSeconds 1, then stop.

Expiry is judged by our own clock from when we last saw the record change (as client-go does), never by
comparing the remote renewTime with our wall clock, so clock skew between replicas does not matter.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Callable
from typing import Any

import structlog

from pyscheduler.client.errors import ApiError
from pyscheduler.framework.clock import Clock, RealClock
from pyscheduler.framework.helpers.timefmt import rfc3339_micro

log = structlog.get_logger("pyscheduler.leader")


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaderElector:
    def __init__(
        self,
        api: Any,
        *,
        namespace: str = "kube-system",
        name: str = "py-scheduler",
        identity: str | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_started_leading: Callable[[], None] = lambda: None,
        on_stopped_leading: Callable[[], None] = lambda: None,
        clock: Clock | None = None,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("leader election needs leaseDuration > renewDeadline > retryPeriod > 0")
        # Lease calls get their own rate limiter (see Api.with_own_rate_limiter).
        self.api = api.with_own_rate_limiter() if hasattr(api, "with_own_rate_limiter") else api
        self.namespace = namespace
        self.name = name
        self.identity = identity or os.environ.get("POD_NAME") or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.clock = clock or RealClock()
        self._stop = threading.Event()
        self._leading = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._observed: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._lease: dict[str, Any] | None = None
        self._last_renew = -1e18

    # ------------------------------------------------------------------------------------ public
    def start(self) -> None:
        self._thread.start()

    def is_leader(self) -> bool:
        """Leader only while the last successful renewal is younger than renewDeadline: a renewal call
        that hangs (an overloaded API server, retries) must not leave us binding after a standby may
        have taken the lease."""
        return self._leading.is_set() and self.clock.now() - self._last_renew < self.renew_deadline

    def stop(self, release: bool = True, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
        if release and self._lease is not None:
            # Also when stop() raced an acquisition that just succeeded: _release checks the holder is us.
            self._leading.clear()
            self._release()

    # ------------------------------------------------------------------------------------ loop
    def _run(self) -> None:
        while not self._stop.is_set():
            if self._try_acquire_or_renew():
                break
            self._stop.wait(self.retry_period)
        if self._stop.is_set():
            return
        self._last_renew = self.clock.now()
        self._leading.set()
        log.info("became leader", lease=f"{self.namespace}/{self.name}", identity=self.identity)
        try:
            self.on_started_leading()
        except Exception:
            log.exception("on_started_leading failed")
        last_renew = self.clock.now()
        while not self._stop.wait(self.retry_period):
            if self._try_acquire_or_renew():
                last_renew = self._last_renew = self.clock.now()
                continue
            if self.clock.now() - last_renew >= self.renew_deadline or self._held_by_other():
                break
        if self._stop.is_set():
            return
        self._leading.clear()
        log.error("leader lease lost", lease=f"{self.namespace}/{self.name}", identity=self.identity)
        try:
            self.on_stopped_leading()
        except Exception:
            log.exception("on_stopped_leading failed")

    def _held_by_other(self) -> bool:
        spec = (self._observed or {}).get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        return bool(holder) and holder != self.identity

    def _try_acquire_or_renew(self) -> bool:
        now_wall = self.clock.wall()
        try:
            lease = self.api.get("Lease", self.namespace, self.name)
        except Exception as e:
            if getattr(e, "status", None) != 404:
                log.warning("reading lease failed", error=str(e))
                return False
            lease = None
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(now_wall, transitions=0, acquire=now_wall),
            }
            try:
                self._lease = self.api.create("Lease", self.namespace, body)
            except Exception as e:
                log.info("creating lease failed", error=str(e))
                return False
            self._observe(self._lease)
            return True

        spec = lease.get("spec") or {}
        if self._observed is None or (self._observed.get("spec") or {}) != spec:
            self._observe(lease)
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        expired = self.clock.now() > self._observed_at + duration
        if holder and holder != self.identity and not expired:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        acquire = spec.get("acquireTime")
        if holder != self.identity:
            transitions += 1
            acquire = None
        new = dict(lease)
        new["spec"] = self._spec(
            now_wall, transitions=transitions, acquire=now_wall if acquire is None else None
        )
        if acquire is not None:
            new["spec"]["acquireTime"] = acquire
        try:
            self._lease = self.api.update("Lease", self.namespace, self.name, new)
        except Exception as e:
            log.info("updating lease failed", error=str(e))
            return False
        self._observe(self._lease)
        return True

    def _observe(self, lease: dict[str, Any] | None) -> None:
        self._observed = lease
        self._observed_at = self.clock.now()

    def _spec(self, now: float, transitions: int, acquire: float | None) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_duration),
            "renewTime": rfc3339_micro(now),
            "leaseTransitions": transitions,
        }
        if acquire is not None:
            spec["acquireTime"] = rfc3339_micro(acquire)
        return spec

    def _release(self) -> None:
        lease = self._lease
        if lease is None:
            return
        try:
            current = self.api.get("Lease", self.namespace, self.name)
            if ((current or {}).get("spec") or {}).get("holderIdentity") != self.identity:
                return
            new = dict(current)
            spec = dict(new.get("spec") or {})
            spec["holderIdentity"] = ""
            spec["leaseDurationSeconds"] = 1
            spec["renewTime"] = rfc3339_micro(self.clock.wall())
            new["spec"] = spec
            self.api.update("Lease", self.namespace, self.name, new)
            log.info("released the lease", lease=f"{self.namespace}/{self.name}")
        except ApiError as e:  # best effort on the way out: the lease expires by itself
            log.warning("could not release the lease", lease=f"{self.namespace}/{self.name}", error=str(e))
