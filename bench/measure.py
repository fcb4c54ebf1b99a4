"""Measuring instruments for the benchmark: a raw API client, an independent pod watch, process stats.

Design
------
Nothing here uses the scheduler's own client code (``pyscheduler.client``): the benchmark measures
pyscheduler and kube-scheduler from the outside, the same way for both.

- ``Endpoint`` / ``Conn``: one keep-alive ``http.client.HTTPSConnection`` per thread, bearer token,
  bodies pre-encoded with orjson. ``run_parallel`` feeds a list of jobs to N such threads (the 30 pod
  creators of scheduler_perf's ``createPods``; the bind-ceiling client).
- ``PodWatch``: a streaming ``GET .../pods?watch=1`` from a known resourceVersion, read line by line and
  parsed with orjson. It records, per pod name, the monotonic time the watch first saw
  ``spec.nodeName`` set (the bind), the PodScheduled=False condition (unschedulable), and deletion
  (preemption victims). Creation times are recorded client-side per pod name by the creators, just
  before the POST is sent (``creationTimestamp`` has one-second resolution), so latency is
  ``bind_seen - post_sent`` on one clock.
- ``throughput_samples``: pods bound per one-second bucket from the first bind to the last, built from
  the per-pod bind times (the last, partial bucket is scaled to a rate); the summary is the average and
  p50/p90/p99 of those samples (``make bench``'s figure).
- ``collector_samples``: the samples scheduler_perf's own throughput collector would take from the same
  bind times within a metrics window (a one-second ticker from the window's start; the first tick that
  sees a bind is skipped, ticks that see none are merged into the next one that does, binds after the
  last tick are not sampled): what the upstream course reports beside upstream's thresholds.
- ``ProcStats``: CPU seconds (utime+stime from ``/proc/<pid>/stat``) and peak RSS (``VmHWM`` from
  ``/proc/<pid>/status``) of a scheduler's process tree (pyscheduler's HTTP worker counts too).
- ``bind_ceiling``: the API server's own limit for the Binding step: N threads posting Bindings for
  pre-created pending pods (schedulerName ``nobody``) as fast as they can.
"""

from __future__ import annotations

import contextlib
import http.client
import math
import os
import queue
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

from pyscheduler.framework.helpers.timefmt import rfc3339_micro

T = TypeVar("T")


# --------------------------------------------------------------------------------------------- client


@dataclass(frozen=True)
class Endpoint:
    """Where and how to reach the API server (host, port, bearer token, TLS context)."""

    host: str
    port: int
    token: str
    context: ssl.SSLContext

    @classmethod
    def from_url(cls, server: str, token: str, cafile: str) -> Endpoint:
        u = urllib.parse.urlsplit(server)
        return cls(u.hostname or "127.0.0.1", u.port or 443, token, ssl.create_default_context(cafile=cafile))

    def connect(self, timeout: float | None = 60.0) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)


