"""Where a volume can be used: a PV's node affinity and a StorageClass's allowed topologies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyscheduler.framework.helpers.storage import (
    JSONMap,
    spec,
)
from pyscheduler.framework.selectors import (
    NodeSelectorTerm,
    SelectorError,
    parse_node_selector_term,
)


class NodeAffinity:
    """A PV's spec.nodeAffinity.required, checked the way CheckNodeAffinity does: against the
    node's labels only (no name, so matchFields on metadata.name never match In). Invalid terms
    match nothing; no required selector matches every node."""

    __slots__ = ("terms",)

    def __init__(self, terms: tuple[NodeSelectorTerm, ...] | None) -> None:
        self.terms = terms

    @classmethod
    def of(cls, pv: JSONMap) -> NodeAffinity:
        na = spec(pv).get("nodeAffinity")
        req = na.get("required") if isinstance(na, Mapping) else None
        if not isinstance(req, Mapping):
            return _ANY_NODE
        terms: list[NodeSelectorTerm] = []
        for i, t in enumerate(req.get("nodeSelectorTerms") or ()):
            if not isinstance(t, Mapping):
                continue
            try:
                terms.append(parse_node_selector_term(t, f"nodeSelectorTerms[{i}]"))
            except SelectorError:
                continue
        return cls(tuple(terms))

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.terms is None:
            return True
        return any(t.matches(labels, "") for t in self.terms)


_ANY_NODE = NodeAffinity(None)


_Term = tuple[tuple[str, frozenset[str]], ...]


class TopologySelector:
    """StorageClass.allowedTopologies (MatchTopologySelectorTerms): no terms match everything; a
    term matches when each of its expressions finds the node's label value among its values; an
    empty term matches nothing."""

    __slots__ = ("terms",)

    def __init__(self, allowed: Any) -> None:
        terms: list[_Term] = []
        for t in allowed or ():
            exprs = t.get("matchLabelExpressions") if isinstance(t, Mapping) else None
            reqs = tuple(
                (str(e.get("key") or ""), frozenset(str(v) for v in e.get("values") or ()))
                for e in exprs or ()
                if isinstance(e, Mapping)
            )
            terms.append(reqs)
        self.terms: tuple[_Term, ...] | None = tuple(terms) if terms else None

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.terms is None:
            return True
        for reqs in self.terms:
            if not reqs:
                continue
            if all(k in labels and labels[k] in values for k, values in reqs):
                return True
        return False
