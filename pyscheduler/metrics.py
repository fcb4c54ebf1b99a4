"""Prometheus metrics with kube-scheduler 1.36's names, types, labels and buckets, so dashboards and
alerts written for kube-scheduler work unchanged (docs/metrics.md lists them, and what is deliberately
absent).

One ``SchedulerMetrics`` per process owns its own ``CollectorRegistry`` (tests create several). It
implements the observer protocols the framework runtime, the scheduler loop, the queue and the API
client call, as kube-scheduler's ``pkg/scheduler/metrics`` and client-go's ``rest_client_*`` do:

- Per-plugin timings (``scheduler_plugin_execution_duration_seconds``) are taken in the scheduling
  cycles kube samples (10%: ``CycleState.record_plugin_metrics``), and in every binding cycle that
  belongs to one; the other cycles pay one attribute read per extension point.
- ``scheduler_plugin_evaluation_total`` is counted by each ``Framework`` in plain integers (one add per
  plugin per extension point per cycle) and read when /metrics is scraped, not pushed per call.
- Gauges that describe state (``scheduler_cache_size``, ``scheduler_unschedulable_pods``,
  ``scheduler_inflight_events``, ``scheduler_goroutines``) are set by the app's once-a-second flusher,
  as kube-scheduler's own cache dumper and asynchronous recorder do.
"""

from __future__ import annotations

import os
import platform
import random
import resource
import sys
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client import Histogram as _Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pyscheduler import KUBERNETES_VERSION, __version__
from pyscheduler.config.feature_gates import (
    ALL_ALPHA,
    ALL_BETA,
    ALPHA,
    BETA,
    GA,
    KNOWN,
    FeatureGates,
    current,
)
from pyscheduler.framework.status import Code

# kube-scheduler (Go's client library) prints no `<name>_created` series; prometheus_client does unless told.
disable_created_metrics()  # type: ignore[no-untyped-call]

PLUGIN_METRICS_SAMPLE_PERCENT = 10
"""kube-scheduler's pluginMetricsSamplePercent: the share of scheduling cycles whose plugins are timed."""


class Histogram(_Histogram):
    """prometheus_client's Histogram, whose ``observe`` finds the bucket by bisection instead of
    walking the bounds (up to 20 of them) in Python: the same series, the same values. The daemon
    observes a dozen histograms per pod (attempt, extension points, queueing hints...), and on
    the Preemption benchmark's requeues of gated preemptors the walk was most of each observation."""

    def observe(self, amount: float, exemplar: dict[str, str] | None = None) -> None:
        if exemplar:
            super().observe(amount, exemplar)
            return
        self._raise_if_not_observable()  # type: ignore[no-untyped-call]
        self._sum.inc(amount)
        if amount == amount:  # NaN falls in no bucket, as in the walk
            self._buckets[bisect_left(self._upper_bounds, amount)].inc(1)


def _exp_buckets(start: float, factor: float, count: int) -> list[float]:
    """Go's prometheus.ExponentialBuckets, multiplied step by step as Go does (``start * factor**i``
    differs in the last bits, and the ``le`` labels would not be kube's)."""
    out = [start]
    for _ in range(count - 1):
        out.append(out[-1] * factor)
    return out


# client-go's rest_client_* buckets (k8s.io/component-base/metrics/prometheus/restclient)
_REST_LATENCY_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0]
_REST_SIZE_BUCKETS = [64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216]


