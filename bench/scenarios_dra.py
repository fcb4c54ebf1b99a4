"""Differential scenarios for Dynamic Resource Allocation (the DynamicResources plugin, resource.k8s.io/v1):
the GA features (claims and templates, selectors, counts and All, firstAvailable, constraints, admin
access). The beta features on by default in 1.36 are in bench/scenarios_dra_beta.py, appended after
these; the builders and the design (what ``DraScenario`` adds for the runner) in bench/dra_builders.py.
"""

from __future__ import annotations

from bench.dra_builders import (
    ADMIN_ACCESS_LABEL,
    CLASS,
    add,
    attr,
    cap,
    claim,
    claims,
    device,
    device_class,
    distinct_attribute,
    dra_scenario,
    exactly,
    first_available,
    gpus,
    match_attribute,
    resource_slice,
    sub,
    template,
)
from bench.scenarios import _check, node, pod

# ---------------------------------------------------------------- claims and templates

add(
    dra_scenario(
        "dra-claim",
        "a ResourceClaim for one device: only the node publishing it fits, a second claim finds none",
        [node("n1", "8"), node("n2", "4"), node("n3", "6")],
        [CLASS, gpus("n2", 1), claim("c1"), claim("c2")],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=c1"),
            pod("p2", cpu="1"),
            claims(pod("p3", cpu="1"), "gpu=c2"),
        ],
    )
)

add(
    dra_scenario(
        "dra-template",
        "ResourceClaimTemplates: a claim made per pod, devices on two nodes until none is left",
        [node("n1", "8"), node("n2", "6"), node("n3", "4")],
        [CLASS, gpus("n2", 2), gpus("n3", 1), template("one-gpu")],
        pods=[claims(pod(f"p{i}", cpu="1"), "gpu@one-gpu") for i in range(1, 5)],
    )
)

add(
    dra_scenario(
        "dra-shared-claim",
        "pods sharing one claim go where it is allocated; one too big for that node stays pending",
        [node("n1", "8"), node("n2", "4"), node("n3", "6")],
        [CLASS, gpus("n2", 1), gpus("n3", 1), claim("shared")],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=shared"),
            claims(pod("p2", cpu="1"), "gpu=shared"),
            claims(pod("p3", cpu="5"), "gpu=shared"),
        ],
    )
)

add(
    dra_scenario(
        "dra-batch",
        "a burst of pods pending together, each for its own device of one node; one asks for none there",
        [node("n1", "4"), node("n2", "8")],
        # Each pod's device is its own: among pods of equal priority pending before it starts,
        # kube-scheduler's order is its informer's initial-list order, which is not the names' order
        # (its log: b4, b1, b2, b3; with interchangeable devices it left b1 pending once, b4 another
        # time). The devices a contended burst gets cannot be compared; this checks that a burst
        # allocates the right ones (the 200-pods-for-50-devices burst is tests/integration).
        [
            CLASS,
            resource_slice("n1-gpus", *[device(f"gpu-{i}", {"slot": i}) for i in range(3)], node_name="n1"),
            *[claim(f"c{i}", exactly("gpu", "gpu", f"{attr('slot')} == {i - 1}")) for i in range(1, 5)],
        ],
        batch=[claims(pod(f"b{i}", cpu="100m"), f"gpu=c{i}") for i in range(1, 5)],
    )
)

# ---------------------------------------------------------------- selectors (CEL on attributes and capacity)

MODELS = [
    resource_slice(
        "n1-gpus",
        *[
            device(f"a100-{i}", {"model": "a100", "driverVersion": ("version", "1.2.0")}, {"memory": "40Gi"})
            for i in range(2)
        ],
        node_name="n1",
    ),
    resource_slice(
        "n2-gpus",
        device("h100-0", {"model": "h100", "driverVersion": ("version", "1.4.1")}, {"memory": "80Gi"}),
        node_name="n2",
    ),
]

add(
    dra_scenario(
        "dra-selectors",
        "request selectors on a string attribute, a version attribute and a capacity (CEL)",
        [node("n1", "4"), node("n2", "6"), node("n3", "8")],
        [
            CLASS,
            *MODELS,
            claim("h100", exactly("gpu", "gpu", f'{attr("model")} == "h100"')),
            claim("big", exactly("gpu", "gpu", f'{cap("memory")}.compareTo(quantity("64Gi")) >= 0')),
            claim("mid", exactly("gpu", "gpu", f'{cap("memory")}.compareTo(quantity("32Gi")) >= 0')),
            claim("newer", exactly("gpu", "gpu", f'{attr("driverVersion")}.isGreaterThan(semver("1.1.0"))')),
            claim("newest", exactly("gpu", "gpu", f'{attr("driverVersion")}.isGreaterThan(semver("1.3.0"))')),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=h100"),
            claims(pod("p2", cpu="1"), "gpu=big"),
            claims(pod("p3", cpu="1"), "gpu=mid"),
            claims(pod("p4", cpu="1"), "gpu=newest"),
            claims(pod("p5", cpu="1"), "gpu=newer"),
        ],
    )
)

