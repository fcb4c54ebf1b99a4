"""NodeInfo.add_pod/remove_pod/clone: the pods, their order and the running totals, against a plain list.

remove_pod finds a pod through a uid index on the NodeInfos the cache owns and by scanning on clones;
both must leave exactly what removing that uid from a list would (order kept: preemption's victim order
and the extender's victim lists follow it)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyscheduler.framework.node_info import NodeInfo
from pyscheduler.framework.types import Pod
from pyscheduler.testing.builders import make_node, make_pod

UIDS = [f"u{i}" for i in range(8)] + ["a", "b"]


def pod(uid: str, variant: int = 0) -> Pod:
    b = make_pod(f"p-{uid}-{variant}").uid(uid).req(cpu=f"{100 + 10 * variant}m", memory=f"{1 + variant}Mi")
    if variant % 2:
        b.pod_affinity("zone", {"app": uid}, anti=True)
    if variant % 3 == 2:
        b.host_port(8000 + 10 * UIDS.index(uid) + variant).pvc(f"claim-{uid}")  # ports are a set: one per uid
    return b.obj()


def snapshot(ni: NodeInfo) -> tuple[object, ...]:
    return (
        [pi.pod.name for pi in ni.pods],
        [pi.pod.name for pi in ni.pods_with_affinity],
        [pi.pod.name for pi in ni.pods_with_required_anti_affinity],
        (ni.requested.milli_cpu, ni.requested.memory, ni.requested.allowed_pod_number),
        (ni.non_zero_requested.milli_cpu, ni.non_zero_requested.memory),
        len(ni.used_ports),
        dict(ni.pvc_ref_counts),
    )


def rebuilt(pods: list[Pod]) -> NodeInfo:
    """What a NodeInfo holding exactly ``pods``, added in this order, looks like."""
    return NodeInfo(make_node("n").obj(), pods)


ops = st.lists(
    st.tuples(st.sampled_from(["add", "remove", "clone"]), st.sampled_from(UIDS), st.integers(0, 5)),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(ops=ops)
def test_remove_pod_is_removing_that_uid_from_a_list(ops: list[tuple[str, str, int]]) -> None:
    ni = NodeInfo(make_node("n").obj())
    model: list[Pod] = []
    for op, uid, variant in ops:
        if op == "add":
            if any(p.uid == uid for p in model):
                continue  # the cache never adds a uid twice (see the test below for what happens then)
            p = pod(uid, variant)
            ni.add_pod(p)
            model.append(p)
        elif op == "remove":
            here = [i for i, p in enumerate(model) if p.uid == uid]
            assert ni.remove_pod(pod(uid, variant)) is bool(here)
            if here:
                del model[here[0]]  # the others keep their order
        else:  # go on with a clone, as preemption's dry runs and the snapshot do
            before = ni.generation
            ni = ni.clone()
            assert ni.generation == before
        assert snapshot(ni) == snapshot(rebuilt(model))


def test_removing_the_pod_added_last_or_first_keeps_the_others_in_order() -> None:
    ni = rebuilt([pod(f"u{i}") for i in range(8)])
    assert ni.remove_pod(pod("u7"))  # the bind confirmation's case: the pod assumed last
    assert ni.remove_pod(pod("u0"))
    assert ni.remove_pod(pod("u4", 3))  # found by uid, whatever the version
    assert not ni.remove_pod(pod("u4"))
    assert [pi.pod.uid for pi in ni.pods] == ["u1", "u2", "u3", "u5", "u6"]
    assert ni.requested.milli_cpu == 500 and ni.requested.allowed_pod_number == 5


def test_a_uid_added_twice_is_removed_first_come_first_gone() -> None:
    ni = rebuilt([pod("a"), pod("b"), pod("a", 2)])
    assert ni.remove_pod(pod("a"))
    assert [pi.pod.name for pi in ni.pods] == ["p-b-0", "p-a-2"]
    assert ni.remove_pod(pod("a"))
    assert not ni.remove_pod(pod("a"))
    assert [pi.pod.name for pi in ni.pods] == ["p-b-0"] and not ni.pvc_ref_counts


@settings(max_examples=50, deadline=None)
@given(order=st.permutations(range(100)))
def test_many_pods_removed_in_any_order(order: list[int]) -> None:
    """Past the few places near the end that remove_pod looks at first."""
    model = [make_pod(f"m{i}").uid(f"m{i}").req(cpu="10m").obj() for i in range(100)]
    ni = rebuilt(model)
    for k, i in enumerate(order):
        assert ni.remove_pod(make_pod(f"m{i}").uid(f"m{i}").obj())
        model = [p for p in model if p.uid != f"m{i}"]
        if k % 7 == 0:
            assert [pi.pod.uid for pi in ni.pods] == [p.uid for p in model]
    assert not ni.pods and ni.requested.milli_cpu == 0 and ni.requested.allowed_pod_number == 0


def test_pods_found_at_every_depth_of_a_node_with_ten_thousand_pods() -> None:
    """A bind confirmation can trail hundreds of binds on a busy node (30,000 pods on one node in
    upstream's SchedulingDaemonset): remove_pod finds the pod at any distance from the end, on both
    sides of each search window, and leaves the others in order."""
    model = [make_pod(f"m{i}").uid(f"m{i}").req(cpu="1m").obj() for i in range(10_000)]
    ni = rebuilt(model)
    for back in (0, 31, 32, 33, 510, 511, 512, 513, 8190, 8191, 8192, 8193, 9_000):
        victim = model[len(model) - 1 - back]
        assert ni.remove_pod(victim), back
        model.remove(victim)
    victim = model[0]
    assert ni.remove_pod(victim)
    model.remove(victim)
    assert [pi.pod.uid for pi in ni.pods] == [p.uid for p in model]
    assert ni.requested.allowed_pod_number == len(model) == 10_000 - 14
    assert not ni.remove_pod(victim)


def test_copy_from_makes_an_independent_copy_in_place() -> None:
    """The snapshot refreshes a NodeInfo in place (its lists and table point at it): afterwards it holds
    what the source holds, shares nothing a later change to either would reach, and keeps its row."""
    src = NodeInfo(make_node("n1").obj(), [pod("a", 1), pod("b", 2)])
    dst = NodeInfo(make_node("n2").obj(), [pod("u0")])
    dst.row = 7
    dst.copy_from(src)
    assert snapshot(dst) == snapshot(src) and dst.name == "n1" and dst.row == 7
    dst.add_pod(pod("u1", 2))
    src.remove_pod(src.pods[0].pod)
    assert snapshot(src) == snapshot(rebuilt([pod("b", 2)]))
    assert snapshot(dst) == snapshot(rebuilt([pod("a", 1), pod("b", 2), pod("u1", 2)]))
    # every slot but the row is assigned: a slot added to NodeInfo and forgotten here fails
    blank = NodeInfo.__new__(NodeInfo)
    blank.copy_from(src)
    for slot in NodeInfo.__slots__:
        if slot != "row":
            getattr(blank, slot)
