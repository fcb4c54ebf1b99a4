"""PodTopologySpread: spread matching pods evenly over topology domains (zones, nodes, racks...).

A pod's ``topologySpreadConstraints`` name a node label (``topologyKey``: every value is a *domain*), a
``labelSelector`` (which pods count) and a ``maxSkew``. The skew of a domain is the number of matching pods
in it, plus one if the incoming pod itself matches, minus the smallest number in any eligible domain.

Extension points
----------------
- PreFilter: for the hard constraints (``whenUnsatisfiable: DoNotSchedule``) count, over all nodes, the
  matching pods per domain. Only pods in the incoming pod's namespace count, terminating pods do not, and
  only *eligible* nodes form domains: nodes that carry every constraint's topology key and pass the
  constraint's inclusion policies (``nodeAffinityPolicy``: Honor (default) = the pod's nodeSelector and
  required node affinity must match; ``nodeTaintsPolicy``: Ignore (default), Honor = the pod must tolerate
  the node's NoSchedule/NoExecute taints). ``matchLabelKeys`` adds the pod's own values of those labels to
  the selector. With fewer domains than ``minDomains`` (default 1) the global minimum is taken as 0.
  Returns Skip when the pod has no hard constraint.
- PreFilterExtensions (add_pod / remove_pod): adjust the counts for preemption's what-ifs.
- Filter: a node without a constraint's topology key is rejected UnschedulableAndUnresolvable
  (``ERR_REASON_NODE_LABEL_NOT_MATCH``); a node whose domain would exceed ``maxSkew`` is rejected
  Unschedulable (``ERR_REASON_CONSTRAINTS_NOT_MATCH``), so preemption may help.
- PreScore / Score / NormalizeScore: for the soft constraints (``ScheduleAnyway``), a node's raw score is
  the sum over constraints of ``count(domain) * log(domains + 2) + (maxSkew - 1)`` (rounded half away
  from zero), and normalization reverses it over the min and max: ``100 * (max + min - s) // max``, so
  the emptiest domain scores highest. Nodes missing a topology key score 0.
- EnqueueExtensions: assigned pod add/delete/label change in the pod's namespace (and the pod's own
  toleration change when a constraint honours taints), node add/delete/label/taint changes.

Default constraints
-------------------
A pod that declares no constraint gets the plugin's default constraints, whose selector is deduced from
the Services selecting the pod and the pod's controller (ReplicaSet, StatefulSet or
ReplicationController), read through ``handle.objects``. A pod with no such owner or Service (or a
handle without ``objects``) gets none. ``defaultingType: System`` (default) uses kube-scheduler's system
defaults (``kubernetes.io/hostname`` maxSkew 3 and ``topology.kubernetes.io/zone`` maxSkew 5, both
ScheduleAnyway); with System defaults, nodes missing the zone label are still scored for hostname
spreading. ``defaultingType: List`` uses ``defaultConstraints``.

Args (``PodTopologySpreadArgs``): ``defaultConstraints`` (list of constraints without labelSelector,
``maxSkew`` > 0, valid ``topologyKey``, ``whenUnsatisfiable`` DoNotSchedule|ScheduleAnyway, no two with
the same key and action; only with ``defaultingType: List``), ``defaultingType`` (System|List).

Modules
-------
``args.py`` (args and their validation), ``common.py`` (constraints, node eligibility, counting, the
pod's constraints own or defaulted: ``PluginBase``), ``filtering.py`` (PreFilter, its extensions,
Filter and ``filter_nodes``), ``scoring.py`` (PreScore, Score and ``score_nodes``, NormalizeScore),
``hints.py`` (queueing hints). This module only puts the parts together. Each batch hook
(``filter_nodes``, ``score_nodes``) is held to its per-node twin by the randomized tests beside it.
"""

from __future__ import annotations

from pyscheduler.framework.helpers import signers
from pyscheduler.framework.helpers.gomath import go_round, go_round_array
from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.pod_topology_spread.args import PodTopologySpreadArgs
from pyscheduler.plugins.pod_topology_spread.common import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
)
from pyscheduler.plugins.pod_topology_spread.filtering import Filtering, PreFilterState
from pyscheduler.plugins.pod_topology_spread.hints import Hints
from pyscheduler.plugins.pod_topology_spread.scoring import PreScoreState, Scoring

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "NAME",
    "PLUGIN",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
    "PreFilterState",
    "PreScoreState",
    "go_round",
    "go_round_array",
]


# sign_pod's refusals: under the default profile every pod gets the second one, so it is made once
_OWN_CONSTRAINTS = Status.unschedulable("pods with topology constraints are not signable")
_DEFAULT_CONSTRAINTS = Status.unschedulable("pods with default topology constraints are not signable")


class PodTopologySpread(Filtering, Scoring, Hints):
    """The plugin: PreFilter/Filter (filtering.py), PreScore/Score/NormalizeScore (scoring.py), queueing
    hints (hints.py), all over the constraints of common.py."""

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching (kube's SignPod): a pod with constraints of its own is refused, and so
        is every pod while the plugin has default constraints (``defaultingType: System``, the default,
        gives it kube's two): batching then never happens in the profile."""
        if pod.topology_spread_constraints:
            return [], _OWN_CONSTRAINTS
        if self.default_constraints:
            return [], _DEFAULT_CONSTRAINTS
        return [], None


def new(args: PodTopologySpreadArgs | None, handle: Handle) -> PodTopologySpread:
    return PodTopologySpread(args, handle)


PLUGIN = PluginSpec(
    NAME, new, PodTopologySpreadArgs, "spread matching pods evenly over topology domains (hard and soft)"
)
