"""Two ``pyscheduler run`` replicas sharing one Lease: one schedules, the other stands by and takes over.

- kill -9 of the leader in the middle of a 500-pod burst: the standby takes the lease once it expires
  (leaseDuration 6 s here, so the test is short) and finishes the burst; every pod ends up bound exactly
  once, no node is overcommitted, and the two replicas never both bind (their "scheduled" log lines are
  disjoint, the standby's all come after it became leader).
- SIGTERM of the leader: it exits 0 promptly and releases the lease (a watch on the Lease sees
  holderIdentity ""), so the standby takes over in well under a lease duration (15 s here).
- both replicas answer /livez and /readyz (a standby is ready: its caches are synced), and /metrics says
  which one leads (``leader_election_master_status`` 1 on the leader, 0 on the standby).

The replicas use the admin kubeconfig (RBAC is test_in_cluster.py's subject); the Lease lives in the test's
namespace so nothing else in the session can interfere with it. Every test has its own node pool.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.cluster import ADMIN_TOKEN, LocalCluster
from pyscheduler.testing.daemon import SchedulerProcess
from pyscheduler.testing.kube import create, eventually, list_pods, node_usage

LEASE = "py-scheduler"
MASTER_STATUS = re.compile(r'^leader_election_master_status\{name="py-scheduler"\} (\S+)$', re.M)


def config(ns: str, lease: int, renew: int, retry: int) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {
            "leaderElect": True,
            "resourceLock": "leases",
            "resourceNamespace": ns,
            "resourceName": LEASE,
            "leaseDuration": f"{lease}s",
            "renewDeadline": f"{renew}s",
            "retryPeriod": f"{retry}s",
        },
        "clientConnection": {"qps": 200, "burst": 400},
        "profiles": [{"schedulerName": "py-scheduler"}],
    }


def replica(cluster: LocalCluster, cfg: dict[str, Any], identity: str) -> SchedulerProcess:
    return SchedulerProcess(
        cluster.kubeconfig, cfg, leader_elect=True, env={"POD_NAME": identity}, name=identity
    )


@contextlib.contextmanager
def replicas(cluster: LocalCluster, cfg: dict[str, Any]) -> Iterator[dict[str, SchedulerProcess]]:
    """Two replicas, started one after the other; yields {identity: process}; stopped (or killed) after."""
    procs = {name: replica(cluster, cfg, name) for name in ("replica-a", "replica-b")}
    try:
        for p in procs.values():
            p.start()
        yield procs
    finally:
        for p in procs.values():
            p.stop(timeout=15)


def lease_spec(cluster: LocalCluster, ns: str) -> dict[str, Any]:
    status, out = cluster.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{LEASE}")
    return dict(out["spec"]) if status == 200 else {}


def holder(cluster: LocalCluster, ns: str) -> str:
    return str(lease_spec(cluster, ns).get("holderIdentity") or "")


def leader_and_standby(cluster: LocalCluster, ns: str, procs: dict[str, SchedulerProcess]) -> tuple[str, str]:
    name = eventually(lambda: holder(cluster, ns), timeout=20, what="a replica holding the lease")
    assert name in procs, f"unexpected holder {name!r}"
    return name, next(n for n in procs if n != name)


def master_status(d: SchedulerProcess) -> float | None:
    m = MASTER_STATUS.search(d.metrics())
    return float(m.group(1)) if m else None


def scheduled_pods(d: SchedulerProcess) -> list[str]:
    return [str(ln["pod"]) for ln in d.log_lines() if ln.get("event") == "scheduled"]


def log_time(d: SchedulerProcess, event: str) -> str | None:
    """The ISO timestamp of the first log line with this event."""
    return next((str(ln["timestamp"]) for ln in d.log_lines() if ln.get("event") == event), None)


def bound_count(cluster: LocalCluster, ns: str) -> int:
    out = cluster.api("GET", f"/api/v1/namespaces/{ns}/pods?fieldSelector=spec.nodeName%21%3D")
    return len(out["items"])


def http_status(d: SchedulerProcess, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{d.port}{path}", timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


class LeaseWatch:
    """Every holderIdentity the Lease goes through, from a watch stream (misses no intermediate state)."""

    def __init__(self, cluster: LocalCluster, ns: str) -> None:
        out = cluster.api("GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{LEASE}")
        rv = out["metadata"]["resourceVersion"]
        url = (
            f"{cluster.server}/apis/coordination.k8s.io/v1/namespaces/{ns}/leases?watch=1"
            f"&fieldSelector=metadata.name%3D{LEASE}&resourceVersion={rv}&timeoutSeconds=60"
        )
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        self._resp = urllib.request.urlopen(req, timeout=70, context=cluster.ssl_context())
        self.seen: list[tuple[float, str]] = [
            (time.monotonic(), str(out["spec"].get("holderIdentity") or ""))
        ]
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with contextlib.suppress(Exception):
            for line in self._resp:
                ev = json.loads(line)
                spec = ev["object"].get("spec") or {}
                self.seen.append((time.monotonic(), str(spec.get("holderIdentity") or "")))

    def holders(self) -> list[str]:
        """Distinct successive holders ("" = released)."""
        out: list[str] = []
        for _, h in self.seen:
            if not out or out[-1] != h:
                out.append(h)
        return out

    def first(self, identity: str) -> float | None:
        return next((t for t, h in self.seen if h == identity), None)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._resp.close()


def pool(cluster: LocalCluster, ns: str, count: int, **kw: Any) -> list[str]:
    return cluster.create_nodes(count, prefix=f"{ns}-n", labels={"pool": ns}, **kw)


def small_pod(ns: str, name: str) -> dict[str, Any]:
    return (
        make_pod(name, ns)
        .scheduler("py-scheduler")
        .node_selector({"pool": ns})
        .req(cpu="50m", memory="64Mi")
        .json()
    )


# ------------------------------------------------------------------------------------------- tests


@pytest.mark.slow
def test_kill_9_of_the_leader_mid_burst_standby_takes_over_within_the_lease_duration(
    cluster: LocalCluster, ns: str
) -> None:
    lease_duration = 6
    pods, kill_after = 500, 100
    nodes = pool(cluster, ns, 20, cpu="1500m", memory="8Gi", pods=40)  # room for 600 such pods
    with replicas(cluster, config(ns, lease=lease_duration, renew=4, retry=1)) as procs:
        leader_name, standby_name = leader_and_standby(cluster, ns, procs)
        leader, standby = procs[leader_name], procs[standby_name]
        eventually(lambda: master_status(leader) == 1.0, timeout=5, what="leader_election_master_status 1")

        errors: list[str] = []

        def create_range(start: int) -> None:
            for i in range(start, pods, 8):
                status, out = cluster.request("POST", f"/api/v1/namespaces/{ns}/pods", small_pod(ns, f"p{i}"))
                if status != 201:
                    errors.append(f"p{i}: HTTP {status}: {out}")

        creators = ThreadPoolExecutor(max_workers=8)
        burst_start = time.monotonic()
        futures = [creators.submit(create_range, k) for k in range(8)]
        eventually(
            lambda: bound_count(cluster, ns) >= kill_after,
            timeout=60,
            interval=0.05,
            what=f"{kill_after} pods bound by the first leader",
        )
        standby_before = scheduled_pods(standby)
        killed_at = time.monotonic()
        leader.kill()  # SIGKILL: no release, no last words
        bound_at_kill = bound_count(cluster, ns)

        eventually(
            lambda: holder(cluster, ns) == standby_name,
            timeout=lease_duration + 10,
            interval=0.05,
            what="the standby holding the lease",
        )
        takeover = time.monotonic() - killed_at
        for f in futures:
            f.result()
        creators.shutdown()
        assert not errors, errors[:3]

        eventually(lambda: bound_count(cluster, ns) == pods, timeout=120, interval=0.5, what="all pods bound")
        burst = time.monotonic() - burst_start
        assert standby.alive(), standby.log_tail()
        eventually(lambda: master_status(standby) == 1.0, timeout=5, what="leader_election_master_status 1")
        old_lines, new_lines = scheduled_pods(leader), scheduled_pods(standby)
        became = log_time(standby, "became leader")
        late = [
            ln
            for ln in standby.log_lines()
            if ln.get("event") == "scheduled" and str(ln["timestamp"]) < str(became)
        ]
        conflicts = sum(1 for ln in standby.log_text().splitlines() if "binding" in ln and "HTTP 409" in ln)

    print(
        f"\nburst of {pods}: {bound_at_kill} bound at kill, takeover {takeover:.2f}s after kill -9 "
        f"(leaseDuration {lease_duration}s), all bound {burst:.1f}s after the burst began; "
        f"scheduled by the old leader (logged) {len(old_lines)}, by the new one {len(new_lines)} "
        f"(binding 409s: {conflicts})"
    )

    # only the lease holder binds
    assert standby_before == [], "the standby bound pods while the other replica held the lease"
    assert became is not None and late == [], "the standby bound pods before it became leader"
    assert not set(old_lines) & set(new_lines), "a pod was bound by both replicas"
    assert len(old_lines) >= kill_after * 0.8
    # takeover once the lease expired: leaseDuration after the last renewal it saw, plus one retryPeriod,
    # plus a margin for a loaded machine
    assert takeover < lease_duration + 3, f"takeover took {takeover:.1f}s"

    final = list_pods(cluster, ns)
    assert len(final) == pods
    assert all(p["spec"].get("nodeName") in nodes for p in final)
    for node, (cpu, cpu_alloc, mem, mem_alloc, count, max_pods) in node_usage(cluster, nodes).items():
        assert cpu <= cpu_alloc, f"{node} overcommitted on cpu: {cpu}m > {cpu_alloc}m"
        assert mem <= mem_alloc, f"{node} overcommitted on memory"
        assert count <= max_pods, f"{node}: {count} pods > {max_pods}"
    events = cluster.api("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events")["items"]
    scheduled = Counter(e["regarding"]["name"] for e in events if e.get("reason") == "Scheduled")
    twice = {name: n for name, n in scheduled.items() if n > 1}
    assert not twice, f"pods with more than one Scheduled event: {twice}"
    # events of the killed replica may be lost, never those of the survivor
    assert {key.split("/", 1)[1] for key in new_lines} <= set(scheduled)


def test_both_replicas_are_healthy_and_sigterm_hands_the_lease_over_at_once(
    cluster: LocalCluster, ns: str
) -> None:
    lease_duration = 15  # the default: a takeover in < 3 s can only come from a released lease
    pool(cluster, ns, 1)
    with replicas(cluster, config(ns, lease=lease_duration, renew=10, retry=1)) as procs:
        leader_name, standby_name = leader_and_standby(cluster, ns, procs)
        leader, standby = procs[leader_name], procs[standby_name]

        for d in (leader, standby):
            assert http_status(d, "/livez") == 200
            assert http_status(d, "/readyz") == 200, "a standby with synced caches is ready"
            assert http_status(d, "/healthz") == 200
        eventually(lambda: master_status(leader) == 1.0, timeout=5, what="leader_election_master_status 1")

        create(cluster, small_pod(ns, "before"))
        eventually(lambda: f"{ns}/before" in scheduled_pods(leader), what="the leader schedules")
        assert scheduled_pods(standby) == []

        watch = LeaseWatch(cluster, ns)
        try:
            assert leader.proc is not None
            sent = time.monotonic()
            leader.proc.send_signal(signal.SIGTERM)
            rc = leader.proc.wait(30)
            exited = time.monotonic() - sent
            eventually(
                lambda: watch.first(standby_name),
                timeout=10,
                interval=0.05,
                what="the standby holding the lease",
            )
        finally:
            watch.close()
        took_over = (watch.first(standby_name) or 0.0) - sent

        print(
            f"\nSIGTERM: leader exited {exited:.2f}s later with {rc}; standby took over {took_over:.2f}s "
            f"after the signal; holders seen: {watch.holders()}"
        )
        assert rc == 0, leader.log_tail()
        assert exited < 10, f"the leader took {exited:.1f}s to exit"
        assert watch.holders() == [leader_name, "", standby_name], "the leader released the lease"
        assert any(ln.get("event") == "released the lease" for ln in leader.log_lines())
        assert took_over < 3, f"takeover {took_over:.1f}s after SIGTERM"

        eventually(lambda: master_status(standby) == 1.0, timeout=5, what="leader_election_master_status 1")
        create(cluster, small_pod(ns, "after"))
        eventually(lambda: f"{ns}/after" in scheduled_pods(standby), what="the new leader schedules")
        assert standby.alive()


def test_a_standby_is_ready_and_reports_master_status_0(cluster: LocalCluster, ns: str) -> None:
    """One replica, while another identity (this test) holds the lease: a standby from start to end."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    cluster.api(
        "POST",
        f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": LEASE},
            "spec": {
                "holderIdentity": "someone-else",
                "leaseDurationSeconds": 300,
                "renewTime": now,
                "acquireTime": now,
                "leaseTransitions": 0,
            },
        },
    )
    with replica(cluster, config(ns, lease=15, renew=10, retry=1), "replica-s") as standby:
        assert http_status(standby, "/livez") == 200
        assert http_status(standby, "/readyz") == 200, "a standby with synced caches is ready"
        assert holder(cluster, ns) == "someone-else"
        assert master_status(standby) == 0.0, "a standby reports leader_election_master_status 0 (not absent)"
