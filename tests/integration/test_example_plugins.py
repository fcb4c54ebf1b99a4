"""The example plugins, enabled by configuration in ``pyscheduler run`` against the real control plane.

Two daemons: one with a profile per example (LabelMatch, VolumeReady, BindingNotifier, NetworkTraffic),
and one whose only profile runs Coscheduling (it replaces the queueSort plugin, which every profile of a
scheduler must share). As in test_scheduler.py, each test makes its own node pool labelled ``pool=<ns>``
and pins its pods there with a nodeSelector.

NetworkTraffic is tested against a real Prometheus server (Debian's ``prometheus`` package,
``apt-get install -y --no-install-recommends prometheus``); the test is skipped when the binary is
missing. It scrapes a tiny exporter on loopback that serves ``node_network_transmit_bytes_total`` for the
pool's fake nodes.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pyscheduler.framework.interfaces import NodeScore
from pyscheduler.plugins.examples.label_match import DEFAULT_LABEL
from pyscheduler.plugins.examples.network_traffic import NetworkTraffic, NetworkTrafficArgs
from pyscheduler.plugins.examples.network_traffic.prometheus import PrometheusClient, PrometheusError
from pyscheduler.testing import make_handle, snapshot_of
from pyscheduler.testing.builders import PodBuilder, make_cycle_state, make_node, make_node_info, make_pod
from pyscheduler.testing.cluster import LocalCluster, _set_pdeathsig, free_port
from pyscheduler.testing.daemon import SchedulerProcess
from pyscheduler.testing.kube import (
    create,
    events_for,
    eventually,
    get_pod,
    list_pods,
    node_of,
    scheduled_condition,
)

LABEL_MATCH = "py-label-match"
VOLUME_READY = "py-volume-ready"
NOTIFY = "py-notify"
NETWORK = "py-network"
GANG = "py-gang"
GANG_TIMEOUT = 10
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
TRAFFIC_WARNING = "prometheus query failed; scoring without NetworkTraffic"


def _config(profiles: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": profiles,
    }


# ------------------------------------------------------------------------------------------ fixtures


class _Webhook(http.server.BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).received.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def _serve(handler: type[http.server.BaseHTTPRequestHandler]) -> http.server.ThreadingHTTPServer:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, args=(0.1,), daemon=True).start()
    return srv


@pytest.fixture(scope="module")
def webhook() -> Iterator[type[_Webhook]]:
    handler = type("Webhook", (_Webhook,), {"received": []})
    srv = _serve(handler)
    handler.url = f"http://127.0.0.1:{srv.server_address[1]}/bindings"  # type: ignore[attr-defined]
    yield handler
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module")
def prometheus_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def daemon(cluster: LocalCluster, webhook: Any, prometheus_port: int) -> Iterator[SchedulerProcess]:
    config = _config(
        [
            {
                "schedulerName": LABEL_MATCH,
                "plugins": {
                    "filter": {"enabled": [{"name": "LabelMatch"}]},
                    "postFilter": {"enabled": [{"name": "LabelMatch"}]},
                },
            },
            {
                # VolumeBinding would reject the unbound claim in PreFilter; here VolumeReady is the gate.
                "schedulerName": VOLUME_READY,
                "plugins": {
                    "preBind": {"enabled": [{"name": "VolumeReady"}]},
                    "multiPoint": {"disabled": [{"name": "VolumeBinding"}]},
                },
            },
            {
                "schedulerName": NOTIFY,
                "plugins": {"postBind": {"enabled": [{"name": "BindingNotifier"}]}},
                "pluginConfig": [
                    {"name": "BindingNotifier", "args": {"webhookURL": webhook.url, "timeoutSeconds": 2}}
                ],
            },
            {
                "schedulerName": NETWORK,
                "plugins": {
                    "preScore": {"enabled": [{"name": "NetworkTraffic"}]},
                    "score": {"enabled": [{"name": "NetworkTraffic", "weight": 5}]},
                },
                "pluginConfig": [
                    {
                        "name": "NetworkTraffic",
                        "args": {
                            "prometheusAddress": f"http://127.0.0.1:{prometheus_port}",
                            "timeoutSeconds": 1,
                            "cacheSeconds": 1,
                        },
                    }
                ],
            },
        ]
    )
    with SchedulerProcess(cluster.kubeconfig, config, name="examples") as d:
        yield d
        assert d.alive(), f"the daemon died during the tests:\n{d.log_tail()}"


@pytest.fixture(scope="module")
def gang_daemon(cluster: LocalCluster) -> Iterator[SchedulerProcess]:
    config = _config(
        [
            {
                "schedulerName": GANG,
                "plugins": {
                    "multiPoint": {
                        "enabled": [{"name": "Coscheduling"}],
                        "disabled": [{"name": "PrioritySort"}],
                    }
                },
                "pluginConfig": [
                    {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": GANG_TIMEOUT}}
                ],
            }
        ]
    )
    with SchedulerProcess(cluster.kubeconfig, config, name="gang") as d:
        yield d
        assert d.alive(), f"the gang daemon died during the tests:\n{d.log_tail()}"


def pod(ns: str, name: str, scheduler: str) -> PodBuilder:
    return make_pod(name, ns).scheduler(scheduler).node_selector({"pool": ns})


def bound(cluster: LocalCluster, ns: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in list_pods(cluster, ns)}


def failed_note(cluster: LocalCluster, ns: str, name: str, *needles: str) -> str:
    """The pod's FailedScheduling note, or its PodScheduled condition's message, that contains every needle
    (polls). A pod that fails again and again has one event whose note stays the first failure's (a series,
    as kube-scheduler's recorder makes it); its latest reason is in the condition."""

    def find() -> str:
        notes = [str(e.get("note", "")) for e in events_for(cluster, ns, name, "FailedScheduling")]
        cond = scheduled_condition(get_pod(cluster, ns, name)) or {}
        for note in [*notes, str(cond.get("message", ""))]:
            if all(n in note for n in needles):
                return note
        return ""

    return eventually(find, timeout=20, what=f"FailedScheduling event of {name} with {needles}")


