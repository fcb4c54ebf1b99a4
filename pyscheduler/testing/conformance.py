"""``make conformance``: Kubernetes' own ``[sig-scheduling]`` e2e specs, kube-scheduler as the control.

``python -m pyscheduler.testing.conformance [--focus RE] [--skip RE] [--scheduler kube|py|both]
[--nodes N] [--out DIR]``

Design
------
The specs are upstream's (``k8s.io/kubernetes/test/e2e/scheduling`` at the pinned release), compiled once
into a test binary by ``e2e/conformance/build.sh``. For each scheduler the runner starts a *fresh*
``LocalCluster``, so nothing one run leaves behind reaches the other:

    etcd + kube-apiserver          with the alpha Workload/PodGroup API on (GenericWorkload,
                                   scheduling.k8s.io/v1alpha2), as the Workload specs need
    kube-controller-manager        the controllers the specs rely on (CONTROLLERS: root CA publisher,
                                   replication controller, PV binder, pod GC, disruption, ...)
    KWOK                           ``testing/kwok/conformance-stages.yaml``: a fake kubelet that keeps a
                                   terminating pod while its preStop hook would run and deletes it only
                                   through its UID, keeps extended resources a spec patches into a node
    nodes                          NODES fake nodes in two zones, with ephemeral-storage, an InternalIP
                                   and the status fields a kubelet reports
    the scheduler                  kube-scheduler 1.36.3 as ``default-scheduler``, or pyscheduler started
                                   as a user would: ``pyscheduler run`` with the manifests' configuration
                                   (profile renamed ``default-scheduler``), the manifests' RBAC through a
                                   ServiceAccount token (not admin), leader election on

then runs the binary (``--ginkgo.focus=\\[sig-scheduling\\]``, ``--num-nodes``) and keeps its JUnit report
under ``<out>/<scheduler>/``. The specs in SKIPS are skipped by name, each with its reason (also in
docs/conformance.md). At the end: a table (spec, kube, py, seconds) and, last, exactly
``conformance: pyscheduler P/N passed, kube-scheduler K/N passed`` (N: specs that ran). The exit status
is non-zero when a spec passes with kube-scheduler and fails with pyscheduler, or P < K.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pyscheduler.testing.cluster import (
    KCM_CONTROLLERS,
    REPO_ROOT,
    LocalCluster,
    _set_pdeathsig,
    free_port,
    stop_process_group,
)
from pyscheduler.testing.daemon import SchedulerProcess

BUILD_SH = REPO_ROOT / "e2e" / "conformance" / "build.sh"
MANIFESTS = REPO_ROOT / "manifests"
STAGES = Path(__file__).with_name("kwok") / "conformance-stages.yaml"
DEFAULT_OUT = REPO_ROOT / ".conformance"
SCHEDULER_NAMESPACE = "py-scheduler"
SERVICE_ACCOUNT = "py-scheduler"
FOCUS = r"\[sig-scheduling\]"
NODES = 4
ZONES = ("zone-a", "zone-b")

# The controllers a real cluster runs that the specs rely on, on top of LocalCluster's defaults.
CONTROLLERS = (
    *KCM_CONTROLLERS,
    "root-ca-certificate-publisher-controller",  # kube-root-ca.crt in each test namespace
    "replicationcontroller-controller",  # the RC specs (hostPort, zone spreading, priorities)
    "persistentvolume-binder-controller",  # the PVC node-affinity spec
    "pod-garbage-collector-controller",  # pods left on deleted nodes
    "endpoints-controller",
    "endpointslice-controller",
    "podgroup-protection-controller",  # removes a deleted PodGroup's protection finalizer (Workload specs)
)

# The alpha Workload/PodGroup API (scheduling.k8s.io/v1alpha2), for the two Workload specs; the
# controller manager needs the gate too for its podgroup-protection controller.
FEATURE_GATES = "--feature-gates=GenericWorkload=true"
APISERVER_ARGS = (FEATURE_GATES, "--runtime-config=scheduling.k8s.io/v1alpha2=true")
CONTROLLER_MANAGER_ARGS = (FEATURE_GATES,)

# Specs skipped by name for both schedulers: name (a substring of the spec's full text) -> why.
# docs/conformance.md repeats each one with its reason.
SKIPS: dict[str, str] = {}

SCHEDULERS = {"kube": "kube-scheduler", "py": "pyscheduler"}


class ConformanceError(RuntimeError):
    pass


def log(msg: str) -> None:
    print(f"conformance: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- binary
def e2e_binary() -> Path:
    """The cached e2e test binary, built first if needed (its progress goes to stderr)."""
    env = os.environ.get("PYSCHEDULER_CONFORMANCE_BIN")
    if env:
        return Path(env)
    proc = subprocess.run(["bash", str(BUILD_SH)], stdout=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        raise ConformanceError(f"building the e2e binary failed (exit {proc.returncode}); see above")
    return Path(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------- cluster
def node_body(i: int, name: str) -> dict[str, Any]:
    """A fake node with the status a kubelet reports: capacity including ephemeral-storage, an InternalIP
    and a hostname address, node info, the pressure conditions, the kubelet endpoint."""
    resources = {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    conditions = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID"),
        ("Ready", "True", "KubeletReady"),
    ]
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": ZONES[i % len(ZONES)],
                "topology.kubernetes.io/region": "local",
                "type": "kwok",
            },
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.1.{i + 1}"},
                {"type": "Hostname", "address": name},
            ],
            "conditions": [
                {
                    "type": t,
                    "status": s,
                    "reason": r,
                    "message": "kwok",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
                for t, s, r in conditions
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "v1.36.3",
                "kubeProxyVersion": "v1.36.3",
                "containerRuntimeVersion": "containerd://2.0.0",
                "kernelVersion": "6.1.0",
                "osImage": "kwok",
                "bootID": "",
                "machineID": name,
                "systemUUID": name,
            },
            "phase": "Running",
        },
    }


# The per-node system pods upstream's node-health wait (e2enode.WaitForTotalHealthy, in the
# SchedulerPriorities and Multi-AZ set-ups) looks for on every schedulable node; without them each of
# those specs waits out its one-minute timeout first. Here: pause pods bound to each node, no requests.
SYSTEM_PODS = ("kube-proxy", "fluentd-elasticsearch", "node-problem-detector")


def system_pod_body(component: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{component}-{node}",
            "namespace": "kube-system",
            "labels": {"component": component},
        },
        "spec": {
            "nodeName": node,
            "priorityClassName": "system-node-critical",
            "tolerations": [{"operator": "Exists"}],
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": component, "image": "registry.k8s.io/pause:3.10"}],
        },
    }


def _system_pods_running(cluster: LocalCluster, want: int) -> bool:
    pods: list[dict[str, Any]] = cluster.api("GET", "/api/v1/namespaces/kube-system/pods")["items"]
    running = sum(1 for p in pods if p["status"].get("phase") == "Running")
    return running >= want


def start_cluster(nodes: int, name: str, timeout: float = 60.0) -> LocalCluster:
    cluster = LocalCluster(
        with_kwok=True,
        with_controller_manager=True,
        apiserver_args=APISERVER_ARGS,
        name=f"conformance-{name}",
        kwok_stages=STAGES,
        controllers=CONTROLLERS,
        controller_manager_args=CONTROLLER_MANAGER_ARGS,
    )
    cluster.start()
    try:
        names = [f"node-{i}" for i in range(nodes)]
        for i, node in enumerate(names):
            cluster.api("POST", "/api/v1/nodes", node_body(i, node))
        for node in names:
            for component in SYSTEM_PODS:
                cluster.api("POST", "/api/v1/namespaces/kube-system/pods", system_pod_body(component, node))
        deadline = time.monotonic() + timeout
        while not _system_pods_running(cluster, nodes * len(SYSTEM_PODS)):
            if time.monotonic() > deadline:
                raise ConformanceError(f"the system pods are not Running after {timeout:.0f}s")
            time.sleep(0.3)
    except BaseException:
        cluster.stop()
        raise
    return cluster


# ---------------------------------------------------------------------------------------------- schedulers
class KubeScheduler:
    """kube-scheduler 1.36.3 as the cluster's default scheduler: its defaults, leader election on."""

    def __init__(self, cluster: LocalCluster, workdir: Path) -> None:
        self.cluster = cluster
        self.workdir = workdir
        self.log_path = workdir / "kube-scheduler.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        config = self.workdir / "kube-scheduler.yaml"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "clientConnection": {"kubeconfig": str(self.cluster.kubeconfig)},
                    "leaderElection": {"leaderElect": True},
                    "profiles": [{"schedulerName": "default-scheduler"}],
                }
            )
        )
        port = free_port()
        with open(self.log_path, "ab") as f:
            self.proc = subprocess.Popen(
                [
                    self.cluster.binary("kube-scheduler"),
                    f"--config={config}",
                    f"--secure-port={port}",
                    "--bind-address=127.0.0.1",
                    "--v=2",
                ],
                stdout=f,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_set_pdeathsig,
            )
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ConformanceError(
                    f"kube-scheduler exited with {self.proc.returncode}; see {self.log_path}"
                )
            with (
                contextlib.suppress(OSError, urllib.error.URLError),
                urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", timeout=1, context=ctx) as r,
            ):
                if r.status == 200:
                    break
            time.sleep(0.2)
        else:
            raise ConformanceError(f"kube-scheduler not ready after {timeout:.0f}s; see {self.log_path}")
        wait_for_lease(self.cluster, "kube-system", "kube-scheduler", timeout)

    def stop(self) -> None:
        stop_process_group(self.proc, 15)


