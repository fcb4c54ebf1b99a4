"""Differential scenarios of the placement plugins: NodeAffinity, PodTopologySpread and InterPodAffinity.
Registered, in this order, by bench/scenarios.py."""

from __future__ import annotations

from bench.scenario_builders import (
    HOST,
    ZONE,
    Scenario,
    affinity,
    bound,
    expr,
    namespace,
    node,
    on_host,
    pod,
    pod_term,
    preferred_node_affinity,
    required_node_affinity,
    scenario,
    sel,
    service,
    spread,
    terms,
    three,
    tol,
    tolerating,
    zoned,
)

SCENARIOS: list[Scenario] = []
add = SCENARIOS.append

# ---------------------------------------------------------------- NodeAffinity

LAB3 = [
    node("n1", labels={"disk": "ssd", "tier": "gold"}),
    node("n2", labels={"disk": "hdd", "tier": "gold"}),
    node("n3", labels={"disk": "ssd", "tier": "silver"}),
]

add(
    scenario(
        "affinity-in-notin",
        "required node affinity with In and NotIn (expressions ANDed)",
        ["NodeAffinity"],
        LAB3,
        pods=[
            pod("p1").affinity(
                required_node_affinity([expr("disk", "In", "ssd"), expr("tier", "NotIn", "silver")])
            ),
            pod("p2").affinity(required_node_affinity([expr("disk", "NotIn", "ssd")])),
            pod("p3").affinity(required_node_affinity([expr("disk", "In", "nvme")])),
            pod("p4").affinity(required_node_affinity([expr("tier", "NotIn", "bronze")])),
        ],
    )
)

add(
    scenario(
        "affinity-exists",
        "Exists / DoesNotExist",
        ["NodeAffinity"],
        [node("n1", labels={"gpu": "a100"}), node("n2"), node("n3", labels={"gpu": "t4"})],
        pods=[
            pod("p1").affinity(required_node_affinity([expr("gpu", "Exists")])),
            pod("p2").affinity(required_node_affinity([expr("gpu", "DoesNotExist")])),
            pod("p3").affinity(required_node_affinity([expr("gpu", "Exists"), expr("gpu", "NotIn", "a100")])),
            pod("p4").affinity(required_node_affinity([expr("fpga", "Exists")])),
        ],
    )
)

add(
    scenario(
        "affinity-gt-lt",
        "Gt / Lt compare integer label values; a non-integer value never matches",
        ["NodeAffinity"],
        [
            node("n1", labels={"cores": "8"}),
            node("n2", labels={"cores": "16"}),
            node("n3", labels={"cores": "32"}),
            node("n4", labels={"cores": "many"}),
        ],
        pods=[
            pod("p1").affinity(required_node_affinity([expr("cores", "Gt", "10")])),
            pod("p2").affinity(required_node_affinity([expr("cores", "Lt", "10")])),
            pod("p3").affinity(required_node_affinity([expr("cores", "Gt", "8"), expr("cores", "Lt", "32")])),
            pod("p4").affinity(required_node_affinity([expr("cores", "Gt", "32")])),
            pod("p5").affinity(required_node_affinity([expr("cores", "Lt", "1")])),
        ],
    )
)


add(
    scenario(
        "affinity-match-fields",
        "matchFields on metadata.name (PreFilter narrows the node set)",
        ["NodeAffinity"],
        three(),
        pods=[
            pod("p1").affinity(terms({"matchFields": [expr("metadata.name", "In", "n2")]})),
            pod("p2").affinity(terms({"matchFields": [expr("metadata.name", "NotIn", "n1")]})),
            pod("p3").affinity(terms({"matchFields": [expr("metadata.name", "In", "nope")]})),
            pod("p4").affinity(
                terms(
                    {"matchFields": [expr("metadata.name", "In", "n1")]},
                    {"matchFields": [expr("metadata.name", "In", "n3")]},
                )
            ),
            pod("p5").affinity(
                terms(
                    {
                        "matchExpressions": [expr(HOST, "In", "n2")],
                        "matchFields": [expr("metadata.name", "In", "n2")],
                    }
                )
            ),
            pod("p6").affinity(
                terms(
                    {
                        "matchExpressions": [expr(HOST, "In", "n1")],
                        "matchFields": [expr("metadata.name", "In", "n2")],
                    }
                )
            ),
        ],
    )
)

