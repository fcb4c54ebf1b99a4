"""A profile's pod signatures (kube-scheduler 1.36's ``frameworkImpl.SignPod`` and
``computeBatchablePlugins``), what opportunistic batching (``framework.batch``) compares.

Every plugin the profile runs at PreFilter, Filter, PreScore or Score must be a ``SignPlugin``
(``sign_pod``); if one is not, or the scheduler has extenders, the profile signs no pod (kube logs
"Disabling signatures for profile ..."; ``Scheduler`` logs it here, from ``disabled_because``). Otherwise a
pod's signature is its scheduler name plus every such plugin's fragments, or None as soon as one plugin
refuses the pod (a pod with inter-pod affinity, topology spread constraints, DRA claims...; and every pod
when PodTopologySpread has default constraints, which the default ``defaultingType: System`` gives it, so
that under kube's default profile no pod is signed and batching never happens).
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence
from typing import Any

from pyscheduler.framework.helpers.signers import Fragment, combine
from pyscheduler.framework.interfaces import SignPlugin
from pyscheduler.framework.observers import MetricsObserver
from pyscheduler.framework.status import Code
from pyscheduler.framework.types import Pod


class PodSigner:
    def __init__(
        self, profile: str, candidates: Sequence[Any], metrics: MetricsObserver | None = None
    ) -> None:
        """``candidates``: the profile's PreFilter, Filter, PreScore and Score plugins, in that order."""
        self.profile = profile
        self.metrics = metrics
        self.plugins: list[SignPlugin] = []
        unsupported: list[str] = []
        seen: set[str] = set()
        for p in candidates:
            if p.name in seen:
                continue
            seen.add(p.name)
            if isinstance(p, SignPlugin):
                self.plugins.append(p)
            else:
                unsupported.append(p.name)
        self.unsupported = tuple(unsupported)
        self.extenders = False
        self._order = list(self.plugins)  # the plugin that refused the last pod first
        # why the profile signs no pod ("" if it does): what the scheduler logs once at start
        self.disabled_because = "plugins do not support it" if unsupported else ""

    def disable_for_extenders(self) -> None:
        """kube-scheduler signs no pod in a profile of a scheduler with extenders."""
        self.extenders = True
        self.disabled_because = "it has extenders configured"

    @property
    def enabled(self) -> bool:
        return not self.disabled_because

    def sign(self, pod: Pod) -> Hashable | None:
        """The pod's signature, or None (the profile signs nothing, or a plugin refused the pod). Timed
        as kube's ``Sign`` extension point, whose status is always Success (kube never sets it)."""
        began = time.perf_counter()
        sig = None if self.disabled_because else self._sign(pod)
        if self.metrics is not None:
            self.metrics.extension_point("Sign", Code.SUCCESS, self.profile, time.perf_counter() - began)
        return sig

    def _sign(self, pod: Pod) -> Hashable | None:
        """The plugin that refused the last pod is asked first: under PodTopologySpread's System
        defaulting it refuses every pod, and the others need not be asked (the signature is None if any
        refuses, whatever the order; kube asks in profile order)."""
        fragments: list[list[Fragment]] = []
        order = self._order
        for i, p in enumerate(order):
            try:
                frs, status = p.sign_pod(pod)
                refused = status is not None and not status.is_success()
            except Exception:  # a plugin bug only costs this pod its signature (kube logs an Error)
                frs, refused = (), True
            if refused:
                if i:
                    order.insert(0, order.pop(i))
                return None
            fragments.append(list(frs or ()))
        return combine(pod.scheduler_name, fragments)
