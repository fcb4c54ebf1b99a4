"""Parsed terms: the last pod's terms reused only for that very affinity in that namespace."""

from __future__ import annotations

import dataclasses

from pyscheduler.plugins.inter_pod_affinity._fixtures import S1, S2, pod, required, sel_in, term
from pyscheduler.plugins.inter_pod_affinity.terms import affinity_of, parse_affinity


def test_the_same_affinity_object_in_another_namespace_selects_that_namespace() -> None:
    aff = required(term("zone", sel_in("security", "S1")), anti=True)
    a = pod("a", S1, aff, ns="team-a")
    b = dataclasses.replace(a, name="b", namespace="team-b")  # the very same affinity object
    assert a.affinity is b.affinity
    first, second = affinity_of(a), affinity_of(b)
    assert first.required_anti_affinity[0].namespaces == frozenset({"team-a"})
    assert second.required_anti_affinity[0].namespaces == frozenset({"team-b"})
    assert affinity_of(b) is second  # asked again: kept


def test_equal_affinities_of_two_pods_are_each_parsed_to_what_parse_affinity_gives() -> None:
    p1 = pod("p1", S1, required(term("zone", sel_in("security", "S2"))))
    p2 = pod("p2", S2, required(term("zone", sel_in("security", "S1"))))
    for p in (p1, p2, p1):
        assert affinity_of(p) == parse_affinity(p)
    assert affinity_of(pod("plain", S1)).required_affinity == ()
