"""PreBind's claim status write: allocation + reservedFor in one update, retried on conflict, never
overwriting an allocation someone else made."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pyscheduler.client.api import ApiError, resource_path
from pyscheduler.client.claims import (
    FINALIZER,
    ClaimWriteError,
    ClaimWriter,
    consumer_ref,
    deallocate_claim,
    reserve_claim,
    unreserve_claim,
)

ALLOC = {"devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": "g0"}]}}


def claim(rv: str = "1", uid: str = "u", status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": "c", "uid": uid, "resourceVersion": rv},
        "status": status or {},
    }


class FakeApi:
    """Keeps one claim; a PUT with a stale resourceVersion is a 409 as on the API server."""

    def __init__(self, stored: dict[str, Any]) -> None:
        self.stored = stored
        self.puts: list[dict[str, Any]] = []
        self.updates: list[dict[str, Any]] = []

    def update(self, kind: str, ns: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """A plain PUT: only metadata counts here (the status subresource is separate)."""
        self.updates.append(copy.deepcopy(body))
        self._check(kind, ns, name, body)
        self.stored["metadata"] = copy.deepcopy(body["metadata"])
        self._bump()
        return copy.deepcopy(self.stored)

    def _bump(self) -> None:
        self.stored["metadata"]["resourceVersion"] = str(int(self.stored["metadata"]["resourceVersion"]) + 1)

    def _check(self, kind: str, ns: str, name: str, body: dict[str, Any]) -> None:
        if body["metadata"]["resourceVersion"] != self.stored["metadata"]["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                "the object has been modified",
                "PUT",
                resource_path(kind, ns, name, "status"),
            )

    def update_status(self, kind: str, ns: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        self.puts.append(copy.deepcopy(body))
        if body["metadata"]["resourceVersion"] != self.stored["metadata"]["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                "the object has been modified",
                "PUT",
                resource_path(kind, ns, name, "status"),
            )
        self.stored = copy.deepcopy(body)
        self.stored["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
        return copy.deepcopy(self.stored)

    def get(self, kind: str, ns: str, name: str) -> dict[str, Any]:
        return copy.deepcopy(self.stored)


def test_allocation_and_reservation_in_one_write() -> None:
    api = FakeApi(claim())
    out = reserve_claim(api, claim(), ALLOC, consumer_ref("pod-a", "pu-a"), now=lambda: 0.0)
    # kube's finalizer first (a plain update), then allocation + reservation in one status write
    assert [u["metadata"]["finalizers"] for u in api.updates] == [[FINALIZER]]
    assert len(api.puts) == 1
    written = api.puts[0]["status"]["allocation"]
    assert written["devices"] == ALLOC["devices"]
    assert written["allocationTimestamp"] == "1970-01-01T00:00:00Z"
    assert out["status"]["reservedFor"] == [{"resource": "pods", "name": "pod-a", "uid": "pu-a"}]
    assert out["metadata"]["resourceVersion"] == "3"
    assert out["metadata"]["finalizers"] == [FINALIZER]


def test_finalizer_already_there_is_not_written_again() -> None:
    c = claim()
    c["metadata"]["finalizers"] = [FINALIZER]
    api = FakeApi(copy.deepcopy(c))
    reserve_claim(api, c, ALLOC, consumer_ref("pod-a", "pu-a"))
    assert api.updates == [] and len(api.puts) == 1


def test_reserving_a_claim_deallocated_meanwhile_fails() -> None:
    api = FakeApi(claim(rv="5"))
    with pytest.raises(ClaimWriteError, match="got deallocated elsewhere in the meantime"):
        reserve_claim(api, claim(rv="4", status={"allocation": ALLOC}), None, consumer_ref("pod-a", "pu-a"))


def test_deleted_claim_is_not_reserved() -> None:
    c = claim()
    c["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    api = FakeApi(copy.deepcopy(c))
    with pytest.raises(ClaimWriteError, match="got deleted in the meantime"):
        reserve_claim(api, c, ALLOC, consumer_ref("pod-a", "pu-a"))
    assert api.puts == []


def test_unreserve_removes_only_that_consumer_and_retries_conflicts() -> None:
    reserved = [consumer_ref("pod-a", "pu-a"), consumer_ref("pod-b", "pu-b")]
    api = FakeApi(claim(rv="7", status={"allocation": ALLOC, "reservedFor": reserved}))
    out = unreserve_claim(api, claim(rv="6", status={"allocation": ALLOC, "reservedFor": reserved}), "pu-a")
    assert out is not None and out["status"]["reservedFor"] == [consumer_ref("pod-b", "pu-b")]
    assert out["status"]["allocation"] == ALLOC
    assert unreserve_claim(api, out, "pu-a") is None  # nothing left to remove: no write
    assert len(api.puts) == 2


def test_claim_writer_delegates() -> None:
    api = FakeApi(claim())
    w = ClaimWriter(api, now=lambda: 0.0)
    out = w.reserve(claim(), ALLOC, consumer_ref("pod-a", "pu-a"))
    assert out["status"]["reservedFor"][0]["uid"] == "pu-a"
    freed = w.unreserve(out, "pu-a")
    assert freed is not None and freed["status"]["reservedFor"] == []
    assert "allocation" not in w.deallocate(freed)["status"]


def test_conflict_retries_on_a_fresh_copy_and_keeps_other_consumers() -> None:
    fresh = claim(rv="5", status={"allocation": ALLOC, "reservedFor": [consumer_ref("pod-b", "pu-b")]})
    api = FakeApi(fresh)
    out = reserve_claim(api, claim(rv="4", status={"allocation": ALLOC}), None, consumer_ref("pod-a", "pu-a"))
    assert len(api.puts) == 2
    assert [r["uid"] for r in out["status"]["reservedFor"]] == ["pu-b", "pu-a"]


def test_allocated_elsewhere_meanwhile_is_an_error_not_an_overwrite() -> None:
    other = {"devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": "g1"}]}}
    api = FakeApi(claim(rv="5", status={"allocation": other}))
    with pytest.raises(ClaimWriteError, match="got allocated elsewhere in the meantime"):
        reserve_claim(api, claim(rv="4"), ALLOC, consumer_ref("pod-a", "pu-a"))
    assert api.stored["status"]["allocation"] == other


def test_replaced_claim_is_an_error() -> None:
    api = FakeApi(claim(rv="9", uid="other"))
    with pytest.raises(ClaimWriteError, match="was replaced"):
        reserve_claim(api, claim(rv="1"), ALLOC, consumer_ref("pod-a", "pu-a"))


def test_deallocate_only_an_unreserved_claim() -> None:
    api = FakeApi(claim(status={"allocation": ALLOC}))
    assert "allocation" not in deallocate_claim(api, claim(status={"allocation": ALLOC}))["status"]
    with pytest.raises(ClaimWriteError, match="still in use"):
        deallocate_claim(api, claim(status={"allocation": ALLOC, "reservedFor": [consumer_ref("p", "u")]}))


def test_deallocate_a_claim_reserved_only_for_the_pod_being_scheduled() -> None:
    mine = claim(status={"allocation": ALLOC, "reservedFor": [consumer_ref("p", "u")]})
    api = FakeApi(copy.deepcopy(mine))
    out = deallocate_claim(api, mine, "u")
    assert "allocation" not in out["status"] and not out["status"].get("reservedFor")
    theirs = claim(
        rv=out["metadata"]["resourceVersion"],
        status={"allocation": ALLOC, "reservedFor": [consumer_ref("q", "v")]},
    )
    with pytest.raises(ClaimWriteError, match="still in use"):
        deallocate_claim(api, theirs, "u")


class DeletingApi(FakeApi):
    def __init__(self, stored: dict[str, Any]) -> None:
        super().__init__(stored)
        self.deleted: list[str] = []
        self.gone = False

    def delete(self, kind: str, ns: str, name: str) -> None:
        if self.gone:
            raise ApiError(404, "NotFound", "gone", "DELETE", resource_path(kind, ns, name))
        self.deleted.append(name)


def test_delete_drops_kubes_finalizer_first_and_tolerates_a_claim_already_gone() -> None:
    stored = claim(rv="3")
    stored["metadata"]["finalizers"] = ["other", FINALIZER]
    api = DeletingApi(stored)
    stale = copy.deepcopy(stored)
    stale["metadata"]["resourceVersion"] = "2"  # a 409 first: re-read, then drop the finalizer
    api.get = lambda kind, ns, name: copy.deepcopy(api.stored)  # type: ignore[method-assign]
    ClaimWriter(api).delete(stale)
    assert api.stored["metadata"]["finalizers"] == ["other"]
    assert api.deleted == ["c"]
    api.gone = True
    ClaimWriter(api).delete(api.stored)  # no finalizer left, 404 on delete: nothing raised
    assert api.deleted == ["c"]


def test_create_clears_what_the_api_server_assigns() -> None:
    seen: list[dict[str, Any]] = []

    class CreatingApi:
        def create(self, kind: str, ns: str, body: dict[str, Any]) -> dict[str, Any]:
            seen.append(copy.deepcopy(body))
            return {**body, "metadata": {**body["metadata"], "name": "p-extended-resources-x"}}

    body = claim(status={"allocation": ALLOC})
    body["metadata"]["generateName"] = "p-extended-resources-"
    out = ClaimWriter(CreatingApi()).create(body)
    assert out["metadata"]["name"] == "p-extended-resources-x"
    sent = seen[0]
    assert "name" not in sent["metadata"] and "uid" not in sent["metadata"] and "status" not in sent
    assert sent["metadata"]["generateName"] == "p-extended-resources-"
    assert (sent["apiVersion"], sent["kind"]) == ("resource.k8s.io/v1", "ResourceClaim")
