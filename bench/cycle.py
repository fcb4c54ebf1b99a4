"""In-process scheduling-cycle benchmark: the scheduler core alone, with no API server.

Design
------
``make bench`` measures the daemon against a real control plane, where etcd, the API server and the load
generator share two cores with it; that is the figure we quote, but it moves by ±20 % run to run and one
run takes minutes. To see what a change to the core is worth, this script builds the app exactly as the
daemon does (default configuration, every default plugin), fills the cache with the benchmark's nodes and
init pods, and then times the measured pods of a workload through ``Scheduler.schedule_one``: queue pop,
snapshot update, PreFilter/Filter/Score, assume, Reserve, Permit and a binding cycle whose bind is a
no-op. It also times ``Pod.from_dict`` on the same pods (what the reflector does per watch event).

    python -m bench.cycle --nodes 5000 --workloads SchedulingBasic,NodeAffinity
    python -m bench.cycle --profile out.prof      # cProfile of the measured part
    python -m bench.cycle --workloads OnePodPerNode --config list.yaml --feature-gates OpportunisticBatching=false
    python -m bench.cycle --nodes 5000 --pods 500 --workloads ExtendedResourcePerNode
    python -m bench.cycle --nodes 5000 --pods 10000 --workloads NodeInclusionPolicyCourse,PreemptionAsyncCourse

The ``*Course`` workloads (``course_workloads``) mirror upstream scheduler_perf test cases at their
5,000-node size, from the pinned module's templates, with binds and victim deletions fed back through the
watch handlers and churn paced as in a live run; their figure includes the churn pods' cycles.

Figures: milliseconds per pod (median of ``--repeat`` runs) and pods/s. No cluster is started. For
Preemption and Unschedulable the figure is per first attempt (victims are not deleted here, so
preemptors stay pending: it times the PostFilter dry runs). Where DefaultPreemption ran, a second line
gives its PostFilter CPU ms per pod alone (this thread's CPU time) and its dry runs per pod by kind
(``DefaultPreemption.dry_runs``; an older tree without them shows "none").
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import dataclasses
import gc
import os
import statistics
import sys
import threading
import time
from typing import Any

import yaml

from bench import workloads as wl
from bench.upstream import course
from pyscheduler.app import DAEMON_GC_THRESHOLD, build_app
from pyscheduler.cli import _extension_points
from pyscheduler.config import feature_gates
from pyscheduler.config.load import load_config
from pyscheduler.event_handlers import PodHandler
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Node, Pod
from pyscheduler.logs import setup_logging
from pyscheduler.plugins.registry import full_registry
from pyscheduler.testing.clock import FakeClock


class _NullApi:
    """The client as the core sees it: binds succeed at once; nothing else is called. With ``watch``, binds
    and victim deletions are kept for the loop to deliver as the watch would (``_Watch``)."""

    def __init__(self, watch: bool = False) -> None:
        self.bound = 0
        self.watch = watch
        self.binds: list[tuple[Pod, str]] = []
        self.deletes: list[str] = []  # "ns/name"
        self.lock = threading.Lock()
        self.done = threading.Condition(self.lock)

    def __getattr__(self, name: str) -> Any:  # status patches: accepted, not applied
        return lambda *a, **k: None

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        with self.lock:
            self.bound += 1
            if self.watch:
                self.binds.append((pod, node_name))
            self.done.notify_all()
        return None

    def delete_pod(self, namespace: str, name: str, *a: Any, **k: Any) -> None:
        if self.watch:
            with self.lock:
                self.deletes.append(f"{namespace}/{name}")


class _Watch:
    """What the pods watch hands the daemon's handlers after a Binding or a victim's deletion, delivered
    on the scheduling thread between cycles (the daemon does it on its watch thread: the same CPU)."""

    def __init__(self, app: Any, api: _NullApi) -> None:
        self.handler = PodHandler(app)
        self.api = api
        self.pods: dict[str, Pod] = {}  # every pod by "ns/name", as the watch last showed it
        self.measured_bound = 0

    def created(self, pod: Pod) -> None:
        self.pods[pod.key] = pod
        self.handler.on_add(pod)

    def deliver(self) -> bool:
        with self.api.lock:
            binds, self.api.binds = self.api.binds, []
            deletes, self.api.deletes = self.api.deletes, []
        for pod, node in binds:
            old = self.pods.get(pod.key, pod)
            new = old.with_node_name(node)
            self.pods[pod.key] = new
            if pod.name.startswith("m-"):
                self.measured_bound += 1
            self.handler.on_update(old, new)
        for key in deletes:
            victim = self.pods.pop(key, None)
            if victim is not None:
                self.handler.on_delete(victim)
        return bool(binds or deletes)


class _NullRecorder:
    def event(self, *args: Any, **kw: Any) -> None:
        return None


class _NullWriter:
    def submit(self, *args: Any, **kw: Any) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None


# What the API server's Priority admission plugin writes into spec.priority.
_PRIORITY = {pc["metadata"]["name"]: pc["value"] for pc in wl.priority_classes()}


def _pod_dict(template: wl.PodTemplate, name: str, index: int, node: str | None = None) -> dict[str, Any]:
    d = template(name)
    if d["spec"].get("priorityClassName") in _PRIORITY:
        d["spec"]["priority"] = _PRIORITY[d["spec"]["priorityClassName"]]
    md = d["metadata"]
    md["namespace"] = "bench"
    md["uid"] = f"uid-{name}"
    md["resourceVersion"] = str(index + 1)
    md["creationTimestamp"] = "2026-11-22T00:00:00Z"
    if node is not None:
        d["spec"]["nodeName"] = node
    return d


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the forked Filter workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _host_port(name: str) -> dict[str, Any]:
    """A plain pod with host port 8080: identical pods go one per node (where opportunistic batching
    hands each pod the next node of the previous pod's scores)."""
    d = wl.pod(name, labels={wl.WORKLOAD_LABEL: "hostport"})
    d["spec"]["containers"][0]["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
    return d


def _upstream(template: str) -> dict[str, Any]:
    """One of scheduler_perf's templates, read from the pinned module (never copied into the repo)."""
    return yaml.safe_load((course.course_dir() / "templates" / template).read_text())  # type: ignore[no-any-return]


def _upstream_pod(template: str, workload: str) -> wl.PodTemplate:
    """Pods from an upstream template, with the benchmark's schedulerName and a workload label (which
    selects nothing: upstream's own labels stay as they are)."""
    base = _upstream(template)

    def make(name: str) -> dict[str, Any]:
        d = copy.deepcopy(base)
        d["metadata"] = {**d["metadata"], "name": name}
        d["metadata"].pop("generateName", None)
        d["metadata"].setdefault("labels", {})[wl.WORKLOAD_LABEL] = workload
        d["spec"]["schedulerName"] = wl.SCHEDULER_NAME
        return d

    return make


def _upstream_node(template: str | None, labels: dict[str, str] | None = None) -> Any:
    """Nodes from an upstream template (node-default.yaml when None) as bench.upstream makes them:
    ``kubernetes.io/hostname`` = the name, ``labels`` added (labelNodePrepareStrategy's outcome), and
    allocatable = capacity (the API server's default)."""
    base = _upstream(template or "node-default.yaml")

    def make(name: str, index: int) -> dict[str, Any]:
        d = copy.deepcopy(base)
        d["metadata"] = {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}
        st = d["status"]
        st["allocatable"] = dict(st["capacity"])
        return d

    return make


def course_workloads(nodes: int, pods: int) -> dict[str, wl.Workload]:
    """Four of upstream's scheduler_perf test cases as their 5,000-node workloads run them (scaled to
    ``nodes``; ``pods`` measured pods where upstream measures 10,000), templates read from the pinned
    module. Churn (a high-priority pod every 200 ms upstream) is one churn pod per ``churn_every``
    measured pods, the pace of pyscheduler's live runs (about 300 pods/s / 5 per s). Binds and victim
    deletions come back through the watch handlers (``_Watch``), so the queue sees AssignedPodAdd/Delete
    as in a live run."""
    node_aff = _upstream_pod("pod-with-node-affinity.yaml", "course")
    default = _upstream_pod("pod-default.yaml", "course")
    tainted = nodes // 5
    normal_node = _upstream_node(None)
    taint_node = _upstream_node("node-with-taint.yaml")
    return {
        "NodeAffinityCourse": wl.Workload(
            "NodeAffinityCourse",
            "course",
            nodes,
            node_aff,
            pods,
            node_aff,
            notes="SchedulingNodeAffinity/5000Nodes_10000Pods: every node zone1, pods In [zone1, zone2]",
            extra={"node": _upstream_node(None, {"topology.kubernetes.io/zone": "zone1"}), "watch": True},
        ),
        "UnschedulableCourse": wl.Workload(
            "UnschedulableCourse",
            "course",
            nodes // 50,
            default,
            pods,
            default,
            notes="Unschedulable/5kNodes/100Init/10kPods: churn of 9-CPU priority-10 pods (fit nowhere)",
            extra={
                "node": normal_node,
                "watch": True,
                "churn": _upstream_pod("pod-high-priority-large-cpu.yaml", "churn"),
                "churn_every": 60,
            },
        ),
        "NodeInclusionPolicyCourse": wl.Workload(
            "NodeInclusionPolicyCourse",
            "course",
            0,
            default,
            nodes * 4 // 5,
            _upstream_pod("pod-with-node-inclusion-policy.yaml", "course"),
            notes="SchedulingWithNodeInclusionPolicy/5000Nodes: 1 in 5 nodes tainted, hostname spread, Honor",
            extra={
                "node": lambda name, i: (taint_node if i >= nodes - tainted else normal_node)(name, i),
                "watch": True,
            },
        ),
        "PreemptionAsyncCourse": wl.Workload(
            "PreemptionAsyncCourse",
            "course",
            nodes * 4,
            _upstream_pod("pod-low-priority.yaml", "low"),
            pods // 2,
            default,
            notes="PreemptionAsync/5000Nodes: 4 low-priority 900m pods per node, churn of 3-CPU priority-10 pods",
            extra={
                "node": normal_node,
                "watch": True,
                "churn": _upstream_pod("pod-high-priority.yaml", "churn"),
                "churn_every": 52,
            },
        ),
    }


def cycle_workloads(nodes: int, pods: int) -> dict[str, wl.Workload]:
    """The benchmark's workloads plus OnePodPerNode, ExtendedResourcePerNode and PreemptionWatched (here
    only), and the course workloads (``course_workloads``). OnePodPerNode: no init pods, min(pods, nodes / 2)
    identical host-port pods, one per node."""
    out = {**wl.workloads(nodes, pods), **course_workloads(nodes, pods)}
    # the benchmark's Preemption with victims' deletions fed back (the preemptors then bind): the
    # dry runs, the nominated pods' pass and the requeues of a live run, with no cluster
    out["PreemptionWatched"] = dataclasses.replace(
        out["Preemption"], name="PreemptionWatched", extra={**out["Preemption"].extra, "watch": True}
    )
    out["OnePodPerNode"] = wl.Workload(
        "OnePodPerNode", "onepernode", 0, wl._plain, min(pods, nodes // 2), _host_port
    )
    out["ExtendedResourcePerNode"] = wl.Workload(
        "ExtendedResourcePerNode",
        "extpernode",
        0,
        wl._plain,
        min(pods, nodes),
        _own_resource,
        notes="scheduler_perf's SchedulingWithExtendedResource: node i offers foo.com/bar-i, pod i asks for it",
        extra={"per_node_resource": True},
    )
    return out


def _own_resource(name: str) -> dict[str, Any]:
    """A plain pod asking for the extended resource only node ``int(name's last part)`` offers."""
    d = wl.pod(name, labels={wl.WORKLOAD_LABEL: "extpernode"})
    res = {f"foo.com/bar-{int(name.rsplit('-', 1)[1])}": "1"}
    d["spec"]["containers"][0]["resources"] = {"requests": dict(res), "limits": dict(res)}
    return d


def _node_dict(workload: wl.Workload, name: str, index: int) -> dict[str, Any]:
    make = workload.extra.get("node")
    if make is not None:
        return make(name, index)  # type: ignore[no-any-return]
    d = wl.node(name, index)
    if workload.extra.get("per_node_resource"):
        st = d["status"]
        st["allocatable"] = st["capacity"] = {**st["allocatable"], f"foo.com/bar-{index}": "1"}
    return d


def run_once(
    workload: wl.Workload,
    nodes: int,
    profile: cProfile.Profile | None,
    parallelism: int = 16,
    config_file: str | None = None,
) -> tuple[float, float, int, float]:
    """(seconds for the measured pods, seconds of Pod.from_dict for them, pods bound, CPU seconds of the
    process over the measured pods: the figure a busy machine disturbs least). ``config_file``: a
    KubeSchedulerConfiguration (its first profile's schedulerName should be the pods', py-scheduler)."""
    registry = full_registry()
    config = dataclasses.replace(
        load_config(config_file, registry, _extension_points(registry)), parallelism=parallelism
    )
    watch_mode = bool(workload.extra.get("watch"))
    api = _NullApi(watch_mode)
    # watch mode: queue time (backoff, the 1 s flush) moves with the pods, at a live run's pace
    clock = FakeClock() if watch_mode else None
    app = build_app(config, registry, api, clock=clock, recorder=_NullRecorder(), writer=_NullWriter())
    sched, cache, queue = app.scheduler, app.cache, app.queue
    watch = _Watch(app, api) if watch_mode else None
    post_filter = _PostFilterMeter(sched)
    node_names = [f"node-{i}" for i in range(nodes)]
    for i, name in enumerate(node_names):
        cache.add_node(Node.from_dict(_node_dict(workload, name, i)))
    # init pods, already bound round-robin (as the real run leaves them)
    for i in range(workload.init_pods):
        d = _pod_dict(workload.init_template, f"init-{i}", i, node_names[i % nodes])
        if watch is not None:
            watch.created(Pod.from_dict(d))
        else:
            cache.add_pod(Pod.from_dict(d))
    for i in range(workload.unschedulable_pods):
        queue.add(Pod.from_dict(_pod_dict(workload.unschedulable_template, f"unsched-{i}", i)))
    while sched.schedule_one(0):
        pass
    dicts = [_pod_dict(workload.template, f"m-{i}", i) for i in range(workload.measured_pods)]
    t = time.perf_counter()
    pods = [Pod.from_dict(d) for d in dicts]
    parse = time.perf_counter() - t
    churn_template = workload.extra.get("churn")
    churn_every = int(workload.extra.get("churn_every", 0))
    churn = (
        [
            Pod.from_dict(_pod_dict(churn_template, f"churn-{i}", i))
            for i in range(len(pods) // churn_every + 1)
        ]
        if churn_template is not None and churn_every
        else []
    )
    gc.collect()
    gc.freeze()
    threshold = gc.get_threshold()
    gc.set_threshold(*DAEMON_GC_THRESHOLD)  # as the daemon runs after its caches sync
    if watch is None:
        for p in pods:
            queue.add(p)
    if profile is not None:
        profile.enable()
    post_filter.reset()
    batched = sum(fwk.batch.batched_pods for fwk in app.profiles.values())
    t = time.perf_counter()
    cpu = _cpu()
    if watch is None:
        while sched.schedule_one(0):
            pass
        with api.lock:
            while api.bound < len(pods) and api.done.wait(1):
                pass
    else:
        assert clock is not None
        _run_watched(sched, queue, clock, watch, pods, churn, churn_every)
    elapsed = time.perf_counter() - t
    cpu = _cpu() - cpu
    if profile is not None:
        profile.disable()
    sched.shutdown()
    gc.set_threshold(*threshold)
    gc.unfreeze()
    LAST_POST_FILTER.clear()
    LAST_POST_FILTER.update(post_filter.figures())
    LAST_BATCHED[0] = sum(fwk.batch.batched_pods for fwk in app.profiles.values()) - batched
    bound = watch.measured_bound if watch is not None else api.bound
    return elapsed, parse, bound, cpu


LIVE_PACE = 300.0  # pods/s: about pyscheduler's pace in the live course runs these workloads mirror


def _run_watched(
    sched: Any, queue: Any, clock: FakeClock, watch: _Watch, pods: list[Pod], churn: list[Pod], every: int
) -> None:
    """The measured pods created as the watch shows them, and one churn pod each time ``every`` more of
    them are bound (``every`` 0: none; upstream's churn is a pod every 200 ms, ``every`` pods at the live
    pace). Scheduled as they come, binds and deletions delivered between cycles. The queue's clock moves
    1 / LIVE_PACE s per cycle (and to the next flush when nothing is left to do), so backoffs end and the
    1 s flush comes after as many cycles as in a live run. Ends when every measured pod is bound, or
    after 120 s of queue time with nothing to do."""
    churn_iter = iter(churn)
    next_churn = 0
    step = 1.0 / LIVE_PACE
    next_flush = clock.now() + 1
    idle_since: float | None = None
    for p in pods:  # createPods posts faster than either scheduler binds
        watch.created(p)
    while watch.measured_bound < len(pods):
        if every and watch.measured_bound >= next_churn:
            next_churn += every
            c = next(churn_iter, None)
            if c is not None:
                watch.created(c)
        did = sched.schedule_one(0)
        delivered = watch.deliver()
        if did:
            clock.advance(step)
        if did or delivered:
            idle_since = None
        else:
            time.sleep(0.0005)  # binding threads still at work, or a backoff to wait out
            if idle_since is None:
                idle_since = clock.now()
            elif clock.now() - idle_since > 120:
                return
            clock.advance(max(0.0, next_flush - clock.now()))
        if clock.now() >= next_flush:
            queue.flush()
            next_flush = clock.now() + 1


# pods of the last run_once's measured ones that went to their opportunistic-batching hint
LAST_BATCHED = [0]


# PostFilter figures of the last run_once (see _PostFilterMeter.figures)
LAST_POST_FILTER: dict[str, float] = {}


class _PostFilterMeter:
    """The CPU time of DefaultPreemption's PostFilter (the dry runs; time.thread_time, so other threads
    and processes on a loaded machine do not count) and its dry runs by kind, over the measured pods."""

    def __init__(self, sched: Any) -> None:
        self.plugins = [
            p
            for fwk in sched.profiles.values()
            for p in getattr(fwk, "post_filter_plugins", ())
            if p.name == "DefaultPreemption"
        ]
        self.cpu = 0.0
        self.calls = 0
        for p in self.plugins:
            inner = p.post_filter

            def timed(*a: Any, _inner: Any = inner, **k: Any) -> Any:
                t = time.thread_time()
                try:
                    return _inner(*a, **k)
                finally:
                    self.cpu += time.thread_time() - t
                    self.calls += 1

            p.post_filter = timed

    def reset(self) -> None:
        self.cpu, self.calls = 0.0, 0
        for p in self.plugins:
            if hasattr(p, "dry_runs"):
                p.dry_runs.clear()

    def figures(self) -> dict[str, float]:
        """calls, cpu (seconds) and dry runs by kind ("dry:<kind>")."""
        out = {"calls": float(self.calls), "cpu": self.cpu}
        for p in self.plugins:
            for kind, n in getattr(p, "dry_runs", {}).items():
                out[f"dry:{kind}"] = out.get(f"dry:{kind}", 0.0) + n
        return out


def _post_filter_line(post: list[dict[str, float]], pods: int) -> str:
    """PostFilter CPU ms per measured pod (median over the runs) and dry runs per pod by kind."""
    cpu = statistics.median(f.get("cpu", 0.0) for f in post) / max(1, pods) * 1000
    kinds = sorted({k for f in post for k in f if k.startswith("dry:")})
    dry = " ".join(
        f"{k[4:]} {statistics.median(f.get(k, 0.0) for f in post) / max(1, pods):.1f}" for k in kinds
    )
    return f"{'  PostFilter':<22}{'':>9}{cpu:>11.3f}   dry runs per pod: {dry or 'none'}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cycle", description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument(
        "--pods", type=int, default=None, help="measured pods (default: 2 x nodes, at most 10,000)"
    )
    ap.add_argument(
        "--workloads",
        default="SchedulingBasic,NodeAffinity,PodTopologySpread,PodAntiAffinity,PreferredPodAffinity",
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--parallelism",
        type=int,
        default=16,
        help="KubeSchedulerConfiguration parallelism (default 16, kube's); 1: one process",
    )
    ap.add_argument("--profile", metavar="FILE", help="write a cProfile of the measured part of the last run")
    ap.add_argument("--config", metavar="FILE", help="a KubeSchedulerConfiguration (default: the defaults)")
    ap.add_argument(
        "--feature-gates", default="", help="as pyscheduler run's, e.g. OpportunisticBatching=false"
    )
    args = ap.parse_args(argv)
    setup_logging("console", "warning")
    feature_gates.set_current(feature_gates.parse(args.feature_gates))
    pods = args.pods or min(2 * args.nodes, 10_000)
    all_wls = cycle_workloads(args.nodes, pods)
    print(f"{'workload':<22}{'ms/pod':>9}{'cpu ms/pod':>11}{'pods/s':>9}{'parse µs/pod':>14}   runs (ms/pod)")
    for name in args.workloads.split(","):
        w = all_wls[name]
        runs = []
        parse = []
        cpus = []
        post: list[dict[str, float]] = []
        hinted: list[int] = []
        prof = None
        for r in range(args.repeat):
            prof = cProfile.Profile() if args.profile and r == args.repeat - 1 else None
            elapsed, p, bound, cpu = run_once(w, args.nodes, prof, args.parallelism, args.config)
            if bound != w.measured_pods:
                print(f"{name}: only {bound}/{w.measured_pods} pods bound", file=sys.stderr)
            runs.append(elapsed / max(1, w.measured_pods) * 1000)
            parse.append(p / max(1, w.measured_pods) * 1e6)
            cpus.append(cpu / max(1, w.measured_pods) * 1000)
            post.append(dict(LAST_POST_FILTER))
            hinted.append(LAST_BATCHED[0])
        med = statistics.median(runs)
        print(
            f"{name:<22}{med:>9.3f}{statistics.median(cpus):>11.3f}{1000 / med:>9.0f}"
            f"{statistics.median(parse):>14.1f}   " + " ".join(f"{x:.3f}" for x in runs),
            flush=True,
        )
        if any(f.get("calls") for f in post):
            print(_post_filter_line(post, w.measured_pods), flush=True)
        if any(hinted):
            print(f"  batching: pods that took their hint per run: {hinted} of {w.measured_pods}", flush=True)
        if prof is not None:
            prof.dump_stats(f"{args.profile}.{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
