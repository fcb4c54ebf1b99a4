"""Judging a scenario: each pod's kube-scheduler outcome against pyscheduler's (feasibility, placement
with ties scored in memory, messages, devices)."""

from __future__ import annotations

from bench.differential.api import name_of, object_key
from bench.differential.evaluate import Evaluator
from bench.differential.records import Evaluation, Outcome, PodResult
from bench.differential.runner import Pass
from bench.scenarios import Scenario


def devices_text(o: Outcome) -> str:
    return "; ".join(f"{claim}: {', '.join(devs) or '-'}" for claim, devs in sorted(o.devices.items()))


def kube_outcomes(sc: Scenario, kube: Pass) -> list[tuple[str, Outcome]]:
    """--kube-only: what kube-scheduler did with each pod, in the order judge() would list them."""
    out = [(name_of(p), kube.batch[name_of(p)]) for p in sc.batch]
    out += [(f"{n}@after-update", o) for n, o in sorted(kube.batch_late.items())]
    out += [(name_of(p), kube.pods[i].outcome) for i, p in enumerate(sc.pods)]
    return out


def judge(sc: Scenario, kube: Pass, py: Pass, evaluator: Evaluator) -> list[PodResult]:
    out: list[PodResult] = []
    for p in sc.batch:
        name = name_of(p)
        k, q = kube.batch[name], py.batch[name]
        out.append(judge_one(sc.name, name, k, q, None, kube.scores.get(f"{sc.namespace}/{name}")))
    for name in sorted(kube.batch_late.keys() | py.batch_late.keys()):
        # a pod pending on one side only was already judged a disagreement; judge the rest again
        k, q = kube.batch_late.get(name, kube.batch[name]), py.batch_late.get(name, py.batch[name])
        out.append(judge_one(sc.name, f"{name}@after-update", k, q, None))
    for i, p in enumerate(sc.pods):
        k, q = kube.pods[i].outcome, py.pods[i].outcome
        kr = kube.pods[i]
        ev = None
        if k.bound or q.bound:
            ev = evaluator.evaluate(
                kr.pre_nodes, kr.pre_pods, kr.pre_objects, kr.admitted, getattr(sc, "plugin_config", ())
            )
        out.append(judge_one(sc.name, name_of(p), k, q, ev, kube.scores.get(object_key(kr.admitted))))
    return out


def _message_verdict(k: Outcome, q: Outcome) -> bool | None:
    """Both pending: the same message. Both bound with an event history recorded (a scenario's
    ``history``): the same events on the way, failed attempts included. Else not judged."""
    if not k.bound and not q.bound:
        return k.message == q.message
    if k.history or q.history:
        return k.history == q.history
    return None


def judge_one(
    scenario: str,
    name: str,
    k: Outcome,
    q: Outcome,
    ev: Evaluation | None,
    kube_scores: dict[str, dict[str, int]] | None = None,
) -> PodResult:
    feas = k.bound == q.bound
    note = ""
    if not feas:
        placement = False
    elif not k.bound:
        placement = True
    elif k.victims or q.victims:
        placement = k.node == q.node and k.victims == q.victims
        if not placement:
            note = "preemption differs (node or victims)"
    elif k.node == q.node:
        placement = True
    elif ev is None:
        placement = False
        note = "different nodes, no in-memory scores (batch pod)"
    else:
        kt, qt = ev.totals.get(k.node), ev.totals.get(q.node)
        placement = kt is not None and kt == qt
        if not placement:
            note = f"in-memory totals: kube's {k.node}={kt}, py's {q.node}={qt}"
        if kube_scores and k.node in kube_scores and q.node in kube_scores:
            ks, qs = sum(kube_scores[k.node].values()), sum(kube_scores[q.node].values())
            if ks != qs:
                placement = False
            note = (
                note + "; " if note else ""
            ) + f"kube-scheduler's logged totals: {k.node}={ks}, {q.node}={qs}"
    if ev is not None and q.bound and not q.victims and ev.totals and q.node not in ev.best() and feas:
        note = (
            (note + "; " if note else "") + f"the daemon's choice {q.node} is not among the nodes "
            f"pyscheduler ranks best in memory ({','.join(ev.best())}): its cache differed from the API state?"
        )
    if ev is not None and k.bound and not k.victims and ev.feasible and k.node not in ev.feasible:
        note = (
            note + "; " if note else ""
        ) + f"pyscheduler's filters reject kube's node {k.node}: {ev.rejected.get(k.node, '?')}"
    message = _message_verdict(k, q)
    if message is False and k.bound:
        note = (note + "; " if note else "") + "the pod's events differ"
    # DRA: on the same node the allocator's choice is determined (pools, slices and devices are tried in
    # a fixed order), so the devices must be the same; on tied nodes they differ by construction.
    devices: bool | None = None
    if k.bound and q.bound and k.node == q.node and (k.devices or q.devices):
        devices = k.devices == q.devices
    return PodResult(scenario, name, k, q, ev, feas, placement, message, note, kube_scores, devices)
