"""Node selector terms the way kube's component-helpers ``nodeaffinity`` package parses them, and a pod's
required node affinity as one matcher (``RequiredNodeAffinity``: NodeAffinity's Filter and
PodTopologySpread's inclusion policy both use it, as in kube).

- A term with neither ``matchExpressions`` nor ``matchFields`` is dropped (it selects nothing).
- A term that fails to parse never matches; for a pod's own terms that is all (kube's "lazy errors":
  the other terms still count), while ``addedAffinity`` in the plugin args must parse entirely.
- ``matchExpressions`` keys must be qualified names and values label values; ``In``/``NotIn`` need values,
  ``Exists``/``DoesNotExist`` none, ``Gt``/``Lt`` exactly one integer.
- ``matchFields`` supports only ``metadata.name`` with ``In``/``NotIn`` and exactly one value.
- Preferred terms with weight 0 are dropped.

Matching itself is ``pyscheduler.framework.selectors.NodeSelectorTerm``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyscheduler.framework.helpers.names import label_value_error, qualified_name_error
from pyscheduler.framework.selectors import NodeSelectorTerm, SelectorError, parse_node_selector_term
from pyscheduler.framework.types import Node, Pod

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

_TERM_KEYS = frozenset({"matchExpressions", "matchFields"})
_REQUIREMENT_KEYS = frozenset({"key", "operator", "values"})
_NODE_SELECTOR_KEYS = frozenset({"nodeSelectorTerms"})
_PREFERRED_KEYS = frozenset({"weight", "preference"})
_FIELD_OPS = frozenset({"In", "NotIn"})


def _check_keys(obj: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    for k in obj:
        if k not in allowed:
            raise SelectorError(f"{where}.{k}: unknown field; known fields: {', '.join(sorted(allowed))}")


def _check_requirements(reqs: Any, where: str, fields: bool, strict: bool) -> None:
    if reqs is None:
        return
    if not isinstance(reqs, list | tuple):
        raise SelectorError(f"{where}: must be a list")
    for i, r in enumerate(reqs):
        at = f"{where}[{i}]"
        if not isinstance(r, Mapping):
            raise SelectorError(f"{at}: must be an object")
        if strict:
            _check_keys(r, _REQUIREMENT_KEYS, at)
        key, op, values = r.get("key"), r.get("operator"), r.get("values")
        if not isinstance(key, str):
            raise SelectorError(f"{at}.key: must be a string")
        if not isinstance(op, str):
            raise SelectorError(f"{at}.operator: must be a string")
        if values is not None and (
            not isinstance(values, list | tuple) or not all(isinstance(v, str) for v in values)
        ):
            raise SelectorError(f"{at}.values: must be a list of strings")
        if fields:
            if op not in _FIELD_OPS:
                raise SelectorError(f"{at}.operator: unsupported operator {op!r} (supported: In, NotIn)")
            continue
        err = qualified_name_error(key) if key else None
        if err:
            raise SelectorError(f"{at}.key: {err}")
        for j, v in enumerate(values or ()):
            err = label_value_error(v)
            if err:
                raise SelectorError(f"{at}.values[{j}]: {err}")


def is_empty_term(term: Mapping[str, Any]) -> bool:
    return not term.get("matchExpressions") and not term.get("matchFields")


def compile_term(term: Any, where: str, strict: bool = False) -> NodeSelectorTerm:
    """One node selector term; SelectorError (message ``path: detail``) if it does not parse.
    ``strict`` also refuses unknown fields (for config files)."""
    if not isinstance(term, Mapping):
        raise SelectorError(f"{where}: must be an object")
    if strict:
        _check_keys(term, _TERM_KEYS, where)
    _check_requirements(term.get("matchExpressions"), f"{where}.matchExpressions", False, strict)
    _check_requirements(term.get("matchFields"), f"{where}.matchFields", True, strict)
    return parse_node_selector_term(term, where)


def compile_node_selector(
    selector: Any, where: str, strict: bool = False
) -> tuple[tuple[NodeSelectorTerm, ...], tuple[str, ...]]:
    """A v1.NodeSelector: its parsed non-empty terms and the errors of those that did not parse."""
    if not isinstance(selector, Mapping):
        return (), (f"{where}: must be an object",)
    if strict:
        try:
            _check_keys(selector, _NODE_SELECTOR_KEYS, where)
        except SelectorError as e:
            return (), (str(e),)
    raw_terms = selector.get("nodeSelectorTerms")
    if raw_terms is None:
        raw_terms = ()
    if not isinstance(raw_terms, list | tuple):
        return (), (f"{where}.nodeSelectorTerms: must be a list",)
    terms: list[NodeSelectorTerm] = []
    errors: list[str] = []
    for i, t in enumerate(raw_terms):
        at = f"{where}.nodeSelectorTerms[{i}]"
        try:
            if not isinstance(t, Mapping):
                raise SelectorError(f"{at}: must be an object")
            if strict:
                _check_keys(t, _TERM_KEYS, at)
            if is_empty_term(t):
                continue  # selects nothing
            terms.append(compile_term(t, at, strict))
        except SelectorError as e:
            errors.append(str(e))
    return tuple(terms), tuple(errors)


@dataclass(frozen=True, slots=True)
class WeightedTerm:
    weight: int
    term: NodeSelectorTerm


def compile_preferred(
    preferred: Any, where: str, strict: bool = False
) -> tuple[tuple[WeightedTerm, ...], tuple[str, ...]]:
    """A list of v1.PreferredSchedulingTerm: the parsed terms with non-zero weight, and the errors."""
    if not isinstance(preferred, list | tuple):
        return (), (f"{where}: must be a list",)
    terms: list[WeightedTerm] = []
    errors: list[str] = []
    for i, p in enumerate(preferred):
        at = f"{where}[{i}]"
        if not isinstance(p, Mapping):
            errors.append(f"{at}: must be an object")
            continue
        try:
            if strict:
                _check_keys(p, _PREFERRED_KEYS, at)
            weight = p.get("weight", 0)
            if isinstance(weight, bool) or not isinstance(weight, int):
                raise SelectorError(f"{at}.weight: must be an integer, got {weight!r}")
            pref = p.get("preference")
            if pref is None:
                pref = {}
            if not isinstance(pref, Mapping):
                raise SelectorError(f"{at}.preference: must be an object")
            if strict:
                _check_keys(pref, _TERM_KEYS, f"{at}.preference")
            if weight == 0 or is_empty_term(pref):
                continue
            terms.append(WeightedTerm(weight, compile_term(pref, f"{at}.preference", strict)))
        except SelectorError as e:
            errors.append(str(e))
    return tuple(terms), tuple(errors)


def split_error(message: str) -> tuple[str, str]:
    """``"path: detail"`` -> (path, detail)."""
    path, sep, detail = message.partition(": ")
    return (path, detail) if sep else ("", message)


def terms_match(terms: Sequence[NodeSelectorTerm], node: Node) -> bool:
    """OR of the terms (no terms: nothing matches). Plain loops: this runs per node per pod."""
    labels, name = node.labels, node.name
    for t in terms:  # noqa: SIM110 (a loop is faster than any() over a generator)
        if t.matches(labels, name):
            return True
    return False


def preferred_score(terms: Sequence[WeightedTerm], node: Node) -> int:
    """Sum of the weights of the terms the node matches."""
    labels, name = node.labels, node.name
    total = 0
    for w in terms:
        if w.term.matches(labels, name):
            total += w.weight
    return total


# ------------------------------------------------------------------------- a pod's node affinity


def pod_node_affinity(pod: Pod) -> Mapping[str, Any]:
    aff = pod.affinity
    if not aff:
        return {}
    na = aff.get("nodeAffinity")
    return na if isinstance(na, Mapping) else {}


class RequiredNodeAffinity:
    """A pod's nodeSelector AND its required node affinity (kube's nodeaffinity.RequiredNodeAffinity).
    ``terms`` is None when the pod has no required node affinity; ``errors`` are its terms that did not
    parse (they never match)."""

    __slots__ = ("errors", "selector", "terms")

    def __init__(
        self,
        selector: tuple[tuple[str, str], ...],
        terms: tuple[NodeSelectorTerm, ...] | None,
        errors: tuple[str, ...] = (),
    ) -> None:
        self.selector = selector
        self.terms = terms
        self.errors = errors

    @classmethod
    def of(cls, pod: Pod) -> RequiredNodeAffinity:
        selector = tuple((str(k), str(v)) for k, v in pod.node_selector.items())
        required = pod_node_affinity(pod).get(REQUIRED)
        if required is None:
            return cls(selector, None)
        terms, errors = compile_node_selector(required, f"spec.affinity.nodeAffinity.{REQUIRED}")
        return cls(selector, terms, errors)

    def matches(self, node: Node) -> bool:
        labels = node.labels
        for k, v in self.selector:
            if labels.get(k) != v:
                return False
        if self.terms is None:
            return True
        return terms_match(self.terms, node)

    def match_or_error(self, node: Node) -> bool | None:
        """Like ``matches``, but None where kube's Match reports an error: the selector labels match, no
        term matches and some term did not parse."""
        if self.matches(node):
            return True
        if self.errors and all(node.labels.get(k) == v for k, v in self.selector):
            return None
        return False

    @property
    def trivial(self) -> bool:
        """Matches every node: no nodeSelector, no required node affinity."""
        return not self.selector and self.terms is None

    def clone(self) -> RequiredNodeAffinity:
        return self  # read-only
