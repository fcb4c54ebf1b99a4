"""ResourceClaim events in the daemon with kube's default profile: a claim's add or update asks only the
waiting pods that name that claim (the claim hint's HintIndex), its deallocation every pod waiting for
DynamicResources; the pods the event moves are the ones the hint queues."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.app import App, build_app
from pyscheduler.config.load import parse_config
from pyscheduler.event_handlers import ClaimHandler, PodHandler
from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.framework.events import QueueingHint
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.dynamic_resources.hints import Hints
from pyscheduler.plugins.registry import full_registry, plugin_extension_points
from pyscheduler.testing.builders import make_pod

ALLOCATION = {"devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": "g0"}]}}


def _claim(name: str, rv: int, allocated: bool) -> ResourceClaim:
    return ResourceClaim.from_dict(
        {
            "metadata": {
                "namespace": "default",
                "name": name,
                "uid": f"u-{name}",
                "resourceVersion": str(rv),
            },
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
            "status": {"allocation": ALLOCATION} if allocated else {},
        }
    )


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The pods the claim hint is asked about, in order."""
    out: list[str] = []
    real = Hints.is_schedulable_after_claim_change

    def recording(self: Hints, pod: Pod, old: Any, new: Any) -> QueueingHint:
        out.append(pod.name)
        return real(self, pod, old, new)

    monkeypatch.setattr(Hints, "is_schedulable_after_claim_change", recording)
    return out


class _Quiet:
    """Event recorder and status writer that accept everything (nothing here is written)."""

    def event(self, *a: Any) -> bool:
        return True

    def submit(self, *a: Any, **k: Any) -> bool:
        return True

    def patch_pod_status(self, *a: Any, **k: Any) -> None: ...


def _app() -> App:
    reg = full_registry()
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    cfg = parse_config(doc, reg, lambda n: plugin_extension_points(reg[n]))
    return build_app(cfg, reg, _Quiet(), recorder=_Quiet(), writer=_Quiet())


def _park(app: App, name: str, claim: str) -> None:
    """A pod of ours using ``claim``, parked as DynamicResources left it (its claim not allocatable)."""
    pod = make_pod(name).scheduler("py-scheduler").resource_claim("c", claim=claim).obj()
    PodHandler(app).on_add(pod)
    qpi = app.queue.pop(0.1)
    assert qpi is not None and qpi.pod.name == name
    qpi.unschedulable_plugins = {"DynamicResources"}
    app.queue.add_unschedulable_if_not_present(qpi)


def test_a_claim_event_asks_only_the_pods_naming_the_claim(asked: list[str]) -> None:
    app = _app()
    h = ClaimHandler(app)
    for i in range(5):
        h.on_add(_claim(f"claim-{i}", 1, allocated=i == 4))
    for i in range(5):
        _park(app, f"pod-{i}", f"claim-{i}")
    assert app.queue.pending_pods()["unschedulable"] == 5

    h.on_update(_claim("claim-1", 1, False), _claim("claim-1", 2, True))  # its status changed: queue
    assert asked == ["pod-1"]
    assert app.queue.pending_pods()["unschedulable"] == 4

    asked.clear()
    h.on_add(_claim("unrelated", 1, False))
    assert asked == []

    asked.clear()  # a deallocation frees devices any waiting pod may use: every one is asked, and queued
    h.on_update(_claim("claim-4", 1, True), _claim("claim-4", 2, False))
    assert asked == ["pod-0", "pod-2", "pod-3", "pod-4"]
    assert app.queue.pending_pods()["unschedulable"] == 0