def wait_for_lease(cluster: LocalCluster, namespace: str, name: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, lease = cluster.request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
        )
        if status == 200 and (lease.get("spec") or {}).get("holderIdentity"):
            return str(lease["spec"]["holderIdentity"])
        time.sleep(0.5)
    raise ConformanceError(f"nobody took the lease {namespace}/{name} in {timeout:.0f}s")


class PyScheduler:
    """pyscheduler as a user runs it as the default scheduler: the manifests' RBAC and configuration (its
    profile named default-scheduler), a ServiceAccount token mounted as in a pod, leader election on."""

    def __init__(self, cluster: LocalCluster, workdir: Path) -> None:
        self.cluster = cluster
        self.workdir = workdir
        self.daemon: SchedulerProcess | None = None

    def start(self, timeout: float = 60.0) -> None:
        rendered = [
            d for d in yaml.safe_load_all(self.cluster.kubectl("kustomize", str(MANIFESTS)).stdout) if d
        ]
        objs = [d for d in rendered if d["kind"] != "Deployment"]
        self.cluster.kubectl(
            "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs})
        )
        cm = next(d for d in rendered if d["kind"] == "ConfigMap")
        config: dict[str, Any] = yaml.safe_load(cm["data"]["config.yaml"])
        config["profiles"] = [
            {**p, "schedulerName": "default-scheduler"} if i == 0 else p
            for i, p in enumerate(config.get("profiles") or [{}])
        ]
        sa = self.workdir / "serviceaccount"
        sa.mkdir(parents=True, exist_ok=True)
        (sa / "token").write_text(
            self.cluster.create_token(SCHEDULER_NAMESPACE, SERVICE_ACCOUNT, seconds=24 * 3600)
        )
        shutil.copy(self.cluster.ca_file, sa / "ca.crt")
        (sa / "namespace").write_text(SCHEDULER_NAMESPACE)
        env = {
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(self.cluster.port),
            "POD_NAME": "py-scheduler-conformance-0",
            "KUBECONFIG": "",
        }
        self.daemon = SchedulerProcess(
            None,
            config,
            leader_elect=True,
            env=env,
            name="py-scheduler-conformance",
            extra_args=("--in-cluster-dir", str(sa), "--log-level=info"),
        )
        self.daemon.start(wait_ready=timeout)
        lease = config.get("leaderElection") or {}
        wait_for_lease(
            self.cluster,
            str(lease.get("resourceNamespace", SCHEDULER_NAMESPACE)),
            str(lease.get("resourceName", "py-scheduler")),
            timeout,
        )

    @property
    def log_path(self) -> Path:
        assert self.daemon is not None
        return self.workdir / "pyscheduler.log"

    def stop(self) -> None:
        if self.daemon is None:
            return
        self.daemon.stop()
        if self.daemon.log_path.exists():
            shutil.copy(self.daemon.log_path, self.workdir / "pyscheduler.log")
        self.daemon.cleanup()


