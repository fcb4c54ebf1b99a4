"""The differential's records: one pod's outcome on each side, its judgement, a scenario's and the whole
run's results, and the JSON report written from them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from bench.differential.common import JSON, PROFILE


@dataclass
class Outcome:
    """What one scheduler did with one pod."""

    node: str = ""  # "" = pending
    reason: str = ""  # PodScheduled condition reason when pending (Unschedulable, SchedulingGated, ...)
    message: str = ""  # FailedScheduling event note, else the condition message
    condition_message: str = ""
    nominated: str = ""
    victims: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # DRA: the pod's claim (its name in spec.resourceClaims, or "extended-resources") -> the devices its
    # allocation holds, "request driver/pool/device" each (sorted); recorded once the pod is bound
    devices: dict[str, list[str]] = field(default_factory=dict)
    # a scenario with ``history``: the bound pod's events, "Reason: message" in order (Runner.pod_events)
    history: list[str] = field(default_factory=list)

    @property
    def bound(self) -> bool:
        return bool(self.node)

    def describe(self) -> str:
        if self.node:
            extra = f" evicting {','.join(self.victims)}" if self.victims else ""
            return f"{self.node}{extra}"
        return f"pending[{self.reason or '?'}]"


@dataclass
class Evaluation:
    """pyscheduler's framework run in memory on the state kube-scheduler saw before the pod."""

    feasible: list[str] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)
    detail: dict[str, dict[str, int]] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)
    error: str = ""

    def best(self) -> list[str]:
        if not self.totals:
            return list(self.feasible)
        top = max(self.totals.values())
        return sorted(n for n, t in self.totals.items() if t == top)


@dataclass
class PodResult:
    scenario: str
    pod: str
    kube: Outcome
    py: Outcome
    evaluation: Evaluation | None
    feasibility: bool
    placement: bool
    message: bool | None  # None when not both pending (and no event history was recorded)
    note: str = ""
    kube_scores: dict[str, dict[str, int]] | None = None  # from kube-scheduler's log, when it scored
    devices: bool | None = None  # None unless both bound to the same node with DRA claims

    def _score_pairs(self) -> list[tuple[str, str, int, int | None]]:
        """(node, plugin, kube's score, pyscheduler's in-memory score) for every node kube-scheduler scored;
        a plugin one side skipped counts as 0; None means pyscheduler found the node infeasible."""
        if not self.kube_scores or self.evaluation is None or not self.evaluation.feasible:
            return []
        out: list[tuple[str, str, int, int | None]] = []
        for node, plugins in sorted(self.kube_scores.items()):
            ours = self.evaluation.detail.get(node)
            for plugin in sorted(set(plugins) | set(ours or {})):
                out.append(
                    (node, plugin, plugins.get(plugin, 0), None if ours is None else ours.get(plugin, 0))
                )
        return out

    def score_mismatches(self) -> list[tuple[str, str, int, int | None]]:
        return [t for t in self._score_pairs() if t[2] != t[3]]

    def scores_compared(self) -> int:
        return len(self._score_pairs())

    def disagrees(self) -> bool:
        return not self.feasibility or not self.placement or self.message is False or self.devices is False


@dataclass
class ScenarioResult:
    name: str
    pods: list[PodResult] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0
    kube_only: list[tuple[str, Outcome]] = field(default_factory=list)  # --kube-only: kube's outcomes


