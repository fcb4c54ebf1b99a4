"""Opportunistic batching end to end in the scheduling core (engine, no API server): which profiles sign
pods, which pods get the same signature, and that a hint changes a decision exactly where kube-scheduler
1.36's does (the differential scenario batch-hint-next-node checks the same against kube itself)."""

from __future__ import annotations

from typing import Any

from pyscheduler.config import feature_gates
from pyscheduler.engine import Engine
from pyscheduler.framework.types import Pod
from pyscheduler.scheduler import Scheduler
from pyscheduler.testing.builders import make_node, make_pod
from pyscheduler.testing.clock import FakeClock

LIST = [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}]


def config(plugin_config: list[dict[str, Any]] | None = None, **profile: Any) -> dict[str, Any]:
    prof: dict[str, Any] = {"schedulerName": "default-scheduler", **profile}
    if plugin_config:
        prof["pluginConfig"] = plugin_config
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [prof],
    }


def engine(cfg: dict[str, Any]) -> Engine:
    return Engine(cfg)


def signer(cfg: dict[str, Any]) -> Any:
    return next(iter(engine(cfg).app.profiles.values())).signer


def plain(name: str, ns: str = "default", **labels: str) -> Any:
    return make_pod(name, ns).res({"cpu": "1", "memory": "1Gi"}).labels(labels or {"app": "x"}).obj()


def test_the_default_profile_signs_no_pod() -> None:
    """PodTopologySpread's System defaulting gives it default constraints: it refuses every pod."""
    s = signer(config())
    assert s.enabled and s.unsupported == ()
    assert s.sign(plain("a")) is None


def test_list_defaulting_signs_plain_pods_alike() -> None:
    s = signer(config(LIST))
    a, b = s.sign(plain("a")), s.sign(plain("b", ns="other"))
    assert a is not None and a == b  # name, uid and namespace are not part of it
    assert s.sign(plain("c", app="y")) != a  # labels are (InterPodAffinity)
    bigger = make_pod("d").res({"cpu": "2", "memory": "1Gi"}).labels({"app": "x"}).obj()
    assert s.sign(bigger) != a
    port = make_pod("e").res({"cpu": "1", "memory": "1Gi"}).labels({"app": "x"}).host_port(80).obj()
    assert s.sign(port) != a


def test_pods_with_spread_affinity_or_claims_are_not_signed() -> None:
    s = signer(config(LIST))
    d = make_pod("s").labels({"app": "x"}).json()
    d["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}
    ]
    assert s.sign(Pod.from_dict(d)) is None
    d = make_pod("aa").labels({"app": "x"}).json()
    d["spec"]["affinity"] = {"podAntiAffinity": {}}
    assert s.sign(Pod.from_dict(d)) is None
    d = make_pod("c").json()
    d["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "c1"}]
    assert s.sign(Pod.from_dict(d)) is None
    # the plugin that refused last is asked first next time: the signatures stay what they were
    assert s.sign(plain("z")) == signer(config(LIST)).sign(plain("z")) is not None


def test_a_plugin_without_sign_pod_disables_signatures() -> None:
    """kube: "Disabling signatures for profile because plugins do not support it"."""
    cfg = config(LIST, plugins={"multiPoint": {"enabled": [{"name": "LabelMatch"}]}})
    s = signer(cfg)
    assert not s.enabled and "LabelMatch" in s.unsupported
    assert s.sign(plain("a")) is None


def _tiered() -> tuple[list[Any], list[Any]]:
    """batch-hint-next-node's cluster: see bench/scenarios_batch.py."""
    nodes = [
        make_node("a").capacity(cpu="64", memory="128Gi", pods=110).label("tier", "gold").obj(),
        make_node("b").capacity(cpu="1250m", memory="1280Mi", pods=110).label("tier", "silver").obj(),
        make_node("c").capacity(cpu="64", memory="128Gi", pods=110).obj(),
    ]
    pref = [
        {
            "weight": 2,
            "preference": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]},
        },
        {
            "weight": 1,
            "preference": {
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "silver"]}]
            },
        },
    ]
    pods = []
    for i in range(1, 5):
        d = make_pod(f"p{i}").res({"cpu": "1", "memory": "1Gi"}).labels({"app": "x"}).host_port(8080).json()
        d["spec"]["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": pref}}
        pods.append(d)
    return nodes, pods


def _placements(cfg: dict[str, Any]) -> tuple[list[str | None], int]:
    e = engine(cfg)
    nodes, pods = _tiered()
    e.add_nodes(nodes)
    keys = e.add_pods(pods)
    results = e.run()
    fwk = next(iter(e.app.profiles.values()))
    return [results[k].node for k in keys], fwk.batch.batched_pods


def test_a_hint_takes_the_previous_pods_next_node() -> None:
    """Fresh scoring after a is taken would prefer b (NodeAffinity normalised over b and c alone); the
    hint hands the second pod c, the first pod's second-best node, as kube-scheduler does."""
    assert _placements(config(LIST)) == (["a", "c", "b", None], 2)


def test_no_hint_under_the_default_profile_or_without_the_gate() -> None:
    assert _placements(config()) == (["a", "b", "c", None], 0)
    with feature_gates.overridden("OpportunisticBatching=false"):
        assert _placements(config(LIST)) == (["a", "b", "c", None], 0)


def test_extenders_disable_signatures() -> None:
    """kube: "Disabling signatures for profile because it has extenders configured"."""
    fwk = next(iter(engine(config(LIST)).app.profiles.values()))
    assert fwk.signer.enabled
    Scheduler(
        profiles={"default-scheduler": fwk},
        queue=None,  # type: ignore[arg-type]
        cache=None,  # type: ignore[arg-type]
        snapshot=None,  # type: ignore[arg-type]
        clock=FakeClock(),
        recorder=None,  # type: ignore[arg-type]
        status_writer=None,  # type: ignore[arg-type]
        extenders=[object()],  # type: ignore[list-item]
    )
    assert not fwk.signer.enabled and fwk.signer.disabled_because == "it has extenders configured"
    assert fwk.signer.sign(plain("a")) is None
