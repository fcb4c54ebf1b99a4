"""Pod signatures for opportunistic batching (kube-scheduler 1.36's ``kube-scheduler/framework/signers.go``).

A plugin that runs at PreFilter, Filter, PreScore or Score says which parts of a pod its answers depend on
with ``sign_pod`` (see ``framework.interfaces.SignPlugin``): a list of fragments ``(key, value)``, or a
rejection when it cannot sign the pod at all. Two pods whose fragments are equal get the same Filter and
Score answers on the same nodes, so the framework (``framework.batch``) may reuse the first one's sorted
scores for the second. The keys are kube's names; several plugins may give the same key (their values are
then equal). Values are hashable Python values built so that two values are equal exactly when kube's JSON
of the same fragment would be byte-equal for the pods the scheduler sees (lists kube sorts are sorted
here, maps are sorted item tuples).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from typing import Any

from pyscheduler.framework.dra import extended_resource_class
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod

#: a pod's signature fragment: (kube's key, a hashable value)
Fragment = tuple[str, Hashable]

IMAGE_NAMES = "v1.Pod.Spec.CanonicalImageNames()"
LABELS = "v1.Pod.Labels"
NODE_NAME = "v1.Pod.Spec.NodeName"
NODE_AFFINITY = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR = "v1.Pod.Spec.Affinity.NodeSelector"
HOST_PORTS = "v1.Pod.Spec.HostPorts()"
RESOURCES = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
SCHEDULER_NAME = "v1.Pod.Spec.SchedulerName"
TOLERATIONS = "v1.Pod.Spec.Tolerations"
VOLUMES = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
FEATURES = "v1.Pod.Spec.RequiredFeatures()"


def _canonical(value: Any) -> str:
    """JSON with sorted keys: equal for equal API objects whatever their key order."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def mapping(m: Mapping[str, str] | None) -> Hashable:
    """A string map (labels, nodeSelector): kube marshals Go maps with sorted keys."""
    return tuple(sorted(m.items())) if m else ()


def host_ports(pod: Pod) -> Hashable:
    """kube's HostPortsSigner: the distinct non-zero host ports of the containers and init containers,
    sorted (protocol and hostIP are not part of it)."""
    ports = {p.host_port for c in (*pod.containers, *pod.init_containers) for p in c.ports if p.host_port}
    return tuple(sorted(ports))


def tolerations(pod: Pod) -> Hashable:
    """kube's TolerationsSigner: the tolerations sorted by (key, value)."""
    return tuple(
        sorted(
            ((t.key, t.operator, t.value, t.effect, t.toleration_seconds) for t in pod.tolerations),
            key=lambda t: (t[0], t[2]),
        )
    )


def volumes(pod: Pod) -> Hashable:
    """kube's VolumesSigner: every volume source but configMap and secret (they do not change where a
    pod fits and are specific to each pod), as JSON, sorted; the volume's name is left out."""
    out = []
    for vol in pod.volumes:
        if "configMap" in vol or "secret" in vol:
            continue
        out.append(_canonical({k: v for k, v in vol.items() if k != "name"}))
    return tuple(sorted(out))


def _requirements(reqs: Any) -> tuple[str, ...]:
    out = []
    for r in reqs or ():
        r = dict(r)
        if r.get("values") is not None:
            r["values"] = sorted(r["values"])
        out.append(_canonical(r))
    return tuple(sorted(out))


def _term(t: Mapping[str, Any] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    t = t or {}
    return (_requirements(t.get("matchExpressions")), _requirements(t.get("matchFields")))


def node_affinity(pod: Pod) -> Hashable:
    """kube's NodeAffinitySigner: the required terms and the preferred (weight, term) pairs, each
    term's requirements with sorted values, every list sorted; None without node affinity."""
    na = (pod.affinity or {}).get("nodeAffinity")
    if na is None:
        return None
    required = (na.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    req = tuple(sorted(repr(_term(t)) for t in required or ()))
    pref = tuple(
        sorted(
            repr((int(p.get("weight", 0)), _term(p.get("preference"))))
            for p in na.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        )
    )
    return (req, pref)


def resources(pod: Pod) -> Hashable:
    """kube's computePodResourceRequest (NodeResourcesFit, BalancedAllocation): the pod's effective
    requests, overhead included."""
    r = pod.requests
    return (r.milli_cpu, r.memory, r.ephemeral_storage, tuple(sorted(r.scalar.items())))


def sign_resources(pod: Pod, handle: Any) -> tuple[list[Fragment], Status | None]:
    """NodeResourcesFit's and BalancedAllocation's SignPod: the pod's requests; with DRAExtendedResource
    (``handle.extra["feature_gates"]``, on if absent) a pod requesting an extended resource some
    DeviceClass backs is refused, since where it fits depends on the devices DRA would allocate."""
    scalar = [r for r, q in pod.requests.scalar.items() if q]
    if scalar and handle is not None:
        extra = getattr(handle, "extra", None)
        gates = extra.get("feature_gates") if isinstance(extra, Mapping) else None
        on = bool(gates.get("DRAExtendedResource", True)) if isinstance(gates, Mapping) else True
        try:
            classes = list(handle.objects.list("DeviceClass")) if on else []
        except AssertionError:  # a handle without a cluster object store (plugin tests)
            classes = []
        if classes and any(extended_resource_class(classes, r) is not None for r in scalar):
            return [], Status.unschedulable(
                "signature disabled when dra extended resources are used in the cluster"
            )
    return [(RESOURCES, resources(pod))], None


def combine(scheduler_name: str, fragments: list[list[Fragment]]) -> tuple[Fragment, ...]:
    """The signature of a pod from its plugins' fragments: one value per key (kube keeps the last it
    is given; plugins that share a key give equal values), with the scheduler name."""
    sig: dict[str, Hashable] = {SCHEDULER_NAME: scheduler_name}
    for frs in fragments:
        for key, value in frs:
            sig[key] = value
    return tuple(sorted(sig.items(), key=lambda kv: kv[0]))
