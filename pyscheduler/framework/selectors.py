"""Label selectors and node selectors, evaluated the way the API machinery does.

- ``LabelSelector`` (metav1.LabelSelector: matchLabels + matchExpressions with In, NotIn, Exists,
  DoesNotExist). An empty selector matches everything; ``None`` matches nothing (callers decide).
- ``NodeSelector`` (v1.NodeSelector: OR of terms; each term ANDs matchExpressions on labels, with In,
  NotIn, Exists, DoesNotExist, Gt, Lt, and matchFields on ``metadata.name``). A term with no
  requirements matches nothing, and so does a selector with no terms.

Parsed once from the API's JSON; raises ``SelectorError`` naming the bad part.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


class SelectorError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str] = frozenset()
    int_value: int = 0  # for Gt/Lt

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if op in ("Gt", "Lt"):
            v = labels.get(self.key)
            if v is None:
                return False
            try:
                n = int(v)
            except ValueError:
                return False
            return n > self.int_value if op == "Gt" else n < self.int_value
        return False


_LABEL_OPS = {"In", "NotIn", "Exists", "DoesNotExist"}
_NODE_OPS = _LABEL_OPS | {"Gt", "Lt"}


def _requirement(expr: Mapping[str, Any], ops: set[str], where: str) -> Requirement:
    key = expr.get("key")
    op = expr.get("operator")
    values = expr.get("values") or []
    if not isinstance(key, str) or not key:
        raise SelectorError(f"{where}.key: required")
    if op not in ops:
        raise SelectorError(f"{where}.operator: unsupported operator {op!r}")
    if op in ("In", "NotIn") and not values:
        raise SelectorError(f"{where}.values: must be non-empty for {op}")
    if op in ("Exists", "DoesNotExist") and values:
        raise SelectorError(f"{where}.values: must be empty for {op}")
    iv = 0
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise SelectorError(f"{where}.values: {op} needs exactly one value")
        try:
            iv = int(values[0])
        except ValueError as e:
            raise SelectorError(f"{where}.values: {op} needs an integer, got {values[0]!r}") from e
    return Requirement(key, op, frozenset(str(v) for v in values), iv)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, sel: Mapping[str, Any] | None, where: str = "labelSelector") -> LabelSelector | None:
        """None for a missing selector (which matches nothing); an empty one matches everything."""
        if sel is None:
            return None
        reqs: list[Requirement] = []
        for k, v in sorted((sel.get("matchLabels") or {}).items()):
            reqs.append(Requirement(k, "In", frozenset([str(v)])))
        for i, expr in enumerate(sel.get("matchExpressions") or ()):
            reqs.append(_requirement(expr, _LABEL_OPS, f"{where}.matchExpressions[{i}]"))
        return cls(tuple(reqs))

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def is_empty(self) -> bool:
        return not self.requirements


EVERYTHING = LabelSelector(())

LabelMatcher = Callable[[Mapping[str, str]], bool]


def compile_selector(selector: LabelSelector | None) -> LabelMatcher:
    """A fast matcher equivalent to ``selector.matches`` (None matches nothing). Selectors made only
    of equality / In requirements, the common case, avoid the generic per-requirement dispatch."""
    if selector is None:
        return lambda labels: False
    reqs = selector.requirements
    if not reqs:
        return lambda labels: True
    if all(r.operator == "In" for r in reqs):
        if len(reqs) == 1 and len(reqs[0].values) == 1:
            key = reqs[0].key
            (value,) = reqs[0].values
            return lambda labels: labels.get(key) == value
        pairs = tuple((r.key, r.values) for r in reqs)
        return lambda labels: all(labels.get(k) in vs for k, vs in pairs)
    return selector.matches


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    expressions: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if not self.expressions and not self.fields:
            return False
        if not all(r.matches(labels) for r in self.expressions):
            return False
        if self.fields:
            f = {"metadata.name": node_name}
            if not all(r.matches(f) for r in self.fields):
                return False
        return True


@dataclass(frozen=True, slots=True)
class NodeSelector:
    terms: tuple[NodeSelectorTerm, ...] = ()

    @classmethod
    def parse(cls, sel: Mapping[str, Any], where: str = "nodeSelector") -> NodeSelector:
        return cls(
            tuple(
                parse_node_selector_term(t, f"{where}.nodeSelectorTerms[{i}]")
                for i, t in enumerate(sel.get("nodeSelectorTerms") or ())
            )
        )

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        return any(t.matches(labels, node_name) for t in self.terms)


def parse_node_selector_term(t: Mapping[str, Any], where: str) -> NodeSelectorTerm:
    exprs = tuple(
        _requirement(e, _NODE_OPS, f"{where}.matchExpressions[{i}]")
        for i, e in enumerate(t.get("matchExpressions") or ())
    )
    fields = []
    for i, e in enumerate(t.get("matchFields") or ()):
        r = _requirement(e, _NODE_OPS, f"{where}.matchFields[{i}]")
        if r.key != "metadata.name":
            raise SelectorError(
                f"{where}.matchFields[{i}].key: only metadata.name is supported, got {r.key!r}"
            )
        if r.operator in ("In", "NotIn") and len(r.values) != 1:
            raise SelectorError(f"{where}.matchFields[{i}].values: must have one element")
        fields.append(r)
    return NodeSelectorTerm(exprs, tuple(fields))