class Conn:
    """One keep-alive connection; ``request`` reconnects once if the server closed it."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.conn = endpoint.connect()
        self.headers = {
            "Authorization": f"Bearer {endpoint.token}",
            "Accept": "application/json",
            "Content-Type": "application/json",
        }

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        for attempt in range(3):
            try:
                self.conn.request(method, path, body=body, headers=self.headers)
                resp = self.conn.getresponse()
                return resp.status, resp.read()
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = self.endpoint.connect()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, body: Any = None, ok: Iterable[int] = (200, 201)) -> Any:
        status, data = self.request(method, path, None if body is None else orjson.dumps(body))
        if status not in tuple(ok):
            raise RuntimeError(f"{method} {path}: HTTP {status}: {data[:300]!r}")
        return orjson.loads(data) if data else None

    def close(self) -> None:
        self.conn.close()


def run_parallel(
    endpoint: Endpoint, jobs: Sequence[T], fn: Callable[[Conn, T], str | None], threads: int
) -> list[str]:
    """Run ``fn(conn, job)`` for every job on ``threads`` threads with one connection each.

    ``fn`` returns an error message or None; the messages are returned (the run never stops early)."""
    q: queue.SimpleQueue[T] = queue.SimpleQueue()
    for j in jobs:
        q.put(j)
    errors: list[str] = []

    def worker() -> None:
        conn = Conn(endpoint)
        try:
            while True:
                try:
                    job = q.get_nowait()
                except queue.Empty:
                    return
                try:
                    err = fn(conn, job)
                except Exception as e:  # keep going: one failed request is reported, not fatal
                    err = f"{type(e).__name__}: {e}"
                if err:
                    errors.append(err)
        finally:
            conn.close()

    ts = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, min(threads, len(jobs))))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors


def post_objects(
    endpoint: Endpoint,
    path: str,
    objects: Sequence[tuple[str, bytes]],
    threads: int,
    sent: dict[str, float] | None = None,
    ok: tuple[int, ...] = (201,),
    rate: float | None = None,
) -> list[str]:
    """POST pre-encoded objects ``(name, body)`` to ``path`` with ``threads`` creators.

    ``sent[name]`` gets the monotonic time just before each request goes out. 429/5xx are retried.
    ``rate`` (objects/s): the k-th object is not sent before start + k/rate (open-loop arrivals), so
    the schedulers compared see the same arrival rate whatever CPU they leave the creators."""
    lock = threading.Lock()
    seq = [0]
    t0 = time.monotonic()

    def create(conn: Conn, item: tuple[str, bytes]) -> str | None:
        name, body = item
        if rate:
            with lock:
                k = seq[0]
                seq[0] += 1
            delay = t0 + k / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        for _ in range(20):
            if sent is not None:
                sent[name] = time.monotonic()
            status, data = conn.request("POST", path, body)
            if status in ok or status == 409:
                return None
            if status == 429 or status >= 500:
                time.sleep(0.1)
                continue
            return f"{name}: HTTP {status}: {data[:200]!r}"
        return f"{name}: gave up after retries"

    return run_parallel(endpoint, objects, create, threads)


# --------------------------------------------------------------------------------------------- watch


class Watch(threading.Thread):
    """A watch of its own on ``path`` (list+watch URL without resourceVersion), reconnecting from the
    last resourceVersion seen; ``on_event(type, object, monotonic time)`` gets every event but bookmarks."""

    def __init__(
        self, endpoint: Endpoint, path: str, resource_version: str = "", name: str = "bench-watch"
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.endpoint = endpoint
        self.path = path
        self.resource_version = resource_version
        self.events = 0
        self.error: str | None = None
        self._stopping = threading.Event()
        self._conn: http.client.HTTPSConnection | None = None

    def on_event(self, kind: str, obj: dict[str, Any], now: float) -> None:
        raise NotImplementedError

    def run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._watch_once()
            except Exception as e:
                if self._stopping.is_set():
                    return
                self.error = f"{type(e).__name__}: {e}"
                time.sleep(0.2)

    def _watch_once(self) -> None:
        conn = self.endpoint.connect(timeout=None)
        self._conn = conn
        since = f"&resourceVersion={self.resource_version}" if self.resource_version else ""
        conn.request(
            "GET",
            f"{self.path}?watch=1&allowWatchBookmarks=true&timeoutSeconds=3600{since}",
            headers={"Authorization": f"Bearer {self.endpoint.token}", "Accept": "application/json"},
        )
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"watch: HTTP {resp.status}: {resp.read()[:200]!r}")
        while not self._stopping.is_set():
            line = resp.readline()
            if not line:
                return
            now = time.monotonic()
            ev = orjson.loads(line)
            obj = ev.get("object") or {}
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            kind = str(ev.get("type"))
            if kind == "ERROR":
                raise RuntimeError(f"watch error: {obj.get('message')}")
            if rv:
                self.resource_version = rv
            if kind == "BOOKMARK":
                continue
            self.events += 1
            self.on_event(kind, obj, now)

    def stop(self) -> None:
        self._stopping.set()
        conn = self._conn
        if conn is not None and conn.sock is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)
        self.join(5)


class PodWatch(Watch):
    """An independent watch on the pods of one namespace (see the module docstring)."""

    def __init__(self, endpoint: Endpoint, namespace: str, resource_version: str) -> None:
        super().__init__(
            endpoint, f"/api/v1/namespaces/{namespace}/pods", resource_version, "bench-pod-watch"
        )
        self.namespace = namespace
        self.bound: dict[str, float] = {}
        self.nodes: dict[str, str] = {}
        self.unschedulable: dict[str, float] = {}
        self.deleted: dict[str, float] = {}

    def on_event(self, kind: str, obj: dict[str, Any], now: float) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        if kind == "DELETED":
            self.deleted.setdefault(name, now)
            return
        node = (obj.get("spec") or {}).get("nodeName")
        if node:
            if name not in self.bound:
                self.bound[name] = now
                self.nodes[name] = node
        elif name not in self.unschedulable:
            for c in (obj.get("status") or {}).get("conditions") or ():
                if c.get("type") == "PodScheduled" and c.get("status") == "False":
                    self.unschedulable[name] = now

    def count_bound(self, names: Iterable[str]) -> int:
        b = self.bound
        return sum(1 for n in names if n in b)

    def wait(
        self,
        pred: Callable[[], bool],
        timeout: float,
        tick: Callable[[], None] | None = None,
        interval: float = 1.0,
    ) -> bool:
        """Poll ``pred`` every 50 ms until true or ``timeout``; call ``tick`` every ``interval`` s."""
        deadline = time.monotonic() + timeout
        next_tick = time.monotonic() + interval
        while True:
            if pred():
                return True
            now = time.monotonic()
            if now >= deadline:
                return False
            if tick is not None and now >= next_tick:
                tick()
                next_tick += interval
            time.sleep(0.05)


# --------------------------------------------------------------------------------------------- figures


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in [0, 100]; NaN for no values."""
    if not values:
        return math.nan
    s = sorted(values)
    k = (len(s) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    if lo == hi:
        return float(s[lo])
    return float(s[lo] + (s[hi] - s[lo]) * (k - lo))


def throughput_samples(bind_times: Iterable[float]) -> list[float]:
    """Pods bound per second, one sample per second from the first bind to the last."""
    ts = sorted(bind_times)
    if not ts:
        return []
    start, end = ts[0], ts[-1]
    span = end - start
    n_full = int(span)
    counts = [0] * (n_full + 1)
    for t in ts:
        counts[min(int(t - start), n_full)] += 1
    samples = [float(c) for c in counts[:n_full]]
    tail = span - n_full
    if n_full == 0:  # everything bound within a second: one sample, the rate over that span
        samples.append(counts[0] / max(span, 0.2))
    elif tail >= 0.2:
        samples.append(counts[n_full] / tail)
    else:  # a sliver: fold its binds into the last full second
        samples[-1] += counts[n_full]
    return samples


def collector_samples(
    bind_times: Iterable[float], start: float, end: float, interval: float = 1.0
) -> list[float]:
    """Pods bound per second as scheduler_perf's throughput collector samples them in a window that
    starts collecting at ``start`` and stops at ``end`` (bind times on the same clock).

    The collector ticks every ``interval`` from ``start``. A tick that has seen no bind yet takes no
    sample; the first tick that has is skipped too (its count mixes pods created before collecting began
    with the scheduler's start). After that, a tick with new binds records ``new / time since the last
    recorded tick`` once for each interval it covers, so idle seconds lower the rate instead of adding
    zero samples; binds after the last tick before ``end`` are never sampled.
    """
    ts = sorted(t for t in bind_times if t <= end)
    samples: list[float] = []
    if not ts:
        return samples
    i = 0  # binds at or before the current tick
    started = False
    last_count = 0
    last_tick = start
    skipped = 0
    k = 1
    while True:
        tick = start + k * interval
        if tick > end:
            break
        k += 1
        while i < len(ts) and ts[i] <= tick:
            i += 1
        if i == 0:
            continue
        if not started:
            started, last_count, last_tick = True, i, tick
            continue
        new = i - last_count
        if new == 0:
            skipped += 1
            continue
        rate = new / (tick - last_tick)
        samples.extend([rate] * (skipped + 1))
        last_count, last_tick, skipped = i, tick, 0
    return samples


def timeline(bind_times: Iterable[float], origin: float) -> list[int]:
    """Binds per second since ``origin`` (e.g. when the first measured pod was sent), for the chart."""
    ts = [t - origin for t in bind_times]
    if not ts:
        return []
    out = [0] * (int(max(ts)) + 1)
    for t in ts:
        out[max(0, int(t))] += 1
    return out


@dataclass
class Summary:
    avg: float
    p50: float
    p90: float
    p99: float
    n: int = 0

    @classmethod
    def of(cls, values: Sequence[float]) -> Summary:
        avg = sum(values) / len(values) if values else math.nan
        return cls(avg, percentile(values, 50), percentile(values, 90), percentile(values, 99), len(values))

    def as_dict(self) -> dict[str, float]:
        return {"avg": self.avg, "p50": self.p50, "p90": self.p90, "p99": self.p99, "n": self.n}


# --------------------------------------------------------------------------------------------- process


CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int | str) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (which may contain spaces)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()