def rbac_refusals(log_text: str) -> list[str]:
    """The daemon's log lines where the API server refused it (403), except events posted into a
    test namespace that is being deleted (kube-scheduler's are refused there too)."""
    return [
        line
        for line in log_text.splitlines()
        if ("forbidden" in line.lower() or "HTTP 403" in line)
        and "because it is being terminated" not in line
    ]


# ---------------------------------------------------------------------------------------------- results
@dataclass
class SpecResult:
    name: str
    status: str  # passed, failed, skipped
    seconds: float
    message: str = ""


@dataclass
class RunResult:
    scheduler: str
    specs: dict[str, SpecResult] = field(default_factory=dict)
    wall: float = 0.0
    report: Path | None = None

    @property
    def ran(self) -> list[SpecResult]:
        return [s for s in self.specs.values() if s.status != "skipped"]

    @property
    def passed(self) -> int:
        return sum(s.status == "passed" for s in self.specs.values())


_LABELS = re.compile(r"\s*\[(?:Serial|Conformance|Slow|Feature:[^\]]*|FeatureGate:[^\]]*|Alpha|Beta)\]")


def short_name(full: str) -> str:
    """A spec's text without the ``[sig-scheduling]`` prefix and the Ginkgo labels."""
    name = full.removeprefix("[It] ").replace("[sig-scheduling] ", "", 1)
    name = re.sub(r"\s*\[sig-scheduling(?:, [^\]]*)?\]$", "", name)  # the label list --ginkgo.v adds
    return _LABELS.sub("", name).strip()


