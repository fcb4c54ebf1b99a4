"""NetworkTraffic: prefer nodes that send less network traffic, as Prometheus measures it.

The one plugin here that does network I/O in the scheduling cycle (plugins are otherwise pure): PreScore
queries Prometheus's HTTP API with ``urllib.request``, bounded by ``timeoutSeconds``, at most once per
``cacheSeconds`` (the result is shared by every pod scheduled meanwhile; time is ``handle.now()``).

Behaviour
---------
- PreScore: get the traffic of every node (cached, see below) and keep it in the cycle state. If
  Prometheus is unreachable, too slow, or answers an error, PreScore returns **Skip**: the framework
  leaves NetworkTraffic out of this pod's scoring and the other plugins place the pod (kube's runtime
  fails the pod on a Score Error, so Skip is how "no data" keeps pods flowing). A warning is logged at
  most once per ``WARN_INTERVAL`` seconds, and the failure is remembered for ``cacheSeconds`` (at least
  ``FAILURE_HOLD_MIN``, 5 s, even with caching disabled) so a dead Prometheus costs one timeout per
  interval, not one per pod. ``timeoutSeconds`` bounds the whole fetch, answer included: a Prometheus
  that trickles its answer is cut off at the deadline like one that never answers.
- Score: the node's traffic in bytes (the query's value), or ``UNKNOWN`` (-1) for a node the query
  returned nothing for.
- NormalizeScore: min-max scaling, reversed: the busiest node gets 0, the quietest 100
  (``100 * (max - v) / (max - min)``), all 100 when every known node has the same traffic; a node
  without data gets 50, neither preferred nor avoided.

Enabled only at ``score``, the plugin still works: Score fetches (through the same cache) on first use
in the cycle, and without data scores every node 0 — the same for all, so it changes nothing. Enabling
it at ``preScore`` too (or in ``multiPoint``) is better: a failure then removes it from scoring.

The query
---------
By default one query per cycle gives every node's traffic::

    sum by (<nodeLabel>) (sum_over_time(node_network_transmit_bytes_total{device="<networkInterface>"}[<N>m]))

where N is ``timeRangeInMinutes``. Each sample's node is the value of its ``nodeLabel`` label (default
``instance``, which kube-prometheus sets to the node name for node-exporter); a value ``host:port`` whose
``host`` is a node name maps too. Samples for unknown names are ignored; several samples for one node are
added up. Note ``sum_over_time`` of a counter grows with the counter's absolute value (the node's
traffic since boot, summed over the samples in the range), as the upstream scheduler-plugins
NetworkTraffic does; for the *current* rate, give a query such as
``sum by (instance) (rate(node_network_transmit_bytes_total{device="{interface}"}[{range}]))``.

``query`` replaces the default with a template; ``{interface}`` becomes ``networkInterface`` and
``{range}`` the range (``2m``). A template that also contains ``{node}`` is run once per node (the node's
name in place of ``{node}``; the node's value is the sum of the result's samples), which costs one
request per node per ``cacheSeconds``, all within one ``timeoutSeconds`` budget.

Args (``pluginConfig[].args``)::

    prometheusAddress: http://prometheus.monitoring:9090   # required
    networkInterface: eth0
    query: ""                  # a PromQL template; empty for the default above
    timeRangeInMinutes: 2
    timeoutSeconds: 1          # for the whole PreScore fetch
    nodeLabel: instance        # the series label that names the node (aggregate queries)
    cacheSeconds: 5            # how long a result (or a failure) is reused; 0 disables caching

Extension points: PreScore, Score (with NormalizeScore).
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import ClusterEventWithHint
from pyscheduler.framework.interfaces import MAX_NODE_SCORE, Handle, NodeScoreList
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod
from pyscheduler.plugins.examples.network_traffic.prometheus import (
    PrometheusClient,
    PrometheusError,
    Sample,
)

NAME = "NetworkTraffic"
STATE_KEY = f"PreScore{NAME}"
UNKNOWN = -1
WARN_INTERVAL = 60.0
FAILURE_HOLD_MIN = 5.0  # seconds a failure is remembered even when cacheSeconds is shorter

DEFAULT_QUERY = 'sum by ({node_label}) (sum_over_time(node_network_transmit_bytes_total{{device="{{interface}}"}}[{{range}}]))'
NODE_PLACEHOLDER = "{node}"

log = structlog.get_logger("pyscheduler.plugins.network_traffic")


class QueryClient(Protocol):
    def query(self, promql: str, timeout: float) -> list[Sample]: ...


@dataclass(frozen=True)
class NetworkTrafficArgs:
    prometheus_address: str = ""
    network_interface: str = "eth0"
    query: str = ""
    time_range_in_minutes: int = 2
    timeout_seconds: float = 1.0
    node_label: str = "instance"
    cache_seconds: float = 5.0

    def validate(self, path: str) -> None:
        if not self.prometheus_address:
            raise ArgsError(f"{path}.prometheusAddress", "required (the Prometheus server's URL)")
        u = urllib.parse.urlsplit(self.prometheus_address)
        if u.scheme not in ("http", "https") or not u.netloc:
            raise ArgsError(
                f"{path}.prometheusAddress", f"must be an http or https URL, got {self.prometheus_address!r}"
            )
        if not self.network_interface:
            raise ArgsError(f"{path}.networkInterface", "must not be empty")
        if self.time_range_in_minutes < 1:
            raise ArgsError(
                f"{path}.timeRangeInMinutes", f"must be at least 1, got {self.time_range_in_minutes}"
            )
        if self.timeout_seconds <= 0:
            raise ArgsError(f"{path}.timeoutSeconds", f"must be greater than 0, got {self.timeout_seconds:g}")
        if self.cache_seconds < 0:
            raise ArgsError(f"{path}.cacheSeconds", f"must not be negative, got {self.cache_seconds:g}")
        if not self.query and not self.node_label:
            raise ArgsError(f"{path}.nodeLabel", "must not be empty")

    def promql(self) -> str:
        """The query template with ``{interface}`` and ``{range}`` filled in (``{node}`` left)."""
        template = self.query or DEFAULT_QUERY.format(node_label=self.node_label)
        return template.replace("{interface}", self.network_interface).replace(
            "{range}", f"{self.time_range_in_minutes}m"
        )

    def per_node(self) -> bool:
        return NODE_PLACEHOLDER in self.query


class _Traffic:
    """What PreScore found: node name -> bytes (nodes without data are absent)."""

    __slots__ = ("bytes",)

    def __init__(self, by_node: dict[str, float]) -> None:
        self.bytes = by_node

    def clone(self) -> _Traffic:
        return self  # read-only


class NetworkTraffic:
    name = NAME

    def __init__(self, args: NetworkTrafficArgs, handle: Handle, client: QueryClient | None = None) -> None:
        self.args = args
        self._handle = handle
        self._client: QueryClient = client or PrometheusClient(args.prometheus_address)
        self._promql = args.promql()
        self._per_node = args.per_node()
        self.log: Any = log
        self._lock = threading.Lock()
        self._cached: dict[str, float | None] = {}  # None: asked, no data (per-node mode)
        self._cached_at: float | None = None
        self._complete = False  # aggregate mode: the cache holds the whole answer
        self._failed_at: float | None = None
        self._last_warning: float | None = None
        self._failures = 0
        self.queries = 0  # requests sent to Prometheus (tests and debugging)

    # ------------------------------------------------------------------------------ extension points
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        traffic = self._traffic([n.name for n in nodes])
        if traffic is None:
            return Status.skip(NAME)
        state.write(STATE_KEY, _Traffic(traffic))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        t = state.get(STATE_KEY)
        if not isinstance(t, _Traffic):
            # Enabled at Score without PreScore: fetch through the cache once for this cycle.
            names = [n.name for n in self._handle.snapshot.list()] if self._per_node else [node_info.name]
            got = self._traffic(names)
            t = _Traffic(got if got is not None else {})
            state.write(STATE_KEY, t)
        v = t.bytes.get(node_info.name)
        return (UNKNOWN if v is None else int(v)), None

    def score_extensions(self) -> NetworkTraffic:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: NodeScoreList) -> Status | None:
        known = [s.score for s in scores if s.score != UNKNOWN]
        if not known:
            for s in scores:
                s.score = 0
            return None
        hi, lo = max(known), min(known)
        for s in scores:
            if s.score == UNKNOWN:
                s.score = MAX_NODE_SCORE // 2
            elif hi == lo:
                s.score = MAX_NODE_SCORE
            else:
                s.score = MAX_NODE_SCORE * (hi - s.score) // (hi - lo)
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return []  # a scoring plugin never rejects a pod

    # ------------------------------------------------------------------------------ fetching
    def _traffic(self, names: Iterable[str]) -> dict[str, float] | None:
        """Bytes per node (cached), or None when Prometheus could not be asked."""
        now = self._handle.now()
        ttl = self.args.cache_seconds
        with self._lock:
            if self._failed_at is not None and now - self._failed_at < max(ttl, FAILURE_HOLD_MIN):
                return None
            if self._cached_at is None or now - self._cached_at >= ttl:
                self._cached, self._cached_at, self._complete = {}, None, False
            if not self._per_node and self._complete:
                return _known(self._cached)
            missing = [n for n in names if n not in self._cached] if self._per_node else []
        try:
            if self._per_node:
                got = self._query_each(missing)
            else:
                got = self._query_all()
        except PrometheusError as e:
            self._failed(now, str(e))
            return None
        with self._lock:
            self._failed_at = None
            if self._cached_at is None:
                self._cached_at = now
            self._cached.update(got)
            self._complete = not self._per_node
            return _known(self._cached)

    def _query_all(self) -> dict[str, float | None]:
        self.queries += 1
        samples = self._client.query(self._promql, self.args.timeout_seconds)
        names = {ni.name for ni in self._handle.snapshot.list()}
        out: dict[str, float | None] = {}
        for s in samples:
            node = node_of(s.labels.get(self.args.node_label, ""), names)
            if node:
                out[node] = (out.get(node) or 0.0) + s.value
        return out

    def _query_each(self, names: Sequence[str]) -> dict[str, float | None]:
        deadline = self._handle.now() + self.args.timeout_seconds
        out: dict[str, float | None] = {}
        for name in names:
            left = deadline - self._handle.now()
            if left <= 0:
                raise PrometheusError(f"timed out after {self.args.timeout_seconds:g}s querying per node")
            self.queries += 1
            samples = self._client.query(self._promql.replace(NODE_PLACEHOLDER, name), left)
            out[name] = sum(s.value for s in samples) if samples else None
        return out

    def _failed(self, now: float, error: str) -> None:
        with self._lock:
            self._failed_at = now
            self._cached, self._cached_at, self._complete = {}, None, False
            self._failures += 1
            if self._last_warning is not None and now - self._last_warning < WARN_INTERVAL:
                return
            failures, self._failures = self._failures, 0
            self._last_warning = now
        self.log.warning(
            "prometheus query failed; scoring without NetworkTraffic",
            prometheus=self.args.prometheus_address,
            error=error,
            failures=failures,
        )


def _known(cached: dict[str, float | None]) -> dict[str, float]:
    return {k: v for k, v in cached.items() if v is not None}


def node_of(value: str, names: set[str]) -> str:
    """The node a label value names: the value itself, or the host of ``host:port``; "" if none."""
    if value in names:
        return value
    host, sep, port = value.rpartition(":")
    if sep and port.isdigit():
        host = host.strip("[]")
        if host in names:
            return host
    return ""


def new(args: NetworkTrafficArgs | None, handle: Handle) -> NetworkTraffic:
    if args is None:
        raise ValueError("NetworkTraffic needs args with a prometheusAddress")
    return NetworkTraffic(args, handle)


PLUGIN = PluginSpec(
    NAME, new, NetworkTrafficArgs, "prefers nodes with less network traffic, as measured by Prometheus"
)
