"""The capacity probe run after every scenario: with the scenario's pods deleted, a pod asking for a whole
node, pinned to it, must bind on every schedulable node of the pool; one left pending is capacity the
scheduler never released."""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor

from bench.chaos.checker import SCHEDULER_NAME, Violation
from bench.chaos.common import Ctx, wait_for
from bench.chaos.figures import scheduler_gauges


def probe_capacity(ctx: Ctx, timeout: float = 45.0) -> int:
    """Nothing leaked: with every pod of the scenario deleted, a pod asking for a node's whole cpu, pinned
    to it, must bind on every schedulable node of the pool. A reservation the scheduler never released
    (an assumed pod forgotten neither on a failure nor on a deletion, a stale nomination) leaves one
    pending. Returns the number of nodes that did not take their probe pod (each also a violation)."""
    c, ns, chk = ctx.cluster, ctx.ns, ctx.checker
    if ctx.extender is not None:  # every node must be allowed: the extender's filter rules some out
        ctx.extender.cmd("exclude 0")
    for d in ctx.workload.deployments if ctx.workload else []:
        c.request(
            "PATCH",
            f"/apis/apps/v1/namespaces/{ns}/deployments/{d}/scale",
            {"spec": {"replicas": 0}},
            content_type="application/merge-patch+json",
        )
    time.sleep(1)
    # thousands of pods after a soak on a busy API server: a collection delete cut short by the client's
    # timeout stops where it was, so it is sent again until the checker sees no pod left
    deadline = time.monotonic() + 300
    while chk.live_pods() and time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            c.request("DELETE", f"/api/v1/namespaces/{ns}/pods?gracePeriodSeconds=0", timeout=60)
        with contextlib.suppress(RuntimeError):
            wait_for("the scenario's pods to be deleted", lambda: chk.live_pods() == 0, 10)
    if chk.live_pods():
        raise RuntimeError(f"{chk.live_pods()} pods still there after 300 s of deleting")
    with chk.lock:
        nodes = {
            n: obj["status"]["allocatable"]["cpu"]
            for n, obj in chk.nodes.items()
            if (obj["metadata"].get("labels") or {}).get("chaos-pool") == ns
            and not (obj.get("spec") or {}).get("unschedulable")
        }

    def create(item: tuple[int, tuple[str, str]]) -> None:
        i, (node, cpu) = item
        c.request(
            "POST",
            f"/api/v1/namespaces/{ns}/pods",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"probe-{i}", "labels": {"chaos": "probe"}},
                "spec": {
                    "schedulerName": SCHEDULER_NAME,
                    "nodeSelector": {"kubernetes.io/hostname": node},
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                    ],
                },
            },
            timeout=60,
        )

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, enumerate(sorted(nodes.items()))))
    end = time.monotonic() + timeout
    while time.monotonic() < end and chk.probes_bound() < len(nodes):
        time.sleep(0.5)
    left = chk.unbound_probes()
    # the daemon's own view with only the probe pods left: pods it still queues beyond the unbound probes
    # are ghosts (deleted pods it kept retrying); assumed pods or cached pods beyond the probes' are held
    # capacity (a nomination shows in neither: only as a probe left pending)
    time.sleep(1.5)  # the gauges are set once a second
    for s in ctx.scheds:
        if s.alive() and (g := scheduler_gauges(s)):
            queued = sum(v for k, v in g.items() if k.startswith("queue_"))
            ctx.notes.append(
                f"{s.env.get('POD_NAME')} after the probe: {queued} pods queued ({len(left)} probes unbound), "
                f"cache pods {g.get('cache_pods')} ({len(nodes) - len(left)} probes bound), assumed "
                f"{g.get('cache_assumed_pods')}"
            )
    for key, msg in left:
        chk.violations.append(Violation("leak", key, f"probe pod for a whole node not bound: {msg}", 0.0))
    ctx.notes.append(f"capacity probe: {len(nodes) - len(left)}/{len(nodes)} nodes took a whole-node pod")
    return len(left)


def safe_probe(ctx: Ctx) -> int | None:
    """The capacity probe; if it breaks (an overloaded API server), the scenario's figures survive."""
    try:
        return probe_capacity(ctx)
    except (OSError, RuntimeError) as e:
        ctx.notes.append(f"capacity probe failed: {e!r}")
        return None