add(
    scenario(
        "affinity-preferred",
        "preferred node affinity weights decide among feasible nodes",
        ["NodeAffinity"],
        [
            node("n1", labels={"type": "spot"}, zone="a"),
            node("n2", labels={"type": "ondemand"}, zone="b"),
            node("n3", zone="c"),
        ],
        pods=[
            pod("p1", cpu="100m").affinity(
                preferred_node_affinity((80, [expr(ZONE, "In", "b")]), (20, [expr("type", "In", "spot")]))
            ),
            pod("p2", cpu="100m").affinity(
                preferred_node_affinity((50, [expr("type", "In", "spot")]), (50, [expr(ZONE, "In", "c")]))
            ),
            pod("p3", cpu="100m").affinity(
                preferred_node_affinity((1, [expr("type", "Exists")]), (100, [expr("type", "DoesNotExist")]))
            ),
            pod("p4", cpu="100m").affinity(
                {
                    "nodeAffinity": {
                        **required_node_affinity([expr("type", "Exists")])["nodeAffinity"],
                        **preferred_node_affinity((10, [expr(ZONE, "In", "b")]))["nodeAffinity"],
                    }
                }
            ),
        ],
    )
)

add(
    scenario(
        "node-selector",
        "spec.nodeSelector (all pairs must match)",
        ["NodeAffinity"],
        LAB3,
        pods=[
            sel(pod("p1"), disk="ssd"),
            sel(pod("p2"), disk="ssd", tier="silver"),
            sel(pod("p3"), disk="none"),
            sel(pod("p4").affinity(required_node_affinity([expr("tier", "In", "gold")])), disk="ssd"),
        ],
    )
)

add(
    scenario(
        "affinity-or-terms",
        "nodeSelectorTerms are ORed; an empty term matches nothing",
        ["NodeAffinity"],
        LAB3,
        pods=[
            pod("p1").affinity(required_node_affinity([expr(ZONE, "In", "x")], [expr("disk", "In", "hdd")])),
            pod("p2").affinity(
                required_node_affinity(
                    [expr("tier", "In", "silver")], [expr("tier", "In", "gold"), expr("disk", "In", "hdd")]
                )
            ),
            pod("p3").affinity(required_node_affinity([])),
        ],
    )
)

# ---------------------------------------------------------------- PodTopologySpread


ZONES4 = [node("n1", zone="z1"), node("n2", zone="z1"), node("n3", zone="z2"), node("n4", zone="z3")]

add(
    scenario(
        "spread-hard-zone",
        "DoNotSchedule over zones; a topology key no node has rejects every node",
        ["PodTopologySpread"],
        ZONES4,
        existing=[
            bound(pod("e1", app="web"), "n1"),
            bound(pod("e2", app="web"), "n2"),
            bound(pod("e3", app="web"), "n3"),
        ],
        pods=[spread(pod(f"p{i}", cpu="100m", app="web"), 1, ZONE) for i in (1, 2, 3, 4)]
        + [spread(pod("p5", app="web"), 1, "rack")],
    )
)

add(
    scenario(
        "spread-hard-hostname",
        "DoNotSchedule over hostnames combined with a zone constraint",
        ["PodTopologySpread"],
        ZONES4,
        existing=[bound(pod("e1", app="web"), "n1")],
        pods=[spread(spread(pod(f"p{i}", cpu="100m", app="web"), 1, HOST), 2, ZONE) for i in range(1, 7)],
    )
)

add(
    scenario(
        "spread-soft",
        "ScheduleAnyway constraints only score",
        ["PodTopologySpread"],
        ZONES4,
        existing=[bound(pod(f"e{i}", app="web"), "n1") for i in (1, 2, 3)]
        + [bound(pod("e4", app="web"), "n3")],
        pods=[spread(pod(f"p{i}", cpu="100m", app="web"), 1, ZONE, "ScheduleAnyway") for i in (1, 2, 3, 4)],
    )
)

add(
    scenario(
        "spread-min-domains",
        "minDomains above the number of domains makes the global minimum 0",
        ["PodTopologySpread"],
        [node("n1", zone="z1"), node("n2", zone="z2")],
        pods=[spread(pod(f"p{i}", cpu="100m", app="web"), 1, ZONE, minDomains=3) for i in (1, 2, 3)]
        + [spread(pod("p4", cpu="100m", app="web"), 1, ZONE, minDomains=2)],
    )
)

