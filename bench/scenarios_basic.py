"""Differential scenarios of the node-local plugins: NodeResourcesFit (filter), the scoring plugins,
NodeName, NodeUnschedulable, NodePorts and TaintToleration. Registered, in this order, by bench/scenarios.py."""

from __future__ import annotations

from bench.scenario_builders import (
    MI,
    Scenario,
    bound,
    gpu,
    node,
    on_host,
    pod,
    runtime_class,
    scenario,
    spec,
    three,
    tol,
    tolerating,
)

SCENARIOS: list[Scenario] = []
add = SCENARIOS.append

# ---------------------------------------------------------------- NodeResourcesFit (filter)

add(
    scenario(
        "fit-cpu",
        "CPU requests against free CPU; the third pod fits nowhere",
        ["NodeResourcesFit"],
        [node("n1", "2", "16Gi"), node("n2", "4", "16Gi"), node("n3", "8", "16Gi")],
        existing=[bound(pod("e1", cpu="6"), "n3")],
        pods=[pod("p1", cpu="3"), pod("p2", cpu="1500m"), pod("p3", cpu="2500m"), pod("p4", cpu="500m")],
    )
)

add(
    scenario(
        "fit-memory",
        "memory requests against free memory",
        ["NodeResourcesFit"],
        [node("n1", "8", "4Gi"), node("n2", "8", "8Gi"), node("n3", "8", "16Gi")],
        existing=[bound(pod("e1", memory="12Gi"), "n3")],
        pods=[
            pod("p1", memory="6Gi"),
            pod("p2", memory="3Gi"),
            pod("p3", memory="5Gi"),
            pod("p4", memory="512Mi"),
        ],
    )
)

add(
    scenario(
        "fit-pods-count",
        "the pods allocatable (max pods per node) fills up",
        ["NodeResourcesFit"],
        [node("n1", pods=2), node("n2", pods=2), node("n3", pods=3)],
        existing=[
            bound(pod("e1"), "n1"),
            bound(pod("e2"), "n1"),
            bound(pod("e3"), "n2"),
            bound(pod("e4"), "n3"),
            bound(pod("e5"), "n3"),
        ],
        pods=[pod("p1", cpu="100m"), pod("p2", cpu="100m"), pod("p3", cpu="100m")],
    )
)


add(
    scenario(
        "fit-extended",
        "an extended resource (example.com/gpu) counted per node",
        ["NodeResourcesFit"],
        [
            node("n1"),
            node("n2", extended={"example.com/gpu": "2"}),
            node("n3", extended={"example.com/gpu": "4"}),
        ],
        pods=[
            gpu(pod("p1", cpu="100m"), 3),
            gpu(pod("p2", cpu="100m"), 2),
            gpu(pod("p3", cpu="100m"), 1),
            gpu(pod("p4", cpu="100m"), 1),
            pod("p5", cpu="100m"),
        ],
    )
)

add(
    scenario(
        "fit-init-containers",
        "init containers: the effective request is max(init, sum of containers)",
        ["NodeResourcesFit"],
        [node("n1", "2"), node("n2", "2")],
        existing=[bound(pod("e1", cpu="1"), "n1")],
        pods=[
            pod("p1", cpu="500m").init_req(cpu="1500m"),
            pod("p2", cpu="400m").init_req(cpu="600m"),
            pod("p3", cpu="100m").init_req(cpu="3"),
        ],
    )
)

add(
    scenario(
        "fit-sidecar",
        "restartable init containers (sidecars) add to the containers' requests",
        ["NodeResourcesFit"],
        [node("n1", "2"), node("n2", "2")],
        existing=[bound(pod("e1", cpu="500m"), "n1")],
        pods=[
            pod("p1", cpu="1").init_req(sidecar=True, cpu="1"),
            pod("p2", cpu="500m").init_req(sidecar=True, cpu="500m"),
            pod("p3", cpu="200m").init_req(sidecar=True, cpu="600m").init_req(cpu="1"),
            pod("p4", cpu="100m").init_req(sidecar=True, cpu="300m"),
        ],
    )
)

add(
    scenario(
        "fit-overhead",
        "pod overhead from a RuntimeClass counts against the node",
        ["NodeResourcesFit"],
        [node("n1", "2"), node("n2", "3")],
        objects=[runtime_class("diff-kata", "1", "256Mi")],
        pods=[
            spec(pod("p1", cpu="1500m"), runtimeClassName="diff-kata"),
            spec(pod("p2", cpu="1500m"), runtimeClassName="diff-kata"),
            pod("p3", cpu="1500m"),
            spec(pod("p4", cpu="100m"), runtimeClassName="diff-kata"),
        ],
    )
)

