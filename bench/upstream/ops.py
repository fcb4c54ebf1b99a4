"""scheduler_perf's operations as API calls on our control plane, and the throughput they are judged by.

``Executor.run(ops)`` performs a workload's operations in order against one cluster while one scheduler
runs. Objects named by ``generateName`` get a deterministic name instead (``<generateName><op>-<i>``) so
the watch can follow them; every pod gets the benchmark profile's ``schedulerName``. Nodes get
``kubernetes.io/hostname`` = their name, as upstream's node preparer gives them, and the node strategies
are applied at creation (the outcome upstream's patches reach).

Throughput is upstream's: while a metrics window is open (a ``createPods`` with ``collectMetrics``, or
``startCollectingMetrics`` .. ``stopCollectingMetrics``), pods of the window's namespaces that get a node
are counted; one sample per second; the figure a ``threshold`` is compared with is the samples' mean.
Latency, for the same pods, is from just before the creating POST was sent to the watch seeing the bind
(one clock, as ``bench.run`` measures it); pods made by churn are not followed.

``unsupported(ops)`` lists what this translation cannot do yet; the runner skips such a workload with that
reason instead of running something else under its name.
"""

from __future__ import annotations

import re
import statistics
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from bench.measure import (
    Conn,
    Endpoint,
    Summary,
    Watch,
    collector_samples,
    post_objects,
    run_parallel,
    throughput_samples,
)
from bench.upstream import dra
from bench.upstream.gotemplate import render
from pyscheduler.client.api import KINDS, resource_path  # kind -> (API path prefix, plural, namespaced)

SUPPORTED = frozenset(
    {
        "createNodes",
        "createNamespaces",
        "createPods",
        "barrier",
        "createAny",
        "churn",
        "updateAny",
        "deletePods",
        "sleep",
        "startCollectingMetrics",
        "stopCollectingMetrics",
        "createResourceDriver",
        "allocResourceClaims",
    }
)
# fields of a supported opcode this translation does not implement yet
_UNSUPPORTED_FIELDS: dict[str, tuple[str, ...]] = {}
DEFAULT_NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"generateName": "scheduler-perf-"},
    "spec": {},
    "status": {
        "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
        "conditions": [{"status": "True", "type": "Ready"}],
        "phase": "Running",
    },
}


# upstream's makeBasePod (test/utils MakePodSpec): what createPods makes without a podTemplatePath
DEFAULT_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"generateName": "pod-"},
    "spec": {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "ports": [{"containerPort": 80}],
                "resources": {
                    "limits": {"cpu": "100m", "memory": "500Mi"},
                    "requests": {"cpu": "100m", "memory": "500Mi"},
                },
            }
        ]
    },
}


class OpError(RuntimeError):
    pass


def unsupported(ops: Sequence[Mapping[str, Any]]) -> list[str]:
    """Why these operations cannot be run by this translation (empty: they can)."""
    out = []
    for i, op in enumerate(ops):
        code = str(op.get("opcode"))
        if code not in SUPPORTED:
            out.append(f"op {i}: opcode {code} not translated yet")
            continue
        for f in _UNSUPPORTED_FIELDS.get(code, ()):
            if op.get(f):
                out.append(f"op {i}: {code}.{f} not translated yet")
    return out


class PodWatch(Watch):
    """Every pod in the cluster, by (namespace, name): when it got a node, when it was found
    unschedulable (PodScheduled=False), whether it is gone. Its own watch, not the schedulers'."""

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__(endpoint, "/api/v1/pods", name="upstream-pod-watch")
        self.bound: dict[tuple[str, str], float] = {}
        self.attempted: dict[tuple[str, str], float] = {}
        self.labels: dict[tuple[str, str], Mapping[str, str]] = {}
        self.deleted: set[tuple[str, str]] = set()

    def on_event(self, kind: str, obj: dict[str, Any], now: float) -> None:
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        if kind == "DELETED":
            self.deleted.add(key)
            return
        self.labels[key] = meta.get("labels") or {}
        if (obj.get("spec") or {}).get("nodeName"):
            self.bound.setdefault(key, now)
            self.attempted.setdefault(key, now)
            return
        for c in (obj.get("status") or {}).get("conditions") or ():
            if c.get("type") == "PodScheduled" and c.get("status") == "False":
                self.attempted.setdefault(key, now)


