"""Differential scenarios of the volume plugins (VolumeBinding, VolumeRestrictions, VolumeZone,
NodeVolumeLimits). Registered, in this order, by bench/scenarios.py."""

from __future__ import annotations

from bench.scenario_builders import (
    CSI_DRIVER,
    ZONE,
    Scenario,
    bound,
    csinode,
    node,
    pod,
    pv,
    pvc,
    scenario,
    storage_class,
    three,
)

SCENARIOS: list[Scenario] = []
add = SCENARIOS.append

# ---------------------------------------------------------------- volumes

add(
    scenario(
        "vol-bound-pv-affinity",
        "a bound PVC's PV node affinity pins the pod; an unreachable PV -> pending",
        ["VolumeBinding"],
        three(),
        objects=[
            storage_class("diff-local"),
            pv("diff-pv-n2", "diff-local", claim="data", hosts=["n2"]),
            pvc("data", "diff-local", volume="diff-pv-n2"),
            pv("diff-pv-gone", "diff-local", claim="lost", hosts=["n9"]),
            pvc("lost", "diff-local", volume="diff-pv-gone"),
        ],
        pods=[pod("p1", cpu="100m").pvc("data"), pod("p2", cpu="100m").pvc("lost"), pod("p3", cpu="100m")],
    )
)

add(
    scenario(
        "vol-unbound-immediate",
        "an unbound PVC of an Immediate class keeps the pod pending",
        ["VolumeBinding"],
        three(),
        objects=[
            storage_class("diff-immediate", "Immediate", "example.com/never"),
            pvc("waiting", "diff-immediate"),
        ],
        pods=[pod("p1", cpu="100m").pvc("waiting"), pod("p2", cpu="100m")],
    )
)

add(
    scenario(
        "vol-missing-pvc",
        "a pod naming a PVC that does not exist stays pending",
        ["VolumeBinding"],
        three(),
        pods=[pod("p1", cpu="100m").pvc("ghost"), pod("p2", cpu="100m")],
    )
)

add(
    scenario(
        "vol-wffc-static",
        "WaitForFirstConsumer: the pod goes where a matching static PV is, and binds it",
        ["VolumeBinding"],
        three(),
        objects=[
            storage_class("diff-wffc", "WaitForFirstConsumer"),
            pv("diff-pv-a", "diff-wffc", size="10Gi", hosts=["n3"]),
            pv("diff-pv-small", "diff-wffc", size="1Gi", hosts=["n1"]),
            pvc("claim1", "diff-wffc", size="5Gi"),
            pvc("claim2", "diff-wffc", size="5Gi"),
        ],
        pods=[pod("p1", cpu="100m").pvc("claim1"), pod("p2", cpu="100m").pvc("claim2")],
    )
)

add(
    scenario(
        "vol-rwop",
        "ReadWriteOncePod: a claim in use by another pod makes the pod unschedulable",
        ["VolumeRestrictions"],
        three(),
        objects=[
            storage_class("diff-rwop"),
            pv("diff-pv-rwop1", "diff-rwop", modes=["ReadWriteOncePod"], claim="solo"),
            pvc("solo", "diff-rwop", modes=["ReadWriteOncePod"], volume="diff-pv-rwop1"),
            pv("diff-pv-rwop2", "diff-rwop", modes=["ReadWriteOncePod"], claim="free"),
            pvc("free", "diff-rwop", modes=["ReadWriteOncePod"], volume="diff-pv-rwop2"),
        ],
        existing=[bound(pod("owner").pvc("solo"), "n1")],
        pods=[
            pod("p1", cpu="100m").pvc("solo"),
            pod("p2", cpu="100m").pvc("free"),
            pod("p3", cpu="100m").pvc("free"),
        ],
    )
)

add(
    scenario(
        "vol-zone",
        "VolumeZone: a PV labelled with a zone needs a node in that zone",
        ["VolumeZone"],
        [node("n1", zone="z1"), node("n2", zone="z2"), node("n3", zone="z2")],
        objects=[
            storage_class("diff-zonal"),
            pv("diff-pv-z2", "diff-zonal", claim="zonal", labels={ZONE: "z2"}),
            pvc("zonal", "diff-zonal", volume="diff-pv-z2"),
            pv("diff-pv-z9", "diff-zonal", claim="far", labels={ZONE: "z9"}),
            pvc("far", "diff-zonal", volume="diff-pv-z9"),
            pv("diff-pv-multi", "diff-zonal", claim="multi", labels={ZONE: "z1__z9"}),
            pvc("multi", "diff-zonal", volume="diff-pv-multi"),
        ],
        pods=[
            pod("p1", cpu="100m").pvc("zonal"),
            pod("p2", cpu="100m").pvc("far"),
            pod("p3", cpu="100m").pvc("multi"),
        ],
    )
)

add(
    scenario(
        "vol-csi-limits",
        "NodeVolumeLimits: CSINode allocatable count caps CSI volumes per node",
        ["NodeVolumeLimits"],
        [node("n1"), node("n2")],
        objects=[storage_class("diff-csi", provisioner=CSI_DRIVER), csinode("n1", 1), csinode("n2", 2)]
        + [
            x
            for i in (1, 2, 3, 4)
            for x in (
                pv(f"diff-pv-csi{i}", "diff-csi", claim=f"c{i}", csi_handle=f"vol-{i}"),
                pvc(f"c{i}", "diff-csi", volume=f"diff-pv-csi{i}"),
            )
        ],
        existing=[bound(pod("e1").pvc("c1"), "n1")],
        pods=[
            pod("p1", cpu="100m").pvc("c2"),
            pod("p2", cpu="100m").pvc("c3"),
            pod("p3", cpu="100m").pvc("c4"),
            pod("p4", cpu="100m").pvc("c1"),
        ],
    )
)
