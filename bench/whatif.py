"""How long ``pyscheduler simulate`` and ``capacity`` take on a large snapshot (issue #17: 5,000 nodes
and 10,000 pods well under a minute on the 2-core development machine).

    python -m bench.whatif                       # 5,000 nodes, 10,000 pods (half bound, half to place)
    python -m bench.whatif --nodes 1000 --bound 2000 --pending 2000 --profile out.prof

The snapshot is generated (3 zones, three node sizes, pods of four sizes from a dozen Deployments, a
third with a zone spread constraint and a sixth with a required anti-affinity on hostname), saved and
loaded again as ``pyscheduler simulate --snapshot`` would. Printed: each phase's seconds (generate, save,
load, simulate, capacity), pods placed per second, and the outcome counts, so that a change that makes
it faster but different shows.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import random
import sys
import tempfile
import time
from typing import Any

from pyscheduler.logs import setup_logging
from pyscheduler.testing.builders import make_node, make_pod
from pyscheduler.whatif.capacity import capacity, template_pod
from pyscheduler.whatif.simulate import simulate
from pyscheduler.whatif.snapshot import ClusterSnapshot

ZONES = ("zone-a", "zone-b", "zone-c")
NODE_SIZES = (("8", "32Gi"), ("16", "64Gi"), ("32", "128Gi"))
POD_SIZES = (("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"))
APPS = 12


def _pod(i: int, rng: random.Random, node: str | None) -> dict[str, Any]:
    app = f"app-{i % APPS}"
    cpu, mem = POD_SIZES[rng.randrange(len(POD_SIZES))]
    b = make_pod(f"{app}-{i}", "bench").req(cpu=cpu, memory=mem).label("app", app)
    b = b.owner("ReplicaSet", f"{app}-rs").scheduler("py-scheduler").created(1_700_000_000 + i)
    if i % APPS < 4:
        b = b.spread(2, "topology.kubernetes.io/zone", "DoNotSchedule", {"app": app})
    elif i % APPS < 6:
        b = b.pod_affinity("kubernetes.io/hostname", {"app": app}, anti=True, weight=50)
    if node:
        b = b.node(node)
    d = b.json()
    d["spec"]["priority"] = 0
    return d


def generate(nodes: int, bound: int, pending: int, seed: int = 1) -> ClusterSnapshot:
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = []
    names = []
    for i in range(nodes):
        cpu, mem = NODE_SIZES[i % len(NODE_SIZES)]
        n = make_node(f"node-{i:05d}").capacity(cpu=cpu, memory=mem, pods=110)
        objs.append(n.label("topology.kubernetes.io/zone", ZONES[i % len(ZONES)]).json())
        names.append(f"node-{i:05d}")
    # bound pods go where they fit (a real cluster's nodes are not overcommitted): CPU in millicores
    free = [int(NODE_SIZES[i % len(NODE_SIZES)][0]) * 1000 for i in range(nodes)]
    for i in range(bound):
        pod = _pod(i, rng, None)
        cpu = pod["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        need = int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000
        start = rng.randrange(nodes)
        for k in range(nodes):
            j = (start + k) % nodes
            if free[j] >= need:
                free[j] -= need
                pod["spec"]["nodeName"] = names[j]
                break
        else:
            raise SystemExit(f"--bound {bound}: more pods than the nodes hold")
        objs.append(pod)
    for i in range(bound, bound + pending):
        objs.append(_pod(i, rng, None))
    return ClusterSnapshot.from_objects(objs, f"generated {nodes} nodes")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.whatif", description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--bound", type=int, default=5000, help="pods already on nodes")
    ap.add_argument("--pending", type=int, default=5000, help="pods for the simulation to place")
    ap.add_argument("--no-capacity", action="store_true", help="skip the capacity run")
    ap.add_argument("--probe-cpu", default="4", help="the capacity probe pod's CPU request (default 4)")
    ap.add_argument("--profile", metavar="FILE", help="cProfile the simulation into FILE")
    args = ap.parse_args(argv)
    setup_logging("console", "warning")

    t0 = time.perf_counter()
    snap = generate(args.nodes, args.bound, args.pending)
    t_gen = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "snapshot.json.gz")
        t0 = time.perf_counter()
        snap.save(path)
        t_save = time.perf_counter() - t0
        size = os.path.getsize(path)
        t0 = time.perf_counter()
        snap = ClusterSnapshot.load(path)
        t_load = time.perf_counter() - t0
    prof = cProfile.Profile() if args.profile else None
    if prof is not None:
        prof.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    result = simulate(snap)
    t_sim, c_sim = time.perf_counter() - t0, time.process_time() - c0
    if prof is not None:
        prof.disable()
        prof.dump_stats(args.profile)
    s = result.summary()
    print(f"snapshot: {snap.summary()}")
    print(f"generate {t_gen:6.2f} s")
    print(f"save     {t_save:6.2f} s  ({size / 2**10:.0f} KiB gzip)")
    print(f"load     {t_load:6.2f} s")
    print(
        f"simulate {t_sim:6.2f} s  (CPU {c_sim:.2f} s; {s['pods_to_place'] / t_sim:.0f} pods placed/s; "
        f"{s['scheduled']} placed, "
        f"{s['unschedulable']} unschedulable, {s['preempted']} preempted; cpu requested "
        f"{100 * s['cpu_requested_before']:.1f}% -> {100 * s['cpu_requested_after']:.1f}%)"
    )
    print(f"total (load + simulate): {t_load + t_sim:.2f} s")
    if not args.no_capacity:
        probe = template_pod(make_pod("probe", "bench").req(cpu=args.probe_cpu, memory="8Gi").json(), snap)
        t0, c0 = time.perf_counter(), time.process_time()
        cap = capacity(snap, probe)
        t_cap, c_cap = time.perf_counter() - t0, time.process_time() - c0
        print(
            f"capacity {t_cap:6.2f} s  (CPU {c_cap:.2f} s; {cap.replicas} more {args.probe_cpu}-CPU/8Gi pods fit; next stopped by {cap.stopped_by})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
