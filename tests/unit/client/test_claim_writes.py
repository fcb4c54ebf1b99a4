"""PreBind's claim status write: allocation + reservedFor in one update, retried on conflict, never
overwriting an allocation someone else made."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pyscheduler.client.api import resource_path
from pyscheduler.client.claims import ClaimWriteError, consumer_ref, deallocate_claim, reserve_claim
from pyscheduler.client.errors import ApiError

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
    out = reserve_claim(api, claim(), ALLOC, consumer_ref("pod-a", "pu-a"))
    assert len(api.puts) == 1 and api.puts[0]["status"]["allocation"] == ALLOC
    assert out["status"]["reservedFor"] == [{"resource": "pods", "name": "pod-a", "uid": "pu-a"}]
    assert out["metadata"]["resourceVersion"] == "2"


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