add(
    scenario(
        "spread-node-affinity-policy",
        "nodeAffinityPolicy Honor counts only domains of nodes the pod selects",
        ["PodTopologySpread", "NodeAffinity"],
        [
            node("n1", zone="z1", labels={"pool": "a"}),
            node("n2", zone="z2", labels={"pool": "a"}),
            node("n3", zone="z3", labels={"pool": "b"}),
        ],
        existing=[bound(pod("e1", app="db"), "n1"), bound(pod("e2", app="db"), "n2")],
        pods=[
            sel(spread(pod("p1", cpu="100m", app="db"), 1, ZONE, nodeAffinityPolicy="Honor"), pool="a"),
            sel(spread(pod("p2", cpu="100m", app="db"), 1, ZONE, nodeAffinityPolicy="Ignore"), pool="a"),
            sel(spread(pod("p3", cpu="100m", app="db"), 1, ZONE), pool="a"),
        ],
    )
)

add(
    scenario(
        "spread-node-taints-policy",
        "nodeTaintsPolicy Honor leaves out domains of nodes whose taints the pod does not tolerate",
        ["PodTopologySpread", "TaintToleration"],
        [
            node("n1", zone="z1"),
            node("n2", zone="z2"),
            node("n3", zone="z3", taints=[("gpu", "", "NoSchedule")]),
        ],
        existing=[bound(pod("e1", app="db"), "n1"), bound(pod("e2", app="db"), "n2")],
        pods=[
            spread(pod("p1", cpu="100m", app="db"), 1, ZONE, nodeTaintsPolicy="Honor"),
            spread(pod("p2", cpu="100m", app="db"), 1, ZONE, nodeTaintsPolicy="Ignore"),
            tolerating(
                spread(pod("p3", cpu="100m", app="db"), 1, ZONE, nodeTaintsPolicy="Honor"), tol("gpu")
            ),
        ],
    )
)

add(
    scenario(
        "spread-match-label-keys",
        "matchLabelKeys narrows the counted pods to the incoming pod's revision",
        ["PodTopologySpread"],
        zoned("z1", "z2", "z3"),
        existing=[
            bound(pod("e1", app="web", rev="v1"), "n1"),
            bound(pod("e2", app="web", rev="v1"), "n1"),
            bound(pod("e3", app="web", rev="v1"), "n2"),
        ],
        pods=[
            spread(pod(f"p{i}", cpu="100m", app="web", rev="v2"), 1, ZONE, matchLabelKeys=["rev"])
            for i in (1, 2, 3)
        ]
        + [spread(pod("p4", cpu="100m", app="web", rev="v2"), 1, ZONE)],
    )
)

add(
    scenario(
        "spread-system-default",
        "pods selected by a Service get the system default constraints (ScheduleAnyway)",
        ["PodTopologySpread"],
        ZONES4,
        objects=[service("web", app="web")],
        existing=[
            bound(pod("e1", app="web"), "n1"),
            bound(pod("e2", app="web"), "n1"),
            bound(pod("e3", app="web"), "n2"),
        ],
        pods=[pod(f"p{i}", cpu="100m", app="web") for i in (1, 2, 3)] + [pod("p4", cpu="100m", app="other")],
    )
)

# ---------------------------------------------------------------- InterPodAffinity

ZONES3 = [node("n1", zone="z1"), node("n2", zone="z1"), node("n3", zone="z2")]


add(
    scenario(
        "ipa-required-affinity",
        "required pod affinity by zone and by hostname; no matching pod -> pending",
        ["InterPodAffinity"],
        ZONES3,
        existing=[bound(pod("db", app="db"), "n2")],
        pods=[
            affinity(pod("p1", cpu="100m"), pod_term(ZONE, {"app": "db"})),
            affinity(pod("p2", cpu="100m"), pod_term(HOST, {"app": "db"})),
            affinity(pod("p3", cpu="100m"), pod_term(HOST, {"app": "cache"})),
            affinity(pod("p4", cpu="100m"), pod_term(ZONE, {"app": "db"}), pod_term(HOST, {"app": "db"})),
        ],
    )
)

add(
    scenario(
        "ipa-required-anti-affinity",
        "required anti-affinity by hostname until every node has one",
        ["InterPodAffinity"],
        ZONES3,
        existing=[bound(pod("e1", app="web"), "n1")],
        pods=[
            affinity(pod(f"p{i}", cpu="100m", app="web"), pod_term(HOST, {"app": "web"}), anti=True)
            for i in (1, 2, 3)
        ]
        + [affinity(pod("p4", cpu="100m", app="api"), pod_term(ZONE, {"app": "web"}), anti=True)],
    )
)

