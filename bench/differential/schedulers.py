"""The processes a differential pass runs: kube-scheduler (with its score log parsed), pyscheduler, and
a kube-controller-manager running only the controllers a scenario needs."""

from __future__ import annotations

import copy
import json
import os
import re
import ssl
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.differential.common import API_VERSION, DRA_KINDS, JSON, POLL, PROFILE, RunError
from bench.scenarios import Scenario
from pyscheduler.parallel import FORCE_ENV
from pyscheduler.testing.cluster import (
    LocalCluster,
    free_port,
    log_tail,
    spawn_logged,
    stop_process_group,
    wait_http_ready,
)
from pyscheduler.testing.daemon import SchedulerProcess


def configuration(kubeconfig: Path | None, plugin_config: Sequence[JSON] = ()) -> JSON:
    """Both schedulers' configuration: the one profile, with a scenario's ``pluginConfig`` (plugin args).
    An entry ``{"disabled": [names]}`` there is not plugin args: it disables those plugins in the profile
    (``plugins.multiPoint.disabled``)."""
    profile = copy.deepcopy(PROFILE)
    args = [e for e in plugin_config if "disabled" not in e]
    disabled = [n for e in plugin_config for n in e.get("disabled") or ()]
    if args:
        profile["pluginConfig"] = copy.deepcopy(args)
    if disabled:
        profile["plugins"] = {"multiPoint": {"disabled": [{"name": n} for n in disabled]}}
    cfg: JSON = {
        "apiVersion": API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }
    if kubeconfig is not None:
        cfg["clientConnection"] = {"kubeconfig": str(kubeconfig)}
        cfg["leaderElection"] = {"leaderElect": False}
    return cfg


class KubeScheduler:
    """The real kube-scheduler binary against our cluster: no leader election, HTTPS on a free loopback
    port (only /readyz is read, an always-allowed path, so no delegated authn/authz is needed)."""

    label = "kube"

    def __init__(
        self,
        cluster: LocalCluster,
        workdir: Path,
        feature_gates: str = "",
        plugin_config: Sequence[JSON] = (),
    ) -> None:
        self.cluster = cluster
        self.feature_gates = feature_gates
        self.dir = Path(tempfile.mkdtemp(prefix="kube-scheduler-", dir=workdir))
        self.config_path = self.dir / "config.yaml"
        self.config_path.write_text(json.dumps(configuration(cluster.kubeconfig, plugin_config), indent=1))
        self.log_path = self.dir / "kube-scheduler.log"
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        self.port = free_port()
        argv = [
            self.cluster.binary("kube-scheduler"),
            f"--config={self.config_path}",
            f"--secure-port={self.port}",
            "--bind-address=127.0.0.1",
            f"--v={os.environ.get('DIFF_KUBE_V', '10')}",
        ]
        if self.feature_gates:
            argv.append(f"--feature-gates={self.feature_gates}")
        self.proc = spawn_logged(argv, self.log_path)
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{self.port}/readyz"
        wait_http_ready(
            self.proc,
            url,
            timeout,
            "kube-scheduler",
            self.log_tail,
            context=ctx,
            interval=POLL,
            error=RunError,
        )

    def log_tail(self, n: int = 30) -> str:
        return log_tail(self.log_path, n)

    def scores(self) -> dict[str, dict[str, dict[str, int]]]:
        """ns/name -> node -> plugin -> weighted score, from the last scoring cycle of each pod in the log
        (``--v=10`` logs "Plugin scored node for pod" per plugin and node; a pod with one feasible node
        is not scored)."""
        return parse_kube_scores(self.log_path.read_text(errors="replace") if self.log_path.exists() else "")

    def stop(self) -> None:
        stop_process_group(self.proc, 10)


_PLUGIN_SCORE = re.compile(
    r'"Plugin scored node for pod" pod="([^"]+)" plugin="([^"]+)" node="([^"]+)" score=(-?\d+)'
)
_FINAL_SCORE = re.compile(
    r'"Calculated node\'s final score for pod" pod="([^"]+)" node="([^"]+)" score=(-?\d+)'
)


