"""A differential run: the cluster, the controllers and the temp directory it owns, scenario by scenario
(both passes, then the judgement), the lines it prints and the JSON report it writes."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.differential.api import Api
from bench.differential.common import GANG_APISERVER_ARGS, RESULTS_DIR, RunError, feature_gates_for
from bench.differential.evaluate import Evaluator
from bench.differential.judge import devices_text, judge, kube_outcomes
from bench.differential.records import Report, ScenarioResult
from bench.differential.runner import Pass, ScenarioRunner
from bench.differential.schedulers import ControllerManager, KubeScheduler, PyScheduler, controllers_for
from bench.scenarios import Scenario
from pyscheduler.testing.cluster import LocalCluster


class Differential:
    """Owns the cluster (unless given one), the PV controller and the temp directory of a run."""

    def __init__(
        self, cluster: LocalCluster | None = None, keep_logs: bool = False, kube_only: bool = False
    ) -> None:
        self._own = cluster is None
        self.cluster = cluster or LocalCluster(
            with_kwok=True,
            with_controller_manager=False,
            name="differential",
            apiserver_args=GANG_APISERVER_ARGS,
        )
        self.keep_logs = keep_logs
        self.workdir = Path(tempfile.mkdtemp(prefix="differential-"))
        self.controllers: ControllerManager | None = None
        self.evaluator = Evaluator()
        self.kube_only = kube_only

    def __enter__(self) -> Differential:
        if self._own:
            self.cluster.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.controllers is not None:
            self.controllers.stop()
        if self._own:
            self.cluster.stop()
        if not self.keep_logs:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def run(self, scenarios: Sequence[Scenario], out: Callable[[str], None] = print) -> Report:
        report = Report(started=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        t0 = time.monotonic()
        api = Api(self.cluster)
        width = max(len(s.name) for s in scenarios)
        for i, sc in enumerate(scenarios, 1):
            res = self.run_scenario(api, sc)
            report.scenarios.append(res)
            feas = sum(p.feasibility for p in res.pods)
            place = sum(p.placement for p in res.pods)
            judged = [p for p in res.pods if p.message is not None]
            if self.kube_only:
                out(
                    f"[{i:2d}/{len(scenarios)}] {sc.name:<{width}}  kube-scheduler only  ({res.seconds:.1f}s)"
                )
            line = (
                f"[{i:2d}/{len(scenarios)}] {sc.name:<{width}}  pods {len(res.pods):2d}  feasibility "
                f"{feas}/{len(res.pods)}  placement {place}/{len(res.pods)}  messages "
                f"{sum(bool(p.message) for p in judged)}/{len(judged)}  ({res.seconds:.1f}s)"
            )
            if not self.kube_only:
                out(line)
            if res.error:
                out(f"      ERROR: {res.error.splitlines()[0][:300]}")
            for name, o in res.kube_only:
                out(f"      {name}: {o.describe()}" + (f"  {devices_text(o)}" if o.devices else ""))
                if not o.bound:
                    out(f"        {o.message}")
            for p in res.pods:
                if p.disagrees():
                    out(
                        f"      {p.pod}: kube={p.kube.describe()} py={p.py.describe()}"
                        + (f"  [{p.note}]" if p.note else "")
                    )
                    if p.message is False:
                        out(f"        kube: {p.kube.message}")
                        out(f"        py:   {p.py.message}")
                    if p.devices is False:
                        out(f"        kube: {devices_text(p.kube)}")
                        out(f"        py:   {devices_text(p.py)}")
        report.seconds = time.monotonic() - t0
        return report

    def run_scenario(self, api: Api, sc: Scenario) -> ScenarioResult:
        res = ScenarioResult(sc.name)
        t0 = time.monotonic()
        runner = ScenarioRunner(api, sc)
        try:
            wanted = controllers_for(sc)
            if wanted:
                self.controllers = ControllerManager(self.cluster, self.workdir, wanted)
                self.controllers.start()
            passes: list[Pass] = []
            for cls in (KubeScheduler,) if self.kube_only else (KubeScheduler, PyScheduler):
                sched = cls(
                    self.cluster, self.workdir, feature_gates_for(sc), getattr(sc, "plugin_config", ())
                )
                try:
                    passes.append(runner.run_pass(sched, passes[0] if passes else None))
                except Exception as e:
                    raise RunError(
                        f"{cls.label} pass: {e}\n--- {cls.label} log tail ---\n{sched.log_tail()}"
                    ) from e
                finally:
                    with contextlib.suppress(Exception):
                        runner.teardown()
                    if (
                        self.keep_logs
                    ):  # <workdir>/<scenario>-kube/kube-scheduler.log, <scenario>-py/scheduler.log
                        with contextlib.suppress(OSError):
                            shutil.move(str(sched.dir), str(self.workdir / f"{sc.name}-{cls.label}"))
                    else:
                        shutil.rmtree(sched.dir, ignore_errors=True)
            if self.kube_only:
                res.kube_only = kube_outcomes(sc, passes[0])
            else:
                res.pods = judge(sc, passes[0], passes[1], self.evaluator)
        except Exception as e:
            res.error = f"{type(e).__name__}: {e}"
        finally:
            if self.controllers is not None:
                self.controllers.stop()
                self.controllers = None
        res.seconds = time.monotonic() - t0
        return res


def run_differential(
    scenarios: Sequence[Scenario],
    cluster: LocalCluster | None = None,
    out: Callable[[str], None] = print,
    keep_logs: bool = False,
    kube_only: bool = False,
) -> Report:
    with Differential(cluster, keep_logs=keep_logs, kube_only=kube_only) as d:
        return d.run(scenarios, out)


def default_report_path(subset: bool, now: dt.datetime | None = None) -> Path:
    """The day's full run is ``differential-<UTC date>.json``; a run of chosen scenarios writes
    ``differential-<UTC date>-subset.json``, so it never replaces the full run's file."""
    day = (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d")
    return RESULTS_DIR / f"differential-{day}{'-subset' if subset else ''}.json"


def write_report(report: Report, path: Path | None = None, *, subset: bool = False) -> Path:
    if path is None:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        path = default_report_path(subset)
    path.write_text(json.dumps(report.to_json(), indent=1) + "\n")
    return path