add(
    scenario(
        "fit-ephemeral-storage",
        "ephemeral-storage requests against node ephemeral-storage",
        ["NodeResourcesFit"],
        [
            node("n1", extended={"ephemeral-storage": "10Gi"}),
            node("n2", extended={"ephemeral-storage": "50Gi"}),
        ],
        existing=[bound(pod("e1").res({"ephemeral-storage": "30Gi"}), "n2")],
        pods=[
            pod("p1").res({"ephemeral-storage": "15Gi"}),
            pod("p2").res({"ephemeral-storage": "8Gi"}),
            pod("p3").res({"ephemeral-storage": "6Gi"}),
        ],
    )
)

# ---------------------------------------------------------------- scoring

add(
    scenario(
        "score-least-allocated",
        "LeastAllocated spreads pods to the emptiest nodes",
        ["NodeResourcesFit", "NodeResourcesBalancedAllocation"],
        three(),
        existing=[
            bound(pod("e1", cpu="2", memory="2Gi"), "n1"),
            bound(pod("e2", cpu="1", memory="1Gi"), "n2"),
        ],
        pods=[pod(f"p{i}", cpu="500m", memory="512Mi") for i in range(1, 6)],
    )
)

add(
    scenario(
        "score-balanced",
        "BalancedAllocation prefers nodes whose cpu and memory use stay even",
        ["NodeResourcesBalancedAllocation", "NodeResourcesFit"],
        three(),
        existing=[
            bound(pod("e1", cpu="3", memory="1Gi"), "n1"),
            bound(pod("e2", cpu="500m", memory="6Gi"), "n2"),
            bound(pod("e3", cpu="2", memory="4Gi"), "n3"),
        ],
        pods=[
            pod("p1", cpu="500m", memory="1Gi"),
            pod("p2", cpu="1", memory="256Mi"),
            pod("p3", cpu="100m", memory="2Gi"),
            pod("p4"),
        ],
    )
)

add(
    scenario(
        "score-best-effort",
        "pods without requests are scored with kube's non-zero defaults (100m, 200Mi)",
        ["NodeResourcesFit", "NodeResourcesBalancedAllocation"],
        [node("n1", "1", "1Gi"), node("n2", "4", "512Mi"), node("n3", "2", "2Gi")],
        existing=[bound(pod("e1"), "n3"), bound(pod("e2"), "n3")],
        pods=[pod("p1"), pod("p2"), pod("p3"), pod("p4", cpu="300m")],
    )
)

add(
    scenario(
        "score-image-locality",
        "ImageLocality prefers nodes that already have the pod's images",
        ["ImageLocality"],
        [
            node("n1", images=[(["diffbench/big:1.0"], 800 * MI)]),
            node("n2", images=[(["diffbench/big:1.0"], 800 * MI), (["diffbench/small:1.0"], 60 * MI)]),
            node("n3", images=[(["diffbench/tiny:1.0"], 5 * MI)]),
        ],
        pods=[
            pod("p1", cpu="100m").image("diffbench/big:1.0"),
            pod("p2", cpu="100m").image("diffbench/big:1.0").container(image="diffbench/small:1.0"),
            pod("p3", cpu="100m").image("diffbench/small:1.0"),
            pod("p4", cpu="100m").image("diffbench/tiny:1.0"),
            pod("p5", cpu="100m").image("diffbench/none:1.0"),
        ],
    )
)

DIGEST = "sha256:" + "ab" * 32

add(
    scenario(
        "score-image-names",
        "image names: an untagged image means :latest; digests match as written",
        ["ImageLocality"],
        [
            node("n1", images=[(["diffbench/app:latest"], 500 * MI)]),
            node("n2", images=[(["diffbench/dig:1", f"diffbench/dig@{DIGEST}"], 400 * MI)]),
            node("n3", images=[(["diffbench/app:2.0"], 500 * MI)]),
        ],
        pods=[
            pod("p1", cpu="100m").image("diffbench/app"),
            pod("p2", cpu="100m").image(f"diffbench/dig@{DIGEST}"),
            pod("p3", cpu="100m").image("diffbench/app:2.0"),
            pod("p4", cpu="100m").image("diffbench/dig"),
        ],
    )
)

# ---------------------------------------------------------------- NodeName, NodeUnschedulable, NodePorts

add(
    scenario(
        "node-name",
        "pods with spec.nodeName bypass the scheduler, and both schedulers account for them",
        ["NodeName", "NodeResourcesFit"],
        [node("n1", "2"), node("n2", "2")],
        pods=[
            pod("p1", cpu="1500m").node("n1"),
            pod("p2", cpu="1"),
            pod("p3", cpu="1"),
            pod("p4", cpu="400m"),
            pod("p5", cpu="600m"),
        ],
    )
)