def _ppids() -> dict[int, int]:
    """pid -> parent pid of every process (from /proc/<pid>/stat: no /proc/<pid>/task/*/children here)."""
    out: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (fields := _stat_fields(name)) is not None:
            out[int(name)] = int(fields[1])
    return out


def _cpu_of(pid: int) -> float | None:
    fields = _stat_fields(pid)
    if fields is None:
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime (fields 14, 15)


def _hwm_mb_of(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


@dataclass
class ProcStats:
    """CPU seconds and peak RSS of a scheduler: its process and every process it started (pyscheduler's
    HTTP worker), read from /proc. A child's last reading is kept after it exits."""

    pid: int
    last_cpu: float = 0.0
    last_hwm_mb: float = 0.0
    samples: list[tuple[float, float]] = field(default_factory=list)
    _cpu: dict[int, float] = field(default_factory=dict)
    _hwm: dict[int, float] = field(default_factory=dict)

    def _tree(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for p, pp in _ppids().items():
            children.setdefault(pp, []).append(p)
        seen, todo = [], [self.pid]
        while todo:
            p = todo.pop()
            seen.append(p)
            todo.extend(children.get(p, ()))
        return seen

    def _read_tree(self, read: Callable[[int], float | None], last: dict[int, float]) -> float | None:
        """Each live process's reading into ``last`` (kept after it exits); their sum, None if none yet."""
        for p in self._tree():
            v = read(p)
            if v is not None:
                last[p] = v
        return sum(last.values()) if last else None

    def cpu_seconds(self) -> float:
        total = self._read_tree(_cpu_of, self._cpu)
        if total is not None:
            self.last_cpu = total
        return self.last_cpu

    def peak_rss_mb(self) -> float:
        """The sum of each process's own peak (an upper bound on the tree's peak)."""
        total = self._read_tree(_hwm_mb_of, self._hwm)
        if total is not None:
            self.last_hwm_mb = total
        return self.last_hwm_mb


# --------------------------------------------------------------------------------------------- ceiling


@dataclass
class Ceiling:
    bindings: int
    seconds: float
    threads: int
    errors: int
    create_seconds: float = math.nan  # creating the same pods beforehand, no scheduler running
    creators: int = 0
    # the same, but each Binding followed by the Scheduled event a scheduler posts (2 writes per pod)
    with_events_seconds: float = math.nan
    # control-plane process -> its CPU seconds during that Binding + event pass: what the two writes per pod
    # cost the API server and etcd, against which a scheduler's run shows the load its own reads add
    with_events_plane_cpu: dict[str, float] = field(default_factory=dict)

    @property
    def per_second(self) -> float:
        return self.bindings / self.seconds if self.seconds > 0 else math.nan

    @property
    def create_per_second(self) -> float:
        return self.bindings / self.create_seconds if self.create_seconds > 0 else math.nan

    @property
    def with_events_per_second(self) -> float:
        return self.bindings / self.with_events_seconds if self.with_events_seconds > 0 else math.nan

    def as_dict(self) -> dict[str, Any]:
        return {
            "bindings": self.bindings,
            "seconds": self.seconds,
            "threads": self.threads,
            "errors": self.errors,
            "bindings_per_second": self.per_second,
            "create_seconds": self.create_seconds,
            "creators": self.creators,
            "creates_per_second": self.create_per_second,
            "with_events_seconds": self.with_events_seconds,
            "bindings_with_events_per_second": self.with_events_per_second,
            "with_events_control_plane_cpu_seconds": dict(self.with_events_plane_cpu),
        }


def _scheduled_event(namespace: str, pod: str, node: str, i: int) -> bytes:
    """The events.k8s.io/v1 Event a scheduler posts for a bound pod (as pyscheduler's recorder does)."""
    now = time.time()
    return orjson.dumps(
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{pod}.{int(now * 1e9) + i:x}", "namespace": namespace},
            "eventTime": rfc3339_micro(now),
            "reportingController": "bench-ceiling",
            "reportingInstance": "bench-ceiling",
            "action": "Binding",
            "reason": "Scheduled",
            "type": "Normal",
            "regarding": {"kind": "Pod", "apiVersion": "v1", "namespace": namespace, "name": pod},
            "note": f"Successfully assigned {namespace}/{pod} to {node}",
        }
    )


def bind_ceiling(
    endpoint: Endpoint,
    namespace: str,
    pods: Sequence[str],
    nodes: Sequence[str],
    threads: int,
    with_events: bool = False,
) -> Ceiling:
    """Post a Binding for every (pending, unscheduled) pod, round-robin over ``nodes``; time it. With
    ``with_events``, each Binding is followed by the pod's Scheduled event, as a scheduler does."""
    jobs = [
        (
            f"/api/v1/namespaces/{namespace}/pods/{p}/binding",
            orjson.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": p},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": nodes[i % len(nodes)]},
                }
            ),
            _scheduled_event(namespace, p, nodes[i % len(nodes)], i) if with_events else b"",
        )
        for i, p in enumerate(pods)
    ]
    events_path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"

    def bind(conn: Conn, job: tuple[str, bytes, bytes]) -> str | None:
        status, data = conn.request("POST", job[0], job[1])
        if status != 201:
            return f"HTTP {status}: {data[:120]!r}"
        if job[2]:
            status, data = conn.request("POST", events_path, job[2])
            if status != 201:
                return f"event: HTTP {status}: {data[:120]!r}"
        return None

    t0 = time.monotonic()
    errors = run_parallel(endpoint, jobs, bind, threads)
    dt = time.monotonic() - t0
    return Ceiling(len(jobs) - len(errors), dt, threads, len(errors))