add(
    scenario(
        "ipa-preferred",
        "preferred affinity and anti-affinity weights in scoring",
        ["InterPodAffinity"],
        [node("n1", zone="z1"), node("n2", zone="z1"), node("n3", zone="z2"), node("n4", zone="z2")],
        existing=[bound(pod("db", app="db"), "n1"), bound(pod("noisy", app="noisy"), "n3")],
        pods=[
            affinity(pod("p1", cpu="100m"), pod_term(ZONE, {"app": "db"}), weight=100),
            affinity(pod("p2", cpu="100m"), pod_term(HOST, {"app": "noisy"}), anti=True, weight=100),
            affinity(
                affinity(pod("p3", cpu="100m"), pod_term(ZONE, {"app": "noisy"}), weight=30),
                pod_term(HOST, {"app": "noisy"}),
                anti=True,
                weight=70,
            ),
            affinity(pod("p4", cpu="100m"), pod_term(ZONE, {"app": "none"}), weight=50),
        ],
    )
)

add(
    scenario(
        "ipa-namespace-selector",
        "affinity terms across namespaces: namespaceSelector, namespaces, own namespace",
        ["InterPodAffinity"],
        three(),
        objects=[namespace("diff-ipa-team-a", team="a"), namespace("diff-ipa-team-b", team="b")],
        existing=[
            bound(pod("cache-a", app="cache", ns="diff-ipa-team-a"), "n1"),
            bound(pod("cache-b", app="cache", ns="diff-ipa-team-b"), "n2"),
        ],
        pods=[
            affinity(
                pod("p1", cpu="100m"),
                pod_term(HOST, {"app": "cache"}, namespace_selector={"matchLabels": {"team": "b"}}),
            ),
            affinity(pod("p2", cpu="100m"), pod_term(HOST, {"app": "cache"}, namespaces=["diff-ipa-team-a"])),
            affinity(
                pod("p3", cpu="100m"), pod_term(HOST, {"app": "cache"}, namespace_selector={}), anti=True
            ),
            affinity(pod("p4", cpu="100m"), pod_term(HOST, {"app": "cache"})),
            affinity(
                pod("p5", cpu="100m"),
                pod_term(
                    HOST,
                    {"app": "cache"},
                    namespaces=["diff-ipa-team-a"],
                    namespace_selector={"matchLabels": {"team": "b"}},
                ),
                weight=10,
            ),
        ],
    )
)

add(
    scenario(
        "ipa-existing-anti-affinity",
        "existing pods' required anti-affinity repels matching incoming pods",
        ["InterPodAffinity"],
        ZONES3,
        existing=[
            bound(affinity(pod("guard", app="db"), pod_term(HOST, {"app": "web"}), anti=True), "n1"),
            bound(affinity(pod("zguard", app="db2"), pod_term(ZONE, {"app": "batch"}), anti=True), "n3"),
        ],
        pods=[
            pod("p1", cpu="100m", app="web"),
            pod("p2", cpu="100m", app="other"),
            pod("p3", cpu="100m", app="batch"),
            on_host(pod("p4", cpu="100m", app="web"), "n1"),
            on_host(pod("p5", cpu="100m", app="batch"), "n3"),
        ],
    )
)

add(
    scenario(
        "ipa-first-of-group",
        "a pod whose required affinity matches itself may go anywhere when it is the first",
        ["InterPodAffinity"],
        ZONES3,
        pods=[
            affinity(pod("p1", cpu="100m", app="grp"), pod_term(ZONE, {"app": "grp"})),
            affinity(pod("p2", cpu="100m", app="grp"), pod_term(ZONE, {"app": "grp"})),
            affinity(pod("p3", cpu="100m", app="other"), pod_term(ZONE, {"app": "grp"})),
            affinity(pod("p4", cpu="100m", app="other2"), pod_term(ZONE, {"app": "nobody"})),
        ],
    )
)

add(
    scenario(
        "ipa-existing-preferred",
        "existing pods' preferred (anti-)affinity terms count for the incoming pod",
        ["InterPodAffinity"],
        three(),
        existing=[
            bound(affinity(pod("likes-web", app="x"), pod_term(HOST, {"app": "web"}), weight=80), "n2"),
            bound(
                affinity(pod("hates-web", app="y"), pod_term(HOST, {"app": "web"}), anti=True, weight=80),
                "n3",
            ),
            bound(affinity(pod("needs-web", app="z"), pod_term(HOST, {"app": "web"})), "n1"),
        ],
        pods=[
            pod("p1", cpu="100m", app="web"),
            pod("p2", cpu="100m", app="web"),
            pod("p3", cpu="100m", app="other"),
        ],
    )
)