DELIBERATE_ABSENCES: dict[str, str] = {
    # Names ending in "_" stand for every name with that prefix.
    "go_": "Go runtime figures: pyscheduler is a Python process (its own figures are process_* and python_*)",
    "aggregator_": "the API server library kube-scheduler's secure port is built on; pyscheduler serves plain HTTP",
    "apiserver_": "the API server library kube-scheduler's secure port is built on (audit, envelope "
    "encryption, webhooks, declarative validation)",
    "authenticated_user_requests_total": "delegated authentication of the secure port: pyscheduler's "
    "/metrics is plain HTTP, protected by the network (NetworkPolicy) or a proxy",
    "authentication_attempts_total": "delegated authentication of the secure port (see above)",
    "authentication_duration_seconds": "delegated authentication of the secure port (see above)",
    "authorization_attempts_total": "delegated authorization of the secure port (see above)",
    "authorization_duration_seconds": "delegated authorization of the secure port (see above)",
    "workqueue_": "client-go work queues inside kube-scheduler's API server library and DRA informers; "
    "pyscheduler has no such queues (its own queue is scheduler_pending_pods)",
    "registered_metrics_total": "component-base's metric registry bookkeeping (stability levels)",
    "disabled_metrics_total": "component-base's metric registry bookkeeping (--disabled-metrics)",
    "hidden_metrics_total": "component-base's metric registry bookkeeping (--show-hidden-metrics-for-version)",
    "cardinality_enforcement_unexpected_categorizations_total": "component-base's metric registry bookkeeping",
    "version_info": "compatibility versions of Kubernetes components (--emulated-version); none here",
    "rest_client_exec_plugin_certificate_rotation_age": "client-go's exec credential plugins' certificate "
    "rotation (pyscheduler reads exec credentials through the kubernetes package)",
    "rest_client_exec_plugin_ttl_seconds": "client-go's exec credential plugins (see above)",
    "rest_client_transport_cache_entries": "client-go's TLS transport cache: pyscheduler has one connection pool",
    "rest_client_transport_create_calls_total": "client-go's TLS transport cache (see above)",
    "rest_client_transport_cert_rotation_gc_calls_total": "client-go's TLS transport cache (see above)",
    "scheduler_volume_binder_cache_requests_total": "kube-scheduler 1.36 registers it and never counts anything "
    "in it (nothing in the pinned module increments it; the binder's pod binding cache it counted is gone), so "
    "it never has a series; VolumeBinding's assume cache of PVs and PVCs is counted by neither scheduler",
}
"""kube-scheduler metric names pyscheduler does not expose, each with the reason (docs/metrics.md)."""

NOT_YET_EXPOSED: dict[str, str] = {}
"""kube-scheduler metric names that have a meaning here but are not exposed (yet), each with the reason
(none today; the parity tests accept a name listed here as missing)."""


ASYNC_CALL_POD_STATUS_PATCH = "pod_status_patch"
ASYNC_CALL_POD_BINDING = "pod_binding"
"""kube's API call types (pkg/scheduler/framework/api_calls), the ``call_type`` label of the
scheduler_async_api_call_* and scheduler_pending_async_api_calls series."""


