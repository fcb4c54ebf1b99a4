"""Prometheus metrics with kube-scheduler's names, labels and buckets, so existing dashboards work.

One ``SchedulerMetrics`` per process owns its own ``CollectorRegistry`` (tests create several). It
implements the observer protocols the framework runtime, the scheduler loop and the queue call.
Per-plugin timings are sampled (10% of cycles, as kube-scheduler does) to keep their cost down.
"""

from __future__ import annotations

import random
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from pyscheduler.framework.status import Code


def _exp_buckets(start: float, factor: float, count: int) -> list[float]:
    return [start * factor**i for i in range(count)]


class SchedulerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None, plugin_sample_rate: float = 0.1) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.plugin_sample_rate = plugin_sample_rate
        self._ep_children: dict[tuple[str, Code, str], Any] = {}
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
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
            "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods; "
            "'gated' is the number of unschedulable pods that are gated.",
            ["queue"],
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

    # runtime observer
    def extension_point(self, extension_point: str, status: Code, profile: str, seconds: float) -> None:
        key = (extension_point, status, profile)
        child = self._ep_children.get(key)
        if child is None:  # labels() costs a lock and a tuple build: look each series up once
            child = self._ep_children[key] = self.extension_point_duration.labels(
                extension_point, str(status), profile
            )
        child.observe(seconds)

    def plugin(self, plugin: str, extension_point: str, status: Code, seconds: float) -> None:
        if random.random() < self.plugin_sample_rate:
            self.plugin_duration.labels(plugin, extension_point, str(status)).observe(seconds)

    # scheduler loop observer
    def attempt(self, result: str, profile: str, seconds: float) -> None:
        self.schedule_attempts.labels(result, profile).inc()
        self.attempt_duration.labels(result, profile).observe(seconds)

    def pod_scheduled(self, profile: str, attempts: int, sli_seconds: float) -> None:
        self.scheduling_attempts.observe(attempts)
        self.sli_duration.labels(str(attempts)).observe(sli_seconds)

    # queue observer
    def pod_group_attempt(self, result: str, profile: str, seconds: float) -> None:
        self.pod_group_schedule_attempts.labels(result, profile).inc()
        self.pod_group_attempt_duration.labels(result, profile).observe(seconds)

    def pod_group_algorithm(self, seconds: float) -> None:
        self.pod_group_algorithm_duration.observe(seconds)

    def incoming(self, queue: str, event: str) -> None:
        self.queue_incoming_pods.labels(queue, event).inc()

    def set_pending(self, counts: dict[str, int]) -> None:
        for q, n in counts.items():
            self.pending_pods.labels(q).set(n)

    def set_cache_size(self, nodes: int, pods: int, assumed_pods: int) -> None:
        """kube sets these once a second too (cache.updateMetrics in its cleanup loop)."""
        self.cache_size.labels("nodes").set(nodes)
        self.cache_size.labels("pods").set(pods)
        self.cache_size.labels("assumed_pods").set(assumed_pods)
