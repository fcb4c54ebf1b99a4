"""The independent invariant checker: its own watches, its own bookkeeping, none of the scheduler's code.

It talks to kube-apiserver with the standard library only (``urllib`` + the cluster's CA and admin
token) and keeps, per pod uid, every node it was bound to; per node, its allocatable, taints and labels.
Only quantity parsing is shared (``pyscheduler.framework.quantity``, a pure function).

Invariants, checked on every watch event:

- **double bind**: a pod uid whose ``spec.nodeName`` goes from "" to X more than once, or to two nodes;
- **overcommit**: after a bind, the node's bound, not-yet-deleted, non-terminal pods request more cpu,
  memory or pods than its allocatable (requests counted as kube does: max(sum of containers + sidecars,
  largest init container + sidecars started before it) + overhead);
- **misfit**: a pod bound to a node with an untolerated NoSchedule/NoExecute taint, or that its
  nodeSelector or required node affinity rejects (the node as the checker saw it at bind time);
- **preemptions** are counted (pods with a ``Preempted`` event), so a run shows whether it had any, and
  judged: every victim (the event's pod, "Preempted by pod <uid> on node <node>") must be of lower
  priority than its preemptor (the uid in the event), and by the end the preemptor must have been bound,
  nominated (``status.nominatedNodeName`` seen set) or deleted, else the eviction bought nothing;
- **lost**: a pending pod with no scheduling attempt (a PodScheduled condition or a FailedScheduling
  event) for longer than ``lost_after`` seconds (max backoff 10 s + a margin), and at the end every pod
  still present is bound or has an attempt.

A watch that ends (apiserver restart, 410 Gone after compaction) is re-listed and re-watched; the list is
diffed against what the checker knew, so a bind that happened while the watch was down is still counted.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyscheduler.framework.quantity import parse_quantity

JSON = dict[str, Any]


def _q(value: Any, milli: bool = False) -> int:
    f = parse_quantity(str(value))
    return math.ceil(f * 1000) if milli else math.ceil(f)


def pod_requests(spec: JSON) -> dict[str, int]:
    """cpu (milli), memory (bytes) and 1 pod, as kube's resource helper sums them."""

    def req(c: JSON) -> dict[str, int]:
        r = (c.get("resources") or {}).get("requests") or {}
        return {"cpu": _q(r.get("cpu", 0), milli=True), "memory": _q(r.get("memory", 0))}

    total = {"cpu": 0, "memory": 0}
    for c in spec.get("containers") or []:
        for k, v in req(c).items():
            total[k] += v
    sidecars = {"cpu": 0, "memory": 0}
    init_max = {"cpu": 0, "memory": 0}
    for c in spec.get("initContainers") or []:
        r = req(c)
        if c.get("restartPolicy") == "Always":
            for k in total:
                total[k] += r[k]
                sidecars[k] += r[k]
            eff = dict(sidecars)
        else:
            eff = {k: r[k] + sidecars[k] for k in r}
        for k in init_max:
            init_max[k] = max(init_max[k], eff[k])
    out = {k: max(total[k], init_max[k]) for k in total}
    for k, v in (spec.get("overhead") or {}).items():
        if k in out:
            out[k] += _q(v, milli=(k == "cpu"))
    out["pods"] = 1
    return out


