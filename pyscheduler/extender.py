"""HTTP scheduler extenders, speaking kube-scheduler's wire format (k8s.io/kube-scheduler/extender/v1).

Design
------
``HTTPExtender`` is built from one ``extenders:`` entry of the KubeSchedulerConfiguration
(``pyscheduler.config.types.Extender``) and satisfies the ``Extender`` protocol that
``pyscheduler.scheduler`` calls:

- ``filter(pod, nodes)`` POSTs ``ExtenderArgs`` to ``<urlPrefix>/<filterVerb>`` and reads an
  ``ExtenderFilterResult``; ``prioritize`` reads a ``HostPriorityList`` (scores 0..10, which the scheduler
  multiplies by ``weight`` and by MaxNodeScore/MaxExtenderPriority = 100/10); ``bind`` POSTs
  ``ExtenderBindingArgs`` and reads an ``ExtenderBindingResult``; ``process_preemption`` speaks
  ``ExtenderPreemptionArgs``/``ExtenderPreemptionResult`` for a preemption plugin that wants it.
- Field names are Go's (no JSON tags in the v1 types): ``Pod``, ``Nodes``, ``NodeNames``,
  ``FailedNodes``, ``FailedAndUnresolvableNodes``, ``Error``, ``Host``, ``Score``, ``PodName``...
  Responses are matched case-insensitively, as Go's ``encoding/json`` does.
- ``nodeCacheCapable``: the extender keeps its own node cache; only ``NodeNames`` is sent (``Nodes`` is
  null), else only ``Nodes`` (``NodeNames`` is null).
- ``managedResources``: the extender is asked only about pods that request (or limit) one of them, in
  containers or init containers (``is_interested``). Bind goes to the binder extender only for such pods.
- An empty verb means "not supported": ``filter`` keeps every node, ``prioritize`` gives 0 with weight 0,
  without any HTTP call.

Transport: one ``urllib3.PoolManager`` per extender (keep-alive, thread-safe: the binding threads and
the scheduling thread share it), no retries, ``httpTimeout`` (default 5 s) as the deadline of each
call. TLS follows kube's ``makeTransport``: the scheme of ``urlPrefix`` decides whether TLS is used;
``tlsConfig`` gives the CA (``caData`` wins over ``caFile``; only those roots are trusted), a client
certificate, ``serverName`` (SNI and the name checked) and ``insecure``; ``enableHTTPS`` without a CA
means *no verification*, as in kube. ``insecure`` together with a CA is a configuration error, as in
client-go. Proxies from the environment are not used.

Errors: every failure (unreachable, timeout, non-200, invalid JSON, a response of the wrong shape, a
non-empty ``Error`` field) raises ``ExtenderError`` whose message names the extender (its
``urlPrefix``, which is also its ``name`` as in kube) and the verb -- except the text of an ``Error``
field, which is passed on verbatim as kube does (so FailedScheduling events read the same). The scheduler then skips an
``ignorable`` extender, or fails the cycle with an Error status and retries the pod with backoff;
prioritize errors are only logged (kube ignores them too); ``bind`` returns an Error ``Status`` and
never raises. All the extender's network I/O is in this module.

Deviations from kube, on purpose: a non-cache-capable extender that answers with ``NodeNames`` only is
understood (kube would drop every node); a filter answer naming a node that was not sent is an error
for both kinds of extender; a filter answer that is a JSON object without any known field is an error
(kube would read it as "no node fits"); transport and decoding errors carry the extender's name and
verb (kube's are bare Go errors).

Limitation: the scheduler keeps slim records (``framework.types.Pod``/``Node``), not the API's JSON, so
``pod_to_json``/``node_to_json`` rebuild a v1 Pod/Node from them. They carry metadata (name,
namespace, uid, resourceVersion, labels, annotations, creationTimestamp, ownerReferences), the pod's
spec as scheduling sees it (containers and init containers with image, ports, restartPolicy and
resources, nodeSelector, affinity, tolerations, topologySpreadConstraints, volumes, schedulingGates,
schedulerName, priority, preemptionPolicy, overhead, hostNetwork, nodeName) and status (phase,
nominatedNodeName, the PodScheduled condition); for nodes: labels, annotations, taints,
unschedulable, allocatable (also sent as capacity) and images. Not carried: env, commands, probes,
security contexts, node conditions and addresses, and cpu/memory *limits* (records keep requests,
with limits-only resources defaulted into requests as the API server does); extended resources and
hugepages appear in both requests and limits, since the API requires them equal. Quantities are
canonical (``500m``, ``2``, ``1Gi``).
"""

