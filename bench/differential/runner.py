"""One pass of a scenario with one scheduler: build the cluster state, create the pods one at a time and
record what happened to each; the pyscheduler pass reconciles to kube-scheduler's state pod by pod."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.differential.api import Api, allocated_devices, name_of, namespace_of, object_key
from bench.differential.common import (
    DECISION_TIMEOUT,
    EVAL_KINDS,
    EVENT_WAIT,
    FINALIZED_KINDS,
    GATED_SETTLE,
    JSON,
    KINDS,
    PREEMPT_SETTLE,
    PREEMPT_TIMEOUT,
    SCHEDULER_NAME,
    RunError,
    wait_for,
)
from bench.differential.devicestatus import DeviceStatusReporter
from bench.differential.records import Outcome
from bench.differential.schedulers import KubeScheduler, PyScheduler
from bench.scenarios import Scenario


@dataclass
class PodRun:
    outcome: Outcome
    admitted: JSON  # the pod as the API server stored it (priority, overhead filled in)
    pre_nodes: list[JSON] = field(default_factory=list)
    pre_pods: list[JSON] = field(default_factory=list)
    pre_objects: dict[str, list[JSON]] = field(default_factory=dict)
    post: dict[str, str] = field(default_factory=dict)  # bound pods after the decision (ns/name -> node)


@dataclass
class Pass:
    batch: dict[str, Outcome] = field(default_factory=dict)
    batch_post: dict[str, str] = field(default_factory=dict)
    batch_late: dict[str, Outcome] = field(default_factory=dict)  # pending batch pods after node_updates
    pods: list[PodRun] = field(default_factory=list)
    scores: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # kube's logged scores


class ScenarioRunner:
    def __init__(self, api: Api, sc: Scenario, log: Callable[[str], None] = lambda _: None) -> None:
        self.api = api
        self.sc = sc
        self.log = log
        self.specs: dict[str, JSON] = {}  # ns/name -> pod JSON as we create it (for reconciling)

    # ---------------------------------------------------------------------------- objects
    def _fill(self, obj: JSON) -> JSON:
        o = copy.deepcopy(obj)
        md = o.setdefault("metadata", {})
        md.pop("uid", None)
        kind = o.get("kind")
        if kind in (
            "Pod",
            "PersistentVolumeClaim",
            "PodDisruptionBudget",
            "Service",
            "PodGroup",
            "ResourceClaim",
            "ResourceClaimTemplate",
        ) and not md.get("namespace"):
            md["namespace"] = self.sc.namespace
        if kind == "PersistentVolume":
            ref = o.get("spec", {}).get("claimRef")
            if ref is not None and not ref.get("namespace"):
                ref["namespace"] = self.sc.namespace
        if kind == "Pod":
            o.pop("status", None)
            o["spec"]["schedulerName"] = SCHEDULER_NAME
        if kind == "Node":
            o["status"].setdefault(
                "conditions",
                [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kwok"}],
            )
        return o

    def namespaces(self) -> list[str]:
        names = {self.sc.namespace}
        names |= {name_of(o) for o in self.sc.objects if o.get("kind") == "Namespace"}
        names |= {
            namespace_of(p) for p in (*self.sc.existing, *self.sc.pods, *self.sc.batch) if namespace_of(p)
        }
        return sorted(names)

    def objects(self) -> list[JSON]:
        order = list(KINDS)
        objs = [self._fill(o) for o in self.sc.objects]
        return sorted(objs, key=lambda o: order.index(o["kind"]))

    def setup(self) -> None:
        ns_obj = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": self.sc.namespace, "labels": dict(self.sc.namespace_labels)},
        }
        self.api.create(ns_obj)
        for o in self.objects():
            self.api.create(o)
        for n in self.sc.nodes:
            self.api.create(self._fill(n))
        for p in self.sc.existing:
            self.create_pod(p)
        for p in self.sc.existing:
            if p.get("status"):
                self.write_pod_status(p)
        for p in self.sc.batch:
            self.create_pod(p)

    def create_pod(self, p: JSON, node: str = "") -> JSON:
        body = self._fill(p)
        if node:
            body["spec"]["nodeName"] = node
        self.specs.setdefault(object_key(body), self._fill(p))
        out: JSON = self.api.create(body)
        return out

    def write_pod_status(self, p: JSON, timeout: float = 30.0) -> None:
        """Write an existing pod's scenario ``status`` (in-place resize: containerStatuses[].resources and
        allocatedResources, status.resources, the PodResizePending condition) through the status
        subresource, as its kubelet would. Waits first for KWOK to have started the pod (podIP set), so
        that KWOK's own status does not overwrite it; container statuses are merged by name."""
        path = self.api.path_of(self._fill(p))
        want = p["status"]

        def started() -> JSON | None:
            cur = self.api.get(path)
            return cur if cur is not None and (cur.get("status") or {}).get("podIP") else None

        cur = wait_for(started, timeout)
        if cur is None:
            raise RunError(f"{path}: KWOK did not start the pod within {timeout:.0f}s")
        for attempt in range(5):
            st = cur.setdefault("status", {})
            for key in ("containerStatuses", "initContainerStatuses"):
                by_name = {c["name"]: c for c in st.get(key) or ()}
                for c in want.get(key) or ():
                    if c["name"] in by_name:
                        by_name[c["name"]].update(copy.deepcopy(c))
                    else:
                        raise RunError(f"{path}: no {key} entry named {c['name']!r} to resize")
            for key in ("resources", "allocatedResources"):
                if key in want:
                    st[key] = copy.deepcopy(want[key])
            types = {c.get("type") for c in want.get("conditions") or ()}
            st["conditions"] = [c for c in st.get("conditions") or () if c.get("type") not in types] + [
                copy.deepcopy(c) for c in want.get("conditions") or ()
            ]
            code, out = self.api.cluster.request("PUT", path + "/status", cur)
            if code == 200:
                return
            if code != 409 or attempt == 4:
                raise RunError(f"PUT {path}/status: HTTP {code}: {str(out)[:400]}")
            cur = self.api.call("GET", path)

    def teardown(self) -> None:
        api = self.api
        paths = []
        for ns in self.namespaces():
            for p in api.items(f"/api/v1/namespaces/{ns}/pods"):
                api.delete({"kind": "Pod", **p}, grace0=True)
                paths.append(api.path_of({"kind": "Pod", **p}))
        api.wait_gone(paths)
        paths = []
        for o in reversed(self.objects()):
            if o["kind"] == "Namespace":
                continue
            api.delete(o)
            paths.append(api.path_of(o))
        # Claims the scheduler or the PV controller touched may carry finalizers again: drop them. The
        # same for ResourceClaims the resourceclaim controller or the scheduler made for the pods.
        for ns in self.namespaces():
            for c in api.items(KINDS["ResourceClaim"][0].format(ns=ns)):
                api.delete({"kind": "ResourceClaim", **c})
                paths.append(api.path_of({"kind": "ResourceClaim", **c}))
            for c in api.items(f"/api/v1/namespaces/{ns}/persistentvolumeclaims"):
                api.delete({"kind": "PersistentVolumeClaim", **c})
                paths.append(api.path_of({"kind": "PersistentVolumeClaim", **c}))
        for n in self.sc.nodes:
            api.call("DELETE", f"/api/v1/nodes/{name_of(n)}", ok=(200, 202, 404))
            paths.append(f"/api/v1/nodes/{name_of(n)}")
        try:
            api.wait_gone(paths, timeout=10)
        except RunError:
            for path in paths:  # finalizers re-added by a controller in the meantime
                obj = api.get(path)
                if obj is not None and obj.get("kind") in FINALIZED_KINDS:
                    api.delete(obj)
            api.wait_gone(paths)

    # ---------------------------------------------------------------------------- decisions
    def await_decision(
        self,
        ns: str,
        name: str,
        may_preempt: bool,
        timeout: float = DECISION_TIMEOUT,
        start: float | None = None,
    ) -> Outcome:
        """Poll the pod until it is bound or reported unschedulable; ``start`` is when it was created."""
        start = time.monotonic() if start is None else start
        path = f"/api/v1/namespaces/{ns}/pods/{name}"
        first_pending: float | None = None

        def decided() -> Outcome | None:
            nonlocal first_pending
            p = self.api.get(path)
            now = time.monotonic()
            done = _bound_or_deleted(p, now - start)
            if done is not None or p is None:
                return done
            st = p.get("status") or {}
            nominated = st.get("nominatedNodeName") or ""
            cond = next((c for c in st.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
            if cond is not None and cond.get("status") == "False":
                if first_pending is None:
                    first_pending = now
                reason = str(cond.get("reason") or "")
                if reason == "SchedulingGated":
                    settle = GATED_SETTLE
                elif nominated:
                    settle = PREEMPT_TIMEOUT
                elif may_preempt:
                    settle = PREEMPT_SETTLE
                else:
                    settle = 0.0
                # a DRA scenario may ask for more: a pod whose claim PostFilter deallocates is first
                # reported unschedulable, then retried once the claim update arrives
                settle = max(settle, float(getattr(self.sc, "settle", 0.0)))
                if now - first_pending >= settle:
                    out = Outcome(
                        reason=reason,
                        condition_message=str(cond.get("message") or ""),
                        nominated=nominated,
                        seconds=now - start,
                    )
                    out.message = out.condition_message
                    if reason != "SchedulingGated":
                        note = self.failed_scheduling_note(ns, p["metadata"]["uid"])
                        if note:
                            out.message = note
                    return out
            elif now - start > timeout:
                return Outcome(
                    reason="Timeout",
                    nominated=nominated,
                    seconds=now - start,
                    message="no decision within the timeout",
                )
            return None

        return _decided(wait_for(decided))

    def failed_scheduling_note(self, ns: str, uid: str) -> str:
        q = f"?fieldSelector=involvedObject.uid%3D{uid},reason%3DFailedScheduling"

        def latest() -> str | None:
            items = self.api.items(f"/api/v1/namespaces/{ns}/events{q}")
            if not items:
                return None
            items.sort(key=lambda e: e.get("eventTime") or e.get("lastTimestamp") or "")
            return str(items[-1].get("message") or "")

        return wait_for(latest, EVENT_WAIT, interval=0.1) or ""

    def pod_events(self, ns: str, uid: str) -> list[str]:
        """The pod's events, "Reason: message" in the order they first happened (repeats once), once the
        Scheduled event is there (or after EVENT_WAIT): what a user reading `kubectl describe` sees."""
        q = f"?fieldSelector=involvedObject.uid%3D{uid}"

        def listed() -> list[JSON] | None:
            items = self.api.items(f"/api/v1/namespaces/{ns}/events{q}")
            return items if any(e.get("reason") == "Scheduled" for e in items) else None

        items = wait_for(listed, EVENT_WAIT, interval=0.1) or self.api.items(
            f"/api/v1/namespaces/{ns}/events{q}"
        )
        items.sort(key=lambda e: e.get("eventTime") or e.get("firstTimestamp") or "")
        out: list[str] = []
        for e in items:
            line = f"{e.get('reason', '')}: {e.get('message') or e.get('note') or ''}"
            if line not in out:
                out.append(line)
        return out

    def pod_claims(self, pod: Mapping[str, Any]) -> dict[str, str]:
        """The pod's claims: its name for each in spec.resourceClaims (and "extended-resources" for the
        claim the scheduler made for extended resources backed by DRA) -> the ResourceClaim's name."""
        spec, st = pod.get("spec") or {}, pod.get("status") or {}
        generated = {c.get("name"): c.get("resourceClaimName") for c in st.get("resourceClaimStatuses") or ()}
        out: dict[str, str] = {}
        for rc in spec.get("resourceClaims") or ():
            claim = rc.get("resourceClaimName") or generated.get(rc.get("name")) or ""
            out[str(rc.get("name"))] = str(claim)
        ext = (st.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
        if ext:
            out["extended-resources"] = str(ext)
        return out

    def claim_devices(self, ns: str, name: str, timeout: float = 5.0) -> dict[str, list[str]]:
        """A bound pod's claims -> the devices allocated to each (the scheduler writes the allocation in
        PreBind, before the binding: it is there once the pod is bound)."""
        pod = self.api.get(f"/api/v1/namespaces/{ns}/pods/{name}")
        if pod is None:
            return {}
        out: dict[str, list[str]] = {}
        for ref, claim_name in self.pod_claims(pod).items():
            path = f"{KINDS['ResourceClaim'][0].format(ns=ns)}/{claim_name}"
            # the claim once allocated (or gone: None); still unallocated at the timeout: as it is then
            claim = self._claim_until(path, allocated=True, timeout=timeout) if claim_name else None
            out[ref] = allocated_devices(claim) if claim is not None else ["<no claim>"]
        return out

    def delete_with_claims(self, key: str, timeout: float = 30.0) -> None:
        """Delete a bound pod and wait until the resourceclaim controller has released its claims
        (deallocated, or deleted if they were made for the pod), so the next pod sees the devices free."""
        ns, name = key.split("/", 1)
        pod = self.api.get(f"/api/v1/namespaces/{ns}/pods/{name}")
        claims = list(self.pod_claims(pod).values()) if pod is not None else []
        self.delete_pod(key)
        deadline = time.monotonic() + timeout
        for claim_name in claims:
            path = f"{KINDS['ResourceClaim'][0].format(ns=ns)}/{claim_name}"
            c = self._claim_until(path, allocated=False, timeout=max(0.0, deadline - time.monotonic()))
            if c is not None and (c.get("status") or {}).get("allocation"):
                raise RunError(f"claim {ns}/{claim_name} still allocated {timeout:.0f}s after {key} went")

    def _claim_until(self, path: str, allocated: bool, timeout: float) -> JSON | None:
        """The claim at ``path`` once it is (or is no longer) allocated, or gone (None); at the timeout, the
        claim as it is then."""

        def reached() -> tuple[JSON | None] | None:
            c = self.api.get(path)
            done = c is None or bool((c.get("status") or {}).get("allocation")) == allocated
            return (c,) if done else None

        got = wait_for(reached, timeout)
        return got[0] if got is not None else self.api.get(path)

    def delete_pod(self, key: str) -> None:
        ns, name = key.split("/", 1)
        path = f"/api/v1/namespaces/{ns}/pods/{name}"
        self.api.call("DELETE", path + "?gracePeriodSeconds=0", ok=(200, 202, 404))
        self.api.wait_gone([path])

    def reconcile(self, target: Mapping[str, str]) -> None:
        """Make the bound pods of the scenario equal ``target`` (kube-scheduler's pass at this point)."""
        current = self.api.bound_pods()
        wrong = [k for k, n in current.items() if target.get(k) != n]
        for k in wrong:
            self.delete_pod(k)
        for k, n in target.items():
            if current.get(k) != n:
                self.create_pod(self.specs[k], node=n)

    # ---------------------------------------------------------------------------- one pass
    def run_pass(self, scheduler: KubeScheduler | PyScheduler, reference: Pass | None) -> Pass:
        result = Pass()
        self.setup()
        reporter = DeviceStatusReporter(
            self.api,
            self.sc.namespace,
            getattr(self.sc, "device_conditions", {}),
            getattr(self.sc, "device_failures", {}),
        )
        scheduler.start()
        try:
            reporter.start()
            for p in self.sc.batch:
                ns, name = namespace_of(self._fill(p)), name_of(p)
                result.batch[name] = self.await_decision(ns, name, may_preempt=True)
            for p in self.sc.batch:  # devices once every batch pod is decided (a later one may preempt)
                o = result.batch[name_of(p)]
                if o.bound:
                    o.devices = self.claim_devices(namespace_of(self._fill(p)), name_of(p))
            if self.sc.node_updates:
                self.update_nodes()
                for name, o in result.batch.items():
                    if not o.bound:
                        result.batch_late[name] = self.await_binding(self.sc.namespace, name)
            for name, o in {**result.batch, **result.batch_late}.items():
                if not o.bound:
                    self.delete_pod(f"{self.sc.namespace}/{name}")
            result.batch_post = self.api.bound_pods()
            if reference is not None and result.batch_post != reference.batch_post:
                self.reconcile(reference.batch_post)
            deletions: Mapping[str, Sequence[str]] = getattr(self.sc, "delete_before", {})
            for i, p in enumerate(self.sc.pods):
                for gone in deletions.get(name_of(p), ()):
                    self.delete_with_claims(f"{self.sc.namespace}/{gone}")
                result.pods.append(self.place(p, keep_state=reference is None))
                if reference is not None and result.pods[-1].post != reference.pods[i].post:
                    self.reconcile(reference.pods[i].post)
        finally:
            reporter.stop()
            scheduler.stop()
        if isinstance(scheduler, KubeScheduler):
            result.scores = scheduler.scores()
        return result

    def update_nodes(self) -> None:
        for u in self.sc.node_updates:
            self.api.call(
                "PATCH",
                f"/api/v1/nodes/{name_of(u)}/status",
                {"status": u["status"]},
                content_type="application/merge-patch+json",
            )

    def await_binding(self, ns: str, name: str, timeout: float = DECISION_TIMEOUT) -> Outcome:
        """Wait for a pod already reported unschedulable to be bound after a cluster change; still
        pending at ``timeout``: its latest PodScheduled condition and FailedScheduling note."""
        start = time.monotonic()
        path = f"/api/v1/namespaces/{ns}/pods/{name}"

        def bound() -> Outcome | None:
            p = self.api.get(path)
            now = time.monotonic()
            done = _bound_or_deleted(p, now - start)
            if done is not None or p is None:
                return done
            if now - start > timeout:
                st = p.get("status") or {}
                cond: dict[str, Any] = next(
                    (c for c in st.get("conditions") or [] if c.get("type") == "PodScheduled"), {}
                )
                out = Outcome(
                    reason=str(cond.get("reason") or "Timeout"),
                    condition_message=str(cond.get("message") or ""),
                    seconds=now - start,
                )
                out.message = self.failed_scheduling_note(ns, p["metadata"]["uid"]) or out.condition_message
                return out
            return None

        return _decided(wait_for(bound))

    def place(self, p: JSON, keep_state: bool) -> PodRun:
        api = self.api
        pre_pods = api.items("/api/v1/pods")
        before = {
            object_key(x): x["spec"].get("nodeName", "")
            for x in pre_pods
            if x["spec"].get("nodeName") and not x["metadata"].get("deletionTimestamp")
        }
        run = PodRun(Outcome(), {})
        if keep_state:
            run.pre_pods = pre_pods
            run.pre_nodes = api.items("/api/v1/nodes")
            run.pre_objects = {kind: api.items(path) for kind, path in EVAL_KINDS.items()}
        created_at = time.monotonic()
        admitted = self.create_pod(p)
        run.admitted = admitted
        ns, name = namespace_of(admitted), name_of(admitted)
        prio = int(admitted["spec"].get("priority") or 0)
        lower = [
            x for x in pre_pods if x["spec"].get("nodeName") and int(x["spec"].get("priority") or 0) < prio
        ]
        may_preempt = bool(lower) and admitted["spec"].get("preemptionPolicy") != "Never"
        out = self.await_decision(ns, name, may_preempt, start=created_at)
        if out.bound:
            out.devices = self.claim_devices(ns, name)
            if getattr(self.sc, "history", False):
                out.history = self.pod_events(ns, admitted["metadata"]["uid"])
        else:
            self.delete_pod(f"{ns}/{name}")
        run.post = api.bound_pods()
        out.victims = sorted(k for k in before if k not in run.post)
        run.outcome = out
        return run


def _bound_or_deleted(pod: JSON | None, seconds: float) -> Outcome | None:
    """The outcome of a pod that is gone or bound; None while it is pending."""
    if pod is None:
        return Outcome(reason="Deleted", seconds=seconds)
    if pod["spec"].get("nodeName"):
        return Outcome(node=pod["spec"]["nodeName"], seconds=seconds)
    return None


def _decided(out: Outcome | None) -> Outcome:
    """``wait_for``'s answer without a timeout: the probe returns its own timeout verdict."""
    assert out is not None
    return out