add(
    scenario(
        "node-unschedulable",
        "cordoned nodes take only pods tolerating node.kubernetes.io/unschedulable",
        ["NodeUnschedulable"],
        [node("n1", "8", unschedulable=True), node("n2", "2"), node("n3", "2")],
        pods=[
            pod("p1", cpu="500m"),
            tolerating(pod("p2", cpu="500m"), tol("node.kubernetes.io/unschedulable", effect="NoSchedule")),
            on_host(pod("p3", cpu="100m"), "n1"),
            tolerating(pod("p4", cpu="100m"), tol()),
            pod("p5", cpu="100m"),
        ],
    )
)

add(
    scenario(
        "node-ports",
        "host ports conflict by port, protocol and host IP (0.0.0.0 conflicts with any IP)",
        ["NodePorts"],
        [node("n1"), node("n2")],
        existing=[
            bound(pod("e1").host_port(8080), "n1"),
            bound(pod("e2").host_port(9090, host_ip="10.0.0.5"), "n2"),
        ],
        pods=[
            pod("p1").host_port(8080),
            pod("p2").host_port(8080, protocol="UDP"),
            pod("p3").host_port(9090, host_ip="10.0.0.6"),
            pod("p4").host_port(9090),
            pod("p5").host_port(8080),
            pod("p6").host_port(8081, protocol="SCTP"),
        ],
    )
)

# ---------------------------------------------------------------- TaintToleration

add(
    scenario(
        "taint-noschedule",
        "NoSchedule taints repel pods without an Equal toleration",
        ["TaintToleration"],
        [
            node("n1", taints=[("dedicated", "gpu", "NoSchedule")]),
            node("n2"),
            node("n3", taints=[("team", "ml", "NoSchedule")]),
        ],
        pods=[
            pod("p1", cpu="500m"),
            tolerating(pod("p2", cpu="500m"), tol("dedicated", "gpu", "NoSchedule")),
            on_host(pod("p3", cpu="100m"), "n3"),
            tolerating(on_host(pod("p4", cpu="100m"), "n3"), tol("team", "ai", "NoSchedule")),
            tolerating(on_host(pod("p5", cpu="100m"), "n3"), tol("team", "ml")),
        ],
    )
)

add(
    scenario(
        "taint-noexecute",
        "NoExecute taints and tolerations with Exists, tolerationSeconds, and no effect",
        ["TaintToleration"],
        [
            node("n1", taints=[("maint", "true", "NoExecute")]),
            node("n2", taints=[("maint", "true", "NoSchedule")]),
            node("n3"),
        ],
        existing=[bound(pod("e1", cpu="2"), "n3")],
        pods=[
            tolerating(
                pod("p1", cpu="500m"), tol("maint", effect="NoExecute", operator="Exists", seconds=30)
            ),
            tolerating(pod("p2", cpu="500m"), tol("maint", operator="Exists")),
            pod("p3", cpu="500m"),
            tolerating(pod("p4", cpu="500m"), tol("maint", "false")),
            tolerating(on_host(pod("p5", cpu="100m"), "n1"), tol("maint", "true", "NoSchedule")),
        ],
    )
)

add(
    scenario(
        "taint-prefer-noschedule",
        "PreferNoSchedule taints lower a node's score per untolerated taint",
        ["TaintToleration"],
        [
            node("n1", taints=[("a", "1", "PreferNoSchedule"), ("b", "2", "PreferNoSchedule")]),
            node("n2", taints=[("a", "1", "PreferNoSchedule")]),
            node("n3"),
        ],
        pods=[
            pod("p1", cpu="500m"),
            tolerating(pod("p2", cpu="500m"), tol("a", "1", "PreferNoSchedule")),
            pod("p3", cpu="500m"),
            tolerating(pod("p4", cpu="500m"), tol(operator="Exists")),
            pod("p5", cpu="500m"),
            pod("p6", cpu="500m"),
        ],
    )
)

add(
    scenario(
        "taint-all-tainted",
        "every node tainted: an empty-key Exists tolerates all, others are rejected",
        ["TaintToleration"],
        [
            node("n1", taints=[("a", "x", "NoSchedule")]),
            node("n2", taints=[("b", "y", "NoExecute")]),
            node("n3", taints=[("c", "", "NoSchedule"), ("a", "x", "NoSchedule")]),
        ],
        pods=[
            tolerating(pod("p1"), tol()),
            tolerating(pod("p2"), tol("b", operator="Exists")),
            tolerating(pod("p3"), tol("c", operator="Exists"), tol("a", "x")),
            pod("p4"),
            tolerating(pod("p5"), tol("a", "x", "NoSchedule")),
        ],
    )
)