def parse_kube_scores(log: str) -> dict[str, dict[str, dict[str, int]]]:
    out: dict[str, dict[str, dict[str, int]]] = {}
    finished: set[str] = set()
    for line in log.splitlines():
        m = _PLUGIN_SCORE.search(line)
        if m:
            pod, plugin, node, score = m.groups()
            if pod in finished:  # a new scoring cycle for this pod
                finished.discard(pod)
                out[pod] = {}
            out.setdefault(pod, {}).setdefault(node, {})[plugin] = int(score)
            continue
        m = _FINAL_SCORE.search(line)
        if m:
            finished.add(m.group(1))
    return out


class PyScheduler:
    """``pyscheduler run`` (through the test harness's SchedulerProcess) with the same profile."""

    label = "py"
    # --py-parallelism: None keeps the configuration's default (16, capped at the usable CPUs, sharding
    # only past the crossover); 1 is one process; more forces every Filter chunk onto forked shards
    # (pyscheduler.parallel.FORCE_ENV) so that path is what the run compares
    parallelism: int | None = None

    def __init__(
        self,
        cluster: LocalCluster,
        workdir: Path,
        feature_gates: str = "",
        plugin_config: Sequence[JSON] = (),
    ) -> None:
        gates = (f"--feature-gates={feature_gates}",) if feature_gates else ()
        config = configuration(None, plugin_config)
        env: dict[str, str] = {}
        if self.parallelism is not None:
            config["parallelism"] = self.parallelism
            if self.parallelism > 1:
                env[FORCE_ENV] = "1"
        self.proc = SchedulerProcess(
            cluster.kubeconfig, config, name="pyscheduler-diff", extra_args=gates, env=env
        )
        self.dir = self.proc.dir

    def start(self, timeout: float = 60.0) -> None:
        self.proc.start(wait_ready=timeout)

    def log_tail(self, n: int = 30) -> str:
        return self.proc.log_tail(n)

    def stop(self) -> None:
        self.proc.stop(timeout=15)


PV_CONTROLLER = "persistentvolume-binder-controller"
# creates a pod's claims from its ResourceClaimTemplates, and deallocates a claim once its last pod is gone
CLAIM_CONTROLLER = "resourceclaim-controller"


def uses_dra(sc: Scenario) -> bool:
    """The scenario creates resource.k8s.io objects or pods with ResourceClaims."""
    return any(o.get("kind") in DRA_KINDS for o in sc.objects) or any(
        p.get("spec", {}).get("resourceClaims") for p in (*sc.pods, *sc.batch, *sc.existing)
    )


def controllers_for(sc: Scenario) -> tuple[str, ...]:
    """The kube-controller-manager controllers a scenario needs (none for most). The PV binder runs only
    where WaitForFirstConsumer binding must complete: elsewhere it would race our writes of pre-bound
    PV/PVC objects and their status."""
    out = []
    if sc.needs_pv_controller:
        out.append(PV_CONTROLLER)
    if uses_dra(sc):
        out.append(CLAIM_CONTROLLER)
    return tuple(out)


class ControllerManager:
    """kube-controller-manager running only the controllers given (the PV binder completes
    WaitForFirstConsumer bindings; the resourceclaim controller serves DRA scenarios)."""

    def __init__(
        self,
        cluster: LocalCluster,
        workdir: Path,
        controllers: Sequence[str],
        extra_args: Sequence[str] = (),
    ) -> None:
        self.cluster = cluster
        self.controllers = tuple(controllers)
        self.extra_args = tuple(extra_args)
        self.log_path = workdir / "kube-controller-manager.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        argv = [
            self.cluster.binary("kube-controller-manager"),
            f"--kubeconfig={self.cluster.kubeconfig}",
            "--leader-elect=false",
            f"--controllers={','.join(self.controllers)}",
            *self.extra_args,
            "--secure-port=0",
            "--use-service-account-credentials=false",
            "--v=1",
        ]
        self.proc = spawn_logged(argv, self.log_path)
        time.sleep(1.0)
        if self.proc.poll() is not None:
            raise RunError(
                f"kube-controller-manager exited: {self.log_path.read_text(errors='replace')[-2000:]}"
            )

    def stop(self) -> None:
        stop_process_group(self.proc, 10)
