"""What the scenarios share: the scheduler's configuration, a scenario's context (``Ctx``) and the small
helpers the faults use to find the leader and wait for things."""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.chaos.checker import SCHEDULER_NAME, Checker
from bench.chaos.procs import ExtenderProcess, PrometheusProcess, ProxyProcess
from bench.chaos.workload import Workload
from pyscheduler.testing.cluster import LocalCluster
from pyscheduler.testing.daemon import SchedulerProcess

LEASE = "chaos-scheduler"
LEASE_S, RENEW_S, RETRY_S = 6, 4, 1
GANG_WAIT_S = 10  # Coscheduling's permitWaitingTimeSeconds
PROM_TIMEOUT_S = 1  # NetworkTraffic's timeoutSeconds
PROM_CACHE_S = 5  # and cacheSeconds


def config(
    ns: str,
    qps: int = 200,
    extenders: list[dict[str, Any]] | None = None,
    gangs: bool = False,
    prometheus: str | None = None,
) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {
            "leaderElect": True,
            "resourceLock": "leases",
            "resourceNamespace": ns,
            "resourceName": LEASE,
            "leaseDuration": f"{LEASE_S}s",
            "renewDeadline": f"{RENEW_S}s",
            "retryPeriod": f"{RETRY_S}s",
        },
        "clientConnection": {"qps": qps, "burst": 2 * qps},
        "profiles": [{"schedulerName": SCHEDULER_NAME}],
    }
    if extenders:
        cfg["extenders"] = extenders
    if gangs:  # Coscheduling (Permit waits for the gang) replaces PrioritySort as the queue sort
        cfg["profiles"][0]["plugins"] = {
            "multiPoint": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "PrioritySort"}]}
        }
        cfg["profiles"][0]["pluginConfig"] = [
            {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": GANG_WAIT_S}}
        ]
    if prometheus:  # NetworkTraffic scores by the stand-in Prometheus (PreScore too: a failure skips it)
        cfg["profiles"][0]["plugins"] = {
            "preScore": {"enabled": [{"name": "NetworkTraffic"}]},
            "score": {"enabled": [{"name": "NetworkTraffic", "weight": 1}]},
        }
        cfg["profiles"][0]["pluginConfig"] = [
            {
                "name": "NetworkTraffic",
                "args": {
                    "prometheusAddress": prometheus,
                    "timeoutSeconds": PROM_TIMEOUT_S,
                    "cacheSeconds": PROM_CACHE_S,
                },
            }
        ]
    return cfg


@dataclass
class Ctx:
    cluster: LocalCluster
    ns: str
    scheds: list[SchedulerProcess]
    checker: Checker
    notes: list[str] = field(default_factory=list)
    proxy: ProxyProcess | None = None
    extender: ExtenderProcess | None = None
    workload: Workload | None = None
    prometheus: PrometheusProcess | None = None


def holder(ctx: Ctx) -> str:
    status, out = ctx.cluster.request(
        "GET", f"/apis/coordination.k8s.io/v1/namespaces/{ctx.ns}/leases/{LEASE}"
    )
    return str(((out or {}).get("spec") or {}).get("holderIdentity") or "") if status == 200 else ""


def wait_for(what: str, fn: Callable[[], Any], timeout: float = 30.0) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    raise RuntimeError(f"timed out waiting for {what}")


def leader(ctx: Ctx) -> SchedulerProcess:
    name = wait_for("a lease holder", lambda: holder(ctx))
    return next(s for s in ctx.scheds if s.env.get("POD_NAME") == name)


def scheduled_after(s: SchedulerProcess, wall: float) -> list[str]:
    out = []
    for ln in s.log_lines():
        if ln.get("event") != "scheduled":
            continue
        with contextlib.suppress(KeyError, ValueError):
            t = dt.datetime.fromisoformat(str(ln["timestamp"]).replace("Z", "+00:00")).timestamp()
            if t >= wall:
                out.append(str(ln["pod"]))
    return out


def p99(values: list[float]) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(0.99 * len(v)))]