from __future__ import annotations

import dataclasses
import os
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import orjson
import structlog
import urllib3

from pyscheduler.config.types import DEFAULT_EXTENDER_HTTP_TIMEOUT, Extender, ExtenderTLSConfig
from pyscheduler.framework.helpers.timefmt import rfc3339, rfc3339_micro
from pyscheduler.framework.resource import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resource
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Container, Node, NodeInfo, Pod, Toleration

log = structlog.get_logger("pyscheduler.extender")

MAX_EXTENDER_PRIORITY = 10  # extenderv1.MaxExtenderPriority
MIN_EXTENDER_PRIORITY = 0
_SNIPPET = 200  # bytes of a bad response body quoted in errors

JSON = dict[str, Any]


class ExtenderError(RuntimeError):
    """A call to an extender failed. The message names the extender and the verb, except for an error
    the extender itself reported in its ``Error`` field (``verbatim``), passed on as kube does."""

    def __init__(self, extender: str, verb: str, message: str, *, verbatim: bool = False) -> None:
        super().__init__(message if verbatim else f"extender {extender}: {verb}: {message}")
        self.extender = extender
        self.verb = verb


class ExtenderConfigError(ValueError):
    """The extender's configuration cannot make a working client (bad TLS material)."""


@dataclasses.dataclass
class Victims:
    """The pods preemption would evict on one node (extenderv1.Victims)."""

    pods: list[Pod]
    num_pdb_violations: int = 0


# --------------------------------------------------------------------------- records -> v1 JSON


def _stamp(seconds: float) -> str:
    return rfc3339(seconds) if seconds == int(seconds) else rfc3339_micro(seconds)


_BINARY_SUFFIXES = (
    ("Ei", 1 << 60),
    ("Pi", 1 << 50),
    ("Ti", 1 << 40),
    ("Gi", 1 << 30),
    ("Mi", 1 << 20),
    ("Ki", 1 << 10),
)


def format_bytes(n: int) -> str:
    """A byte count as a canonical quantity: the largest binary suffix that divides it exactly."""
    if n:
        for suffix, size in _BINARY_SUFFIXES:
            if n % size == 0:
                return f"{n // size}{suffix}"
    return str(n)


