"""ClaimTracker: an allocation is visible before its write returns; only newer watch events supersede."""

from __future__ import annotations

import threading

import pytest

from pyscheduler.backend.claims import AssumeError, ClaimTracker
from pyscheduler.framework.dra import ResourceClaim


def claim(
    name: str = "c", rv: int = 1, devices: list[str] | None = None, admin: bool = False, uid: str = ""
) -> ResourceClaim:
    status: dict[str, object] = {}
    if devices is not None:
        status["allocation"] = {
            "devices": {
                "results": [
                    {"request": "r", "driver": "d", "pool": "p", "device": dev, "adminAccess": admin}
                    for dev in devices
                ]
            }
        }
    return ResourceClaim.from_dict(
        {
            "metadata": {
                "namespace": "ns",
                "name": name,
                "uid": uid or f"uid-{name}",
                "resourceVersion": str(rv),
            },
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
            "status": status,
        }
    )


def test_pending_allocation_counts_before_the_write_and_until_removed() -> None:
    t = ClaimTracker()
    t.on_add(claim())
    assert t.allocated_devices() == set()
    t.signal_pending_allocation(claim(devices=["gpu-0"]))
    assert t.allocated_devices() == {("d", "p", "gpu-0")}
    # the write returned: assume the written copy, drop the in-flight entry
    t.assume(claim(rv=2, devices=["gpu-0"]))
    assert t.remove_pending_allocation("uid-c")
    assert t.allocated_devices() == {("d", "p", "gpu-0")}
    # a stale watch event (the pre-allocation copy) does not undo the assumed allocation
    t.on_update(claim(), claim(rv=1))
    assert t.get("ns", "c") is not None and t.get("ns", "c").allocated  # type: ignore[union-attr]
    # a newer watched copy (here: deallocated by someone else) supersedes the assumed one
    t.on_update(claim(), claim(rv=3))
    assert t.allocated_devices() == set()


def test_restore_returns_to_the_watched_copy() -> None:
    t = ClaimTracker()
    t.on_add(claim(rv=5))
    t.assume(claim(rv=5, devices=["gpu-1"]))
    assert t.allocated_devices() == {("d", "p", "gpu-1")}
    t.restore("ns/c")
    assert t.allocated_devices() == set() and not t.get("ns", "c").allocated  # type: ignore[union-attr]
    with pytest.raises(AssumeError, match="out of sync"):
        t.assume(claim(rv=4))
    with pytest.raises(AssumeError, match="not found"):
        t.assume(claim(name="other"))


def test_shared_in_flight_claim_stays_until_last_sharer() -> None:
    t = ClaimTracker()
    t.signal_pending_allocation(claim(devices=["gpu-0"]))
    t.signal_pending_allocation(claim(devices=["gpu-0"]))
    assert not t.remove_pending_allocation("uid-c")
    assert t.allocated_devices() == {("d", "p", "gpu-0")}
    assert t.remove_pending_allocation("uid-c")
    assert t.allocated_devices() == set()
    assert not t.remove_pending_allocation("uid-c")


def test_admin_access_does_not_take_the_device_and_delete_frees() -> None:
    t = ClaimTracker()
    t.on_add(claim(name="admin", devices=["gpu-0"], admin=True))
    t.on_add(claim(name="user", devices=["gpu-1"]))
    assert t.allocated_devices() == {("d", "p", "gpu-1")}
    t.on_delete(claim(name="user"))
    assert t.allocated_devices() == set()


