"""Client CPU per API write: the daemon's write path against plain urllib3, on a real API server.

Design
------
Every pod the daemon binds costs two writes (the Binding and its Scheduled event), and on a small
machine the client's share of each is a visible part of the daemon's CPU. This benchmark starts one
``LocalCluster`` (etcd and kube-apiserver, nothing else), makes a namespace, and posts events.k8s.io/v1
Events from ``--threads`` threads, ``--writes`` per run, through each client in turn:

- ``inprocess``: ``pyscheduler.client.api.Api`` as the daemon builds it (``client/http1.py``);
- ``worker``: the same with ``http_worker=True`` (``--http-worker``: the exchange sent from a child);
- ``urllib3``: one ``urllib3.PoolManager`` with the same TLS settings, ``urlopen`` on the host's pool,
  retries off, JSON by orjson: the daemon's path before session 16, kept as the reference.

The figure is the benchmark process's CPU (utime + stime, plus the HTTP worker child's for
``worker``) per write, and writes per second; runs alternate between the clients, ``--repeat`` rounds,
medians reported. The API server's CPU is not counted (it is the same work for every client).

    python -m bench.client_writes                      # 2,000 writes, 32 threads, 3 rounds
    python -m bench.client_writes --clients inprocess,urllib3 --writes 5000
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import urllib3

from bench.measure import _cpu_of
from pyscheduler.client.api import Api
from pyscheduler.client.connection import load_configuration
from pyscheduler.client.transport import make_pool
from pyscheduler.testing.cluster import LocalCluster

CLIENTS = ("inprocess", "worker", "urllib3")
NAMESPACE = "client-writes"
_seq = itertools.count()


def _cpu(extra_pids: list[int]) -> float:
    """This process's CPU and that of the given children (not the control plane's, also children)."""
    # a child that is gone reads None: its CPU is lost with it
    return sum(_cpu_of(p) or 0.0 for p in [os.getpid(), *extra_pids])


def _event() -> dict[str, Any]:
    i = next(_seq)
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"e{i}", "namespace": NAMESPACE},
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": NAMESPACE, "name": f"p{i}", "uid": "u"},
        "reason": "Scheduled",
        "note": f"Successfully assigned {NAMESPACE}/p{i} to node-{i % 500}",
        "action": "Binding",
        "type": "Normal",
        "reportingController": "bench",
        "reportingInstance": "bench-1",
        "eventTime": "2026-11-27T00:00:00.000000Z",
    }


def _urllib3_poster(cfg: Any) -> Callable[[], None]:
    pool = make_pool(cfg, 64).connection_from_url(cfg.host)
    auth = cfg.auth_settings().get("BearerToken") or {}
    headers = {"Accept": "application/json", "Content-Type": "application/json", "User-Agent": "bench"}
    if auth.get("value"):
        headers["Authorization"] = auth["value"]
    path = f"/apis/events.k8s.io/v1/namespaces/{NAMESPACE}/events"
    timeout = urllib3.Timeout(connect=10, read=30)

    def post() -> None:
        r = pool.urlopen(
            "POST", path, body=orjson.dumps(_event()), headers=headers, timeout=timeout, retries=False
        )
        if r.status != 201:
            raise RuntimeError(f"HTTP {r.status}: {r.data[:200]!r}")
        orjson.loads(r.data)

    return post


def _api_poster(api: Api) -> Callable[[], None]:
    def post() -> None:
        api.create_event(_event())

    return post


def _run(post: Callable[[], None], writes: int, threads: int, pids: list[int]) -> tuple[float, float]:
    with ThreadPoolExecutor(threads) as ex:  # warm: connections open, code paths hot
        list(ex.map(lambda _: post(), range(threads * 2)))
    c0, t0 = _cpu(pids), time.monotonic()
    with ThreadPoolExecutor(threads) as ex:
        list(ex.map(lambda _: post(), range(writes)))
    return (_cpu(pids) - c0) / writes * 1000.0, writes / (time.monotonic() - t0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.client_writes", description=__doc__.split("\n")[0])
    p.add_argument("--clients", default=",".join(CLIENTS), help=f"comma-separated, of {', '.join(CLIENTS)}")
    p.add_argument("--writes", type=int, default=2000)
    p.add_argument("--threads", type=int, default=32)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args(argv)
    chosen = [c.strip() for c in a.clients.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in CLIENTS]
    if unknown:
        p.error(f"unknown client(s) {unknown}; choose from {', '.join(CLIENTS)}")

    cluster = LocalCluster(with_kwok=False, name="client-writes")
    cluster.start()
    made: list[Api] = []
    try:
        cfg = load_configuration(str(cluster.kubeconfig))
        admin = Api(cfg, qps=0, burst=0)
        made.append(admin)
        admin.create("Namespace", None, {"metadata": {"name": NAMESPACE}})
        posters: dict[str, tuple[Callable[[], None], list[int]]] = {}
        for c in chosen:
            if c == "urllib3":
                posters[c] = (_urllib3_poster(cfg), [])
                continue
            api = Api(cfg, qps=0, burst=0, http_worker=c == "worker")
            made.append(api)
            pid = api.http_worker_pid
            posters[c] = (_api_poster(api), [pid] if pid else [])
        results: dict[str, list[tuple[float, float]]] = {c: [] for c in chosen}
        for r in range(a.repeat):
            for c in chosen if r % 2 == 0 else list(reversed(chosen)):
                post, pids = posters[c]
                ms, rate = _run(post, a.writes, a.threads, pids)
                results[c].append((ms, rate))
                print(f"round {r + 1} {c:10s} {ms:.3f} ms CPU per write, {rate:,.0f} writes/s", flush=True)
        print(
            f"\nclient CPU per write, {a.writes} Event POSTs from {a.threads} threads, medians of {a.repeat}:"
        )
        for c in chosen:
            ms = statistics.median(x for x, _ in results[c])
            rate = statistics.median(y for _, y in results[c])
            print(f"  {c:10s} {ms:.3f} ms/write  {rate:,.0f} writes/s")
    finally:
        for api in made:
            api.close()
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