def _tolerated(taint: JSON, tolerations: list[JSON]) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        op = t.get("operator") or "Equal"
        if not t.get("key"):
            if op == "Exists":
                return True
            continue
        if t["key"] != taint.get("key"):
            continue
        if op == "Exists" or (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _match_expr(expr: JSON, labels: dict[str, str]) -> bool:
    key, op, values = str(expr.get("key")), expr.get("operator"), expr.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt"):
        with contextlib.suppress(KeyError, ValueError, IndexError):
            a, b = int(labels[key]), int(values[0])
            return a > b if op == "Gt" else a < b
        return False
    return False


def misfit(pod: JSON, node: JSON) -> str | None:
    """Why this pod may not run on this node (taints, nodeSelector, required node affinity), or None."""
    spec = pod.get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    tolerations = spec.get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(taint, tolerations):
            return f"untolerated taint {taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}"
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return f"nodeSelector {k}={v}"
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if terms and not any(
        all(_match_expr(e, labels) for e in t.get("matchExpressions") or [])
        and all(
            _match_expr(e, {"metadata.name": node["metadata"]["name"]}) for e in t.get("matchFields") or []
        )
        for t in terms
    ):
        return "required node affinity"
    return None


@dataclass
class PodRecord:
    key: str
    created: float
    requests: dict[str, int]
    binds: list[str] = field(default_factory=list)
    bind_times: list[float] = field(default_factory=list)
    attempted: float | None = None  # when the checker first saw a scheduling attempt
    deleted: bool = False
    terminal: bool = False
    preemptible: bool = True
    priority: int = 0
    nominated: str = ""  # the last status.nominatedNodeName seen set
    unschedulable_seen: float | None = None  # when the checker first saw PodScheduled=False
    last: JSON = field(default_factory=dict)


# the Preempted event's message (kube's and ours): the preemptor's uid and the node
PREEMPTED_BY = re.compile(r"Preempted by pod (\S+) on node (\S+)")


@dataclass
class Preemption:
    victim: str  # uids
    preemptor: str
    node: str
    at: float


@dataclass
class Violation:
    kind: str  # double-bind | overcommit | misfit | lost | leak | preemption
    subject: str
    detail: str
    at: float


class Checker:
    """Watches pods, nodes and events in the namespaces it is given (pods) and cluster-wide (nodes)."""

    def __init__(
        self, server: str, token: str, ca_file: str | None, namespace: str, lost_after: float = 40.0
    ) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.ctx = ssl.create_default_context(cafile=ca_file)
        self.namespace = namespace
        self.lost_after = lost_after
        self.lock = threading.RLock()
        self.pods: dict[str, PodRecord] = {}
        self.nodes: dict[str, JSON] = {}
        self.violations: list[Violation] = []
        self.bind_log: list[float] = []  # monotonic time of every bind the checker saw
        self.watch_restarts: dict[str, int] = {"pods": 0, "nodes": 0, "events": 0, "preempted": 0}
        self.gone: dict[str, int] = {"pods": 0, "nodes": 0, "events": 0, "preempted": 0}
        self.preempted: set[str] = set()  # uids of pods that got a Preempted event (victims)
        self.failed_scheduling: set[str] = set()  # uids of pods that got a FailedScheduling event
        self.preemptions: list[Preemption] = []
        self.preemptors_unseen = 0  # events naming a preemptor uid the pod watch never showed
        self._judged: set[tuple[str, str]] = set()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lost_reported: set[str] = set()

    # ------------------------------------------------------------------ http
    def _get(self, path: str, timeout: float = 30.0) -> Any:
        req = urllib.request.Request(self.server + path, headers={"Authorization": f"Bearer {self.token}"})
        return urllib.request.urlopen(req, context=self.ctx, timeout=timeout)

    def _list(self, path: str) -> tuple[list[JSON], str]:
        with self._get(path) as r:
            out = json.loads(r.read())
        return list(out.get("items") or []), str(out["metadata"]["resourceVersion"])

    def _stream(self, path: str, rv: str) -> Iterator[JSON]:
        sep = "&" if "?" in path else "?"
        with self._get(
            f"{path}{sep}watch=1&allowWatchBookmarks=true&resourceVersion={rv}&timeoutSeconds=60", timeout=90
        ) as r:
            for line in r:
                if self._stop.is_set():
                    return
                if line.strip():
                    yield json.loads(line)

    def _run_watch(self, kind: str, path: str) -> None:
        rv = ""
        while not self._stop.is_set():
            try:
                if not rv:
                    items, rv = self._list(path)
                    self._relisted(kind, items)
                for ev in self._stream(path, rv):
                    if ev.get("type") == "ERROR":
                        if (ev.get("object") or {}).get("code") == 410:
                            self.gone[kind] += 1
                        rv = ""
                        break
                    obj = ev.get("object") or {}
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    if ev.get("type") != "BOOKMARK":
                        self._handle(kind, ev["type"], obj)
            except urllib.error.HTTPError as e:
                if e.code == 410:  # the watch request itself refused: too old a resourceVersion
                    self.gone[kind] += 1
                rv = ""
                self.watch_restarts[kind] += 1
                self._stop.wait(0.5)
            except (OSError, ValueError, KeyError):
                # re-watch from the last resourceVersion, as a reflector does: after a compaction that is
                # where 410 Gone shows (then we relist and diff)
                self.watch_restarts[kind] += 1
                self._stop.wait(0.5)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Checker:
        ns = self.namespace
        watches = {
            "nodes": "/api/v1/nodes",
            "pods": f"/api/v1/namespaces/{ns}/pods",
            "events": f"/api/v1/namespaces/{ns}/events?fieldSelector=reason%3DFailedScheduling",
            "preempted": f"/api/v1/namespaces/{ns}/events?fieldSelector=reason%3DPreempted",
        }
        for kind, path in watches.items():
            t = threading.Thread(
                target=self._run_watch, args=(kind, path), name=f"checker-{kind}", daemon=True
            )
            t.start()
            self._threads.append(t)
        t = threading.Thread(target=self._lost_loop, name="checker-lost", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()

    # ------------------------------------------------------------------ bookkeeping
    def _relisted(self, kind: str, items: list[JSON]) -> None:
        with self.lock:
            if kind == "nodes":
                names = {n["metadata"]["name"] for n in items}
                for gone in set(self.nodes) - names:
                    del self.nodes[gone]
                for n in items:
                    self.nodes[n["metadata"]["name"]] = n
            elif kind == "pods":
                uids = {p["metadata"]["uid"] for p in items}
                for uid, rec in self.pods.items():
                    if uid not in uids:
                        rec.deleted = True
                for p in items:
                    self._pod(p)
            else:
                for e in items:
                    self._event(kind, e)

    def _handle(self, kind: str, typ: str, obj: JSON) -> None:
        with self.lock:
            if kind == "nodes":
                name = obj["metadata"]["name"]
                if typ == "DELETED":
                    self.nodes.pop(name, None)
                else:
                    self.nodes[name] = obj
                    if typ == "ADDED":  # a node created again under a name that still has bound pods
                        self._check_node(name, time.monotonic())
            elif kind == "pods":
                if typ == "DELETED":
                    rec = self.pods.get(obj["metadata"]["uid"])
                    if rec is not None:
                        rec.deleted = True
                    return
                self._pod(obj)
            else:
                self._event(kind, obj)

    def _event(self, kind: str, e: JSON) -> None:
        uid = (e.get("involvedObject") or e.get("regarding") or {}).get("uid")
        if kind == "preempted":
            self.preempted.add(str(uid))
            m = PREEMPTED_BY.search(str(e.get("message") or e.get("note") or ""))
            if m and uid:
                self.preemptions.append(Preemption(str(uid), m.group(1), m.group(2), time.monotonic()))
            return
        self.failed_scheduling.add(str(uid))
        rec = self.pods.get(uid or "")
        if rec is not None and rec.attempted is None:
            rec.attempted = time.monotonic()

    def _pod(self, p: JSON) -> None:
        meta, spec, status = p["metadata"], p.get("spec") or {}, p.get("status") or {}
        uid = meta["uid"]
        rec = self.pods.get(uid)
        if rec is None:
            rec = self.pods[uid] = PodRecord(
                key=f"{meta['namespace']}/{meta['name']}",
                created=time.monotonic(),
                requests=pod_requests(spec),
            )
        rec.last = p
        rec.terminal = status.get("phase") in ("Succeeded", "Failed")
        rec.priority = int(spec.get("priority") or 0)
        if status.get("nominatedNodeName"):
            rec.nominated = str(status["nominatedNodeName"])
        if meta.get("deletionTimestamp"):
            rec.deleted = rec.deleted or False  # still holds its node until DELETED, as the scheduler's cache
        scheduled = [c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"]
        if scheduled and rec.attempted is None:
            rec.attempted = time.monotonic()
        if scheduled and scheduled[0].get("status") == "False" and rec.unschedulable_seen is None:
            rec.unschedulable_seen = time.monotonic()
        node = spec.get("nodeName") or ""
        if not node or (rec.binds and rec.binds[-1] == node):
            return
        now = time.monotonic()
        rec.binds.append(node)
        rec.bind_times.append(now)
        self.bind_log.append(now)
        if rec.attempted is None:
            rec.attempted = now
        if len(rec.binds) > 1:
            self.violations.append(Violation("double-bind", rec.key, f"uid {uid} bound to {rec.binds}", now))
        n = self.nodes.get(node)
        if n is None:
            return  # bound to a node the checker does not know (deleted meanwhile): nothing to overcommit
        why = misfit(p, n)
        if why:
            self.violations.append(Violation("misfit", rec.key, f"on {node}: {why}", now))
        self._check_node(node, now)

    def usage(self, node: str) -> dict[str, int]:
        used = {"cpu": 0, "memory": 0, "pods": 0}
        for rec in self.pods.values():
            if rec.binds and rec.binds[-1] == node and not rec.deleted and not rec.terminal:
                for k in used:
                    used[k] += rec.requests[k]
        return used

    def _check_node(self, node: str, now: float) -> None:
        alloc = ((self.nodes[node].get("status") or {}).get("allocatable")) or {}
        used = self.usage(node)
        for k, v in used.items():
            if k in alloc and v > _q(alloc[k], milli=(k == "cpu")):
                self.violations.append(
                    Violation("overcommit", node, f"{k}: requested {v} > allocatable {alloc[k]}", now)
                )

    def _lost_loop(self) -> None:
        while not self._stop.wait(1.0):
            self.check_lost(time.monotonic())

    def check_lost(self, now: float, final: bool = False) -> None:
        with self.lock:
            for uid, rec in self.pods.items():
                if rec.deleted or rec.binds or rec.attempted is not None or uid in self._lost_reported:
                    continue
                if (rec.last.get("spec") or {}).get("schedulerName") not in (None, "", SCHEDULER_NAME):
                    continue
                if final or now - rec.created > self.lost_after:
                    self._lost_reported.add(uid)
                    self.violations.append(
                        Violation(
                            "lost", rec.key, f"pending {now - rec.created:.0f}s without an attempt", now
                        )
                    )

    def check_preemptions(self, final: bool = False) -> None:
        """Judge every preemption seen: the victim's priority below the preemptor's (at once); with
        ``final``, the preemptor bound, nominated or deleted."""
        with self.lock:
            for pr in self.preemptions:
                victim, preemptor = self.pods.get(pr.victim), self.pods.get(pr.preemptor)
                if victim is None or preemptor is None:
                    if final and (pr.victim, pr.preemptor) not in self._judged:
                        self._judged.add((pr.victim, pr.preemptor))
                        self.preemptors_unseen += preemptor is None
                    continue
                key = (pr.victim, pr.preemptor)
                if key not in self._judged and victim.priority >= preemptor.priority:
                    self.violations.append(
                        Violation(
                            "preemption",
                            victim.key,
                            f"priority {victim.priority} preempted on {pr.node} by {preemptor.key} of "
                            f"priority {preemptor.priority}",
                            pr.at,
                        )
                    )
                    self._judged.add(key)
                if not final or key in self._judged:
                    continue
                self._judged.add(key)
                if not (preemptor.binds or preemptor.nominated or preemptor.deleted):
                    self.violations.append(
                        Violation(
                            "preemption",
                            victim.key,
                            f"preempted on {pr.node} for {preemptor.key}, which was never bound, "
                            "nominated or deleted",
                            pr.at,
                        )
                    )

    def judged_preemptions(self) -> int:
        with self.lock:
            return sum(1 for pr in self.preemptions if pr.victim in self.pods and pr.preemptor in self.pods)

    # ------------------------------------------------------------------ figures
    def binds_since(self, t: float) -> float | None:
        with self.lock:
            later = [b for b in self.bind_log if b >= t]
        return min(later) if later else None

    def live_pods(self) -> int:
        with self.lock:
            return sum(1 for r in self.pods.values() if not r.deleted)

    def _probes(self) -> list[PodRecord]:
        return [
            r
            for r in self.pods.values()
            if not r.deleted and ((r.last.get("metadata") or {}).get("labels") or {}).get("chaos") == "probe"
        ]

    def probes_bound(self) -> int:
        with self.lock:
            return sum(1 for r in self._probes() if r.binds)

    def unbound_probes(self) -> list[tuple[str, str]]:
        """(pod, its PodScheduled message) of every probe pod not bound."""
        with self.lock:
            out = []
            for r in self._probes():
                if r.binds:
                    continue
                conds = (r.last.get("status") or {}).get("conditions") or []
                msg = next(
                    (str(c.get("message")) for c in conds if c.get("type") == "PodScheduled"), "no attempt"
                )
                out.append((r.key, msg))
            return out

    def pending_count(self) -> int:
        with self.lock:
            return sum(1 for r in self.pods.values() if not r.deleted and not r.binds)

    def silent_pending(self, now: float, grace: float = 10.0) -> int:
        """Pods still pending that the scheduler marked PodScheduled=False at least ``grace`` seconds ago
        but that got no FailedScheduling event: a user running `kubectl describe pod` would see no reason.
        A scheduler whose event recorder died shows here while its binds and status writes go on. Under
        injected API faults an event may also be dropped after its retries, as kube-scheduler's are."""
        with self.lock:
            return sum(
                1
                for uid, r in self.pods.items()
                if not r.deleted
                and not r.binds
                and r.unschedulable_seen is not None
                and now - r.unschedulable_seen >= grace
                and uid not in self.failed_scheduling
            )

    def pending_reasons(self) -> dict[str, int]:
        """The PodScheduled messages of the pods still pending (shortened), with counts."""
        out: dict[str, int] = {}
        with self.lock:
            for r in self.pods.values():
                if r.deleted or r.binds:
                    continue
                conds = (r.last.get("status") or {}).get("conditions") or []
                msg = next(
                    (
                        str(c.get("message") or c.get("reason"))
                        for c in conds
                        if c.get("type") == "PodScheduled"
                    ),
                    "no PodScheduled condition",
                )
                msg = msg[:90]
                out[msg] = out.get(msg, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def summary(self) -> dict[str, int]:
        with self.lock:
            kinds = [v.kind for v in self.violations]
            return {
                "pods": len(self.pods),
                "bound": sum(1 for r in self.pods.values() if r.binds),
                "pending": sum(1 for r in self.pods.values() if not r.deleted and not r.binds),
                "pending_without_event": self.silent_pending(time.monotonic()),
                "lost": kinds.count("lost"),
                "overcommitted": len({v.subject for v in self.violations if v.kind == "overcommit"}),
                "double_binds": kinds.count("double-bind"),
                "misfits": kinds.count("misfit"),
                "preempted": len(self.preempted),
                "preemption_violations": kinds.count("preemption"),
            }


SCHEDULER_NAME = "chaos-scheduler"
