"""Parsed pod (anti-)affinity terms, as kube's framework.AffinityTerm, cached per pod in PodInfo.memo.

A term selects pods by ``labelSelector`` (absent: no pod) in a set of namespaces: the ``namespaces``
listed, plus those whose labels match ``namespaceSelector``. With neither, the term's own pod's namespace;
an empty ``namespaceSelector: {}`` means every namespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyscheduler.framework.selectors import LabelMatcher, LabelSelector, SelectorError, compile_selector
from pyscheduler.framework.types import Pod, PodInfo

MEMO_KEY = "InterPodAffinity"  # the plugin's NAME: PodInfo.memo[NAME]


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    namespaces: frozenset[str]
    # None: matches no namespace by label (kube's labels.Nothing()); empty: every namespace
    namespace_selector: LabelSelector | None
    # None: matches no pod
    selector: LabelSelector | None
    topology_key: str
    _match: LabelMatcher = field(init=False, compare=False, repr=False)
    _ns_match: LabelMatcher = field(init=False, compare=False, repr=False)
    # terms are dict keys of the existing-terms index: hashed once, not field by field per lookup
    _hash: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_match", compile_selector(self.selector))
        object.__setattr__(self, "_ns_match", compile_selector(self.namespace_selector))
        object.__setattr__(
            self, "_hash", hash((self.namespaces, self.namespace_selector, self.selector, self.topology_key))
        )

    def __hash__(self) -> int:
        return self._hash

    def matches(self, pod: Pod, ns_labels: Mapping[str, str] | None) -> bool:
        """Whether ``pod`` (whose namespace has labels ``ns_labels``) is selected by this term."""
        if pod.namespace in self.namespaces or self._ns_match(ns_labels or _EMPTY_LABELS):
            return self._match(pod.labels)
        return False


_EMPTY_LABELS: Mapping[str, str] = {}


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class ParsedAffinity:
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    # parse errors ("requiredAffinityTerms: ..."); a list that failed to parse is left empty
    errors: tuple[str, ...] = ()


EMPTY = ParsedAffinity()


def new_affinity_term(pod: Pod, term: Mapping[str, Any], where: str) -> AffinityTerm:
    selector = LabelSelector.parse(term.get("labelSelector"), f"{where}.labelSelector")
    ns_raw = term.get("namespaceSelector")
    ns_selector = LabelSelector.parse(ns_raw, f"{where}.namespaceSelector")
    names = term.get("namespaces") or ()
    if not names and ns_raw is None:
        namespaces = frozenset((pod.namespace,))
    else:
        namespaces = frozenset(str(n) for n in names)
    return AffinityTerm(namespaces, ns_selector, selector, str(term.get("topologyKey") or ""))


def _terms(pod: Pod, raw: Iterable[Mapping[str, Any]], where: str) -> tuple[AffinityTerm, ...]:
    return tuple(new_affinity_term(pod, t, f"{where}[{i}]") for i, t in enumerate(raw))


def _weighted(pod: Pod, raw: Iterable[Mapping[str, Any]], where: str) -> tuple[WeightedAffinityTerm, ...]:
    return tuple(
        WeightedAffinityTerm(
            new_affinity_term(pod, t.get("podAffinityTerm") or {}, f"{where}[{i}].podAffinityTerm"),
            int(t.get("weight") or 0),
        )
        for i, t in enumerate(raw)
    )


def parse_affinity(pod: Pod) -> ParsedAffinity:
    """The pod's four lists of terms. Never raises: a list with a bad selector is reported in
    ``errors`` and left empty (kube's NewPodInfo does the same)."""
    aff = pod.affinity
    if not aff:
        return EMPTY
    pa = aff.get("podAffinity") or {}
    paa = aff.get("podAntiAffinity") or {}
    if not pa and not paa:
        return EMPTY
    errors: list[str] = []
    req_key = "requiredDuringSchedulingIgnoredDuringExecution"
    pref_key = "preferredDuringSchedulingIgnoredDuringExecution"

    def safe(fn: Any, raw: Any, where: str, label: str) -> tuple[Any, ...]:
        if not raw:
            return ()
        try:
            result: tuple[Any, ...] = fn(pod, raw, where)
            return result
        except (SelectorError, TypeError, ValueError, AttributeError) as e:
            errors.append(f"{label}: {e}")
            return ()

    return ParsedAffinity(
        required_affinity=safe(_terms, pa.get(req_key), f"podAffinity.{req_key}", "requiredAffinityTerms"),
        required_anti_affinity=safe(
            _terms, paa.get(req_key), f"podAntiAffinity.{req_key}", "requiredAntiAffinityTerms"
        ),
        preferred_affinity=safe(
            _weighted, pa.get(pref_key), f"podAffinity.{pref_key}", "preferredAffinityTerms"
        ),
        preferred_anti_affinity=safe(
            _weighted, paa.get(pref_key), f"podAntiAffinity.{pref_key}", "preferredAntiAffinityTerms"
        ),
        errors=tuple(errors),
    )


_last: tuple[Any, str, ParsedAffinity] | None = None  # affinity_of's (affinity, namespace, terms)


def affinity_of(pod: Pod) -> ParsedAffinity:
    """``parse_affinity(pod)``, the last answer kept. One scheduling cycle asks for the incoming pod's
    terms at PreFilter and at PreScore, and the existing-terms index then reads the PodInfo of the pod
    it assumed, which shares the pod's affinity object: parsing was a twentieth of a cycle with 50
    anti-affinity groups. Kept by the affinity object itself (held while kept, so its id cannot be
    reused) and the namespace, as ``ParsedCache`` keeps them; one entry, replaced whole (threads may
    call this: at worst they parse again)."""
    global _last
    aff = pod.affinity
    if not aff:
        return EMPTY
    hit = _last
    if hit is not None and hit[0] is aff and hit[1] == pod.namespace:
        return hit[2]
    parsed = parse_affinity(pod)
    _last = (aff, pod.namespace, parsed)
    return parsed


def terms_of(pi: PodInfo) -> ParsedAffinity:
    """The parsed terms of a pod, computed once per PodInfo (cached in ``memo``)."""
    if not pi.has_affinity:
        return EMPTY
    cached = pi.memo.get(MEMO_KEY)
    if isinstance(cached, ParsedAffinity):
        return cached
    parsed = affinity_of(pi.pod)
    pi.memo[MEMO_KEY] = parsed
    return parsed


_PARSED_LIMIT = 8192  # waiting pods whose parsed terms the hints keep


class ParsedCache:
    """The parsed terms of the waiting pods the hints are asked about. The queue calls the hints once per
    waiting pod per cluster event; parsing the pod's affinity each time was most of EventHandlingPodAdd's
    reflector thread. The terms depend only on the pod's affinity and namespace, so they are kept by the
    affinity object (held, so its id is not reused while kept), not by pod: the cache keeps no pod alive,
    and pods gone from the queue leave only their affinity behind until the bound clears it."""

    __slots__ = ("_by_id",)

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Any, str, ParsedAffinity]] = {}

    def get(self, pod: Pod) -> ParsedAffinity:
        aff = pod.affinity
        if not aff:
            return EMPTY
        hit = self._by_id.get(id(aff))
        if hit is not None and hit[0] is aff and hit[1] == pod.namespace:
            return hit[2]
        parsed = parse_affinity(pod)
        if len(self._by_id) >= _PARSED_LIMIT:
            self._by_id.clear()
        self._by_id[id(aff)] = (aff, pod.namespace, parsed)
        return parsed


def pod_matches_all_terms(terms: tuple[AffinityTerm, ...], pod: Pod) -> bool:
    """True iff there are terms and ``pod`` matches every one (incoming pod's terms: namespace
    selectors already merged, so no namespace labels are needed)."""
    if not terms:
        return False
    return all(t.matches(pod, None) for t in terms)


def term_picks(t: AffinityTerm, pod: Pod) -> bool:
    """Whether the incoming pod's term ``t`` (namespace selector already merged) selects ``pod``."""
    return t.matches(pod, None)