def test_burst_never_hands_a_device_out_twice() -> None:
    """Many threads each take the first free device under the tracker's view, as Reserve would."""
    t = ClaimTracker()
    devices = [f"gpu-{i}" for i in range(50)]
    pick = threading.Lock()  # the scheduling cycle is serial: one allocation decision at a time
    won: list[str] = []

    def reserve(i: int) -> None:
        with pick:
            free = [d for d in devices if ("d", "p", d) not in t.allocated_devices()]
            if not free:
                return
            t.signal_pending_allocation(claim(name=f"c{i}", devices=[free[0]], uid=f"u{i}"))
            won.append(free[0])

    threads = [threading.Thread(target=reserve, args=(i,)) for i in range(200)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(won) == 50 and len(set(won)) == 50


def shared(name: str, memory: str, rv: int = 1) -> ResourceClaim:
    result = {
        "request": "r",
        "driver": "d",
        "pool": "p",
        "device": "g0",
        "shareID": f"share-{name}",
        "consumedCapacity": {"memory": memory},
    }
    return ResourceClaim.from_dict(
        {
            "metadata": {"namespace": "ns", "name": name, "uid": f"uid-{name}", "resourceVersion": str(rv)},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
            "status": {"allocation": {"devices": {"results": [result]}}},
        }
    )


def test_shares_of_a_device_add_up_capacity_and_do_not_take_the_device() -> None:
    from fractions import Fraction

    t = ClaimTracker()
    t.on_add(shared("a", "30Gi"))
    t.on_add(claim("b"))
    t.signal_pending_allocation(shared("b", "10Gi"))  # in flight: counted once
    assert t.allocated_devices() == set()
    assert t.allocated_capacity() == {("d", "p", "g0"): {"memory": Fraction(40 * 2**30)}}
    t.assume(shared("b", "10Gi", rv=2))  # written: the stored copy counts, not the in-flight one too
    assert t.allocated_capacity() == {("d", "p", "g0"): {"memory": Fraction(40 * 2**30)}}


def test_capacity_follows_shares_as_claims_change_and_go() -> None:
    """allocated_capacity keeps only the claims holding a share: a share written, replaced by a plain
    allocation, restored from the watched copy, and a claim deleted all show at once."""
    from fractions import Fraction

    g0 = ("d", "p", "g0")
    t = ClaimTracker()
    t.on_add(claim("a"))
    t.on_add(shared("b", "10Gi"))
    assert t.allocated_capacity() == {g0: {"memory": Fraction(10 * 2**30)}}
    t.assume(shared("a", "30Gi", rv=2))  # a's own write, before the watch has it
    assert t.allocated_capacity() == {g0: {"memory": Fraction(40 * 2**30)}}
    t.restore("ns/a")  # the write failed: the watched copy (no share) again
    assert t.allocated_capacity() == {g0: {"memory": Fraction(10 * 2**30)}}
    t.on_update(shared("b", "10Gi"), claim("b", rv=2, devices=["g1"]))  # b now holds g1 whole
    assert t.allocated_capacity() == {}
    t.on_update(claim("b", rv=2, devices=["g1"]), shared("b", "5Gi", rv=3))
    t.on_delete(shared("b", "5Gi", rv=3))
    assert t.allocated_capacity() == {}


def owned(name: str, rv: int, owner_uid: str | None, controller: bool = True) -> ResourceClaim:
    c = claim(name, rv=rv)
    raw = dict(c.raw)
    meta = dict(raw["metadata"])
    if owner_uid is not None:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "p", "uid": owner_uid, "controller": controller}]
    raw["metadata"] = meta
    return ResourceClaim.from_dict(raw)


def test_claims_are_found_by_their_controller_owner_through_every_change() -> None:
    t = ClaimTracker()
    t.on_add(owned("a", 1, "pod-1"))
    t.on_add(owned("b", 1, "pod-1"))
    t.on_add(owned("c", 1, "pod-2", controller=False))  # an owner, not the controller
    t.on_add(owned("d", 1, None))
    assert sorted(c.meta.name for c in t.owned_by("pod-1")) == ["a", "b"]
    assert t.owned_by("pod-2") == []
    # the controller changes: the claim moves; the stored copy is the one returned
    t.on_update(owned("a", 1, "pod-1"), owned("a", 2, "pod-3"))
    assert [c.meta.name for c in t.owned_by("pod-1")] == ["b"]
    assert [(c.meta.name, c.meta.resource_version) for c in t.owned_by("pod-3")] == [("a", 2)]
    t.on_delete(owned("b", 1, "pod-1"))
    assert t.owned_by("pod-1") == []
    t.assume(owned("a", 3, "pod-1"))  # the scheduler's own copy counts too, and restore undoes it
    assert [c.meta.name for c in t.owned_by("pod-1")] == ["a"]
    t.restore("ns/a")
    assert t.owned_by("pod-1") == [] and [c.meta.name for c in t.owned_by("pod-3")] == ["a"]
