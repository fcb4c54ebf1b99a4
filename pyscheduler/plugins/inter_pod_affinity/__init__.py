"""InterPodAffinity: place pods near (affinity) or away from (anti-affinity) other pods.

A term selects pods (``labelSelector``, in ``namespaces`` and/or namespaces matching
``namespaceSelector``; neither means the pod's own namespace, ``namespaceSelector: {}`` means all) and
names a ``topologyKey``: a node is "near" a pod when both nodes have the same value for that label.

Extension points
----------------
- PreFilter: counts, per topology pair (key, value): existing pods whose *required anti-affinity*
  selects the incoming pod; existing pods matching *all* the incoming pod's required affinity terms;
  existing pods matching each of its required anti-affinity terms. The incoming pod's namespace
  selectors are resolved to namespace names here (Namespace objects from ``handle.objects``); existing
  pods' selectors are matched against the incoming pod's namespace labels. Returns Skip when the pod
  has no required term and no existing pod's anti-affinity selects it; UnschedulableAndUnresolvable
  when one of the pod's selectors does not parse.
- PreFilterExtensions (add_pod / remove_pod): adjust those counts for preemption's what-ifs.
- Filter, in this order:
  * affinity: the node must have every term's topology key and a matching pod in each term's domain,
    else UnschedulableAndUnresolvable ``ERR_REASON_AFFINITY_RULES_NOT_MATCH``. Exception: when no pod
    anywhere matches and the pod matches its own terms (the first pod of a group), any node with the
    keys passes.
  * anti-affinity: no pod matching a term in the node's domain, else Unschedulable
    ``ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH``.
  * existing pods' anti-affinity: no existing pod whose required anti-affinity selects the incoming pod
    in the node's domain, else Unschedulable ``ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH``.
- PreScore / Score / NormalizeScore: per topology pair, sum ``+weight`` for existing pods matching the
  incoming pod's preferred affinity terms, ``-weight`` for its preferred anti-affinity terms, and, for
  existing pods' terms that select the incoming pod, ``+hardPodAffinityWeight`` (required affinity),
  ``+weight`` (preferred affinity) and ``-weight`` (preferred anti-affinity). A node's raw score is the
  sum over its labels; normalized as ``int(100 * (s - min) / (max - min))`` (0 when all are equal).
- EnqueueExtensions: assigned pod add/delete/label changes (with a hint), node add/label/taint changes
  that bring a topology key the pod needs.

Args (``InterPodAffinityArgs``): ``hardPodAffinityWeight`` (default 1, 0-100),
``ignorePreferredTermsOfExistingPods`` (default false: when true and the incoming pod has no preferred
terms, scoring is skipped).

Parsed terms of existing pods are cached in ``PodInfo.memo["InterPodAffinity"]``.

Modules: ``args.py``, ``terms.py`` (parsed affinity terms, memoized per pod), ``common.py`` (names, counts
by topology pair, ``PluginBase``), ``filtering.py`` (PreFilter, its extensions, Filter and
``filter_nodes``), ``scoring.py`` (PreScore, Score and ``score_nodes``, NormalizeScore), ``hints.py``.
Each batch hook is held to its per-node twin by the randomized tests beside it.
"""

from __future__ import annotations

from pyscheduler.framework.helpers import signers
from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.inter_pod_affinity.args import InterPodAffinityArgs
from pyscheduler.plugins.inter_pod_affinity.common import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
)
from pyscheduler.plugins.inter_pod_affinity.filtering import Filtering, PreFilterState
from pyscheduler.plugins.inter_pod_affinity.hints import Hints
from pyscheduler.plugins.inter_pod_affinity.scoring import PreScoreState, Scoring

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "NAME",
    "PLUGIN",
    "InterPodAffinity",
    "InterPodAffinityArgs",
    "PreFilterState",
    "PreScoreState",
]


class InterPodAffinity(Filtering, Scoring, Hints):
    """The plugin: PreFilter/Filter (filtering.py), PreScore/Score/NormalizeScore (scoring.py), queueing
    hints (hints.py), over the parsed terms of terms.py."""

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching (kube's SignPod): a pod with pod (anti-)affinity is refused; else its
        labels, which existing pods' terms may match (not with ignorePreferredTermsOfExistingPods)."""
        affinity = pod.affinity or {}
        if affinity.get("podAffinity") is not None or affinity.get("podAntiAffinity") is not None:
            return [], Status.unschedulable("pods with InterPodAffinity are not signable")
        if self.args.ignore_preferred_terms_of_existing_pods:
            return [], None
        return [(signers.LABELS, signers.mapping(pod.labels))], None


def new(args: InterPodAffinityArgs | None, handle: Handle) -> InterPodAffinity:
    return InterPodAffinity(args, handle)


PLUGIN = PluginSpec(
    NAME, new, InterPodAffinityArgs, "pod affinity and anti-affinity (required and preferred)"
)
