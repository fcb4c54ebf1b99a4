"""VolumeBinding's scheduler_volume_scheduling_stage_error_total{operation}, as a /metrics scrape shows it.

kube-scheduler counts an error (not a rejection) of each of its binder's stages: ``predicate`` (finding the
pod's volumes for a node), ``assume`` (Reserve's assume cache) and ``bind`` (PreBind's API writes). Each
case here makes that stage fail the way it fails in a cluster and reads the scrape text.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pyscheduler.backend.objects import ObjectStore
from pyscheduler.framework.status import Code, Status
from pyscheduler.metrics import SchedulerMetrics
from pyscheduler.plugins.volume_binding import STATE_KEY, VolumeBinding, VolumeBindingArgs
from pyscheduler.testing import make_cycle_state, make_handle, make_node, make_node_info, make_pod

Obj = dict[str, Any]
METRIC = "scheduler_volume_scheduling_stage_error_total"


class Client:
    """The API client PreBind patches through; a patch of ``fail_on`` raises (a 409, say)."""

    def __init__(self, fail_on: str = "") -> None:
        self.fail_on = fail_on
        self.patched: list[str] = []

    def patch(self, kind: str, namespace: str, name: str, body: Obj) -> Obj:
        if name == self.fail_on:
            raise RuntimeError(f"conflict on {name}")
        self.patched.append(name)
        return {}


def storage_class(name: str = "wait", provisioner: str = "kubernetes.io/no-provisioner") -> Obj:
    return {
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def claim(name: str, cls: str = "wait", selector: Obj | None = None) -> Obj:
    spec: Obj = {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": cls,
        "resources": {"requests": {"storage": "1Gi"}},
    }
    if selector is not None:
        spec["selector"] = selector
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "10"},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def volume(name: str, rv: str = "5") -> Obj:
    return {
        "kind": "PersistentVolume",
        "metadata": {"name": name, "resourceVersion": rv},
        "spec": {
            "storageClassName": "wait",
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
        },
        "status": {"phase": "Available"},
    }


def setup(*objs: Obj, client: Client | None = None) -> tuple[VolumeBinding, ObjectStore, SchedulerMetrics]:
    store = ObjectStore()
    for o in objs:
        store.put(o["kind"], o)
    metrics = SchedulerMetrics()
    handle = make_handle(object_store=store, client=client or Client())
    handle.extra["metrics"] = metrics
    return VolumeBinding(VolumeBindingArgs(), handle), store, metrics


def scraped(metrics: SchedulerMetrics) -> dict[str, float]:
    """operation -> count, from the /metrics text."""
    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        for s in fam.samples:
            if s.name == METRIC:
                out[s.labels["operation"]] = s.value
    return out


def pod(*claims: str, name: str = "p") -> Any:
    b = make_pod(name)
    for c in claims:
        b.pvc(c)
    return b.obj()


NODE = make_node("n1").obj()


def filter_on_node(pl: VolumeBinding, p: Any) -> tuple[Any, Status | None]:
    state = make_cycle_state()
    _, status = pl.pre_filter(state, p, [])
    if status is not None:
        return state, status
    return state, pl.filter(state, p, make_node_info(NODE))


def test_a_pod_that_fits_or_is_rejected_counts_no_error() -> None:
    pl, _, metrics = setup(storage_class(), claim("a"), claim("b"), volume("pv1"))
    state, status = filter_on_node(pl, pod("a"))
    assert status is None
    assert pl.reserve(state, pod("a"), "n1") is None
    assert pl.pre_bind(state, pod("a"), "n1") is None
    # no PV left for b: a rejection (UnschedulableAndUnresolvable), not an error
    _, rejected = filter_on_node(pl, pod("b", name="q"))
    assert rejected is not None and rejected.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert scraped(metrics) == {}


def test_a_claim_selector_that_does_not_parse_is_a_predicate_error() -> None:
    bad = claim("a", selector={"matchExpressions": [{"key": "k", "operator": "Bogus"}]})
    pl, _, metrics = setup(storage_class(), bad, volume("pv1"))
    _, status = filter_on_node(pl, pod("a"))
    assert status is not None and status.code == Code.ERROR
    assert scraped(metrics) == {"predicate": 1.0}


def test_a_volume_changed_between_filter_and_reserve_is_an_assume_error() -> None:
    pl, store, metrics = setup(storage_class(), claim("a"), volume("pv1"))
    state, status = filter_on_node(pl, pod("a"))
    assert status is None
    store.put("PersistentVolume", volume("pv1", rv="6"))  # someone updated it meanwhile
    st = pl.reserve(state, pod("a"), "n1")
    assert st is not None and st.code == Code.ERROR
    assert '"pv1" is out of sync (stored: 6, assume: 5)' in st.message()
    assert pl.pv_cache.assumed_keys() == []
    assert scraped(metrics) == {"assume": 1.0}


def test_a_volume_deleted_between_filter_and_reserve_is_an_assume_error() -> None:
    pl, store, metrics = setup(storage_class(), claim("a"), volume("pv1"))
    state, _ = filter_on_node(pl, pod("a"))
    store.remove("PersistentVolume", volume("pv1"))
    st = pl.reserve(state, pod("a"), "n1")
    assert st is not None and st.code == Code.ERROR
    assert 'persistentvolumes "pv1" not found' in st.message()
    assert scraped(metrics) == {"assume": 1.0}


def test_a_failed_api_write_in_prebind_is_a_bind_error() -> None:
    pl, _, metrics = setup(storage_class(), claim("a"), volume("pv1"), client=Client(fail_on="pv1"))
    state, _ = filter_on_node(pl, pod("a"))
    assert pl.reserve(state, pod("a"), "n1") is None
    st = pl.pre_bind(state, pod("a"), "n1")
    assert st is not None and st.code == Code.ERROR
    assert scraped(metrics) == {"bind": 1.0}
    assert state.read(STATE_KEY).all_bound is False  # kept for Unreserve


def test_without_a_metrics_handle_errors_are_still_reported_as_statuses() -> None:
    store = ObjectStore()
    for o in (storage_class(), claim("a"), volume("pv1")):
        store.put(o["kind"], o)
    pl = VolumeBinding(VolumeBindingArgs(), make_handle(object_store=store, client=Client(fail_on="pv1")))
    state, _ = filter_on_node(pl, pod("a"))
    assert pl.reserve(state, pod("a"), "n1") is None
    st = pl.pre_bind(state, pod("a"), "n1")
    assert st is not None and st.code == Code.ERROR