def merge_patch(cluster: LocalCluster, path: str, body: dict[str, Any]) -> Any:
    status, out = cluster.request("PATCH", path, body, content_type="application/merge-patch+json")
    assert status == 200, out
    return out


# ------------------------------------------------------------------------------------------ LabelMatch


def test_label_match_places_labelled_pods_only_on_matching_nodes(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess
) -> None:
    gpu = f"{ns}-gpu"
    gpu_nodes = cluster.create_nodes(2, prefix=f"{ns}-gpu", labels={"pool": ns, DEFAULT_LABEL: gpu})
    (plain,) = cluster.create_nodes(1, prefix=f"{ns}-plain", labels={"pool": ns})
    for i in range(4):
        create(cluster, pod(ns, f"g{i}", LABEL_MATCH).label(DEFAULT_LABEL, gpu).json())
    create(cluster, pod(ns, "free", LABEL_MATCH).json())
    eventually(
        lambda: len(bound(cluster, ns)) == 5 and all(bound(cluster, ns).values()),
        timeout=20,
        what="labelled and unlabelled pods bound",
    )
    placed = bound(cluster, ns)
    assert {placed[f"g{i}"] for i in range(4)} <= set(gpu_nodes), placed
    assert placed["free"] in (*gpu_nodes, plain)

    # A value no node has: pending, and the event says why and what to do.
    tpu = f"{ns}-tpu"
    create(cluster, pod(ns, "lost", LABEL_MATCH).label(DEFAULT_LABEL, tpu).json())
    note = failed_note(
        cluster,
        ns,
        "lost",
        f"3 node(s) didn't have label {DEFAULT_LABEL}={tpu}",
        f"no node has label {DEFAULT_LABEL}={tpu}; label a node or remove the label from the pod",
    )
    assert note.startswith("0/")
    assert node_of(cluster, ns, "lost") == ""

    # Labelling a node with the value lets the pod in (LabelMatch's queueing hint on node updates).
    merge_patch(cluster, f"/api/v1/nodes/{plain}", {"metadata": {"labels": {DEFAULT_LABEL: tpu}}})
    eventually(
        lambda: node_of(cluster, ns, "lost") == plain, timeout=20, what="pending pod placed after relabel"
    )


# ------------------------------------------------------------------------------------------ VolumeReady


