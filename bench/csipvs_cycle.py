"""In-process reproduction of upstream scheduler_perf's SchedulingCSIPVs: the scheduler core alone, no
API server.

What bench.upstream replays on a cluster, built here straight into the app's cache and object store:
``--nodes`` nodes (4 CPU, 32Gi, 110 pods, ``attachable-volumes-csi-ebs.csi.aws.com: 39``), each with a
CSINode whose ebs.csi.aws.com driver allows 39 attachments; ``--init-pods`` pods already bound round-robin
and ``--pods`` measured pods, each with one claim ``pvc-<i>`` already bound to its own CSI PV (what
upstream's pv-csi.yaml and pvc.yaml templates make). The measured pods then go through
``Scheduler.schedule_one`` (binds are no-ops), as bench.cycle does for its workloads.

    python -m bench.csipvs_cycle --nodes 5000 --init-pods 5000 --pods 2000
    python -m bench.csipvs_cycle --profile /tmp/csipvs.prof

Figures: wall ms and CPU ms per measured pod (median of ``--repeat`` runs), pods/s.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import statistics
import time
from typing import Any

from bench import workloads as wl
from bench.cycle import _cpu, _NullApi, _NullRecorder, _NullWriter, _pod_dict
from pyscheduler.app import DAEMON_GC_THRESHOLD, build_app
from pyscheduler.cli import _extension_points
from pyscheduler.config.load import load_config
from pyscheduler.framework.helpers.storage import CSI_NODE, PV, PVC
from pyscheduler.framework.types import Node, Pod
from pyscheduler.logs import setup_logging
from pyscheduler.plugins.registry import full_registry

DRIVER = "ebs.csi.aws.com"
NAMESPACE = "bench"


def _node(name: str, index: int) -> dict[str, Any]:
    d = wl.node(name, index)
    d["status"]["allocatable"][f"attachable-volumes-csi-{DRIVER}"] = "39"
    return d


def _csi_node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name, "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": ""}},
        "spec": {
            "drivers": [{"name": DRIVER, "nodeID": name, "topologyKeys": None, "allocatable": {"count": 39}}]
        },
    }


def _bound_pair(k: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """upstream's pv-csi.yaml and pvc.yaml, bound to each other."""
    claim, volume = f"pvc-{k}", f"{NAMESPACE}-vol-{k}"
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": volume, "resourceVersion": str(k + 1)},
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "capacity": {"storage": "1Gi"},
            "csi": {"driver": DRIVER, "volumeHandle": volume},
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": NAMESPACE,
                "name": claim,
            },
        },
        "status": {"phase": "Bound"},
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim,
            "namespace": NAMESPACE,
            "resourceVersion": str(k + 1),
            "annotations": {"pv.kubernetes.io/bind-completed": "true"},
        },
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": volume,
        },
        "status": {"phase": "Bound"},
    }
    return pv, pvc


def _pod(k: int, node: str | None) -> Pod:
    d = _pod_dict(lambda name: wl.pod(name), f"pod-{k}", k, node)
    d["spec"]["volumes"] = [{"name": "vol", "persistentVolumeClaim": {"claimName": f"pvc-{k}"}}]
    return Pod.from_dict(d)


def run_once(
    nodes: int, init_pods: int, pods: int, profile: cProfile.Profile | None
) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, pods bound) for the measured pods."""
    registry = full_registry()
    config = load_config(None, registry, _extension_points(registry))
    api = _NullApi()
    app = build_app(config, registry, api, recorder=_NullRecorder(), writer=_NullWriter())
    sched, cache, queue, objects = app.scheduler, app.cache, app.queue, app.objects
    names = [f"node-{i}" for i in range(nodes)]
    for i, name in enumerate(names):
        cache.add_node(Node.from_dict(_node(name, i)))
        objects.put(CSI_NODE, _csi_node(name))
    for k in range(init_pods + pods):
        pv, pvc = _bound_pair(k)
        objects.put(PV, pv)
        objects.put(PVC, pvc)
    for k in range(init_pods):
        cache.add_pod(_pod(k, names[k % nodes]))
    measured = [_pod(init_pods + k, None) for k in range(pods)]
    gc.collect()
    gc.freeze()
    threshold = gc.get_threshold()
    gc.set_threshold(*DAEMON_GC_THRESHOLD)
    for p in measured:
        queue.add(p)
    if profile is not None:
        profile.enable()
    t, cpu = time.perf_counter(), _cpu()
    while sched.schedule_one(0):
        pass
    with api.lock:
        while api.bound < pods and api.done.wait(1):
            pass
    elapsed, cpu = time.perf_counter() - t, _cpu() - cpu
    if profile is not None:
        profile.disable()
    sched.shutdown()
    gc.set_threshold(*threshold)
    gc.unfreeze()
    return elapsed, cpu, api.bound


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.csipvs_cycle", description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--init-pods", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", metavar="FILE", help="write a cProfile of the measured part of the last run")
    args = ap.parse_args(argv)
    setup_logging("console", "warning")
    walls, cpus = [], []
    for r in range(args.repeat):
        prof = cProfile.Profile() if args.profile and r == args.repeat - 1 else None
        elapsed, cpu, bound = run_once(args.nodes, args.init_pods, args.pods, prof)
        if bound != args.pods:
            print(f"only {bound}/{args.pods} pods bound")
        walls.append(elapsed / max(1, args.pods) * 1000)
        cpus.append(cpu / max(1, args.pods) * 1000)
        if prof is not None:
            prof.dump_stats(args.profile)
    med = statistics.median(walls)
    print(
        f"SchedulingCSIPVs in-process: {args.nodes} nodes, {args.init_pods} init pods, {args.pods} measured: "
        f"{med:.3f} ms/pod, CPU {statistics.median(cpus):.3f} ms/pod, {1000 / med:.0f} pods/s; "
        f"runs (ms/pod) {' '.join(f'{x:.3f}' for x in walls)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
