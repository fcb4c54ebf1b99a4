"""DynamicResources' queueing hints (hints.py): which claim, slice and class events requeue a pod. The
builders are test_dynamic_resources'."""

from __future__ import annotations

import pytest

from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from pyscheduler.plugins.dynamic_resources.test_dynamic_resources import (
    ALLOC_NODE1,
    CLASS_OBJ,
    JSON,
    World,
    gpu_claim,
    pod_with,
)
from pyscheduler.testing.builders import make_pod

# ------------------------------------------------------------------------------------------ hints


def _claim(obj: JSON) -> ResourceClaim:
    return ResourceClaim.from_dict(obj)


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(None, gpu_claim("c"), QueueingHint.QUEUE, id="the pod's claim got created"),
        pytest.param(None, gpu_claim("other"), QueueingHint.SKIP, id="another claim got created"),
        pytest.param(
            gpu_claim("c"),
            gpu_claim("c", resource_version="2", status={"allocation": ALLOC_NODE1}),
            QueueingHint.QUEUE,
            id="the pod's claim status changed",
        ),
        pytest.param(
            gpu_claim("c"), gpu_claim("c", resource_version="2"), QueueingHint.SKIP, id="status unchanged"
        ),
        pytest.param(
            gpu_claim("other", status={"allocation": ALLOC_NODE1}),
            gpu_claim("other", resource_version="2"),
            QueueingHint.QUEUE,
            id="another claim got deallocated",
        ),
    ],
)
def test_claim_hint(old: JSON | None, new: JSON, want: QueueingHint) -> None:
    w = World(CLASS_OBJ, *({new["metadata"]["name"]: new, "c": gpu_claim("c")}.values()))
    got = w.plugin.is_schedulable_after_claim_change(
        pod_with("c").obj(), _claim(old) if old else None, _claim(new)
    )
    assert got == want


def test_claim_hint_skips_while_a_claim_is_missing() -> None:
    w = World(CLASS_OBJ, gpu_claim("c"))
    pod = pod_with("c", "missing").obj()
    assert w.plugin.is_schedulable_after_claim_change(pod, None, w.claim("c")) == QueueingHint.SKIP


def test_claim_hint_answers_as_the_full_lookup_on_random_pods_and_claims(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hint's shortcut (a claim the pod cannot name is skipped before any lookup) never changes its
    answer: direct and template claims, templates not created yet or needing no claim, claims missing,
    being deleted, not owned by the pod, in other namespaces; adds, status changes, deallocations. And
    the queue's index keeps the same promise: an event whose keys the pod does not hold is one the full
    lookup skips for that pod (so the queue may leave the pod out)."""
    import random

    from pyscheduler.plugins.dynamic_resources import hints

    rng = random.Random(14)
    skipped = 0
    names = ["a", "b", "c", "d"]
    alloc = {"allocation": ALLOC_NODE1}
    for _ in range(400):
        cached: list[JSON] = []
        for n in names:
            if rng.random() < 0.7:
                c = gpu_claim(n, status=alloc if rng.random() < 0.5 else None)
                if rng.random() < 0.2:
                    c["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
                if rng.random() < 0.5:
                    owner = "uid-p" if rng.random() < 0.7 else "uid-x"
                    c["metadata"]["ownerReferences"] = [{"uid": owner, "controller": True}]
                cached.append(c)
        w = World(CLASS_OBJ, *cached)
        b = make_pod("p").uid("uid-p")
        for k in range(rng.randint(0, 3)):
            if rng.random() < 0.5:
                b = b.resource_claim(f"pc{k}", claim=rng.choice(names))
            else:
                b = b.resource_claim(f"pc{k}", template="t")
                roll = rng.random()
                if roll < 0.6:
                    b = b.claim_status(f"pc{k}", rng.choice(names))
                elif roll < 0.75:
                    b = b.claim_status(f"pc{k}", None)
        pod = b.obj()
        name = rng.choice(names)
        ns = "default" if rng.random() < 0.85 else "elsewhere"
        kind = rng.choice(["add", "update", "deallocate"])
        new = gpu_claim(name, resource_version="5", status=None if kind == "deallocate" else alloc)
        uid = new["metadata"]["uid"] if ns == "default" else f"{ns}-{name}"  # UIDs are unique
        new["metadata"].update(namespace=ns, uid=uid)
        old = None
        if kind != "add":
            old = gpu_claim(name, status=alloc if kind == "deallocate" or rng.random() < 0.5 else None)
            old["metadata"].update(namespace=ns, uid=uid)
        args = (pod, _claim(old) if old else None, _claim(new))
        got = w.plugin.is_schedulable_after_claim_change(*args)
        with monkeypatch.context() as m:
            m.setattr(hints, "_may_name", lambda pod, claim: True)
            want = w.plugin.is_schedulable_after_claim_change(*args)
        assert got == want, (pod.resource_claims, pod.resource_claim_statuses, kind, ns, name)
        index = hints.CLAIM_INDEX
        event_keys = index.event_keys(*args[1:])
        assert (event_keys is None) == (kind == "deallocate")
        if event_keys is not None and not set(event_keys) & set(index.pod_keys(pod)):
            skipped += 1
            assert want == QueueingHint.SKIP, (pod.resource_claims, pod.resource_claim_statuses, kind, ns)
    assert skipped > 50  # the index leaves pods out in a good part of the cases


def test_registered_events() -> None:
    w = World()
    registered = {e.event.resource for e in w.plugin.events_to_register()}
    indexed = [e.event.resource for e in w.plugin.events_to_register() if e.index is not None]
    assert indexed == [Resource.RESOURCE_CLAIM]
    assert registered == {
        Resource.NODE,
        Resource.RESOURCE_CLAIM,
        Resource.DEVICE_CLASS,
        Resource.RESOURCE_SLICE,
    }
    claim_delete = ClusterEvent(Resource.RESOURCE_CLAIM, Action.DELETE)
    assert not any(claim_delete.matches(e.event) for e in w.plugin.events_to_register())
