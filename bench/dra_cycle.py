"""DynamicResources' own cost per pod, in process: PreFilter, Filter on every node and Reserve, with the
claim cache updated as PreBind would leave it, over a synthetic cluster (no API server, no other plugin).

Modelled on upstream scheduler_perf's SteadyStateClusterResourceClaimTemplate: every node publishes one
ResourceSlice of ``--devices`` devices of one driver; each pod has its own unallocated claim for one
device of the class (as the resourceclaim controller makes from a template); after every ``--batch`` pods
the claims of the oldest batch are deleted (their pods finished), so the cluster stays about half full.

    python -m bench.dra_cycle --nodes 500 --pods 500 --repeat 3
    python -m bench.dra_cycle --profile /tmp/dra.prof

With ``--shared K`` it is modelled on SchedulingWithResourceClaim instead: the claims exist before the
pods and K consecutive pods share each (the first allocates it, the others only need the node where it
is usable), and no claim is released.

Filter runs as the framework runs it: ``filter_nodes`` over all nodes at once where the plugin has it.

Prints CPU milliseconds per pod (process time; median of ``--repeat`` runs) and, as a check that a
change kept the decisions, a digest of the devices each pod got.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import hashlib
import statistics
import time
from typing import Any

from pyscheduler.backend.claims import ClaimTracker
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.plugins.dynamic_resources import new
from pyscheduler.plugins.dynamic_resources.common import STATE_KEY, with_allocation
from pyscheduler.testing import make_handle
from pyscheduler.testing.builders import make_node, make_node_info, make_pod
from pyscheduler.testing.clock import FakeClock
from pyscheduler.testing.dra import device, device_class, exactly, resource_claim, resource_slice

DRIVER = "test-driver.cdi.k8s.io"


class _Writer:
    """PreBind's writes are not timed here: the cycle commits the allocation to the cache itself."""

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None


def run(
    nodes: int, devices: int, pods: int, batch: int, profile: str = "", shared: int = 0
) -> tuple[float, str]:
    node_objs = [
        make_node(f"node-{i}").label("kubernetes.io/hostname", f"node-{i}").obj() for i in range(nodes)
    ]
    objects = [device_class("test-class", driver=DRIVER)]
    objects += [
        resource_slice(
            f"node-{i}-slice",
            DRIVER,
            [device(f"dev-{d}", {"model": "m1", "index": d}, {"memory": "80Gi"}) for d in range(devices)],
            node=f"node-{i}",
        )
        for i in range(nodes)
    ]
    tracker = ClaimTracker()
    handle = make_handle(Snapshot.from_nodes(node_objs), objects=objects, clock=FakeClock())
    handle.extra["claims"] = tracker
    handle.extra["claim_writer"] = _Writer()
    plugin = new(None, handle)
    infos = [make_node_info(n) for n in node_objs]
    live: list[list[ResourceClaim]] = []
    digest = hashlib.sha256()
    prof = cProfile.Profile() if profile else None
    cpu = 0.0
    filter_nodes = getattr(plugin, "filter_nodes", None)
    version = 1
    for i in range(pods):
        name = f"claim-{i // shared}" if shared else f"claim-{i}"
        claim = tracker.get("default", name) if shared else None
        if claim is None:
            raw = resource_claim(
                name,
                exactly("req-0", "test-class", 'device.attributes["test-driver.cdi.k8s.io"].model == "m1"'),
            )
            claim = ResourceClaim.from_dict(copy.deepcopy(raw))
            tracker.on_add(claim)
        pod = make_pod(f"pod-{i}").uid(f"uid-{i}").resource_claim("c", claim=name).obj()
        t0 = time.process_time()
        if prof is not None:
            prof.enable()
        state = CycleState()
        _, st = plugin.pre_filter(state, pod, infos)
        assert st is None or st.is_success(), st
        chosen = ""
        if filter_nodes is not None:
            statuses = filter_nodes(state, pod, infos)
        else:
            statuses = [plugin.filter(state, pod, ni) for ni in infos]
        chosen = next((ni.name for ni, s in zip(infos, statuses, strict=True) if s is None), "")
        if chosen:
            assert plugin.reserve(state, pod, chosen) is None
        if prof is not None:
            prof.disable()
        cpu += time.process_time() - t0
        if chosen:  # what PreBind's status write and the informer leave in the cache
            version += 1
            if claim.allocated:
                alloc = claim.allocation or {}
                raw = copy.deepcopy(dict(claim.raw))
            else:
                alloc = state.get(STATE_KEY).node_allocations[chosen][0]
                raw = copy.deepcopy(dict(with_allocation(claim, alloc).raw))
            raw["metadata"]["resourceVersion"] = str(version)
            if shared:
                raw["status"].setdefault("reservedFor", []).append(
                    {"resource": "pods", "name": f"pod-{i}", "uid": f"uid-{i}"}
                )
            done = ResourceClaim.from_dict(raw)
            tracker.on_update(claim, done)
            tracker.remove_pending_allocation(claim.meta.uid, force=True)
            digest.update(f"{i}:{chosen}:{alloc['devices']['results'][0]['device']};".encode())
            claim = done
        else:
            digest.update(f"{i}:-;".encode())
        if shared:
            continue
        if not live or len(live[-1]) >= batch:
            live.append([])
        live[-1].append(claim)
        if len(live) > 2:  # the oldest batch's pods finished: their claims go
            for c in live.pop(0):
                tracker.on_delete(tracker.get(c.meta.namespace, c.meta.name) or c)
    if prof is not None:
        prof.dump_stats(profile)
    return cpu * 1000 / pods, digest.hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--devices", type=int, default=8, help="devices per node")
    ap.add_argument("--pods", type=int, default=500)
    ap.add_argument("--batch", type=int, default=100, help="pods per batch (claims released a batch later)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", default="", help="write a cProfile of the timed part of the last run")
    ap.add_argument(
        "--shared",
        type=int,
        default=0,
        help="K: claims made before the pods, each shared by K pods (SchedulingWithResourceClaim)",
    )
    a = ap.parse_args()
    figures = []
    digest = ""
    for r in range(a.repeat):
        ms, digest = run(
            a.nodes, a.devices, a.pods, a.batch, a.profile if r == a.repeat - 1 else "", a.shared
        )
        figures.append(ms)
        print(f"run {r + 1}: {ms:.2f} ms CPU per pod")
    shared = f", {a.shared} pods per claim" if a.shared else ""
    print(
        f"dra_cycle: {a.nodes} nodes x {a.devices} devices, {a.pods} pods{shared}: median {statistics.median(figures):.2f} "
        f"ms CPU per pod (PreFilter + Filter on every node + Reserve); decisions {digest}"
    )


if __name__ == "__main__":
    main()
