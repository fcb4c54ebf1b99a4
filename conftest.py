"""Fixtures for every test in the repository.

- Unit tests (everything not marked ``cluster`` or ``network``) cannot reach an API server: any HTTP
  request through urllib3 (which the kubernetes client uses) or the client's own ``Http1Pool`` fails the
  test at once.
- ``cluster``: one real control plane (etcd, kube-apiserver, kube-controller-manager, KWOK) for the whole
  session, built from e2e/controlplane on first use. Tests that use it are marked ``cluster``.
- ``ns``: a fresh namespace per test on that cluster, deleted afterwards.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from pyscheduler.testing.cluster import LocalCluster

_ns_counter = itertools.count(1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(autouse=True)
def _no_real_api_calls(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("cluster") or request.node.get_closest_marker("network"):
        return
    import urllib3

    from pyscheduler.client.http1 import Http1Pool

    def refuse(self: object, method: str, url: str, *args: object, **kwargs: object) -> None:
        raise AssertionError(f"unit test tried a real API call: {method} {url}")

    monkeypatch.setattr(urllib3.connectionpool.HTTPConnectionPool, "urlopen", refuse)
    monkeypatch.setattr(Http1Pool, "exchange", refuse)


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    c = LocalCluster(with_kwok=True, with_controller_manager=True, name="pytest")
    c.start()
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture
def ns(cluster: LocalCluster) -> Iterator[str]:
    name = f"t{os.getpid() % 10000}-{next(_ns_counter)}"
    cluster.api(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    yield name
    cluster.request("DELETE", f"/api/v1/namespaces/{name}")