def parse_junit(path: Path) -> dict[str, SpecResult]:
    """The specs of a JUnit report from the e2e binary (suite set-up and tear-down nodes left out)."""
    out: dict[str, SpecResult] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        if "[sig-scheduling]" not in name:
            continue
        seconds = float(case.get("time") or 0)
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        if case.find("skipped") is not None:
            out[name] = SpecResult(name, "skipped", seconds)
        elif failure is not None:
            msg = (failure.get("message") or failure.text or "").strip().splitlines()
            out[name] = SpecResult(name, "failed", seconds, msg[0] if msg else "")
        else:
            out[name] = SpecResult(name, "passed", seconds)
    return out


def skip_regex(extra: str | None) -> str | None:
    parts = [re.escape(name) for name in SKIPS]
    if extra:
        parts.append(extra)
    return "|".join(parts) if parts else None


# ---------------------------------------------------------------------------------------------- one run
_SPEC_END = re.compile(
    r"^(•|S|P) (?:\[(FAILED|SKIPPED|PANICKED|TIMEDOUT|INTERRUPTED|PENDING)\] )?\[([0-9.]+) seconds?\]"
)


def _follow(proc: subprocess.Popen[str], logf: Any, label: str) -> None:
    """Copy the binary's output (``--ginkgo.v``: the spec's text when it starts, ``• [N seconds]`` or
    ``• [FAILED] [N seconds]`` when it ends) to its log, and print one line per finished spec."""
    assert proc.stdout is not None
    current = ""
    for line in proc.stdout:
        logf.write(line)
        if line.startswith("[sig-scheduling]"):
            current = line.strip()
            continue
        m = _SPEC_END.match(line)
        if m and current:
            status = (m.group(2) or ("skipped" if m.group(1) == "S" else "passed")).lower()
            log(f"  [{label}] {status:8} {float(m.group(3)):6.1f}s  {short_name(current)}")
            current = ""