@dataclass
class Window:
    """A metrics window: the namespaces (empty: all) and labels whose binds it counts."""

    name: str
    namespaces: frozenset[str]
    selector: Mapping[str, str]
    start: float
    end: float | None = None

    def counts(self, key: tuple[str, str], labels: Mapping[str, str]) -> bool:
        if self.namespaces and key[0] not in self.namespaces:
            return False
        return all(labels.get(k) == v for k, v in self.selector.items())


@dataclass
class Result:
    seconds: float = 0.0
    windows: list[dict[str, Any]] = field(default_factory=list)
    pods_created: int = 0
    churn_rounds: int = 0
    churn_errors: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)  # of the pods the windows counted

    def average(self) -> float:
        """The mean throughput over every window's samples (what upstream's threshold reads)."""
        samples = [s for w in self.windows for s in w["samples"]]
        return statistics.fmean(samples) if samples else float("nan")

    def throughput(self) -> dict[str, float]:
        """avg/p50/p90/p99 of every window's one-second samples (scheduler_perf's SchedulingThroughput)."""
        return Summary.of([s for w in self.windows for s in w["samples"]]).as_dict()

    def latency(self) -> dict[str, float]:
        """avg/p50/p90/p99 (ms) of creation→bind of the pods the windows counted."""
        return Summary.of(self.latencies_ms).as_dict()