def test_volume_ready_holds_a_pod_until_its_claim_is_bound(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess
) -> None:
    (node,) = cluster.create_nodes(1, prefix=f"{ns}-n", labels={"pool": ns})
    pv_name = f"{ns}-pv"
    cluster.api(
        "POST",
        "/api/v1/persistentvolumes",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": pv_name},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "hostPath": {"path": f"/tmp/{pv_name}"},
                "claimRef": {"namespace": ns, "name": "data"},
            },
        },
    )
    try:
        # Pre-bound to the PV, but no PV controller runs here: the claim stays Pending until patched.
        cluster.api(
            "POST",
            f"/api/v1/namespaces/{ns}/persistentvolumeclaims",
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data", "namespace": ns},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                    "storageClassName": "",
                    "volumeName": pv_name,
                },
            },
        )
        create(cluster, pod(ns, "db", VOLUME_READY).pvc("data").json())
        failed_note(cluster, ns, "db", 'persistentvolumeclaim "data" is not bound (phase Pending)')
        assert node_of(cluster, ns, "db") == ""

        merge_patch(
            cluster,
            f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data/status",
            {"status": {"phase": "Bound"}},
        )
        eventually(
            lambda: node_of(cluster, ns, "db") == node, timeout=20, what="pod bound once its claim is Bound"
        )
    finally:
        cluster.request("DELETE", f"/api/v1/persistentvolumes/{pv_name}")


# ------------------------------------------------------------------------------------------ BindingNotifier


def test_binding_notifier_posts_each_binding(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess, webhook: Any
) -> None:
    (node,) = cluster.create_nodes(1, prefix=f"{ns}-n", labels={"pool": ns})
    created = create(cluster, pod(ns, "told", NOTIFY).json())
    eventually(lambda: node_of(cluster, ns, "told") == node, timeout=20)

    def received() -> dict[str, Any] | None:
        return next(
            (r for r in webhook.received if r.get("namespace") == ns and r.get("pod") == "told"), None
        )

    got = eventually(received, timeout=10, what="webhook notified")
    assert got is not None
    assert got["node"] == node
    assert got["uid"] == created["metadata"]["uid"]
    assert got["scheduler"] == NOTIFY
    sent = datetime.fromisoformat(got["time"].replace("Z", "+00:00")).timestamp()
    assert abs(sent - time.time()) < 60


# ------------------------------------------------------------------------------------------ NetworkTraffic


def _exporter(series: dict[str, float]) -> http.server.ThreadingHTTPServer:
    lines = [
        "# HELP node_network_transmit_bytes_total Network device statistic transmit_bytes.",
        "# TYPE node_network_transmit_bytes_total counter",
    ]
    for node, value in series.items():
        lines.append(f'node_network_transmit_bytes_total{{device="eth0",instance="{node}"}} {value:g}')
        lines.append(f'node_network_transmit_bytes_total{{device="lo",instance="{node}"}} 1e+18')  # not eth0
    body = ("\n".join(lines) + "\n").encode()

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    return _serve(Metrics)


class _Prometheus:
    """A real Prometheus scraping one target every second, on loopback, with its data in a temp dir."""

    def __init__(self, port: int, target: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="prometheus-"))
        cfg = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [
                {"job_name": "fake-nodes", "honor_labels": True, "static_configs": [{"targets": [target]}]}
            ],
        }
        (self.dir / "prometheus.yml").write_text(json.dumps(cfg))  # JSON is YAML
        self.address = f"http://127.0.0.1:{port}"
        self.log = open(self.dir / "prometheus.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={self.dir / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.dir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_set_pdeathsig,  # dies with the test process, whatever happens to it
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self) -> str:
        return (self.dir / "prometheus.log").read_text(errors="replace")[-2000:]


