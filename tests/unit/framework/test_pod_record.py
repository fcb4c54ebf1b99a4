"""framework.types.Pod.with_node_name: the assumed pod is the pod with node_name set, every other field
(the derived requests included) the same, and the original untouched."""

from __future__ import annotations

import dataclasses

import pytest

from pyscheduler.framework.types import Pod
from pyscheduler.testing.builders import make_pod

PODS = [
    make_pod("plain").obj(),
    make_pod("req").req(cpu="250m", memory="1Gi").labels({"app": "web"}).priority(7).obj(),
    make_pod("init").req(cpu="1").init_req(cpu="2", memory="64Mi").obj(),
]


@pytest.mark.parametrize("pod", PODS, ids=lambda p: p.name)
def test_with_node_name_is_replace_without_rederiving(pod: Pod) -> None:
    got = pod.with_node_name("n1")
    assert got == dataclasses.replace(pod, node_name="n1")
    assert got.node_name == "n1" and pod.node_name == ""
    assert got.requests == pod.requests and got.non_zero_requests == pod.non_zero_requests
    for f in dataclasses.fields(Pod):
        if f.name != "node_name":
            assert getattr(got, f.name) is getattr(pod, f.name), f.name