class SchedulerMetrics:
    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        plugin_sample_rate: float = 0.1,
        *,
        feature_gates: FeatureGates | None = None,
    ) -> None:
        """``feature_gates``: what kubernetes_feature_enabled shows (default: the process's gates,
        ``pyscheduler.config.feature_gates.current()``, read at each scrape)."""
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.plugin_sample_rate = plugin_sample_rate
        self._ep_children: dict[tuple[str, Code, str], Any] = {}
        self._plugin_children: dict[tuple[str, str, Code], Any] = {}
        self._hint_children: dict[tuple[str, str, str], Any] = {}
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self._event_children: dict[str, Any] = {}
        self._rest_children: dict[tuple[str, str, str], tuple[Any, Any, Any, Any]] = {}
        self._rate_children: dict[tuple[str, str], Any] = {}
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=r,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=_exp_buckets(0.001, 2, 15),
            registry=r,
        )
        # pod groups (GenericWorkload): kube's names, alpha
        self.pod_group_schedule_attempts = Counter(
            "scheduler_podgroup_schedule_attempts_total",
            "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group could "
            "not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=r,
        )
        self.pod_group_attempt_duration = Histogram(
            "scheduler_podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=_exp_buckets(0.001, 2, 15),
            registry=r,
        )
        self.pod_group_algorithm_duration = Histogram(
            "scheduler_podgroup_scheduling_algorithm_duration_seconds",
            "Pod group scheduling algorithm latency in seconds",
            buckets=_exp_buckets(0.001, 2, 15),
            registry=r,
        )
        # opportunistic batching (OpportunisticBatching, framework/batch.py): kube's names, alpha
        self.batch_attempts = Counter(
            "scheduler_batch_attempts_total",
            "Counts of results when we attempt to use batching.",
            ["profile", "result"],
            registry=r,
        )
        self.batch_cache_flushed = Counter(
            "scheduler_batch_cache_flushed_total",
            "Counts of cache flushes by reason.",
            ["profile", "reason"],
            registry=r,
        )
        self.get_node_hint_duration = Histogram(
            "scheduler_get_node_hint_duration_seconds",
            "Latency for getting a node hint.",
            ["hinted", "profile"],
            buckets=_exp_buckets(0.00001, 2, 12),
            registry=r,
        )
        self.store_schedule_results_duration = Histogram(
            "scheduler_store_schedule_results_duration_seconds",
            "Latency for storing the results of a scheduling cycle for the next batched pod.",
            ["profile"],
            buckets=_exp_buckets(0.00001, 2, 12),
            registry=r,
        )
        self.algorithm_duration = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            buckets=_exp_buckets(0.001, 2, 15),
            registry=r,
        )
        self.event_handling_duration = Histogram(
            "scheduler_event_handling_duration_seconds",
            "Event handling latency in seconds.",
            ["event"],
            buckets=_exp_buckets(0.0001, 2, 12),
            registry=r,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
            "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods; "
            "'gated' is the number of unschedulable pods that are gated.",
            ["queue"],
            registry=r,
        )
        self.inflight_events = Gauge(
            "scheduler_inflight_events",
            "Number of events currently tracked in the scheduling queue.",
            ["event"],
            registry=r,
        )
        self.goroutines = Gauge(
            "scheduler_goroutines",
            "Number of running goroutines split by the work they do such as binding.",
            ["operation"],
            registry=r,
        )
        self.extension_point_duration = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            buckets=_exp_buckets(0.0001, 2, 12),
            registry=r,
        )
        self.plugin_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            buckets=_exp_buckets(0.00001, 1.5, 20),
            registry=r,
        )
        self.hint_duration = Histogram(
            "scheduler_queueing_hint_execution_duration_seconds",
            "Duration for running a queueing hint function of a plugin.",
            ["plugin", "event", "hint"],
            buckets=_exp_buckets(0.00001, 1.5, 20),
            registry=r,
        )
        self.permit_wait_duration = Histogram(
            "scheduler_permit_wait_duration_seconds",
            "Duration of waiting on permit.",
            ["result"],
            buckets=_exp_buckets(0.001, 2, 15),
            registry=r,
        )
        self.sli_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and "
            "might involve multiple scheduling attempts.",
            ["attempts"],
            buckets=_exp_buckets(0.01, 2, 20),
            registry=r,
        )
        self.scheduling_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=_exp_buckets(1, 2, 5),
            registry=r,
        )
        self.scheduled_after_flush = Counter(
            "scheduler_pod_scheduled_after_flush_total",
            "Number of pods that were successfully scheduled after being flushed from unschedulablePods due "
            "to timeout. This metric helps detect potential queueing hint misconfigurations or event handling "
            "issues.",
            registry=r,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts_total",
            "Total preemption attempts in the cluster till now",
            registry=r,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            buckets=_exp_buckets(1, 2, 7),
            registry=r,
        )
        self.preemption_goroutines_duration = Histogram(
            "scheduler_preemption_goroutines_duration_seconds",
            "Duration in seconds for running goroutines for the preemption.",
            ["result"],
            buckets=_exp_buckets(0.01, 2, 20),
            registry=r,
        )
        self.preemption_goroutines_total = Counter(
            "scheduler_preemption_goroutines_execution_total",
            "Number of preemption goroutines executed.",
            ["result"],
            registry=r,
        )
        self.queue_incoming_pods = Counter(
            "scheduler_queue_incoming_pods_total",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            registry=r,
        )
        self.unschedulable_pods = Gauge(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for "
            "all plugins that caused it to not schedule and so this metric have meaning only when broken down "
            "by plugin.",
            ["plugin", "profile"],
            registry=r,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates "
            "master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            ["name"],
            registry=r,
        )
        self.cache_size = Gauge(
            "scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ["type"],
            registry=r,
        )
        # DynamicResources (kube registers these with DRAExtendedResource / DRADeviceBindingConditions on,
        # as they are by default in 1.36)
        self.resourceclaim_creates = Counter(
            "scheduler_resourceclaim_creates_total",
            "Number of ResourceClaims creation requests within scheduler",
            ["status"],
            registry=r,
        )
        self.dra_binding_conditions_allocations = Counter(
            "scheduler_dra_bindingconditions_allocations_total",
            "Number of allocations using devices with BindingConditions, counted per driver per scheduling "
            "attempt",
            ["profile", "driver", "status"],
            registry=r,
        )
        self.dra_binding_conditions_wait = Histogram(
            "scheduler_dra_bindingconditions_wait_duration_seconds",
            "Time in seconds spent waiting for BindingConditions to be satisfied during PreBind.",
            ["profile", "driver", "status"],
            buckets=_exp_buckets(0.1, 2, 14),
            registry=r,
        )
        # kube's asynchronous API dispatcher (SchedulerAsyncAPICalls): here the status patches of the async
        # writer (pyscheduler.client.writer) and the Binding calls of binding cycles; see docs/metrics.md
        self.async_api_call_total = Counter(
            "scheduler_async_api_call_execution_total",
            "Total number of API calls executed by the async dispatcher.",
            ["call_type", "result"],
            registry=r,
        )
        self.async_api_call_duration = Histogram(
            "scheduler_async_api_call_execution_duration_seconds",
            "Duration in seconds for executing API call in the async dispatcher.",
            ["call_type", "result"],
            buckets=_exp_buckets(0.001, 2, 15),
            registry=r,
        )
        self.async_api_pending_calls = Gauge(
            "scheduler_pending_async_api_calls",
            "Number of API calls currently pending in the async queue.",
            ["call_type"],
            registry=r,
        )
        # VolumeBinding's per-stage errors (kube's volumebinding/metrics)
        self.volume_stage_errors = Counter(
            "scheduler_volume_scheduling_stage_error_total",
            "Volume scheduling stage error count",
            ["operation"],
            registry=r,
        )
        # client-go's request metrics (k8s.io/client-go/tools/metrics, registered by component-base)
        self.rest_requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=r,
        )
        self.rest_duration = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=_REST_LATENCY_BUCKETS,
            registry=r,
        )
        self.rest_rate_limiter = Histogram(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=_REST_LATENCY_BUCKETS,
            registry=r,
        )
        self.rest_request_size = Histogram(
            "rest_client_request_size_bytes",
            "Request size in bytes. Broken down by verb and host.",
            ["verb", "host"],
            buckets=_REST_SIZE_BUCKETS,
            registry=r,
        )
        self.rest_response_size = Histogram(
            "rest_client_response_size_bytes",
            "Response size in bytes. Broken down by verb and host.",
            ["verb", "host"],
            buckets=_REST_SIZE_BUCKETS,
            registry=r,
        )
        build = Gauge(
            "kubernetes_build_info",
            "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree "
            "state, build date, Go version, and compiler from which Kubernetes was built, and platform on "
            "which it is running. For pyscheduler: git_version is the kube-scheduler release it follows, "
            "compiler and go_version name the Python implementation and version, git_commit its own version.",
            [
                "build_date",
                "compiler",
                "git_commit",
                "git_tree_state",
                "git_version",
                "go_version",
                "major",
                "minor",
                "platform",
            ],
            registry=r,
        )
        major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
        build.labels(
            "1970-01-01T00:00:00Z",
            platform.python_implementation().lower(),
            f"pyscheduler-{__version__}",
            "clean",
            KUBERNETES_VERSION,
            f"python{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}",
            major,
            minor,
            f"{sys.platform}/{_arch()}",
        ).set(1)
        r.register(_FeatureGateCollector(feature_gates))
        ProcessCollector(registry=r)
        r.register(_ProcessExtras())
        self._evaluations = _EvaluationCollector()
        r.register(self._evaluations)

    # ------------------------------------------------------------------------ runtime observer
    def extension_point(self, extension_point: str, status: Code, profile: str, seconds: float) -> None:
        key = (extension_point, status, profile)
        child = self._ep_children.get(key)
        if child is None:  # labels() costs a lock and a tuple build: look each series up once
            child = self._ep_children[key] = self.extension_point_duration.labels(
                extension_point, str(status), profile
            )
        child.observe(seconds)

    def plugin(self, plugin: str, extension_point: str, status: Code, seconds: float) -> None:
        """One plugin call in a sampled cycle (the runtime decides which cycles; see the module doc)."""
        key = (plugin, extension_point, status)
        child = self._plugin_children.get(key)
        if child is None:
            child = self._plugin_children[key] = self.plugin_duration.labels(
                plugin, extension_point, str(status)
            )
        child.observe(seconds)

    def sample_plugins(self) -> bool:
        """Whether the next scheduling cycle times its plugins (kube's 10%)."""
        return random.random() < self.plugin_sample_rate

    def add_evaluations(self, profile: str, counts: Callable[[], Mapping[tuple[str, str], int]]) -> None:
        """A framework's plugin evaluation counts ((plugin, extension point) -> n), read at scrape time."""
        self._evaluations.sources.append((profile, counts))

    def permit_wait(self, status: Code, seconds: float) -> None:
        self.permit_wait_duration.labels(str(status)).observe(seconds)

    # ------------------------------------------------------------------------ batching observer
    # These and the per-pod observers below run once or more per scheduling cycle: every series' child
    # is looked up once (labels() costs a lock and a tuple build, as much as the observation).
    def _child(self, metric: Any, *labels: str) -> Any:
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def batch_attempt(self, profile: str, result: str) -> None:
        self._child(self.batch_attempts, profile, result).inc()

    def batch_flushed(self, profile: str, reason: str) -> None:
        self._child(self.batch_cache_flushed, profile, reason).inc()

    def node_hint_duration(self, hinted: str, profile: str, seconds: float) -> None:
        self._child(self.get_node_hint_duration, hinted, profile).observe(seconds)

    def store_results_duration(self, profile: str, seconds: float) -> None:
        self._child(self.store_schedule_results_duration, profile).observe(seconds)

    # ------------------------------------------------------------------------ scheduler loop observer
    def attempt(self, result: str, profile: str, seconds: float) -> None:
        self._child(self.schedule_attempts, result, profile).inc()
        self._child(self.attempt_duration, result, profile).observe(seconds)

    def algorithm(self, seconds: float) -> None:
        self.algorithm_duration.observe(seconds)

    def pod_scheduled(
        self, profile: str, attempts: int, sli_seconds: float, *, after_flush: bool = False
    ) -> None:
        self.scheduling_attempts.observe(attempts)
        # kube's getAttemptsLabel: capped, so the label set stays small however often pods are retried
        self._child(self.sli_duration, "15+" if attempts >= 15 else str(attempts)).observe(sli_seconds)
        if after_flush:
            self.scheduled_after_flush.inc()

    # queue observer
    def pod_group_attempt(self, result: str, profile: str, seconds: float) -> None:
        self._child(self.pod_group_schedule_attempts, result, profile).inc()
        self._child(self.pod_group_attempt_duration, result, profile).observe(seconds)

    def pod_group_algorithm(self, seconds: float) -> None:
        self.pod_group_algorithm_duration.observe(seconds)

    def preemption_goroutine(self, result: str, seconds: float) -> None:
        self._child(self.preemption_goroutines_total, result).inc()
        self._child(self.preemption_goroutines_duration, result).observe(seconds)

    # ------------------------------------------------------------------------ queue and informers
    def incoming(self, queue: str, event: str) -> None:
        self._child(self.queue_incoming_pods, queue, event).inc()

    def hint(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        key = (plugin, event, hint)
        child = self._hint_children.get(key)
        if child is None:
            child = self._hint_children[key] = self.hint_duration.labels(plugin, event, hint)
        child.observe(seconds)

    def event_handled(self, event: str, seconds: float) -> None:
        child = self._event_children.get(event)
        if child is None:
            child = self._event_children[event] = self.event_handling_duration.labels(event)
        child.observe(seconds)

    def set_pending(self, counts: dict[str, int]) -> None:
        for q, n in counts.items():
            self.pending_pods.labels(q).set(n)

    def set_cache_size(self, nodes: int, pods: int, assumed_pods: int) -> None:
        """kube sets these once a second too (cache.updateMetrics in its cleanup loop)."""
        self.cache_size.labels("nodes").set(nodes)
        self.cache_size.labels("pods").set(pods)
        self.cache_size.labels("assumed_pods").set(assumed_pods)

    def set_state(
        self,
        *,
        cache: Mapping[str, int],
        unschedulable: Mapping[tuple[str, str], int],
        inflight_events: Mapping[str, int],
        goroutines: Mapping[str, int],
    ) -> None:
        """The state gauges, from the app's flusher once a second. A series whose count went to zero stays
        at 0 (as kube's do), so a dashboard sees it fall rather than vanish."""
        for k, n in cache.items():
            self.cache_size.labels(k).set(n)
        _set_all(self.unschedulable_pods, unschedulable)
        _set_all(self.inflight_events, {(k,): v for k, v in inflight_events.items()})
        for k, n in goroutines.items():
            self.goroutines.labels(k).set(n)

    # ------------------------------------------------------------------------ API client observer
    def rest_request(
        self, method: str, host: str, code: str, seconds: float, request_bytes: int, response_bytes: int
    ) -> None:
        key = (method, host, code)
        children = self._rest_children.get(key)
        if children is None:
            children = self._rest_children[key] = (
                self.rest_requests.labels(code, method, host),
                self.rest_duration.labels(method, host),
                self.rest_request_size.labels(method, host),
                self.rest_response_size.labels(method, host),
            )
        total, duration, req_size, resp_size = children
        total.inc()
        if seconds >= 0:  # a watch's duration is its lifetime: kube does not observe it, nor do we
            duration.observe(seconds)
            req_size.observe(request_bytes)
            resp_size.observe(response_bytes)

    def resourceclaim_create(self, status: str) -> None:
        """DynamicResources created (status "success") or failed to create ("failure") a claim."""
        self.resourceclaim_creates.labels(status).inc()

    def dra_binding_conditions(
        self, profile: str, waits: Iterable[str], allocations: Iterable[str], status: str, seconds: float
    ) -> None:
        """PreBind's wait for binding conditions ended with ``status`` (success, failure, timeout, error):
        one wait observation per allocated device's driver, one allocation per device with conditions."""
        for driver in waits:
            self.dra_binding_conditions_wait.labels(profile, driver, status).observe(seconds)
        for driver in allocations:
            self.dra_binding_conditions_allocations.labels(profile, driver, status).inc()

    def async_api_call(self, call_type: str, result: str, seconds: float) -> None:
        """An asynchronous API call (``call_type`` pod_status_patch or pod_binding) ran: ``result`` is
        success or error, as kube's dispatcher labels it."""
        self.async_api_call_total.labels(call_type, result).inc()
        self.async_api_call_duration.labels(call_type, result).observe(seconds)

    def async_api_pending(self, call_type: str, delta: int) -> None:
        """A call of ``call_type`` was queued (+1) or left the queue (-1: it started, or was dropped)."""
        self.async_api_pending_calls.labels(call_type).inc(delta)

    def volume_scheduling_stage_error(self, operation: str) -> None:
        """VolumeBinding failed with an error (not a rejection) at ``operation``: predicate (Filter's volume
        search), assume (Reserve), bind (PreBind's API writes), kube's three stages."""
        self.volume_stage_errors.labels(operation).inc()

    def rest_rate_limited(self, method: str, host: str, seconds: float) -> None:
        key = (method, host)
        child = self._rate_children.get(key)
        if child is None:
            child = self._rate_children[key] = self.rest_rate_limiter.labels(method, host)
        child.observe(seconds)


def _set_all(gauge: Gauge, values: Mapping[tuple[str, str], int] | Mapping[tuple[str], int]) -> None:
    seen: set[tuple[str, ...]] = {tuple(k) for k in values}
    for labels, n in values.items():
        gauge.labels(*labels).set(n)
    for sample_labels in list(_label_sets(gauge)):
        if sample_labels not in seen:
            gauge.labels(*sample_labels).set(0)


def _label_sets(gauge: Gauge) -> Iterable[tuple[str, ...]]:
    for metric in gauge.collect():
        for s in metric.samples:
            yield tuple(s.labels[n] for n in gauge._labelnames)


def _arch() -> str:
    m = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(m, m)


class _EvaluationCollector(Collector):
    """scheduler_plugin_evaluation_total, summed at scrape time from each framework's plain counters."""

    def __init__(self) -> None:
        self.sources: list[tuple[str, Callable[[], Mapping[tuple[str, str], int]]]] = []

    def collect(self) -> Iterator[Metric]:
        fam = CounterMetricFamily(
            "scheduler_plugin_evaluation",
            "Number of attempts to schedule pods by each plugin and the extension point (available only in "
            "PreFilter, Filter, PreScore, and Score).",
            labels=["plugin", "extension_point", "profile"],
        )
        for profile, counts in self.sources:
            for (plugin, point), n in sorted(counts().items()):
                if n:
                    fam.add_metric([plugin, point, profile], n)
        yield fam

    def describe(self) -> Iterator[Metric]:
        return iter(())


class _FeatureGateCollector(Collector):
    """kubernetes_feature_enabled{name,stage}: 1 or 0 for every gate kube-scheduler 1.36 knows, and for
    AllAlpha / AllBeta, as component-base's feature gate records them (``stage`` is ALPHA, BETA,
    DEPRECATED, or empty for GA)."""

    def __init__(self, gates: FeatureGates | None) -> None:
        self.gates = gates

    def collect(self) -> Iterator[Metric]:
        gates = self.gates if self.gates is not None else current()
        fam = GaugeMetricFamily(
            "kubernetes_feature_enabled",
            "This metric records the data about the stage and enablement of a k8s feature.",
            labels=["name", "stage"],
        )
        for name, spec in sorted(KNOWN.items()):
            fam.add_metric(
                [name, "" if spec.stage == GA else spec.stage], 1.0 if gates.enabled(name) else 0.0
            )
        for name, stage in ((ALL_ALPHA, ALPHA), (ALL_BETA, BETA)):
            fam.add_metric([name, stage], 1.0 if gates.explicit.get(name) else 0.0)
        yield fam

    def describe(self) -> Iterator[Metric]:
        return iter(())


class _ProcessExtras(Collector):
    """The process_* figures Go's process collector has and prometheus_client's does not: the address
    space limit and the network namespace's byte counters (both read from /proc, as Go's procfs does)."""

    def collect(self) -> Iterator[Metric]:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        yield GaugeMetricFamily(
            "process_virtual_memory_max_bytes",
            "Maximum amount of virtual memory available in bytes.",
            value=float(soft) if soft != resource.RLIM_INFINITY else -1.0,
        )
        rx, tx = _net_bytes()
        if rx is not None and tx is not None:
            yield CounterMetricFamily(
                "process_network_receive_bytes",
                "Number of bytes received by the process over the network.",
                value=rx,
            )
            yield CounterMetricFamily(
                "process_network_transmit_bytes",
                "Number of bytes sent by the process over the network.",
                value=tx,
            )

    def describe(self) -> Iterator[Metric]:
        return iter(())


def _net_bytes() -> tuple[float | None, float | None]:
    try:
        with open(f"/proc/{os.getpid()}/net/dev") as f:
            lines = f.read().splitlines()[2:]
    except OSError:
        return None, None
    rx = tx = 0.0
    for line in lines:
        _, _, data = line.partition(":")
        fields = data.split()
        if len(fields) >= 9:
            rx += float(fields[0])
            tx += float(fields[8])
    return rx, tx
