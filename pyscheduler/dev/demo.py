"""``pyscheduler demo`` (what ``make run`` does without a KUBECONFIG).

Starts a local control plane with KWOK fake nodes and the controller manager, runs pyscheduler against
it (as a child process, exactly as ``pyscheduler run`` would run against any cluster), applies a small
workload — a Deployment spread over zones and one pod too big for any node — and prints where each pod
lands and why the big one stays pending. Ctrl-C stops everything; ``--once`` exits when done.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.cluster import LocalCluster

DEMO_NS = "demo"


def _deployment(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": DEMO_NS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "schedulerName": "py-scheduler",
                    "containers": [
                        {
                            "name": "web",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
                        }
                    ],
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "topology.kubernetes.io/zone",
                            "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": {"matchLabels": {"app": "web"}},
                        }
                    ],
                },
            },
        },
    }


def main(nodes: int = 4, once: bool = False, config: str | None = None, replicas: int = 8) -> int:
    print(
        f"starting a local control plane with {nodes} fake nodes (first run builds it: minutes)...",
        flush=True,
    )
    with LocalCluster(with_kwok=True, with_controller_manager=True, name="demo") as c:
        c.create_nodes(nodes, prefix="kwok-node", cpu="2", memory="8Gi", zones=["zone-a", "zone-b"])
        print(f"cluster ready at {c.server}; kubeconfig {c.kubeconfig}", flush=True)
        argv = [
            sys.executable,
            "-m",
            "pyscheduler.cli",
            "run",
            f"--kubeconfig={c.kubeconfig}",
            "--no-leader-elect",
            "--port=0",
            "--log-format=console",
        ]
        if config:
            argv.append(f"--config={config}")
        log_path = Path(tempfile.gettempdir()) / f"pyscheduler-demo-{os.getpid()}.log"
        with open(log_path, "wb") as logf:
            sched = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, env=os.environ.copy())
        try:
            c.api(
                "POST",
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DEMO_NS}},
            )
            c.api("POST", f"/apis/apps/v1/namespaces/{DEMO_NS}/deployments", _deployment(replicas))
            c.api(
                "POST",
                f"/api/v1/namespaces/{DEMO_NS}/pods",
                make_pod("too-big", DEMO_NS).scheduler("py-scheduler").req(cpu="64").json(),
            )
            print(
                f"applied: deployment/web ({replicas} replicas, spread over zones) and pod/too-big (64 CPUs)\n",
                flush=True,
            )
            return _watch(c, sched, once, replicas, log_path)
        finally:
            with contextlib.suppress(ProcessLookupError):
                sched.send_signal(signal.SIGTERM)
            try:
                sched.wait(20)
            except subprocess.TimeoutExpired:
                sched.kill()


def _watch(c: LocalCluster, sched: subprocess.Popen[bytes], once: bool, replicas: int, log_path: Path) -> int:
    seen: dict[str, str] = {}
    deadline = time.monotonic() + 120
    try:
        while True:
            if sched.poll() is not None:
                print(f"pyscheduler exited with {sched.returncode}; log:\n{log_path.read_text()[-3000:]}")
                return 1
            pods = c.api("GET", f"/api/v1/namespaces/{DEMO_NS}/pods")["items"]
            for p in pods:
                name = p["metadata"]["name"]
                node = p["spec"].get("nodeName", "")
                if node and seen.get(name) != node:
                    seen[name] = node
                    print(f"  scheduled  {name:<28} -> {node}", flush=True)
                elif not node and name not in seen:
                    cond = next(
                        (x for x in p.get("status", {}).get("conditions", []) if x["type"] == "PodScheduled"),
                        None,
                    )
                    if cond and cond.get("status") == "False":
                        seen[name] = ""
                        print(f"  pending    {name:<28} {cond.get('message', '')}", flush=True)
            placed = sum(1 for v in seen.values() if v)
            if once and placed >= replicas and "too-big" in seen:
                print(f"\n{placed} pods scheduled, 1 pending as expected. Log: {log_path}")
                return 0
            if once and time.monotonic() > deadline:
                print(f"\ntimed out: {placed}/{replicas} scheduled. Log: {log_path}")
                return 1
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("\nstopping")
        return 0
