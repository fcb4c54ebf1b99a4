"""The benchmark's Dynamic Resource Allocation set-up: devices per node, the DeviceClass, claims per run.

Design
------
``bench/run.py`` calls three things, only for workloads with a ``DraLoad`` (bench/workloads.py):

    DraCluster.start(env, workloads)  once: kube-controller-manager with the resourceclaim controller
                                      (claims from templates; claims released when their pod goes),
                                      the DeviceClass, one ResourceSlice per node, the template
    DraRun.prepare()                  per run, after the namespace's pods are gone: delete every claim
                                      left (finalizers dropped) and wait, then create this run's shared
                                      claims and the preallocated ones (status written)
    DraRun.start(watch) / stop()      steady state: a thread deletes each measured pod once bound

Both schedulers see the same objects: the per-run claims are named after the run's tag and made anew
for each run, so a run never inherits an allocation from the previous one.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from bench.measure import Conn, PodWatch, post_objects
from bench.workloads import (
    DRA_DEVICES_PER_NODE,
    DraLoad,
    Workload,
    dra_claim,
    dra_claim_name,
    dra_device_class,
    dra_slice,
    dra_template,
)

if TYPE_CHECKING:
    from bench.differential import ControllerManager
    from bench.run import Env

CONTROLLER_ARGS = ("--kube-api-qps=2000", "--kube-api-burst=4000", "--concurrent-resourceclaim-syncs=50")
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"
TEMPLATES = "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates"


def say(msg: str) -> None:
    print(msg, flush=True)


class DraCluster:
    """The cluster-wide DRA objects and the resourceclaim controller, while DRA workloads run."""

    def __init__(self, env: Env, namespace: str) -> None:
        self.env = env
        self.ns = namespace
        self.controllers: ControllerManager | None = None

    def start(self, wls: Sequence[Workload]) -> None:
        from bench.differential import CLAIM_CONTROLLER, ControllerManager

        env = self.env
        per_node = max((w.dra.devices_per_node for w in wls if w.dra), default=DRA_DEVICES_PER_NODE)
        # The controller makes a claim per templated pod: at its default 20 QPS it, not the scheduler,
        # would set the pace (about 10 pods/s).
        self.controllers = ControllerManager(
            env.cluster, env.cluster.state_dir or Path("."), [CLAIM_CONTROLLER], extra_args=CONTROLLER_ARGS
        )
        self.controllers.start()
        env.conn.json("POST", CLASSES, dra_device_class(), ok=(201, 409))
        t0 = time.monotonic()
        errors = post_objects(
            env.endpoint,
            SLICES,
            [(n, orjson.dumps(dra_slice(n, per_node))) for n in env.nodes],
            env.args.creators,
            ok=(201, 409),
        )
        if errors:
            raise RuntimeError(f"creating ResourceSlices failed: {errors[:3]}")
        env.conn.json("POST", TEMPLATES.format(ns=self.ns), dra_template(), ok=(201, 409))
        say(
            f"  DRA: {len(env.nodes)} ResourceSlices x {per_node} devices in {time.monotonic() - t0:.1f}s, "
            "DeviceClass, ResourceClaimTemplate; resourceclaim controller running"
        )

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            delete_claims(self.env, self.ns)
        with contextlib.suppress(Exception):
            self.env.conn.json("DELETE", SLICES, ok=(200, 404, 504))
        if self.controllers is not None:
            self.controllers.stop()


def delete_claims(env: Env, ns: str, timeout: float = 300.0) -> None:
    """Delete every ResourceClaim in ``ns`` (dropping the protection finalizer of those still allocated)
    and wait until they are gone."""
    path = CLAIMS.format(ns=ns)
    env.conn.json("DELETE", path, ok=(200, 404, 504))
    deadline = time.monotonic() + timeout
    while True:
        items = env.conn.json("GET", path)["items"]
        if not items:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(items)} ResourceClaims still in {ns} after {timeout:.0f}s")
        for c in items:
            if c["metadata"].get("finalizers"):
                env.cluster.request(
                    "PATCH",
                    f"{path}/{c['metadata']['name']}",
                    {"metadata": {"finalizers": None}},
                    content_type="application/merge-patch+json",
                )
        time.sleep(0.3)


class DraRun:
    """One run's claims (and, in steady state, the deletion of measured pods once bound)."""

    def __init__(self, env: Env, wl: Workload, tag: str, namespace: str) -> None:
        assert wl.dra is not None
        self.env = env
        self.wl = wl
        self.load: DraLoad = wl.dra
        self.tag = tag
        self.ns = namespace
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.deleted = 0

    def prepare(self) -> None:
        env, load = self.env, self.load
        delete_claims(env, self.ns)
        objs: list[tuple[str, bytes]] = []
        if load.pods_per_claim:
            names = {
                dra_claim_name(f"{self.tag}-{kind}{k}", load.pods_per_claim)
                for kind, count in (("i", self.wl.init_pods), ("m", self.wl.measured_pods))
                for k in range(count)
            }
            objs += [(n, orjson.dumps(dra_claim(n))) for n in sorted(names)]
        pre = self._preallocated()
        objs += [
            (str(c["metadata"]["name"]), orjson.dumps({k: v for k, v in c.items() if k != "status"}))
            for c in pre
        ]
        path = CLAIMS.format(ns=self.ns)
        t0 = time.monotonic()
        errors = post_objects(env.endpoint, path, objs, env.args.creators)
        if errors:
            raise RuntimeError(f"creating ResourceClaims failed: {errors[:3]}")
        for c in pre:  # the allocation, as a scheduler (or allocResourceClaims) would have written it
            name = c["metadata"]["name"]
            cur = env.conn.json("GET", f"{path}/{name}")
            cur["status"] = c["status"]
            env.conn.json("PUT", f"{path}/{name}/status", cur)
        if objs:
            say(
                f"  [{self.wl.name}] {len(objs)} ResourceClaims ({len(pre)} allocated) in "
                f"{time.monotonic() - t0:.1f}s"
            )

    def _preallocated(self) -> list[dict[str, Any]]:
        """Claims holding the last devices of each node, round-robin over the nodes."""
        nodes, per_node = self.env.nodes, self.load.devices_per_node
        out = []
        for k in range(min(self.load.preallocated, len(nodes) * per_node)):
            node_name = nodes[k % len(nodes)]
            dev = f"instance-{per_node - 1 - k // len(nodes)}"
            out.append(dra_claim(f"{self.tag}-pre-{k}", allocated=(node_name, dev)))
        return out

    def start(self, watch: PodWatch, names: Sequence[str]) -> None:
        if not self.load.delete_bound:
            return
        measured = set(names)

        def loop() -> None:
            conn = Conn(self.env.endpoint)  # its own connection: the main thread keeps env.conn
            done: set[str] = set()
            while not self._stop.wait(0.2):
                for n in [n for n in list(watch.bound) if n in measured and n not in done]:
                    with contextlib.suppress(Exception):
                        conn.json(
                            "DELETE",
                            f"/api/v1/namespaces/{self.ns}/pods/{n}?gracePeriodSeconds=0",
                            ok=(200, 202, 404),
                        )
                        done.add(n)
                self.deleted = len(done)
            conn.close()

        self._thread = threading.Thread(target=loop, name="dra-steady-deleter", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