def run_one(
    scheduler: str,
    binary: Path,
    out: Path,
    *,
    nodes: int,
    focus: str | None,
    skip: str | None,
    timeout: float,
    seed: int,
) -> RunResult:
    label = SCHEDULERS[scheduler]
    workdir = out / scheduler
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    result = RunResult(label)
    log(f"{label}: starting a fresh cluster ({nodes} nodes)")
    cluster = start_cluster(nodes, scheduler)
    sched: KubeScheduler | PyScheduler = (
        KubeScheduler(cluster, workdir) if scheduler == "kube" else PyScheduler(cluster, workdir)
    )
    try:
        sched.start()
        log(f"{label}: running the specs (log: {workdir / 'e2e.log'})")
        argv = [
            str(binary),
            f"--kubeconfig={cluster.kubeconfig}",
            "--provider=skeleton",
            f"--num-nodes={nodes}",
            f"--report-dir={workdir}",
            "--ginkgo.no-color",
            "--ginkgo.v",
            f"--ginkgo.seed={seed}",  # the same spec order for both schedulers
            f"--ginkgo.timeout={int(timeout)}s",
            f"--ginkgo.focus={FOCUS}" + (f".*({focus})" if focus else ""),
        ]
        skips = skip_regex(skip)
        if skips:
            argv.append(f"--ginkgo.skip={skips}")
        start = time.monotonic()
        with open(workdir / "e2e.log", "w") as logf:
            proc = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                cwd=workdir,
                start_new_session=True,
                preexec_fn=_set_pdeathsig,
            )
            _follow(proc, logf, label)
            proc.wait()
        result.wall = time.monotonic() - start
        report = workdir / "junit_01.xml"
        if not report.exists():
            raise ConformanceError(
                f"{label}: the e2e binary wrote no JUnit report; see {workdir / 'e2e.log'}"
            )
        result.report = report
        result.specs = parse_junit(report)
        alive = isinstance(sched, KubeScheduler) or (sched.daemon is not None and sched.daemon.alive())
        if not alive:
            log(f"{label}: the scheduler died during the run; see {workdir}")
        if isinstance(sched, PyScheduler) and sched.daemon is not None:
            refused = rbac_refusals(sched.daemon.log_text())
            if refused:
                log(f"{label}: refused by RBAC {len(refused)} time(s), e.g. {refused[0][:300]}")
        log(f"{label}: {result.passed}/{len(result.ran)} passed in {result.wall:.0f}s (report: {report})")
    finally:
        sched.stop()
        for p in cluster.procs:
            if p.log.exists():
                shutil.copy(p.log, workdir / f"{p.name}.log")
        cluster.stop()
    return result


# ---------------------------------------------------------------------------------------------- report
def table(runs: dict[str, RunResult]) -> str:
    names: list[str] = []
    for r in runs.values():
        # the specs that ran for some scheduler, and those skipped by name (not those out of --focus)
        names.extend(
            n
            for n, s in r.specs.items()
            if n not in names and (s.status != "skipped" or any(k in n for k in SKIPS))
        )
    names.sort(key=short_name)
    rows = [("spec", "kube", "py", "seconds (kube / py)")]
    for n in names:
        k = runs.get("kube")
        p = runs.get("py")
        ks = k.specs.get(n) if k else None
        ps = p.specs.get(n) if p else None
        secs = " / ".join(f"{s.seconds:.1f}" if s else "-" for s in (ks, ps))
        rows.append((short_name(n), ks.status if ks else "-", ps.status if ps else "-", secs))
    width = min(110, max(len(r[0]) for r in rows))
    lines = []
    for spec, kv, pv, secs in rows:
        spec = spec if len(spec) <= width else spec[: width - 1] + "…"
        lines.append(f"{spec:<{width}}  {kv:<7}  {pv:<7}  {secs}")
    return "\n".join(lines)