class Executor:
    """Runs one workload's operations; see the module docstring."""

    def __init__(
        self,
        endpoint: Endpoint,
        folder: Path,
        default_pod_template: str | None,
        scheduler_name: str,
        creators: int = 30,
        timeout: float = 600.0,
        say: Callable[[str], None] = print,
    ) -> None:
        self.endpoint = endpoint
        self.conn = Conn(endpoint)
        self.folder = folder
        self.default_pod_template = default_pod_template
        self.scheduler_name = scheduler_name
        self.creators = creators
        self.timeout = timeout
        self.say = say
        self.watch = PodWatch(endpoint)
        self.pods: dict[str, list[tuple[str, str]]] = {}  # namespace -> pods created there
        self.sent: dict[tuple[str, str], float] = {}  # pod -> just before its creating POST went out
        self.windows: list[Window] = []
        self.namespace_seq = 0
        self.stopping = threading.Event()  # set when the workload ends: background ops (churn) stop
        self.background: list[threading.Thread] = []
        self.churned = 0  # churn rounds done
        self.churn_errors: list[str] = []

    # -- helpers --------------------------------------------------------------------------------------

    def _template(self, path: str | None, fallback: Mapping[str, Any] | None = None) -> str:
        if path is None:
            if fallback is None:
                raise OpError("no template path and no default")
            return orjson.dumps(fallback).decode()
        return (self.folder / path).read_text()

    def _objects(self, text: str, count: int, tag: str) -> list[dict[str, Any]]:
        out = []
        for i in range(count):
            obj = yaml.safe_load(render(text, {"Index": i, "Count": count}))
            meta = obj.setdefault("metadata", {})
            if not meta.get("name"):
                meta["name"] = f"{meta.pop('generateName', 'obj-')}{tag}-{i}"
            out.append(obj)
        return out

    def _post(self, path: str, objs: Sequence[dict[str, Any]], ns: str | None = None) -> None:
        """POST the objects; with ``ns`` (pods) the send times are kept for latency."""
        items = [(o["metadata"]["name"], orjson.dumps(o)) for o in objs]
        sent: dict[str, float] | None = {} if ns is not None else None
        errors = post_objects(self.endpoint, path, items, self.creators, sent=sent)
        if sent:
            self.sent.update({(str(ns), name): t for name, t in sent.items()})
        if errors:
            raise OpError(f"POST {path}: {errors[:3]}")

    def _wait(self, pred: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self.timeout
        tick = time.monotonic() + 10
        while not pred():
            now = time.monotonic()
            if now > deadline:
                raise OpError(f"timed out after {self.timeout:.0f}s waiting for {what}")
            if now > tick:
                self.say(f"    ... waiting for {what}")
                tick = now + 10
            if self.watch.error and not self.watch.is_alive():
                raise OpError(f"pod watch failed: {self.watch.error}")
            time.sleep(0.05)

    # -- operations -----------------------------------------------------------------------------------

    def create_nodes(self, op: Mapping[str, Any], i: int) -> None:
        count = int(op.get("count") or 0)
        nodes = self._objects(self._template(op.get("nodeTemplatePath"), DEFAULT_NODE), count, f"n{i}")
        label = op.get("labelNodePrepareStrategy") or {}
        unique = op.get("uniqueNodeLabelStrategy") or {}
        alloc = op.get("nodeAllocatableStrategy") or {}
        csinodes = []
        for k, n in enumerate(nodes):
            labels = n["metadata"].setdefault("labels", {})
            labels["kubernetes.io/hostname"] = n["metadata"]["name"]
            if label:
                values = label["labelValues"]
                labels[label["labelKey"]] = values[k % len(values)]  # round robin, as upstream's
            if unique:
                labels[unique["labelKey"]] = f"{n['metadata']['name']}-{k}"
            if alloc.get("nodeAllocatable"):
                status = n.setdefault("status", {})
                status["allocatable"] = {**(status.get("capacity") or {}), **alloc["nodeAllocatable"]}
            if alloc.get("csiNodeAllocatable") or alloc.get("migratedPlugins"):
                drivers = [
                    {"name": d, "nodeID": n["metadata"]["name"], "topologyKeys": None, "allocatable": v}
                    for d, v in (alloc.get("csiNodeAllocatable") or {}).items()
                ]
                ann = {
                    "storage.alpha.kubernetes.io/migrated-plugins": ",".join(
                        alloc.get("migratedPlugins") or []
                    )
                }
                csinodes.append(
                    {
                        "apiVersion": "storage.k8s.io/v1",
                        "kind": "CSINode",
                        "metadata": {"name": n["metadata"]["name"], "annotations": ann},
                        "spec": {"drivers": drivers},
                    }
                )
        self._post("/api/v1/nodes", nodes)
        if csinodes:
            self._post("/apis/storage.k8s.io/v1/csinodes", csinodes)

    def create_namespaces(self, op: Mapping[str, Any], i: int) -> None:
        count = int(op.get("count") or 0)
        prefix = op.get("prefix") or "namespace"
        text = self._template(op.get("namespaceTemplatePath"), {"apiVersion": "v1", "kind": "Namespace"})
        nss = self._objects(text, count, f"ns{i}")
        for k, ns in enumerate(nss):
            ns["metadata"]["name"] = f"{prefix}-{k}"
        self._post("/api/v1/namespaces", nss)

    def _ensure_namespace(self, ns: str) -> None:
        self.conn.json("POST", "/api/v1/namespaces", {"metadata": {"name": ns}}, ok=(201, 409))

    def create_pods(self, op: Mapping[str, Any], i: int) -> None:
        count = int(op.get("count") or 0)
        ns = op.get("namespace")
        if not ns:
            ns = f"namespace-{self.namespace_seq}"
            self.namespace_seq += 1
        self._ensure_namespace(ns)
        window = None
        if op.get("collectMetrics"):
            window = Window(f"op{i}", frozenset((ns,)), {}, time.monotonic())
            self.windows.append(window)
        if op.get("steadyState"):
            self._steady_state(op, i, ns, count)
        else:
            keys = self._create_batch(op, ns, count, f"p{i}")
            if not op.get("skipWaitToCompletion"):
                bound = self.watch.bound
                self._wait(
                    lambda: all(k in bound for k in keys), f"{count} pods of op {i} in {ns} to be scheduled"
                )
        if window is not None:
            window.end = time.monotonic()

    def _create_batch(self, op: Mapping[str, Any], ns: str, count: int, tag: str) -> list[tuple[str, str]]:
        pods = self._objects(
            self._template(op.get("podTemplatePath") or self.default_pod_template, DEFAULT_POD), count, tag
        )
        for p in pods:
            p["metadata"]["namespace"] = ns
            p.setdefault("spec", {})["schedulerName"] = self.scheduler_name
        if op.get("persistentVolumeClaimTemplatePath"):
            self._bound_volumes(op, ns, pods, tag)
        keys = [(ns, p["metadata"]["name"]) for p in pods]
        self.pods.setdefault(ns, []).extend(keys)
        self._post(f"/api/v1/namespaces/{ns}/pods", pods, ns=ns)
        return keys

    def _steady_state(self, op: Mapping[str, Any], i: int, ns: str, count: int) -> None:
        """Upstream's steadyState createPods: ``count`` pods, and each time all of them are scheduled they
        are deleted (grace 0) and ``count`` new ones made, until ``duration`` has passed; the cluster stays
        at one level of use. At least one pod must get scheduled."""
        duration = _seconds(op.get("duration") or 0)
        if duration <= 0:
            raise OpError(f"createPods op {i}: steadyState needs a duration")
        end = time.monotonic() + duration
        bound = self.watch.bound
        batch = 0
        scheduled = 0
        while time.monotonic() < end:
            keys = self._create_batch(op, ns, count, f"p{i}b{batch}")
            while time.monotonic() < end and not all(k in bound for k in keys):
                if self.watch.error and not self.watch.is_alive():
                    raise OpError(f"pod watch failed: {self.watch.error}")
                time.sleep(0.01)
            scheduled += sum(1 for k in keys if k in bound)
            if time.monotonic() >= end:
                break
            status, data = self.conn.request(
                "DELETE", f"/api/v1/namespaces/{ns}/pods?gracePeriodSeconds=0&propagationPolicy=Background"
            )
            if status != 200:
                raise OpError(f"steadyState: deleting batch {batch}: HTTP {status}: {data[:200]!r}")
            batch += 1
        if scheduled == 0:
            raise OpError(
                f"createPods op {i}: no pod at all got scheduled in {duration:.0f}s of steady state"
            )

    def _bound_volumes(self, op: Mapping[str, Any], ns: str, pods: list[dict[str, Any]], tag: str) -> None:
        """Upstream's createPods with PV and PVC templates: per pod a PVC and a PV already bound to each
        other (claimRef, volumeName, both phases Bound, written through the status subresource since a
        create resets status), and the pod's only volume is that claim. Made before the pods, outside the
        metrics window (upstream interleaves them with the pod creations inside it; either way the
        throughput counted is pods bound). Named as upstream names them: claim ``pvc-<i>`` in the pods'
        namespace, volume ``<namespace>-vol-<i>``."""
        pv_text = self._template(op.get("persistentVolumeTemplatePath"))
        pvc_text = self._template(op["persistentVolumeClaimTemplatePath"])
        pvcs: list[dict[str, Any]] = []
        pvs: list[dict[str, Any]] = []
        for k, pod in enumerate(pods):
            # upstream's names (CreatePodWithPersistentVolume): later pod templates refer to them, e.g.
            # EventHandlingPodDelete's VolumeRestrictions pods mount ``pvc-{{ .Index }}``
            claim = f"pvc-{k}"
            volume = f"vol-{k}"
            pvc = yaml.safe_load(pvc_text)
            pvc.setdefault("metadata", {}).update(name=claim, namespace=ns)
            pv = yaml.safe_load(pv_text)
            pv.setdefault("metadata", {})["name"] = f"{ns}-{volume}"  # PVs are cluster-wide
            spec = pv.setdefault("spec", {})
            if spec.get("csi") is not None:
                spec["csi"]["volumeHandle"] = pv["metadata"]["name"]
            elif spec.get("awsElasticBlockStore") is not None:
                spec["awsElasticBlockStore"]["volumeID"] = volume
            spec["claimRef"] = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": ns,
                "name": claim,
            }
            pv["status"] = {"phase": "Bound"}
            pvc.setdefault("spec", {})["volumeName"] = pv["metadata"]["name"]
            pvc["status"] = {"phase": "Bound"}
            pod["spec"]["volumes"] = [{"name": "vol", "persistentVolumeClaim": {"claimName": claim}}]
            pvcs.append(pvc)
            pvs.append(pv)
        self._post(f"/api/v1/namespaces/{ns}/persistentvolumeclaims", pvcs)
        self._put_status(
            [(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{c['metadata']['name']}", c) for c in pvcs]
        )
        self._post("/api/v1/persistentvolumes", pvs)
        self._put_status([(f"/api/v1/persistentvolumes/{v['metadata']['name']}", v) for v in pvs])

    def _put_status(self, items: Sequence[tuple[str, dict[str, Any]]]) -> None:
        def put(conn: Conn, item: tuple[str, dict[str, Any]]) -> str | None:
            path, obj = item
            for _ in range(20):
                status, data = conn.request("PUT", f"{path}/status", orjson.dumps(obj))
                if status == 200:
                    return None
                if status in (409, 429) or status >= 500:
                    time.sleep(0.1)
                    continue
                return f"{path}/status: HTTP {status}: {data[:200]!r}"
            return f"{path}/status: gave up after retries"

        errors = run_parallel(self.endpoint, items, put, self.creators)
        if errors:
            raise OpError(f"status update: {errors[:3]}")

    def barrier(self, op: Mapping[str, Any], i: int) -> None:
        namespaces = op.get("namespaces") or list(self.pods)
        selector = op.get("labelSelector") or {}
        seen = self.watch.attempted if op.get("stageRequirement") == "Attempted" else self.watch.bound
        labels = self.watch.labels
        keys = [
            k
            for ns in namespaces
            for k in self.pods.get(ns, ())
            if all(labels.get(k, {}).get(a) == b for a, b in selector.items())
        ]
        deleted = self.watch.deleted
        self._wait(lambda: all(k in seen or k in deleted for k in keys), f"barrier {i} on {len(keys)} pods")

    def create_any(self, op: Mapping[str, Any], i: int) -> None:
        count = int(op.get("count") or 1)
        objs = self._objects(self._template(op["templatePath"]), count, f"a{i}")
        for o in objs:
            kind = o.get("kind", "")
            if kind not in KINDS:
                raise OpError(f"createAny: kind {kind!r} not translated yet")
            namespaced = KINDS[kind][2]
            _served_version(o)
            if kind == "Pod":
                o.setdefault("spec", {})["schedulerName"] = self.scheduler_name
            ns = ""
            if namespaced:
                ns = op.get("namespace") or o["metadata"].get("namespace") or "default"
                o["metadata"]["namespace"] = ns
                self._ensure_namespace(ns)
                if kind == "Pod":
                    self.pods.setdefault(ns, []).append((ns, o["metadata"]["name"]))
            self._post(resource_path(kind, ns), [o], ns=ns if kind == "Pod" else None)

    def churn(self, op: Mapping[str, Any], i: int) -> None:
        """Upstream's churn: every ``intervalMilliseconds`` (500) one object per template is created
        (``create``: up to ``number`` rounds, 0 = no limit) or, in ``recreate``, created for ``number``
        rounds and then each round deletes the oldest of its slot before creating anew; in the background
        until the workload ends. Templates are plain YAML (no Go template); pods get our schedulerName."""
        mode = op.get("mode")
        number = int(op.get("number") or 0)
        if mode not in ("create", "recreate") or number < 0 or (mode == "recreate" and number == 0):
            raise OpError(f"churn: invalid mode {mode!r} / number {number}")
        ns = op.get("namespace") or f"namespace-{i}"
        self._ensure_namespace(ns)
        targets: list[tuple[str, bytes]] = []  # (collection path, body)
        for path in op.get("templatePaths") or ():
            obj = yaml.safe_load(self._template(path))
            kind = obj.get("kind", "")
            if kind not in KINDS:
                raise OpError(f"churn: kind {kind!r} not translated yet")
            namespaced = KINDS[kind][2]
            if kind == "Pod":
                obj.setdefault("spec", {})["schedulerName"] = self.scheduler_name
            if namespaced:
                obj.setdefault("metadata", {})["namespace"] = ns
            targets.append((resource_path(kind, ns if namespaced else None), orjson.dumps(obj)))
        interval = int(op.get("intervalMilliseconds") or 500) / 1000.0
        thread = threading.Thread(
            target=self._churn_loop, args=(targets, mode, number, interval), name=f"churn-{i}", daemon=True
        )
        self.background.append(thread)
        thread.start()

    def _churn_loop(self, targets: list[tuple[str, bytes]], mode: str, number: int, interval: float) -> None:
        conn = Conn(self.endpoint)
        slots: list[list[str]] = [[""] * max(number, 1) for _ in targets]
        rounds = 0
        try:
            while not self.stopping.wait(interval):
                if mode == "create" and number and rounds >= number:
                    return
                for t, (path, body) in enumerate(targets):
                    if mode == "recreate":
                        k = rounds % number
                        if slots[t][k]:
                            conn.request("DELETE", f"{path}/{slots[t][k]}")
                            slots[t][k] = ""
                            continue
                    status, data = conn.request("POST", path, body)
                    if status == 201 and mode == "recreate":
                        slots[t][rounds % number] = orjson.loads(data)["metadata"]["name"]
                self.churned += 1
                rounds += 1
        except Exception as e:  # the workload goes on; the report says the churn broke
            self.churn_errors.append(f"{type(e).__name__}: {e}")
        finally:
            conn.close()

    def update_any(self, op: Mapping[str, Any], i: int) -> None:
        """Upstream's updateAny: ``count`` objects rendered from the template (``.Index``, ``.Count``) and
        PUT (an update without resourceVersion, strict field validation) to the object or to its
        ``subresources`` (e.g. ``resize``) and then to its status, ``updatePerSecond`` a second (0: all
        at once).
        Pods keep the schedulerName we created them with (the field is immutable)."""
        count = int(op.get("count") or 1)
        rate = int(op.get("updatePerSecond") or 0)
        text = self._template(op["templatePath"])
        t0 = time.monotonic()
        for k in range(count):
            obj = yaml.safe_load(render(text, {"Index": k, "Count": count}))
            kind = obj.get("kind", "")
            if kind not in KINDS:
                raise OpError(f"updateAny: kind {kind!r} not translated yet")
            namespaced = KINDS[kind][2]
            name = obj["metadata"]["name"]
            ns = op.get("namespace") or ""
            if ns and not namespaced:
                raise OpError(f"updateAny: namespace {ns!r} set for cluster-scoped {kind}")
            if namespaced:
                obj["metadata"]["namespace"] = ns = ns or obj["metadata"].get("namespace") or "default"
            if kind == "Pod":
                obj.setdefault("spec", {})["schedulerName"] = self.scheduler_name
            obj_path = resource_path(kind, ns if namespaced else None, name)
            path = "/".join([obj_path, *(op.get("subresources") or ())])
            if rate:  # the k-th update not before t0 + k/rate
                delay = t0 + k / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            body = orjson.dumps(obj)
            # then the status, as upstream's update does (an update of the object keeps its old status)
            for target in (path, f"{obj_path}/status"):
                status, data = self.conn.request("PUT", f"{target}?fieldValidation=Strict", body)
                if status != 200:
                    raise OpError(f"updateAny: PUT {target}: HTTP {status}: {data[:300]!r}")

    def delete_pods(self, op: Mapping[str, Any], i: int) -> None:
        ns = op["namespace"]
        selector = op.get("labelSelector") or {}
        labels = self.watch.labels
        keys = [
            k
            for k in self.pods.get(ns, ())
            if all(labels.get(k, {}).get(a) == b for a, b in selector.items())
        ]
        rate = int(op.get("deletePodsPerSecond") or 0)
        t0 = time.monotonic()
        for n, (pns, name) in enumerate(keys):
            if rate:  # the n-th deletion not before t0 + n/rate
                delay = t0 + n / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            self.conn.json(
                "DELETE", f"/api/v1/namespaces/{pns}/pods/{name}?gracePeriodSeconds=0", ok=(200, 404)
            )
        if not op.get("skipWaitToCompletion"):
            deleted = self.watch.deleted
            self._wait(lambda: all(k in deleted for k in keys), f"{len(keys)} pods of {ns} to be deleted")

    def sleep(self, op: Mapping[str, Any], i: int) -> None:
        time.sleep(_seconds(op.get("duration", "0s")))

    def start_metrics(self, op: Mapping[str, Any], i: int) -> None:
        self.windows.append(
            Window(
                op.get("name") or f"op{i}",
                frozenset(op.get("namespaces") or ()),
                op.get("labelSelector") or {},
                time.monotonic(),
            )
        )

    def stop_metrics(self, op: Mapping[str, Any], i: int) -> None:
        for w in self.windows:
            if w.end is None:
                w.end = time.monotonic()

    def create_resource_driver(self, op: Mapping[str, Any], i: int) -> None:
        try:
            n = dra.create_resource_driver(self.endpoint, self.conn, op, self.creators)
        except dra.DraOpError as e:
            raise OpError(str(e)) from None
        self.say(f"    op {i}: {n} ResourceSlices of {op.get('driverName')}")

    def alloc_resource_claims(self, op: Mapping[str, Any], i: int) -> None:
        try:
            n = dra.alloc_resource_claims(self.conn, op.get("namespace") or None)
        except dra.DraOpError as e:
            raise OpError(str(e)) from None
        self.say(f"    op {i}: {n} ResourceClaims allocated")

    # -- the run --------------------------------------------------------------------------------------

    def run(self, ops: Sequence[Mapping[str, Any]]) -> Result:
        handlers: dict[str, Callable[[Mapping[str, Any], int], None]] = {
            "createNodes": self.create_nodes,
            "createNamespaces": self.create_namespaces,
            "createPods": self.create_pods,
            "barrier": self.barrier,
            "createAny": self.create_any,
            "churn": self.churn,
            "updateAny": self.update_any,
            "deletePods": self.delete_pods,
            "sleep": self.sleep,
            "startCollectingMetrics": self.start_metrics,
            "stopCollectingMetrics": self.stop_metrics,
            "createResourceDriver": self.create_resource_driver,
            "allocResourceClaims": self.alloc_resource_claims,
        }
        self.watch.start()
        t0 = time.monotonic()
        try:
            for i, op in enumerate(ops):
                handlers[str(op["opcode"])](op, i)
            for w in self.windows:
                if w.end is None:
                    w.end = time.monotonic()
            lat: list[float] = []
            figures = [self._window_figures(w, lat) for w in self.windows]
            return Result(
                time.monotonic() - t0,
                figures,
                sum(len(v) for v in self.pods.values()),
                self.churned,
                self.churn_errors,
                lat,
            )
        finally:
            self.stopping.set()
            for t in self.background:
                t.join(timeout=10)
            self.watch.stop()
            self.conn.close()

    def _window_figures(self, w: Window, latencies_ms: list[float]) -> dict[str, Any]:
        """The window's throughput samples and latency summary; its pods' latencies (ms) are appended
        to ``latencies_ms``."""
        assert w.end is not None
        end = w.end
        counted = [
            (k, t)
            for k, t in self.watch.bound.copy().items()  # the watch thread still records binds
            if w.start <= t <= end and w.counts(k, self.watch.labels.get(k, {}))
        ]
        samples = collector_samples((t for _, t in counted), w.start, end)
        sampler = "collector"
        if not samples and counted:
            # bound within the collector's first tick or two (the integration-test sizes): upstream's
            # collector would report no figure; one-second buckets still give one
            samples, sampler = throughput_samples(t for _, t in counted), "buckets (window too short)"
        lat = [1000.0 * (t - self.sent[k]) for k, t in counted if k in self.sent]
        latencies_ms.extend(lat)
        return {
            "name": w.name,
            "seconds": end - w.start,
            "scheduled": len(counted),
            "samples": samples,
            "sampler": sampler,
            "average": statistics.fmean(samples) if samples else float("nan"),
            "latency_ms": Summary.of(lat).as_dict(),
        }


def _served_version(obj: dict[str, Any]) -> None:
    """Give ``obj`` the version of its group that the course posts to (``KINDS``): upstream's DRA
    templates write DeviceClasses as ``resource.k8s.io/v1beta2``, a version of the same shape that the
    API server converts to v1 and that ours, with default runtime-config, does not take on the v1 path."""
    prefix = KINDS[obj["kind"]][0]  # "/api/v1" or "/apis/<group>/<version>"
    served = prefix.removeprefix("/apis/").removeprefix("/api/")
    group, _, _version = str(obj.get("apiVersion", "")).rpartition("/")
    served_group = served.rpartition("/")[0]
    if group and group == served_group and obj["apiVersion"] != served:
        obj["apiVersion"] = served


def _seconds(value: Any) -> float:
    """A Go duration string (``"10s"``, ``"1m30s"``, ``"500ms"``) or a number of seconds."""
    if isinstance(value, int | float):
        return float(value)
    total = 0.0
    for num, unit in re.findall(r"([\d.]+)(ms|s|m|h)", str(value)):
        total += float(num) * {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}[unit]
    return total