def format_milli(m: int) -> str:
    """Millicores as a canonical quantity: ``2`` for 2000, ``500m`` for 500."""
    return str(m // 1000) if m % 1000 == 0 else f"{m}m"


def resource_list(r: Resource, *, always: Iterable[str] = ()) -> dict[str, str]:
    """A Resource as a v1 ResourceList; names in ``always`` appear even when zero."""
    keep = set(always)
    out: dict[str, str] = {}
    if r.milli_cpu or CPU in keep:
        out[CPU] = format_milli(r.milli_cpu)
    if r.memory or MEMORY in keep:
        out[MEMORY] = format_bytes(r.memory)
    if r.ephemeral_storage or EPHEMERAL_STORAGE in keep:
        out[EPHEMERAL_STORAGE] = format_bytes(r.ephemeral_storage)
    if r.allowed_pod_number or PODS in keep:
        out[PODS] = str(r.allowed_pod_number)
    for name, v in r.scalar.items():
        out[name] = format_bytes(v) if name.startswith("hugepages-") else str(v)
    return out


def _container_json(c: Container) -> JSON:
    d: JSON = {"name": c.name}
    if c.image:
        d["image"] = c.image
    if c.ports:
        ports = []
        for p in c.ports:
            pj: JSON = {"containerPort": p.container_port}
            if p.host_port:
                pj["hostPort"] = p.host_port
            pj["protocol"] = p.protocol or "TCP"
            if p.host_ip:
                pj["hostIP"] = p.host_ip
            ports.append(pj)
        d["ports"] = ports
    requests = resource_list(c.requests)
    resources: JSON = {}
    if requests:
        resources["requests"] = requests
        # Extended resources and hugepages cannot be overcommitted: the API requires limits == requests.
        limits = {k: v for k, v in requests.items() if k not in (CPU, MEMORY, EPHEMERAL_STORAGE)}
        if limits:
            resources["limits"] = limits
    d["resources"] = resources
    if c.restart_policy:
        d["restartPolicy"] = c.restart_policy
    return d


def pod_to_json(pod: Pod) -> JSON:
    """A v1 Pod rebuilt from the scheduler's record (see the module docstring for what is left out)."""
    return {  # no TypeMeta, as kube sends it
        "metadata": _pod_meta_json(pod),
        "spec": _pod_spec_json(pod),
        "status": _pod_status_json(pod),
    }


def _pod_meta_json(pod: Pod) -> JSON:
    meta: JSON = {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}
    if pod.resource_version:
        meta["resourceVersion"] = pod.resource_version
    if pod.creation_timestamp:
        meta["creationTimestamp"] = _stamp(pod.creation_timestamp)
    if pod.labels:
        meta["labels"] = dict(pod.labels)
    if pod.annotations:
        meta["annotations"] = dict(pod.annotations)
    if pod.owner_references:
        meta["ownerReferences"] = [
            {"kind": r.kind, "name": r.name, "uid": r.uid, **({"controller": True} if r.controller else {})}
            for r in pod.owner_references
        ]
    return meta


def _pod_spec_json(pod: Pod) -> JSON:
    spec: JSON = {}
    if pod.init_containers:
        spec["initContainers"] = [_container_json(c) for c in pod.init_containers]
    spec["containers"] = [_container_json(c) for c in pod.containers]
    if pod.node_selector:
        spec["nodeSelector"] = dict(pod.node_selector)
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    if pod.host_network:
        spec["hostNetwork"] = True
    if pod.affinity:
        spec["affinity"] = pod.affinity
    spec["schedulerName"] = pod.scheduler_name
    if pod.tolerations:
        spec["tolerations"] = [_toleration_json(t) for t in pod.tolerations]
    spec["priority"] = pod.priority
    spec["preemptionPolicy"] = pod.preemption_policy
    if pod.overhead is not None:
        spec["overhead"] = resource_list(pod.overhead)
    if pod.topology_spread_constraints:
        spec["topologySpreadConstraints"] = list(pod.topology_spread_constraints)
    if pod.volumes:
        spec["volumes"] = list(pod.volumes)
    if pod.scheduling_gates:
        spec["schedulingGates"] = [{"name": g} for g in pod.scheduling_gates]
    return spec


def _toleration_json(t: Toleration) -> JSON:
    tj: JSON = {}
    if t.key:
        tj["key"] = t.key
    tj["operator"] = t.operator
    if t.value:
        tj["value"] = t.value
    if t.effect:
        tj["effect"] = t.effect
    if t.toleration_seconds is not None:
        tj["tolerationSeconds"] = t.toleration_seconds
    return tj


def _pod_status_json(pod: Pod) -> JSON:
    status: JSON = {"phase": pod.phase}
    if pod.scheduled_condition is not None:
        st, reason, message = pod.scheduled_condition
        cond: JSON = {"type": "PodScheduled", "status": st}
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        status["conditions"] = [cond]
    if pod.nominated_node_name:
        status["nominatedNodeName"] = pod.nominated_node_name
    return status


def node_to_json(node: Node) -> JSON:
    """A v1 Node rebuilt from the scheduler's record (allocatable is also sent as capacity)."""
    meta: JSON = {"name": node.name}
    if node.uid:
        meta["uid"] = node.uid
    if node.resource_version:
        meta["resourceVersion"] = node.resource_version
    if node.labels:
        meta["labels"] = dict(node.labels)
    if node.annotations:
        meta["annotations"] = dict(node.annotations)
    spec: JSON = {}
    if node.taints:
        spec["taints"] = [
            {"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect} for t in node.taints
        ]
    if node.unschedulable:
        spec["unschedulable"] = True
    alloc = resource_list(node.allocatable, always=(CPU, MEMORY, PODS))
    status: JSON = {"capacity": alloc, "allocatable": dict(alloc)}
    if node.images:
        status["images"] = [{"names": list(i.names), "sizeBytes": i.size_bytes} for i in node.images]
    return {"metadata": meta, "spec": spec, "status": status}  # no TypeMeta, as kube sends it


# --------------------------------------------------------------------------------- transport


def _pool_kwargs(cfg: Extender) -> dict[str, Any]:
    """urllib3 PoolManager arguments for kube's makeTransport semantics (see the module docstring)."""
    tls = cfg.tls_config or ExtenderTLSConfig()
    has_ca = bool(tls.ca_file or tls.ca_data)
    insecure = tls.insecure or (cfg.enable_https and not has_ca)
    if tls.insecure and has_ca:
        raise ExtenderConfigError(
            f"extender {cfg.url_prefix}: tlsConfig: a root certificate (caFile/caData) cannot be used with insecure"
        )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = False  # urllib3 matches the name itself (against serverName when given)
    kwargs: dict[str, Any] = {"ssl_context": ctx}
    if insecure:
        ctx.verify_mode = ssl.CERT_NONE
        kwargs["cert_reqs"] = "CERT_NONE"
        kwargs["assert_hostname"] = False
    else:
        kwargs["cert_reqs"] = "CERT_REQUIRED"
        try:
            if tls.ca_data:
                ctx.load_verify_locations(cadata=tls.ca_data.decode())
            elif tls.ca_file:
                ctx.load_verify_locations(cafile=tls.ca_file)
            else:
                ctx.load_default_certs()
        except (OSError, ssl.SSLError, UnicodeDecodeError) as e:
            raise ExtenderConfigError(f"extender {cfg.url_prefix}: tlsConfig: cannot load the CA: {e}") from e
    cert_given = bool(tls.cert_data or tls.cert_file)
    key_given = bool(tls.key_data or tls.key_file)
    if cert_given != key_given:
        raise ExtenderConfigError(
            f"extender {cfg.url_prefix}: tlsConfig: a client certificate needs both a certificate and a key"
        )
    if cert_given:
        try:
            _load_client_cert(ctx, tls)
        except (OSError, ssl.SSLError) as e:
            raise ExtenderConfigError(
                f"extender {cfg.url_prefix}: tlsConfig: cannot load the client certificate: {e}"
            ) from e
    if tls.server_name:
        kwargs["server_hostname"] = tls.server_name
    return kwargs


def _load_client_cert(ctx: ssl.SSLContext, tls: ExtenderTLSConfig) -> None:
    if not (tls.cert_data or tls.key_data):
        ctx.load_cert_chain(tls.cert_file, tls.key_file)
        return
    # The ssl module reads certificates from files only: stage the PEM data in a private directory.
    with tempfile.TemporaryDirectory(prefix="pyscheduler-extender-") as d:
        cert = os.path.join(d, "cert.pem")
        key = os.path.join(d, "key.pem")
        for path, data, fallback in ((cert, tls.cert_data, tls.cert_file), (key, tls.key_data, tls.key_file)):
            if data:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            else:
                with open(fallback, "rb") as src, open(path, "wb") as dst:
                    dst.write(src.read())
        ctx.load_cert_chain(cert, key)


# ------------------------------------------------------------------------------ response shape


def _fold(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Keys lower-cased (Go decodes struct fields case-insensitively); an exact-case key wins."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        lk = k.lower()
        if lk not in out or k != lk:
            out[lk] = v
    return out


class _Shape(ValueError):
    pass


def _str_map(v: Any, field: str) -> dict[str, str]:
    if v is None:
        return {}
    if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
        raise _Shape(f"{field} must be an object of node name to reason, got {_describe(v)}")
    return dict(v)


def _str_list(v: Any, field: str) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _Shape(f"{field} must be a list of node names, got {_describe(v)}")
    return list(v)


def _describe(v: Any) -> str:
    text = orjson.dumps(v).decode() if _jsonable(v) else repr(v)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(v).__name__} {text}"


def _jsonable(v: Any) -> bool:
    try:
        orjson.dumps(v)
    except TypeError:
        return False
    return True


def _error_field(res: Mapping[str, Any]) -> str:
    err = res.get("error")
    if err is None:
        return ""
    if not isinstance(err, str):
        raise _Shape(f"Error must be a string, got {_describe(err)}")
    return err


def _score(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise _Shape(f"Score must be an integer, got {_describe(v)}")
    if isinstance(v, float):
        if not v.is_integer():
            raise _Shape(f"Score must be an integer, got {v}")
        return int(v)
    return v


_FILTER_FIELDS = ("nodes", "nodenames", "failednodes", "failedandunresolvablenodes", "error")


# ------------------------------------------------------------------------------------ extender


class HTTPExtender:
    """One configured extender (see the module docstring)."""

    def __init__(self, config: Extender, *, pool: urllib3.PoolManager | None = None) -> None:
        self.config = config
        self.name = config.url_prefix  # kube identifies an extender by its URL prefix
        self.url_prefix = config.url_prefix.rstrip("/")
        self.timeout = config.http_timeout if config.http_timeout > 0 else DEFAULT_EXTENDER_HTTP_TIMEOUT
        self.weight = config.weight
        self.node_cache_capable = config.node_cache_capable
        self.ignorable = config.ignorable
        self.managed_resources = frozenset(r.name for r in config.managed_resources)
        uses_tls = self.url_prefix.lower().startswith("https:") or config.tls_config is not None
        self._pool = pool or urllib3.PoolManager(
            num_pools=4, maxsize=16, block=False, retries=False, **(_pool_kwargs(config) if uses_tls else {})
        )
        # Node JSON is encoded once per node version (records are replaced, never mutated, on update).
        self._node_bytes: dict[str, tuple[Node, bytes]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HTTPExtender({self.name!r})"

    # --------------------------------------------------------------------------- protocol
    def is_ignorable(self) -> bool:
        return self.ignorable

    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    def is_filter(self) -> bool:
        return bool(self.config.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.config.prioritize_verb)

    def supports_preemption(self) -> bool:
        return bool(self.config.preempt_verb)

    def is_interested(self, pod: Pod) -> bool:
        """True without managedResources; else only for pods whose containers or init containers
        request or limit one of them (limits-only resources are in the records' requests)."""
        if not self.managed_resources:
            return True
        return any(
            name in self.managed_resources
            for c in (*pod.containers, *pod.init_containers)
            for name in c.requests.scalar
        )

    def filter(
        self, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[list[NodeInfo], dict[str, str], dict[str, str]]:
        """(nodes kept, failed node -> reason, failed-and-unresolvable node -> reason)."""
        verb = self.config.filter_verb
        if not verb:
            return list(nodes), {}, {}
        by_name = {ni.name: ni for ni in nodes}
        raw = self._send(verb, self._args(pod, nodes))
        try:
            if not isinstance(raw, dict):
                raise _Shape(f"expected an ExtenderFilterResult object, got {_describe(raw)}")
            res = _fold(raw)
            if not any(k in res for k in _FILTER_FIELDS):
                raise _Shape(
                    "the object has none of Nodes, NodeNames, FailedNodes, FailedAndUnresolvableNodes, Error "
                    f"(got {_describe(raw)})"
                )
            err = _error_field(res)
            failed = _str_map(res.get("failednodes"), "FailedNodes")
            unresolvable = _str_map(res.get("failedandunresolvablenodes"), "FailedAndUnresolvableNodes")
            names = self._result_names(res)
        except _Shape as e:
            raise ExtenderError(self.name, verb, f"unexpected response: {e}") from None
        if err:
            log.info("extender reported an error", extender=self.name, verb=verb, error=err)
            raise ExtenderError(self.name, verb, err, verbatim=True)
        kept: list[NodeInfo] = []
        for n in names or ():
            ni = by_name.get(n)
            if ni is None:
                raise ExtenderError(
                    self.name, verb, f"claims a filtered node {n!r} which is not found in the input node list"
                )
            kept.append(ni)
        # kube: FailedAndUnresolvableNodes takes precedence over FailedNodes for a node in both.
        failed = {k: v for k, v in failed.items() if k not in unresolvable}
        log.debug(
            "extender filter",
            extender=self.name,
            pod=pod.key,
            nodes=len(nodes),
            kept=len(kept),
            failed=len(failed),
            unresolvable=len(unresolvable),
        )
        return kept, failed, unresolvable

    def _result_names(self, res: Mapping[str, Any]) -> list[str] | None:
        node_names = res.get("nodenames")
        nodes = res.get("nodes")
        if self.node_cache_capable and node_names is not None:
            return _str_list(node_names, "NodeNames")
        if nodes is not None:
            if not isinstance(nodes, dict):
                raise _Shape(f"Nodes must be a NodeList object, got {_describe(nodes)}")
            items = _fold(nodes).get("items") or []
            if not isinstance(items, list):
                raise _Shape(f"Nodes.items must be a list, got {_describe(items)}")
            out = []
            for item in items:
                meta = item.get("metadata") if isinstance(item, dict) else None
                name = meta.get("name") if isinstance(meta, dict) else None
                if not isinstance(name, str):
                    raise _Shape(f"Nodes.items[] must be Nodes with metadata.name, got {_describe(item)}")
                out.append(name)
            return out
        if node_names is not None:  # not cache capable, but answered with names: understood anyway
            return _str_list(node_names, "NodeNames")
        return None

    def prioritize(self, pod: Pod, nodes: list[NodeInfo]) -> tuple[dict[str, int], int]:
        """(node -> score 0..10 as the extender gave it, weight). The scheduler scales by weight * 10."""
        verb = self.config.prioritize_verb
        if not verb:
            return {ni.name: 0 for ni in nodes}, 0
        raw = self._send(verb, self._args(pod, nodes))
        scores: dict[str, int] = {}
        try:
            if raw is None:
                raw = []
            if not isinstance(raw, list):
                raise _Shape(f"expected a HostPriorityList (a list of {{Host, Score}}), got {_describe(raw)}")
            for item in raw:
                if not isinstance(item, dict):
                    raise _Shape(
                        f"HostPriorityList items must be {{Host, Score}} objects, got {_describe(item)}"
                    )
                hp = _fold(item)
                host = hp.get("host")
                if not isinstance(host, str):
                    raise _Shape(f"Host must be a node name, got {_describe(host)}")
                scores[host] = scores.get(host, 0) + _score(hp.get("score", 0))
        except _Shape as e:
            raise ExtenderError(self.name, verb, f"unexpected response: {e}") from None
        return scores, self.weight

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        """Delegate the Binding; None on success, an Error status (never an exception) otherwise."""
        verb = self.config.bind_verb
        if not verb:
            return Status.as_error(ExtenderError(self.name, "bind", "unexpected empty bindVerb in extender"))
        args = {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node_name}
        try:
            raw = self._send(verb, orjson.dumps(args))
            if raw is not None and not isinstance(raw, dict):
                raise ExtenderError(
                    self.name,
                    verb,
                    f"unexpected response: expected an ExtenderBindingResult, got {_describe(raw)}",
                )
            try:
                err = _error_field(_fold(raw or {}))
            except _Shape as e:
                raise ExtenderError(self.name, verb, f"unexpected response: {e}") from None
            if err:
                raise ExtenderError(self.name, verb, err, verbatim=True)
        except ExtenderError as e:
            log.warning("extender bind failed", extender=self.name, pod=pod.key, node=node_name, error=str(e))
            return Status.as_error(e)
        except Exception as e:  # never let a bug here kill the binding thread's bookkeeping
            return Status.as_error(ExtenderError(self.name, verb, repr(e)))
        return None

    def process_preemption(
        self,
        pod: Pod,
        node_to_victims: Mapping[str, Victims],
        node_info: Callable[[str], NodeInfo | None],
    ) -> dict[str, Victims]:
        """Let the extender trim preemption candidates (ExtenderPreemptionArgs/Result). ``node_info``
        looks a node up in the cycle's snapshot; victims the extender names are found there by UID."""
        verb = self.config.preempt_verb
        if not verb:
            raise ExtenderError(self.name, "preempt", "preempt verb is not defined for extender")
        meta = {
            n: {"Pods": [{"UID": p.uid} for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
            for n, v in node_to_victims.items()
        }
        args: JSON = {"Pod": pod_to_json(pod)}
        if self.node_cache_capable:
            args["NodeNameToVictims"] = None
            args["NodeNameToMetaVictims"] = meta
        else:
            args["NodeNameToVictims"] = {
                n: {"Pods": [pod_to_json(p) for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
                for n, v in node_to_victims.items()
            }
            args["NodeNameToMetaVictims"] = None
        raw = self._send(verb, orjson.dumps(args))
        out: dict[str, Victims] = {}
        try:
            if not isinstance(raw, dict):
                raise _Shape(f"expected an ExtenderPreemptionResult object, got {_describe(raw)}")
            result = _fold(raw).get("nodenametometavictims") or {}
            if not isinstance(result, dict):
                raise _Shape(f"NodeNameToMetaVictims must be an object, got {_describe(result)}")
            for node_name, mv in result.items():
                if not isinstance(mv, dict):
                    raise _Shape(
                        f"NodeNameToMetaVictims[{node_name!r}] must be an object, got {_describe(mv)}"
                    )
                mvf = _fold(mv)
                ni = node_info(node_name)
                if ni is None:
                    raise ExtenderError(self.name, verb, f"node {node_name!r} not found")
                on_node = {pi.pod.uid: pi.pod for pi in ni.pods}
                pods = []
                for mp in mvf.get("pods") or ():
                    uid = _fold(mp).get("uid") if isinstance(mp, dict) else None
                    if uid not in on_node:
                        raise ExtenderError(
                            self.name,
                            verb,
                            f"claims to preempt pod (UID: {uid}) on node: {node_name}, but the pod is not found "
                            "on that node",
                        )
                    pods.append(on_node[uid])
                pdb = mvf.get("numpdbviolations") or 0
                if isinstance(pdb, bool) or not isinstance(pdb, int):
                    raise _Shape(f"NumPDBViolations must be an integer, got {_describe(pdb)}")
                out[node_name] = Victims(pods, pdb)
        except _Shape as e:
            raise ExtenderError(self.name, verb, f"unexpected response: {e}") from None
        return out

    # --------------------------------------------------------------------------- wire
    def _node_json(self, node: Node) -> bytes:
        hit = self._node_bytes.get(node.name)
        if hit is not None and hit[0] is node:
            return hit[1]
        b = orjson.dumps(node_to_json(node))
        self._node_bytes[node.name] = (node, b)
        return b

    def _args(self, pod: Pod, nodes: Sequence[NodeInfo]) -> bytes:
        """ExtenderArgs, assembled from pre-encoded pieces (node JSON is cached per node version)."""
        pod_b = orjson.dumps(pod_to_json(pod))
        if self.node_cache_capable:
            names = orjson.dumps([ni.name for ni in nodes])
            return b'{"Pod":' + pod_b + b',"Nodes":null,"NodeNames":' + names + b"}"
        with self._lock:
            if len(self._node_bytes) > 2 * len(nodes) + 1024:
                self._node_bytes.clear()  # forget deleted nodes now and then
            items = b",".join(self._node_json(ni.node) for ni in nodes if ni.node is not None)
        return b'{"Pod":' + pod_b + b',"Nodes":{"metadata":{},"items":[' + items + b']},"NodeNames":null}'

    def _send(self, verb: str, body: bytes) -> Any:
        """POST ``body`` to <urlPrefix>/<verb>; the decoded JSON answer, or ExtenderError."""
        url = f"{self.url_prefix}/{verb}"
        start = time.monotonic()
        try:
            resp = self._pool.request(
                "POST",
                url,
                body=body,
                headers={"Content-Type": "application/json", "Accept": "application/json"},
                timeout=urllib3.Timeout(total=self.timeout),
                retries=False,
                redirect=False,
                preload_content=True,
            )
        except urllib3.exceptions.NewConnectionError as e:  # before TimeoutError: urllib3 makes it a subclass
            raise ExtenderError(self.name, verb, f"cannot reach {url}: {_reason(e)}") from None
        except urllib3.exceptions.TimeoutError:
            raise ExtenderError(
                self.name, verb, f"no answer from {url} within {self.timeout:g}s (timed out)"
            ) from None
        except urllib3.exceptions.SSLError as e:
            raise ExtenderError(self.name, verb, f"TLS error talking to {url}: {_reason(e)}") from None
        except urllib3.exceptions.HTTPError as e:
            raise ExtenderError(self.name, verb, f"cannot reach {url}: {_reason(e)}") from None
        elapsed = time.monotonic() - start
        data = resp.data or b""
        if resp.status != 200:
            raise ExtenderError(
                self.name, verb, f"{url} answered HTTP {resp.status}: {_snippet(data) or '(empty body)'}"
            )
        if elapsed > self.timeout:  # a server trickling bytes can outlast the per-read timeout
            raise ExtenderError(self.name, verb, f"no answer from {url} within {self.timeout:g}s (timed out)")
        try:
            return orjson.loads(data) if data.strip() else None
        except orjson.JSONDecodeError as e:
            raise ExtenderError(
                self.name, verb, f"invalid JSON from {url}: {e} (body starts: {_snippet(data)!r})"
            ) from None

    def close(self) -> None:
        try:
            self._pool.clear()
        except (urllib3.exceptions.HTTPError, OSError) as e:  # closing idle sockets; nothing to retry
            log.debug("closing the extender's connection pool failed", extender=self.name, error=str(e))


def _reason(e: BaseException) -> str:
    reason = getattr(e, "reason", None)
    text = str(reason or e)
    # urllib3 prefixes "HTTPConnection(host='h', port=1): "; the URL is in our message already.
    if text.startswith(("HTTPConnection(", "HTTPSConnection(")) and "): " in text:
        text = text.split("): ", 1)[1]
    return text


def _snippet(data: bytes) -> str:
    text = data[:_SNIPPET].decode("utf-8", errors="replace").strip()
    return text + ("..." if len(data) > _SNIPPET else "")


# ------------------------------------------------------------------------------------ builders


def build_extenders(configs: Iterable[Extender]) -> list[HTTPExtender]:
    """kube's buildExtenders: one client per entry, ignorable extenders moved after the others."""
    built = [HTTPExtender(c) for c in configs]
    return [e for e in built if not e.ignorable] + [e for e in built if e.ignorable]


def ignored_extended_resources(configs: Iterable[Extender]) -> tuple[str, ...]:
    """Managed resources marked ``ignoredByScheduler``: kube adds them to NodeResourcesFit's
    ``ignoredResources`` in every profile, so Filter leaves them to the extender."""
    return tuple(r.name for c in configs for r in c.managed_resources if r.ignored_by_scheduler)