def summary(runs: dict[str, RunResult]) -> str:
    parts = []
    for key in ("py", "kube"):
        r = runs.get(key)
        if r is not None:
            parts.append(f"{r.scheduler} {r.passed}/{len(r.ran)} passed")
    return "conformance: " + ", ".join(parts)


def regressions(runs: dict[str, RunResult]) -> list[str]:
    """Specs that pass with kube-scheduler and do not pass with pyscheduler."""
    k, p = runs.get("kube"), runs.get("py")
    if k is None or p is None:
        return []
    return [
        n
        for n, s in k.specs.items()
        if s.status == "passed" and (p.specs.get(n) is None or p.specs[n].status != "passed")
    ]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="make conformance ARGS=...", description=__doc__.split("\n")[0])
    ap.add_argument("--focus", help="only the [sig-scheduling] specs whose text matches this regex")
    ap.add_argument("--skip", help="also skip the specs whose text matches this regex")
    ap.add_argument("--scheduler", choices=("kube", "py", "both"), default="both")
    ap.add_argument("--nodes", type=int, default=NODES, help=f"fake nodes (default {NODES}, in two zones)")
    ap.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="where reports and logs go (default .conformance/)"
    )
    ap.add_argument("--seed", type=int, help="Ginkgo's random seed (spec order); default: from the clock")
    ap.add_argument("--timeout", type=float, default=3600.0, help="per scheduler's run, seconds")
    args = ap.parse_args(argv)
    if args.nodes < 2:
        ap.error("--nodes must be at least 2 (several specs need two nodes, the zone specs two zones)")
    if args.focus:
        re.compile(args.focus)
    if args.skip:
        re.compile(args.skip)
    binary = e2e_binary()
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    order = ["kube", "py"] if args.scheduler == "both" else [args.scheduler]
    seed = args.seed if args.seed is not None else int(time.time()) % 100000
    log(f"spec order: --seed {seed}")
    runs: dict[str, RunResult] = {}
    for key in order:
        runs[key] = run_one(
            key,
            binary,
            out,
            nodes=args.nodes,
            focus=args.focus,
            skip=args.skip,
            timeout=args.timeout,
            seed=seed,
        )
    (out / "summary.json").write_text(
        json.dumps(
            {
                key: {
                    "wall_seconds": round(r.wall, 1),
                    "passed": r.passed,
                    "ran": len(r.ran),
                    "specs": {n: {"status": s.status, "seconds": s.seconds} for n, s in r.specs.items()},
                }
                for key, r in runs.items()
            },
            indent=1,
        )
    )
    print(table(runs))
    print()
    for r in runs.values():
        print(f"{r.scheduler}: wall {r.wall:.0f}s, report {r.report}")
    for r in runs.values():
        for s in r.specs.values():
            if s.status == "failed":
                print(f"FAILED with {r.scheduler}: {short_name(s.name)}: {s.message}")
    worse = regressions(runs)
    for n in worse:
        print(f"REGRESSION: passes with kube-scheduler, not with pyscheduler: {short_name(n)}")
    print(summary(runs), flush=True)
    k, p = runs.get("kube"), runs.get("py")
    if worse or (k is not None and p is not None and p.passed < k.passed):
        return 1
    if len(runs) == 1 and next(iter(runs.values())).passed < len(next(iter(runs.values())).ran):
        return 1
    return 0


if __name__ == "__main__":
    # a SIGTERM unwinds like Ctrl-C: each run's finally stops its scheduler and cluster
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        raise SystemExit(main())
    except ConformanceError as e:
        log(str(e))
        raise SystemExit(2) from None