@pytest.mark.skipif(
    not os.access(PROMETHEUS, os.X_OK),
    reason="needs the prometheus binary: apt-get install -y --no-install-recommends prometheus",
)
def test_network_traffic_prefers_the_quiet_node_and_survives_prometheus_going_away(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess, prometheus_port: int
) -> None:
    busy, quiet = cluster.create_nodes(2, prefix=f"{ns}-n", labels={"pool": ns})
    exporter = _exporter({busy: 5e12, quiet: 1e3})
    prom = _Prometheus(prometheus_port, f"127.0.0.1:{exporter.server_address[1]}")
    try:
        client = PrometheusClient(prom.address)
        query = 'node_network_transmit_bytes_total{device="eth0"}'

        def scraped() -> bool:
            if prom.proc.poll() is not None:
                raise AssertionError(f"prometheus exited:\n{prom.log_tail()}")
            try:
                return {s.labels.get("instance") for s in client.query(query, 1)} >= {busy, quiet}
            except PrometheusError:
                return False

        eventually(scraped, timeout=20, what="prometheus scraped both nodes")

        # The plugin itself, against the real server: the quiet node scores 100, the busy one 0.
        infos = [make_node_info(make_node(n)) for n in (busy, quiet)]
        plugin = NetworkTraffic(
            NetworkTrafficArgs(prom.address, timeout_seconds=2), make_handle(snapshot_of(*infos))
        )
        state, p = make_cycle_state(), make_pod("probe").obj()
        assert plugin.pre_score(state, p, infos) is None
        scores = [NodeScore(ni.name, plugin.score(state, p, ni)[0]) for ni in infos]
        plugin.normalize_score(state, p, scores)
        assert {s.name: s.score for s in scores} == {busy: 0, quiet: 100}

        # The daemon's profile puts pods on the quiet node.
        for i in range(2):
            create(cluster, pod(ns, f"w{i}", NETWORK).req(cpu="100m").json())
        eventually(lambda: len(bound(cluster, ns)) == 2 and all(bound(cluster, ns).values()), timeout=20)
        assert set(bound(cluster, ns).values()) == {quiet}, bound(cluster, ns)

        # Prometheus goes away: PreScore skips, the other plugins place the pod, a warning is logged.
        prom.stop()
        time.sleep(1.5)  # past the plugin's cacheSeconds (1): the next cycle must ask Prometheus again
        create(cluster, pod(ns, "after", NETWORK).req(cpu="100m").json())
        eventually(
            lambda: node_of(cluster, ns, "after") in (busy, quiet),
            timeout=20,
            what="pod scheduled without Prometheus",
        )
        warning = eventually(
            lambda: next((line for line in daemon.log_lines() if line.get("event") == TRAFFIC_WARNING), None),
            timeout=10,
            what="NetworkTraffic warning in the daemon log",
        )
        assert warning is not None and warning["level"] == "warning"
        assert warning["prometheus"] == prom.address
    finally:
        prom.cleanup()
        exporter.shutdown()
        exporter.server_close()


# ------------------------------------------------------------------------------------------ Coscheduling


def member(ns: str, name: str, group: str, min_available: int) -> PodBuilder:
    return (
        pod(ns, name, GANG)
        .label("scheduling.x-k8s.io/pod-group", group)
        .annotation("scheduling.x-k8s.io/min-available", str(min_available))
        .req(cpu="500m")
    )


def test_coscheduling_binds_a_complete_gang(
    cluster: LocalCluster, ns: str, gang_daemon: SchedulerProcess
) -> None:
    cluster.create_nodes(3, prefix=f"{ns}-n", labels={"pool": ns}, cpu="2")
    for i in range(2):
        create(cluster, member(ns, f"m{i}", "trio", 3).json())
    for i in range(2):  # two of three: rejected at once, not held
        failed_note(cluster, ns, f"m{i}", f'pod group "{ns}/trio" has', "fewer than its min-available 3")
    assert not any(bound(cluster, ns).values())
    # The last member arrives: it waits in Permit and pulls its siblings out of the unschedulable pool
    # (no cluster event would), so the gang binds together at once.
    create(cluster, member(ns, "m2", "trio", 3).json())
    eventually(
        lambda: len(bound(cluster, ns)) == 3 and all(bound(cluster, ns).values()),
        timeout=20,
        what="the whole gang bound",
    )


def test_coscheduling_never_binds_a_gang_that_cannot_reach_min_available(
    cluster: LocalCluster, ns: str, gang_daemon: SchedulerProcess
) -> None:
    cluster.create_nodes(3, prefix=f"{ns}-n", labels={"pool": ns}, cpu="2")
    for i in range(3):
        create(cluster, member(ns, f"m{i}", "short", 4).json())
    for i in range(3):
        note = failed_note(
            cluster, ns, f"m{i}", f'pod group "{ns}/short" has', "fewer than its min-available 4"
        )
        assert note.startswith("0/")
    assert not any(bound(cluster, ns).values()), bound(cluster, ns)


def test_coscheduling_releases_a_waiting_member_when_its_gang_times_out(
    cluster: LocalCluster, ns: str, gang_daemon: SchedulerProcess
) -> None:
    cluster.create_nodes(2, prefix=f"{ns}-n", labels={"pool": ns}, cpu="2")
    create(cluster, member(ns, "fits", "pair", 2).json())
    # The sibling can never fit (no node has the label), so "fits" waits in Permit until the timeout.
    create(cluster, member(ns, "stuck", "pair", 2).node_selector({"missing": "yes"}).json())
    note = failed_note(
        cluster, ns, "fits", f"rejected due to timeout after waiting {GANG_TIMEOUT}s at plugin Coscheduling"
    )
    assert note
    assert bound(cluster, ns) == {"fits": "", "stuck": ""}
