"""Differential test: pyscheduler against the real kube-scheduler 1.36, scenario by scenario, on one cluster.

Usage: ``make differential`` (all scenarios), ``make differential ARGS="--scenario fit-cpu"``,
``python -m bench.differential --list``. See docs/differential.md for how to read the output.

Design
------
One ``LocalCluster`` (etcd + kube-apiserver + KWOK, no controller manager) serves the whole run; a
kube-controller-manager running only the controllers a scenario needs is added for it: the PV binder
when WaitForFirstConsumer binding must complete, the resourceclaim controller for DRA scenarios (it
makes a pod's claims from its ResourceClaimTemplates and deallocates a claim once its last pod is gone).
For each scenario, the same cluster state is built twice, once per scheduler, and only one scheduler
process runs at a time::

    for scheduler in (kube-scheduler, pyscheduler):
        create namespaces, objects (+ their status), nodes, existing (bound) pods, batch pods
        start the scheduler (same profile: each side's full default plugins, kube's 1.36 set
                             with DynamicResources included)
        batch pods: wait until each is bound or reported unschedulable
        node_updates (if any): patch the nodes' status, then wait for the pending batch pods again
        for each pod, in order:
            [DRA: delete the bound pods the scenario's ``delete_before`` names for it, and wait until
             the resourceclaim controller has released their claims]
            list the cluster (pods; plus nodes and other objects on the kube-scheduler pass)
            create the pod; wait until it is bound, or its PodScheduled condition says it is not
            (a pod that may preempt, or got a nominated node, is given time to finish preempting)
            pending -> delete it, so it cannot change later decisions
            pyscheduler pass only: reconcile the cluster to the pod set kube-scheduler's pass had at
            this point (delete/recreate pods bound elsewhere, restore or remove victims), so every
            later decision is taken from the same state in both passes
        stop the scheduler; delete pods, objects and nodes

Judging one pod (kube outcome K, pyscheduler outcome P):

- feasibility agrees when both bound or both pending;
- placement agrees when both are pending, or both bound to the same node, or both bound and the nodes
  tie for the best total score. Ties are judged in memory: the cluster state kube-scheduler saw
  (listed just before the pod was created) is loaded into a ``Snapshot`` + ``ObjectStore`` and
  pyscheduler's own framework (same profile) scores every feasible node; the nodes agree when their
  totals are equal. A pod that preempted (on either side) agrees only with the same node and the
  same victims;
- message agreement (both pending): the FailedScheduling event notes (else the PodScheduled
  condition messages) are equal;
- device agreement (DRA; both bound to the same node): each of the pod's claims holds the same devices
  (request, driver/pool/device, admin access, consumed capacity). On one node the allocator's choice is
  determined; on tied nodes it is not compared.

``--kube-only`` runs kube-scheduler alone and prints what it did with each pod (node and devices, or
the message): the way to check a new scenario before comparing.

The run prints one line per scenario, then ``agreement: feasibility A/N, placement B/N`` and
``messages: C/M``, writes every disagreement (with the in-memory scores) to
bench/results/differential-<UTC date>.json (``...-subset.json`` for a ``--scenario`` run), and exits 1 if feasibility disagrees anywhere (2 if a
scenario could not be run).

The package: ``common`` (names, timeouts, kinds), ``records`` (outcomes, results, the JSON report),
``api`` (the cluster), ``schedulers`` (the processes), ``runner`` (one pass), ``evaluate`` (in-memory
scores), ``judge``, ``driver`` (a run), ``cli`` (``python -m bench.differential``).
"""

from bench.differential.api import Api, allocated_devices
from bench.differential.cli import main
from bench.differential.common import KINDS, SCHEDULER_NAME, RunError, feature_gates_for
from bench.differential.driver import Differential, run_differential, write_report
from bench.differential.judge import judge, judge_one
from bench.differential.records import Outcome, PodResult, Report, ScenarioResult
from bench.differential.runner import ScenarioRunner
from bench.differential.schedulers import (
    CLAIM_CONTROLLER,
    PV_CONTROLLER,
    ControllerManager,
    controllers_for,
    parse_kube_scores,
    uses_dra,
)

__all__ = [
    "CLAIM_CONTROLLER",
    "KINDS",
    "PV_CONTROLLER",
    "SCHEDULER_NAME",
    "Api",
    "ControllerManager",
    "Differential",
    "Outcome",
    "PodResult",
    "Report",
    "RunError",
    "ScenarioResult",
    "ScenarioRunner",
    "allocated_devices",
    "controllers_for",
    "feature_gates_for",
    "judge",
    "judge_one",
    "main",
    "parse_kube_scores",
    "run_differential",
    "uses_dra",
    "write_report",
]