add(
    dra_scenario(
        "dra-class-selector",
        "DeviceClass selectors narrow the devices; a class nothing matches",
        [node("n1", "4"), node("n2", "6"), node("n3", "8")],
        [
            CLASS,
            device_class("a100", f'{attr("model")} == "a100"'),
            device_class("tpu", f'{attr("model")} == "tpu"'),
            *MODELS,
            claim("a", exactly("gpu", "a100")),
            claim("t", exactly("gpu", "tpu")),
            claim("any", exactly("gpu", "gpu")),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=a"),
            claims(pod("p2", cpu="1"), "gpu=t"),
            claims(pod("p3", cpu="1"), "gpu=any"),
        ],
    )
)

# ---------------------------------------------------------------- counts and All

add(
    dra_scenario(
        "dra-count-all",
        "ExactCount 3, then All (every device of a node, none allocated yet), then a count nothing has",
        [node("n1", "4"), node("n2", "6"), node("n3", "8")],
        [
            CLASS,
            gpus("n1", 4),
            gpus("n2", 2),
            claim("three", exactly("gpu", count=3)),
            claim("all", exactly("gpu", all_devices=True)),
            claim("two", exactly("gpu", count=2)),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=three"),
            claims(pod("p2", cpu="1"), "gpu=all"),
            claims(pod("p3", cpu="1"), "gpu=two"),
        ],
    )
)

# ---------------------------------------------------------------- firstAvailable (prioritized list)

FIRST = [
    CLASS,
    resource_slice("n1-gpus", *[device(f"small-{i}", {"model": "small"}) for i in range(2)], node_name="n1"),
    resource_slice("n2-gpus", device("big-0", {"model": "big"}), node_name="n2"),
    template(
        "big-or-two-small",
        first_available(
            "gpu",
            sub("big", "gpu", f'{attr("model")} == "big"'),
            sub("small", "gpu", f'{attr("model")} == "small"', count=2),
        ),
    ),
]

add(
    dra_scenario(
        "dra-first-available",
        "firstAvailable: the big device first (scored higher), then the two-small fallback, then none",
        [node("n1", "6"), node("n2", "4"), node("n3", "8")],
        FIRST,
        pods=[claims(pod(f"p{i}", cpu="1"), "gpu@big-or-two-small") for i in range(1, 4)],
    )
)

# ---------------------------------------------------------------- constraints

NUMA = [
    CLASS,
    resource_slice("n1-gpus", device("a", {"numa": 0}), device("b", {"numa": 1}), node_name="n1"),
    resource_slice("n2-gpus", device("c", {"numa": 0}), device("d", {"numa": 0}), node_name="n2"),
]

add(
    dra_scenario(
        "dra-match-attribute",
        "matchAttribute: two requests on devices of one NUMA node; distinctAttribute: two different",
        [node("n1", "6"), node("n2", "4"), node("n3", "8")],
        [
            *NUMA,
            claim("same1", exactly("g1"), exactly("g2"), constraints=[match_attribute("numa")]),
            claim("apart", exactly("gpu", count=2), constraints=[distinct_attribute("numa")]),
            claim("same2", exactly("g1"), exactly("g2"), constraints=[match_attribute("numa", "g1", "g2")]),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=same1"),
            claims(pod("p2", cpu="1"), "gpu=apart"),
            claims(pod("p3", cpu="1"), "gpu=same2"),
        ],
    )
)

add(
    dra_scenario(
        "dra-distinct-first",
        "distinctAttribute first: only the node with two NUMA nodes fits, then matchAttribute",
        [node("n1", "4"), node("n2", "6"), node("n3", "8")],
        [
            *NUMA,
            claim("apart", exactly("gpu", count=2), constraints=[distinct_attribute("numa")]),
            claim("same", exactly("g1"), exactly("g2"), constraints=[match_attribute("numa")]),
            claim("apart2", exactly("gpu", count=2), constraints=[distinct_attribute("numa")]),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=apart"),
            claims(pod("p2", cpu="1"), "gpu=same"),
            claims(pod("p3", cpu="1"), "gpu=apart2"),
        ],
    )
)

# ---------------------------------------------------------------- admin access

add(
    dra_scenario(
        "dra-admin-access",
        "adminAccess (in a namespace allowing it) gets a device already in use; a plain claim does not",
        [node("n1", "4"), node("n2", "8")],
        [
            CLASS,
            gpus("n1", 1),
            claim("user"),
            claim("admin", exactly("gpu", admin=True)),
            claim("user2"),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=user"),
            claims(pod("p2", cpu="1"), "gpu=admin"),
            claims(pod("p3", cpu="1"), "gpu=user2"),
        ],
        namespace_labels={ADMIN_ACCESS_LABEL: "true"},
    )
)

import bench.scenarios_dra_beta  # noqa: E402, F401  (the beta features, appended after these)

_check()
