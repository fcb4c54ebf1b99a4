"""Metrics parity with kube-scheduler 1.36, on the real control plane.

kube-scheduler and then pyscheduler each schedule the same workload (pods that fit, one that fits
nowhere, a gated one, a preemption) with leader election on; both ``/metrics`` are scraped and compared
family by family: every name kube-scheduler exposes must be exposed by pyscheduler or be one of the
documented deliberate absences (``pyscheduler.metrics.DELIBERATE_ABSENCES``, docs/metrics.md), and a
family both expose must carry the same label names and, for histograms, the same buckets. Both run with
the same feature gates (kube's defaults, or ``PARITY_FEATURE_GATES``), so their kubernetes_feature_enabled
rows must be equal; pyscheduler's asynchronous status patches and bindings must show as kube's API
dispatcher's call types.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from pyscheduler.metrics import DELIBERATE_ABSENCES, NOT_YET_EXPOSED
from pyscheduler.testing import make_pod
from pyscheduler.testing.cluster import LocalCluster, _set_pdeathsig, free_port
from pyscheduler.testing.daemon import SchedulerProcess
from pyscheduler.testing.kube import create, eventually, get_pod, https_getter, kube_scheduler_argv, node_of

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SCHEDULER = "parity-scheduler"

Families = dict[str, dict[str, Any]]
"""Family name -> {"type", "labels" (label names), "values" (label -> values), "buckets"}."""


def families(text: str) -> Families:
    """The metric families of a /metrics page that carry at least one sample (kube-scheduler prints
    nothing for a vector that has none, prometheus_client prints its HELP and TYPE)."""
    out: Families = {}
    for fam in text_string_to_metric_families(text):
        if not fam.samples:
            continue
        labels: set[str] = set()
        values: dict[str, set[str]] = {}
        buckets: set[str] = set()
        for s in fam.samples:
            for k, v in s.labels.items():
                if k == "le":
                    buckets.add(v)
                    continue
                labels.add(k)
                values.setdefault(k, set()).add(v)
        name = fam.name + "_total" if fam.type == "counter" else fam.name
        out[name] = {"type": fam.type, "labels": labels, "values": values, "buckets": buckets}
    return out


def _config(lease: str, kubeconfig: Path | None) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {
            "leaderElect": True,
            "resourceName": lease,
            "resourceNamespace": "kube-system",
            "leaseDuration": "15s",
            "renewDeadline": "10s",
            "retryPeriod": "2s",
        },
        "profiles": [{"schedulerName": SCHEDULER}],
    }
    if kubeconfig is not None:
        cfg["clientConnection"] = {"kubeconfig": str(kubeconfig)}
    return cfg


@contextlib.contextmanager
def kube_scheduler(cluster: LocalCluster, lease: str) -> Iterator[Callable[[], str]]:
    """The real kube-scheduler, its /metrics readable without credentials (always-allowed path)."""
    d = Path(tempfile.mkdtemp(prefix="parity-kube-"))
    (d / "config.yaml").write_text(yaml.safe_dump(_config(lease, cluster.kubeconfig)))
    port = free_port()
    log = d / "kube-scheduler.log"
    argv = kube_scheduler_argv(cluster, d / "config.yaml", port, os.environ.get("PARITY_FEATURE_GATES", ""))
    get = https_getter(port)

    with open(log, "ab") as f:
        proc = subprocess.Popen(
            argv, stdout=f, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_set_pdeathsig
        )
    try:

        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"kube-scheduler exited: {log.read_text()[-3000:]}")
            with contextlib.suppress(OSError, urllib.error.URLError):
                return get("/readyz") == "ok"
            return False

        eventually(ready, timeout=60, what="kube-scheduler ready")
        yield lambda: get("/metrics")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def _gates_flag() -> list[str]:
    """PARITY_FEATURE_GATES (e.g. ``SchedulerAsyncAPICalls=true``, which makes kube-scheduler show its API
    dispatcher's figures): the same --feature-gates for both schedulers."""
    gates = os.environ.get("PARITY_FEATURE_GATES")
    return [f"--feature-gates={gates}"] if gates else []


def _ensure_priority_classes(cluster: LocalCluster) -> None:
    for name, value in (("parity-low", 10), ("parity-high", 1000)):
        cluster.request(
            "POST",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )


def workload(cluster: LocalCluster, ns: str, scrape: Callable[[], str]) -> str:
    """Two 2-CPU nodes filled by four low-priority pods, then a high-priority pod that preempts one, a
    pod that fits nowhere and a gated pod. Returns the /metrics page once it all happened."""
    _ensure_priority_classes(cluster)
    cluster.create_nodes(2, prefix=f"{ns}-n", cpu="2", memory="8Gi", labels={"pool": ns})

    def pod(name: str) -> Any:
        return make_pod(name, ns).scheduler(SCHEDULER).node_selector({"pool": ns})

    for i in range(4):
        create(cluster, pod(f"low-{i}").req(cpu="900m").priority_class("parity-low").priority(10).json())
    eventually(lambda: all(node_of(cluster, ns, f"low-{i}") for i in range(4)), what="low pods bound")
    create(cluster, pod("huge").req(cpu="100").json())
    create(cluster, pod("gated").gate("example.com/wait").json())
    create(cluster, pod("high").req(cpu="1").priority_class("parity-high").priority(1000).json())

    def preempted() -> bool:
        p = get_pod(cluster, ns, "high")
        return bool(p["status"].get("nominatedNodeName") or p["spec"].get("nodeName"))

    eventually(preempted, timeout=60, what="high pod nominated")
    eventually(
        lambda: 'result="unschedulable"' in scrape() and "scheduler_preemption_victims_bucket" in scrape(),
        timeout=30,
        what="unschedulable attempts and preemption victims recorded",
    )
    # Plugin timings are sampled (10% of cycles and PreEnqueue runs, in both schedulers): gated pods
    # (a PreEnqueue run each, nothing to bind) until some were.
    for i in range(200):
        if "scheduler_plugin_execution_duration_seconds_bucket" in scrape():
            break
        create(cluster, pod(f"gated-{i}").gate("example.com/wait").json())
        time.sleep(0.05)
    time.sleep(3)  # one more flush of the gauges kube-scheduler updates asynchronously
    return scrape()


def _kube_page(cluster: LocalCluster, ns: str) -> str:
    with kube_scheduler(cluster, f"parity-kube-{ns}") as scrape:
        return workload(cluster, ns, scrape)


def _py_page(cluster: LocalCluster, ns: str) -> str:
    sp = SchedulerProcess(
        None,
        _config(f"parity-py-{ns}", None),
        leader_elect=True,
        env={"KUBECONFIG": str(cluster.kubeconfig)},
        extra_args=(f"--kubeconfig={cluster.kubeconfig}", "--log-level=info", *_gates_flag()),
        name="parity-py",
    )
    sp.start()
    try:
        return workload(cluster, ns, sp.metrics)
    finally:
        sp.stop()


def test_pyscheduler_exposes_kube_scheduler_metric_names_labels_and_buckets(
    cluster: LocalCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    suffix = f"{os.getpid() % 10000}"
    pages = {}
    for who, fn in (("kube", _kube_page), ("py", _py_page)):
        ns = f"parity-{who}-{suffix}"
        cluster.api(
            "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
        try:
            pages[who] = fn(cluster, ns)
        finally:
            cluster.request("DELETE", f"/api/v1/namespaces/{ns}")
        # the next scheduler must not see this one's leftover pending pods (same schedulerName)
        gone = f"/api/v1/namespaces/{ns}"
        eventually(lambda: cluster.request("GET", gone)[0] == 404, timeout=120, what=f"{gone} deleted")  # noqa: B023
    if os.environ.get("PARITY_DUMP"):  # keep both pages for a look by hand
        for who, text in pages.items():
            Path(os.environ["PARITY_DUMP"], f"{who}.metrics").write_text(text)
    kube, py = families(pages["kube"]), families(pages["py"])

    present = sorted(n for n in kube if n in py)
    absent = sorted(n for n in kube if n not in py)
    lines = [f"metrics parity: {len(present)} of {len(kube)} kube-scheduler metric names present"]
    not_go = [n for n in kube if not n.startswith("go_")]
    lines.append(f"  without the Go runtime's go_*: {sum(n in py for n in not_go)} of {len(not_go)}")
    sched = [n for n in kube if n.startswith("scheduler_")]
    lines.append(
        f"  scheduler_*: {sum(n in py for n in sched)} of {len(sched)}; absent by design: "
        f"{len([n for n in absent if n in DELIBERATE_ABSENCES or _family_absence(n)])}"
    )
    for n in present:
        k, p = kube[n], py[n]
        for label in sorted(k["labels"] & p["labels"]):
            if k["values"][label] != p["values"][label]:
                lines.append(
                    f"  {n}{{{label}}}: kube {sorted(k['values'][label])} py {sorted(p['values'][label])}"
                )
    with capsys.disabled():
        print("\n" + "\n".join(lines))

    undocumented = [
        n
        for n in absent
        if n not in DELIBERATE_ABSENCES and n not in NOT_YET_EXPOSED and not _family_absence(n)
    ]
    assert not undocumented, f"kube-scheduler exposes these, pyscheduler does not: {undocumented}"
    wrong_type = [
        f"{n}: kube {kube[n]['type']} py {py[n]['type']}" for n in present if kube[n]["type"] != py[n]["type"]
    ]
    assert not wrong_type
    wrong_labels = [
        f"{n}: kube {sorted(kube[n]['labels'])} py {sorted(py[n]['labels'])}"
        for n in present
        if kube[n]["labels"] != py[n]["labels"]
    ]
    assert not wrong_labels
    wrong_buckets = [
        f"{n}: kube {sorted(kube[n]['buckets'], key=float)} py {sorted(py[n]['buckets'], key=float)}"
        for n in present
        if {float(b) for b in kube[n]["buckets"]} != {float(b) for b in py[n]["buckets"]}
    ]
    assert not wrong_buckets

    # Both ran with 1.36's default gates: the same gates, stages and values.
    assert feature_rows(pages["py"]) == feature_rows(pages["kube"])
    # kube-scheduler shows its dispatcher's figures only with SchedulerAsyncAPICalls on (off by default);
    # pyscheduler's status patches and bindings are always asynchronous, and always shown.
    calls = py.get("scheduler_async_api_call_execution_total")
    assert calls is not None, "no scheduler_async_api_call_execution_total after binding pods"
    assert calls["values"]["call_type"] == {"pod_binding", "pod_status_patch"}
    assert "success" in calls["values"]["result"]
    assert py["scheduler_async_api_call_execution_duration_seconds"]["labels"] == {"call_type", "result"}
    assert py["scheduler_pending_async_api_calls"]["values"]["call_type"] == {
        "pod_binding",
        "pod_status_patch",
    }


def feature_rows(text: str) -> dict[str, tuple[str, float]]:
    """kubernetes_feature_enabled: gate -> (stage, value)."""
    return {
        s.labels["name"]: (s.labels["stage"], s.value)
        for fam in text_string_to_metric_families(text)
        if fam.name == "kubernetes_feature_enabled"
        for s in fam.samples
    }


def _family_absence(name: str) -> bool:
    return any(name.startswith(prefix) for prefix in DELIBERATE_ABSENCES if prefix.endswith("_"))