@dataclass
class Report:
    scenarios: list[ScenarioResult] = field(default_factory=list)
    started: str = ""
    seconds: float = 0.0

    def all_pods(self) -> list[PodResult]:
        return [p for s in self.scenarios for p in s.pods]

    @property
    def n(self) -> int:
        return len(self.all_pods())

    @property
    def feasibility(self) -> int:
        return sum(p.feasibility for p in self.all_pods())

    @property
    def placement(self) -> int:
        return sum(p.placement for p in self.all_pods())

    @property
    def messages(self) -> tuple[int, int]:
        judged = [p for p in self.all_pods() if p.message is not None]
        return sum(bool(p.message) for p in judged), len(judged)

    @property
    def errors(self) -> list[ScenarioResult]:
        return [s for s in self.scenarios if s.error]

    @property
    def devices(self) -> tuple[int, int]:
        judged = [p for p in self.all_pods() if p.devices is not None]
        return sum(bool(p.devices) for p in judged), len(judged)

    @property
    def scores(self) -> tuple[int, int]:
        compared = sum(p.scores_compared() for p in self.all_pods())
        return compared - sum(len(p.score_mismatches()) for p in self.all_pods()), compared

    def summary_lines(self) -> list[str]:
        c, m = self.messages
        e, t = self.scores
        d, dn = self.devices
        return [
            f"agreement: feasibility {self.feasibility}/{self.n}, placement {self.placement}/{self.n}",
            f"messages: {c}/{m}",
            f"DRA devices (pods on the same node): {d}/{dn} pods with equal allocations",
            f"plugin scores (kube-scheduler's log vs pyscheduler in memory): {e}/{t} node-plugin scores equal",
        ]

    def exit_code(self) -> int:
        if self.feasibility != self.n:
            return 1
        return 2 if self.errors else 0

    def to_json(self) -> JSON:
        c, m = self.messages
        return {
            "started": self.started,
            "seconds": round(self.seconds, 1),
            "kube_scheduler": "v1.36 (LocalCluster binary)",
            "profile": PROFILE,
            "summary": {
                "pods": self.n,
                "feasibility": self.feasibility,
                "placement": self.placement,
                "messages": c,
                "messages_compared": m,
                "plugin_scores_equal": self.scores[0],
                "plugin_scores_compared": self.scores[1],
                "devices": self.devices[0],
                "devices_compared": self.devices[1],
            },
            "scenarios": [
                {
                    "name": s.name,
                    "pods": len(s.pods),
                    "seconds": round(s.seconds, 1),
                    **({"error": s.error} if s.error else {}),
                    **(
                        {"kube_only": [{"pod": n, **_outcome_json(o)} for n, o in s.kube_only]}
                        if s.kube_only
                        else {}
                    ),
                }
                for s in self.scenarios
            ],
            "disagreements": [_pod_json(p) for p in self.all_pods() if p.disagrees()],
            "score_mismatches": [
                {"scenario": p.scenario, "pod": p.pod, "node": n, "plugin": pl, "kube": ks, "py": ps}
                for p in self.all_pods()
                for n, pl, ks, ps in p.score_mismatches()
            ],
            "pods": [
                {
                    "scenario": p.scenario,
                    "pod": p.pod,
                    "kube": p.kube.describe(),
                    "py": p.py.describe(),
                    "feasibility": p.feasibility,
                    "placement": p.placement,
                    "message": p.message,
                }
                for p in self.all_pods()
            ],
        }


def _pod_json(p: PodResult) -> JSON:
    out: JSON = {
        "scenario": p.scenario,
        "pod": p.pod,
        "kind": [
            k
            for k, bad in (
                ("feasibility", not p.feasibility),
                ("placement", not p.placement),
                ("message", p.message is False),
                ("devices", p.devices is False),
            )
            if bad
        ],
        "kube": _outcome_json(p.kube),
        "py": _outcome_json(p.py),
    }
    if p.note:
        out["note"] = p.note
    if p.evaluation is not None:
        out["scores"] = asdict(p.evaluation)
        out["scores"]["best"] = p.evaluation.best()
    if p.kube_scores:
        out["kube_scores"] = {n: {**d, "total": sum(d.values())} for n, d in sorted(p.kube_scores.items())}
    return out


def _outcome_json(o: Outcome) -> JSON:
    d = {k: v for k, v in asdict(o).items() if v not in ("", [], {}, None)}
    d["seconds"] = round(o.seconds, 2)
    return d
