"""Finding a PV for a claim: candidates indexed by node topology, kube's smallest-that-fits choice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from pyscheduler.framework.helpers.storage import (
    ANN_SELECTED_NODE,
    JSONMap,
    annotations_of,
    claim_class,
    is_deleting,
    is_volume_bound_to_claim,
    labels_of,
    name_of,
    namespace_of,
    pv_capacity,
    pv_class,
    spec,
    storage_request,
)
from pyscheduler.framework.selectors import (
    LabelSelector,
    SelectorError,
)
from pyscheduler.plugins.volume_binding.binding import VolumeError
from pyscheduler.plugins.volume_binding.topology import NodeAffinity


@dataclass(frozen=True, slots=True)
class Candidate:
    """An unbound-claim candidate PV with what FindMatchingVolume reads, parsed once per cycle."""

    pv: JSONMap
    name: str
    capacity: Fraction
    volume_mode: str
    deleting: bool
    affinity: NodeAffinity
    available: bool
    labels: Mapping[str, str]
    storage_class: str
    access_modes: frozenset[str]
    attributes_class: str

    @classmethod
    def of(cls, pv: JSONMap) -> Candidate:
        s = spec(pv)
        status = pv.get("status")
        phase = status.get("phase") if isinstance(status, Mapping) else None
        return cls(
            pv=pv,
            name=name_of(pv),
            capacity=pv_capacity(pv),
            volume_mode=str(s.get("volumeMode") or "Filesystem"),
            deleting=is_deleting(pv),
            affinity=NodeAffinity.of(pv),
            available=phase == "Available",
            labels=labels_of(pv),
            storage_class=pv_class(pv),
            access_modes=frozenset(str(m) for m in s.get("accessModes") or ()),
            attributes_class=str(s.get("volumeAttributesClassName") or ""),
        )


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    """An unbound claim with what matching reads, parsed once per cycle."""

    pvc: JSONMap
    key: str
    request: Fraction
    has_request: bool
    storage_class: str
    selector: LabelSelector | None
    volume_mode: str
    access_modes: tuple[str, ...]
    attributes_class: str
    selected_node: str | None

    @classmethod
    def of(cls, pvc: JSONMap) -> ClaimInfo:
        s = spec(pvc)
        sel = s.get("selector")
        selector = None
        if isinstance(sel, Mapping):
            try:
                selector = LabelSelector.parse(sel, "selector")
            except SelectorError as e:
                raise VolumeError(
                    f"error creating internal label selector for claim: "
                    f"{namespace_of(pvc)}/{name_of(pvc)}: {e}"
                ) from e
        req = storage_request(pvc)
        ann = annotations_of(pvc)
        return cls(
            pvc=pvc,
            key=f"{namespace_of(pvc)}/{name_of(pvc)}",
            request=req if req is not None else Fraction(0),
            has_request=req is not None,
            storage_class=claim_class(pvc),
            selector=selector,
            volume_mode=str(s.get("volumeMode") or "Filesystem"),
            access_modes=tuple(str(m) for m in s.get("accessModes") or ()),
            attributes_class=str(s.get("volumeAttributesClassName") or ""),
            selected_node=str(ann[ANN_SELECTED_NODE]) if ANN_SELECTED_NODE in ann else None,
        )


def claim_candidates(claim: ClaimInfo, candidates: Sequence[Candidate]) -> list[tuple[Candidate, bool]]:
    """The part of FindMatchingVolume that does not depend on the node, done once per claim: the
    PVs (in order) that could serve the claim, each flagged when it is pre-bound to the claim.

    A PV bound to another claim, too small, of another volume mode or being deleted is out. A PV
    pre-bound to the claim stays whatever else it is; the others must also be Available, match the
    claim's selector, class, access modes and volume attributes class."""
    out: list[tuple[Candidate, bool]] = []
    for c in candidates:
        prebound = False
        if spec(c.pv).get("claimRef") is not None:
            if not is_volume_bound_to_claim(c.pv, claim.pvc):
                continue
            prebound = True
        if c.capacity < claim.request or c.volume_mode != claim.volume_mode or c.deleting:
            continue
        if not prebound and not (
            c.available
            and (claim.selector is None or claim.selector.matches(c.labels))
            and c.storage_class == claim.storage_class
            and all(m in c.access_modes for m in claim.access_modes)
            and c.attributes_class == claim.attributes_class
        ):
            continue
        out.append((c, prebound))
    return out


def pick_volume(
    candidates: Sequence[tuple[Candidate, bool]],
    node_labels: Mapping[str, str],
    excluded: set[str] | frozenset[str],
) -> Candidate | None:
    """The rest of FindMatchingVolume, per node: the first PV pre-bound to the claim decides (it
    matches if its node affinity fits the node, else nothing does); otherwise the smallest PV whose
    node affinity fits, first one on ties."""
    smallest: Candidate | None = None
    for c, prebound in candidates:
        if c.name in excluded:
            continue
        fits = c.affinity.matches(node_labels)
        if prebound:
            return c if fits else None
        if fits and (smallest is None or smallest.capacity > c.capacity):
            smallest = c
    return smallest


class CandidateIndex:
    """A claim's candidate PVs indexed by node label, so a node only looks at PVs that could be
    reachable from it: a PV whose every node-affinity term requires some label ``k In [v...]`` is
    filed under those (k, v); PVs pre-bound to the claim and PVs without such a requirement are
    checked on every node. ``for_node`` keeps the candidates' original order."""

    __slots__ = ("_always", "_by_label", "_items")

    def __init__(self, items: Sequence[tuple[Candidate, bool]]) -> None:
        self._items = list(items)
        self._always: list[int] = []
        self._by_label: dict[str, dict[str, list[int]]] = {}
        for pos, (c, prebound) in enumerate(self._items):
            keys = None if prebound else _index_keys(c.affinity)
            if keys is None:
                self._always.append(pos)
                continue
            for key, values in keys:
                by_value = self._by_label.setdefault(key, {})
                for v in values:
                    by_value.setdefault(v, []).append(pos)

    def __len__(self) -> int:
        return len(self._items)

    def for_node(self, labels: Mapping[str, str]) -> list[tuple[Candidate, bool]]:
        if not self._by_label:
            return self._items
        positions = set(self._always)
        for key, by_value in self._by_label.items():
            value = labels.get(key)
            if value is not None:
                positions.update(by_value.get(value, ()))
        return [self._items[i] for i in sorted(positions)]


def _index_keys(affinity: NodeAffinity) -> list[tuple[str, frozenset[str]]] | None:
    """One ``In`` requirement per term (any matching node has one of those labels), or None when
    some term has none (the PV must be checked everywhere). No terms: matches no node."""
    if affinity.terms is None:
        return None
    keys: list[tuple[str, frozenset[str]]] = []
    for term in affinity.terms:
        req = next((r for r in term.expressions if r.operator == "In"), None)
        if req is None:
            if not term.expressions and not term.fields:
                continue  # an empty term matches nothing
            return None
        keys.append((req.key, req.values))
    return keys


def find_matching_volume(
    claim: ClaimInfo,
    candidates: Sequence[Candidate],
    node_labels: Mapping[str, str],
    excluded: set[str] | frozenset[str],
) -> Candidate | None:
    """FindMatchingVolume on the scheduler path: a PV pre-bound to the claim if its node affinity
    fits, else the smallest Available PV of the claim's class that satisfies size, volume mode,
    selector, node affinity, access modes and volume attributes class."""
    return pick_volume(claim_candidates(claim, candidates), node_labels, excluded)
