"""HTTPExtender: kube-scheduler's extender wire format, result parsing, managedResources, TLS, errors.

Tests that talk HTTP use a tiny loopback ``http.server`` (marked ``network``); the rest need no socket.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pyscheduler.config.types import Extender, ExtenderManagedResource, ExtenderTLSConfig
from pyscheduler.extender import (
    ExtenderConfigError,
    ExtenderError,
    HTTPExtender,
    Victims,
    build_extenders,
    ignored_extended_resources,
    node_to_json,
    pod_to_json,
)
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.handle import FrameworkHandle
from pyscheduler.framework.runtime import Framework, ProfilePlugins
from pyscheduler.framework.status import Code
from pyscheduler.framework.types import Node, NodeInfo, Pod
from pyscheduler.framework.waiting_pods import WaitingPods
from pyscheduler.scheduler import Scheduler
from pyscheduler.testing.builders import make_node, make_node_info, make_pod
from pyscheduler.testing.clock import FakeClock

GPU = "example.com/gpu"


def rich_pod() -> Pod:
    return (
        make_pod("web", "shop")
        .label("app", "web")
        .annotation("team", "storefront")
        .created(1_700_000_123)
        .owner("ReplicaSet", "web-abc")
        .scheduler("py-scheduler")
        .priority(1000)
        .preemption_policy("Never")
        .req(cpu="1500m", memory="1536Mi", ephemeral_storage="2Gi")
        .res({GPU: 2}, limits=True)  # limits only: the API server defaults requests to them
        .host_port(8080)
        .container("side", cpu="100m")
        .init_req(sidecar=True, cpu="50m", memory="64Mi")
        .init_req(cpu="2", memory="1Gi")
        .overhead(cpu="10m", memory="32Mi")
        .node_selector({"disk": "ssd"})
        .node_affinity_in("zone", ["a", "b"])
        .pod_affinity("kubernetes.io/hostname", {"app": "db"}, anti=True)
        .toleration("dedicated", "web", "NoSchedule")
        .toleration("node.kubernetes.io/not-ready", effect="NoExecute")
        .spread(1, "zone", "DoNotSchedule", {"app": "web"})
        .pvc("data")
        .gate("wait-for-quota")
        .nominated("n1")
        .obj()
    )


# ----------------------------------------------------------------------------------- v1 JSON


def test_pod_json_round_trips_to_the_same_record() -> None:
    pod = rich_pod()
    js = pod_to_json(pod)
    back = Pod.from_dict(json.loads(json.dumps(js)))
    assert back == pod
    assert back.requests == pod.requests and back.non_zero_requests == pod.non_zero_requests
    assert back.affinity == pod.affinity
    assert back.topology_spread_constraints == pod.topology_spread_constraints
    assert back.volumes == pod.volumes
    assert back.overhead == pod.overhead


def test_pod_json_uses_kube_field_names_and_canonical_quantities() -> None:
    js = pod_to_json(rich_pod())
    assert "apiVersion" not in js and "kind" not in js  # kube sends informer objects, without TypeMeta
    assert js["metadata"]["namespace"] == "shop" and js["metadata"]["uid"] == "uid-shop-web"
    assert js["metadata"]["creationTimestamp"] == "2023-11-14T22:15:23Z"
    c0 = js["spec"]["containers"][0]
    assert c0["resources"]["requests"] == {
        "cpu": "1500m",
        "memory": "1536Mi",
        "ephemeral-storage": "2Gi",
        GPU: "2",
    }
    assert c0["resources"]["limits"] == {GPU: "2"}  # extended resources: limits == requests
    assert c0["ports"] == [{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}]
    assert js["spec"]["initContainers"][0]["restartPolicy"] == "Always"
    assert js["spec"]["initContainers"][1]["resources"]["requests"] == {"cpu": "2", "memory": "1Gi"}
    assert js["spec"]["schedulerName"] == "py-scheduler" and js["spec"]["priority"] == 1000
    assert js["spec"]["nodeSelector"] == {"disk": "ssd"}
    assert js["spec"]["tolerations"][1] == {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
    }
    assert js["spec"]["schedulingGates"] == [{"name": "wait-for-quota"}]
    assert js["status"] == {"phase": "Pending", "nominatedNodeName": "n1"}


def test_node_json_round_trips_to_the_same_record() -> None:
    node = (
        make_node("n1")
        .capacity(cpu="3500m", memory="7Gi", pods=110, ephemeral_storage="100Gi")
        .res({GPU: 4, "hugepages-2Mi": "1Gi"})
        .label("zone", "a")
        .annotation("note", "x")
        .taint("dedicated", "db", "NoSchedule")
        .taint("gpu")
        .unschedulable()
        .image("nginx:1", 1000)
        .obj()
    )
    js = node_to_json(node)
    assert js["status"]["allocatable"] == {
        "cpu": "3500m",
        "memory": "7Gi",
        "ephemeral-storage": "100Gi",
        "pods": "110",
        GPU: "4",
        "hugepages-2Mi": "1Gi",
    }
    assert js["status"]["capacity"] == js["status"]["allocatable"]
    assert js["spec"] == {
        "taints": [
            {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
            {"key": "gpu", "effect": "NoSchedule"},
        ],
        "unschedulable": True,
    }
    back = Node.from_dict(json.loads(json.dumps(js)))
    assert back == node and back.allocatable == node.allocatable


# ------------------------------------------------------------------------------- no network


def ext(url: str = "http://127.0.0.1:1", **kw: Any) -> HTTPExtender:
    return HTTPExtender(Extender(url, **kw))


def test_managed_resources_select_pods_by_requests_or_limits_in_any_container() -> None:
    e = ext(filter_verb="filter", managed_resources=(ExtenderManagedResource(GPU),))
    assert e.is_interested(make_pod().res({GPU: 1}).obj())
    assert e.is_interested(make_pod().res({GPU: 1}, limits=True).obj())
    assert e.is_interested(make_pod().container("second").res({GPU: 1}, container=1).obj())
    assert e.is_interested(make_pod().init_req(**{GPU: "1"}).obj())  # type: ignore[arg-type]
    assert not e.is_interested(make_pod().req(cpu="1").res({"example.com/other": 1}).obj())
    assert ext(filter_verb="filter").is_interested(make_pod().obj()), "no managedResources: every pod"


def test_unset_verbs_answer_without_any_http_call() -> None:
    # The autouse fixture fails any real HTTP call in a test not marked ``network``.
    e = ext(weight=5)
    nodes = [make_node_info(make_node("a")), make_node_info(make_node("b"))]
    pod = make_pod().obj()
    assert e.filter(pod, nodes) == (nodes, {}, {})
    assert e.prioritize(pod, nodes) == ({"a": 0, "b": 0}, 0)
    assert not e.is_binder() and not e.supports_preemption()
    st = e.bind(pod, "a")
    assert st is not None and st.code == Code.ERROR


def test_name_and_protocol_flags_follow_the_config() -> None:
    e = ext("http://ext:8888/scheduler/", filter_verb="f", bind_verb="b", preempt_verb="p", ignorable=True)
    assert e.name == "http://ext:8888/scheduler/"
    assert e.is_binder() and e.supports_preemption() and e.is_ignorable()
    assert e.timeout == 5.0


def test_build_extenders_puts_ignorable_ones_last_and_collects_ignored_resources() -> None:
    cfgs = [
        Extender("http://a", ignorable=True),
        Extender("http://b", managed_resources=(ExtenderManagedResource(GPU, ignored_by_scheduler=True),)),
        Extender("http://c", managed_resources=(ExtenderManagedResource("example.com/x"),)),
    ]
    assert [e.name for e in build_extenders(cfgs)] == ["http://b", "http://c", "http://a"]
    assert ignored_extended_resources(cfgs) == (GPU,)


def test_bad_tls_material_is_a_config_error() -> None:
    with pytest.raises(ExtenderConfigError, match="insecure"):
        ext("https://x", tls_config=ExtenderTLSConfig(insecure=True, ca_data=b"-----BEGIN CERTIFICATE-----"))
    with pytest.raises(ExtenderConfigError, match="both a certificate and a key"):
        ext("https://x", tls_config=ExtenderTLSConfig(cert_data=b"x"))
    with pytest.raises(ExtenderConfigError, match="CA"):
        ext("https://x", tls_config=ExtenderTLSConfig(ca_file="/nonexistent/ca.crt"))


class FakeExtender:
    name = "fake"

    def __init__(self, scores: dict[str, int], weight: int, fail: bool = False, reject: str = "") -> None:
        self.scores, self.weight, self.fail, self.reject = scores, weight, fail, reject

    def is_interested(self, pod: Pod) -> bool:
        return True

    def is_ignorable(self) -> bool:
        return False

    def filter(
        self, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[list[NodeInfo], dict[str, str], dict[str, str]]:
        if self.reject:
            return [], {}, {n.name: self.reject for n in nodes}
        return nodes, {}, {}

    def prioritize(self, pod: Pod, nodes: list[NodeInfo]) -> tuple[dict[str, int], int]:
        if self.fail:
            raise ExtenderError("fake", "prioritize", "boom")
        return self.scores, self.weight

    def is_binder(self) -> bool:
        return False

    def bind(self, pod: Pod, node_name: str) -> None:
        return None

    def supports_preemption(self) -> bool:
        return False


def empty_framework() -> Framework:
    handle = FrameworkHandle(
        snapshot=None,  # type: ignore[arg-type]
        objects=None,
        client=None,
        waiting_pods=WaitingPods(),  # type: ignore[arg-type]
        nominator=None,
        clock=FakeClock(),
    )
    return Framework("py-scheduler", {}, ProfilePlugins(points={}), handle)


def scheduler_with(*extenders: Any) -> Scheduler:
    return Scheduler(
        profiles={},
        queue=None,  # type: ignore[arg-type]
        cache=None,  # type: ignore[arg-type]
        snapshot=None,  # type: ignore[arg-type]
        clock=FakeClock(),
        recorder=None,  # type: ignore[arg-type]
        status_writer=None,  # type: ignore[arg-type]
        extenders=extenders,
    )  # type: ignore[arg-type]


def test_extender_scores_are_scaled_by_weight_and_max_node_score_over_max_extender_priority() -> None:
    nodes = [make_node_info(make_node(n)) for n in ("a", "b", "c")]
    s = scheduler_with(
        FakeExtender({"a": 10, "b": 5, "elsewhere": 10}, 3),
        FakeExtender({"c": 1}, 1),
        FakeExtender({"a": 10}, 100, fail=True),
    )
    scores = s.prioritize_nodes(empty_framework(), CycleState(), make_pod().obj(), nodes)
    # score * weight * (MaxNodeScore 100 / MaxExtenderPriority 10); a failing prioritizer adds nothing.
    assert {ns.name: ns.score for ns in scores} == {"a": 300, "b": 150, "c": 10}
    assert s.select_host(scores) == "a"


def test_nodes_rejected_only_by_an_extender_name_no_rejecting_plugin() -> None:
    nodes = [make_node_info(make_node(n)) for n in ("a", "b")]
    s = scheduler_with(FakeExtender({}, 1, reject="node(s) had storage link down"))
    feasible, diagnosis = s.find_nodes_that_fit(empty_framework(), CycleState(), make_pod().obj(), nodes)
    assert feasible == []
    assert {n: (st.code, st.reasons) for n, st in diagnosis.node_to_status.items()} == {
        n: (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) had storage link down",)) for n in ("a", "b")
    }
    assert diagnosis.unschedulable_plugins == set()


def test_config_loader_accepts_the_extender_configs_used_here() -> None:
    from pyscheduler.cli import _extension_points, _registry
    from pyscheduler.config.load import parse_config

    registry = _registry()
    c = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "py-scheduler"}],
            "extenders": [
                {
                    "urlPrefix": "https://127.0.0.1:8443/",
                    "filterVerb": "filter",
                    "prioritizeVerb": "prioritize",
                    "weight": 5,
                    "bindVerb": "bind",
                    "enableHTTPS": True,
                    "httpTimeout": "1s",
                    "nodeCacheCapable": True,
                    "ignorable": False,
                    "tlsConfig": {
                        "caFile": "/ca.crt",
                        "serverName": "ext",
                        "certData": "Y2VydA==",
                        "keyData": "a2V5",
                    },
                    "managedResources": [{"name": GPU, "ignoredByScheduler": True}],
                },
                {"urlPrefix": "http://127.0.0.1:1", "filterVerb": "filter", "ignorable": True},
            ],
        },
        registry,
        _extension_points(registry),
    )
    a, b = c.extenders
    assert a.http_timeout == 1.0 and a.tls_config is not None and a.tls_config.cert_data == b"cert"
    assert b.http_timeout == 5.0 and b.ignorable
    assert ext(b.url_prefix).timeout == 5.0


# ------------------------------------------------------------------------------ loopback server

Reply = Callable[[str, bytes], tuple[int, bytes]]


class Loopback(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        self.reply: Reply = lambda path, body: (200, b"{}")
        self.release = threading.Event()  # a reply may wait on it (a slow extender)

    @property
    def url(self) -> str:
        scheme = "https" if isinstance(self.socket, ssl.SSLSocket) else "http"
        return f"{scheme}://127.0.0.1:{self.server_address[1]}"

    def answer(self, payload: Any, status: int = 200) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.reply = lambda path, body: (status, data)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: Loopback

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requests.append((self.path, dict(self.headers), json.loads(body)))
        status, data = self.server.reply(self.path, body)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up (timeout test)


S = TypeVar("S", bound=ThreadingHTTPServer)


def serve(server: S) -> Iterator[S]:
    """Run ``server`` on a thread for the duration of a ``for`` (or fixture) body."""
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield server
    finally:
        if isinstance(server, Loopback):
            server.release.set()
        server.shutdown()
        server.server_close()
        t.join(5)


@pytest.fixture
def srv() -> Iterator[Loopback]:
    yield from serve(Loopback())


NODES = ("n1", "n2", "n3")


def node_infos() -> list[NodeInfo]:
    return [
        make_node_info(make_node(n).capacity(cpu="4", memory="8Gi", pods=110).label("zone", n)) for n in NODES
    ]


network = pytest.mark.network


@network
def test_filter_sends_extender_args_with_full_pod_and_node_objects(srv: Loopback) -> None:
    srv.answer({"NodeNames": ["n1"]})
    e = ext(srv.url + "/scheduler/", filter_verb="filter")
    pod = rich_pod()
    nodes = node_infos()
    e.filter(pod, nodes)
    path, headers, args = srv.requests[0]
    assert path == "/scheduler/filter"
    assert headers["Content-Type"] == "application/json"
    assert set(args) == {"Pod", "Nodes", "NodeNames"} and args["NodeNames"] is None
    assert Pod.from_dict(args["Pod"]) == pod
    assert [n["metadata"]["name"] for n in args["Nodes"]["items"]] == list(NODES)
    assert Node.from_dict(args["Nodes"]["items"][1]) == nodes[1].node
    assert args["Nodes"]["items"][1]["metadata"]["labels"]["zone"] == "n2"


@network
def test_node_cache_capable_extenders_get_node_names_only(srv: Loopback) -> None:
    srv.answer({"NodeNames": ["n3", "n1"], "FailedNodes": {"n2": "busy"}})
    e = ext(srv.url, filter_verb="filter", node_cache_capable=True)
    nodes = node_infos()
    kept, failed, unresolvable = e.filter(make_pod().obj(), nodes)
    assert srv.requests[0][2]["Nodes"] is None and srv.requests[0][2]["NodeNames"] == list(NODES)
    assert [n.name for n in kept] == ["n3", "n1"] and kept[0] is nodes[2]
    assert failed == {"n2": "busy"} and unresolvable == {}


@network
def test_filter_result_with_node_objects_and_both_failure_maps(srv: Loopback) -> None:
    srv.answer(
        {
            "Nodes": {"items": [{"metadata": {"name": "n2"}}]},
            "FailedNodes": {"n1": "slow disk", "n3": "also listed as unresolvable"},
            "FailedAndUnresolvableNodes": {"n3": "storage link down"},
            "Error": "",
        }
    )
    kept, failed, unresolvable = ext(srv.url, filter_verb="filter").filter(make_pod().obj(), node_infos())
    assert [n.name for n in kept] == ["n2"]
    assert failed == {"n1": "slow disk"}, "FailedAndUnresolvableNodes takes precedence"
    assert unresolvable == {"n3": "storage link down"}


@network
def test_result_fields_match_case_insensitively_as_in_go(srv: Loopback) -> None:
    srv.answer({"nodenames": ["n1"], "failedNodes": {"n2": "x"}, "error": ""})
    kept, failed, _ = ext(srv.url, filter_verb="filter").filter(make_pod().obj(), node_infos())
    assert [n.name for n in kept] == ["n1"] and failed == {"n2": "x"}


@network
@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (200, b"<html>oops</html>", "invalid JSON"),
        (200, b"[1, 2]", "expected an ExtenderFilterResult object"),
        (200, b'{"hello": "world"}', "none of Nodes, NodeNames"),
        (200, b'{"FailedNodes": ["n1"]}', "FailedNodes must be an object of node name to reason"),
        (200, b'{"NodeNames": "n1"}', "NodeNames must be a list of node names"),
        (200, b'{"NodeNames": ["elsewhere"]}', "claims a filtered node 'elsewhere' which is not found"),
        (500, b"internal error", "answered HTTP 500: internal error"),
    ],
)
def test_bad_filter_answers_raise_errors_naming_extender_and_verb(
    srv: Loopback, status: int, body: bytes, expected: str
) -> None:
    srv.answer(body, status)
    e = ext(srv.url + "/", filter_verb="filter")
    with pytest.raises(ExtenderError, match=expected) as ei:
        e.filter(make_pod().obj(), node_infos())
    assert str(ei.value).startswith(f"extender {srv.url}/: filter: ")
    assert ei.value.verb == "filter"


@network
def test_an_error_reported_by_the_extender_is_passed_on_verbatim(srv: Loopback) -> None:
    srv.answer({"Error": "volume service unavailable", "NodeNames": ["n1"]})
    with pytest.raises(ExtenderError) as ei:
        ext(srv.url, filter_verb="filter").filter(make_pod().obj(), node_infos())
    assert str(ei.value) == "volume service unavailable" and ei.value.verb == "filter"


@network
def test_unreachable_extender_is_a_clear_error() -> None:
    from pyscheduler.testing.cluster import free_port

    port = free_port()
    with pytest.raises(ExtenderError, match=f"cannot reach http://127.0.0.1:{port}/filter: .*refused"):
        ext(f"http://127.0.0.1:{port}", filter_verb="filter").filter(make_pod().obj(), node_infos())


@network
def test_http_timeout_bounds_the_wait(srv: Loopback) -> None:
    def slow(path: str, body: bytes) -> tuple[int, bytes]:
        srv.release.wait(10)
        return 200, b'{"NodeNames": []}'

    srv.reply = slow
    e = ext(srv.url, filter_verb="filter", http_timeout=0.2)
    with pytest.raises(ExtenderError, match=r"within 0.2s \(timed out\)"):
        e.filter(make_pod().obj(), node_infos())


@network
def test_prioritize_parses_host_priority_list_and_returns_the_weight(srv: Loopback) -> None:
    srv.answer([{"Host": "n1", "Score": 10}, {"host": "n2", "score": 5}, {"Host": "n3", "Score": 0}])
    e = ext(srv.url, prioritize_verb="prioritize", weight=4, node_cache_capable=True)
    assert e.prioritize(make_pod().obj(), node_infos()) == ({"n1": 10, "n2": 5, "n3": 0}, 4)
    assert srv.requests[0][0] == "/prioritize" and srv.requests[0][2]["NodeNames"] == list(NODES)
    srv.answer(None)
    assert e.prioritize(make_pod().obj(), node_infos()) == ({}, 4)
    srv.answer([{"Host": "n1", "Score": "high"}])
    with pytest.raises(ExtenderError, match="prioritize: unexpected response: Score must be an integer"):
        e.prioritize(make_pod().obj(), node_infos())
    srv.answer({"n1": 10})
    with pytest.raises(ExtenderError, match="expected a HostPriorityList"):
        e.prioritize(make_pod().obj(), node_infos())


@network
def test_extender_scores_reach_the_scheduler_scaled(srv: Loopback) -> None:
    srv.answer([{"Host": "n1", "Score": 2}, {"Host": "n2", "Score": 9}])
    s = scheduler_with(ext(srv.url, prioritize_verb="prioritize", weight=2))
    scores = s.prioritize_nodes(empty_framework(), CycleState(), make_pod().obj(), node_infos())
    assert {ns.name: ns.score for ns in scores} == {"n1": 40, "n2": 180, "n3": 0}


@network
def test_bind_sends_binding_args_and_reports_errors_as_status(srv: Loopback) -> None:
    pod = make_pod("p", "ns1").obj()
    e = ext(srv.url, bind_verb="bind")
    srv.answer({"Error": ""})
    assert e.bind(pod, "n2") is None
    assert srv.requests[0][0] == "/bind"
    assert srv.requests[0][2] == {"PodName": "p", "PodNamespace": "ns1", "PodUID": "uid-ns1-p", "Node": "n2"}
    srv.answer({"Error": "node n2 is full"})
    st = e.bind(pod, "n2")
    assert st is not None and st.code == Code.ERROR
    assert st.message() == "node n2 is full"  # the extender's own words, as kube reports them
    srv.answer(b"nope")
    st = e.bind(pod, "n2")
    assert st is not None and "bind: invalid JSON" in st.message()


@network
def test_process_preemption_round_trip(srv: Loopback) -> None:
    victim = make_pod("v").node("n1").obj()
    infos = {ni.name: ni for ni in node_infos()}
    infos["n1"].add_pod(victim)
    srv.answer({"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": victim.uid}], "NumPDBViolations": 1}}})
    e = ext(srv.url, preempt_verb="preempt")
    out = e.process_preemption(make_pod().obj(), {"n1": Victims([victim]), "n2": Victims([])}, infos.get)
    assert out == {"n1": Victims([victim], 1)}
    args = srv.requests[0][2]
    assert args["NodeNameToMetaVictims"] is None
    assert args["NodeNameToVictims"]["n1"]["Pods"][0]["metadata"]["uid"] == victim.uid
    srv.answer({"NodeNameToMetaVictims": {"n2": {"Pods": [{"UID": "ghost"}]}}})
    with pytest.raises(ExtenderError, match="claims to preempt pod"):
        e.process_preemption(make_pod().obj(), {"n2": Victims([])}, infos.get)


# ------------------------------------------------------------------------------------------ TLS


def _openssl(d: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)


def _leaf(d: Path, name: str, san: str, usage: str) -> None:
    (d / f"{name}.cnf").write_text(f"[ext]\nsubjectAltName={san}\nextendedKeyUsage={usage}\n")
    _openssl(
        d,
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        f"{name}.key",
        "-out",
        f"{name}.csr",
        "-subj",
        f"/CN={name}",
    )
    _openssl(
        d,
        "x509",
        "-req",
        "-in",
        f"{name}.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        f"{name}.crt",
        "-days",
        "2",
        "-extfile",
        f"{name}.cnf",
        "-extensions",
        "ext",
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("pki")
    _openssl(
        d,
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=extender-test-ca",
    )
    _leaf(d, "server", "IP:127.0.0.1", "serverAuth")
    _leaf(d, "named", "DNS:extender.example", "serverAuth")
    _leaf(d, "client", "DNS:pyscheduler", "clientAuth")
    return d


def tls_server(pki: Path, cert: str = "server", client_ca: bool = False) -> Loopback:
    s = Loopback()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki / f"{cert}.crt", pki / f"{cert}.key")
    if client_ca:
        ctx.load_verify_locations(pki / "ca.crt")
        ctx.verify_mode = ssl.CERT_REQUIRED
    s.socket = ctx.wrap_socket(s.socket, server_side=True)
    s.answer({"NodeNames": ["n1"]})
    return s


def names(e: HTTPExtender) -> list[str]:
    return [n.name for n in e.filter(make_pod().obj(), node_infos())[0]]


@network
def test_https_verifies_the_server_against_the_configured_ca(pki: Path) -> None:
    for s in serve(tls_server(pki)):
        ca = (pki / "ca.crt").read_bytes()
        assert names(
            ext(s.url, filter_verb="filter", enable_https=True, tls_config=ExtenderTLSConfig(ca_data=ca))
        ) == ["n1"]
        assert names(
            ext(
                s.url,
                filter_verb="filter",
                enable_https=True,
                tls_config=ExtenderTLSConfig(ca_file=str(pki / "ca.crt")),
            )
        ) == ["n1"]
        # kube's makeTransport: enableHTTPS without a CA does not verify the server at all.
        assert names(ext(s.url, filter_verb="filter", enable_https=True)) == ["n1"]
        assert names(ext(s.url, filter_verb="filter", tls_config=ExtenderTLSConfig(insecure=True))) == ["n1"]
        # Without enableHTTPS nor a CA the system roots apply: this private CA is not trusted.
        with pytest.raises(ExtenderError, match="filter: TLS error"):
            names(ext(s.url, filter_verb="filter"))


@network
def test_https_server_name_and_client_certificates(pki: Path) -> None:
    ca = ExtenderTLSConfig(ca_file=str(pki / "ca.crt"))
    for s in serve(tls_server(pki, cert="named")):
        with pytest.raises(ExtenderError, match="TLS error"):  # the certificate is for extender.example only
            names(ext(s.url, filter_verb="filter", enable_https=True, tls_config=ca))
        named = ExtenderTLSConfig(ca_file=str(pki / "ca.crt"), server_name="extender.example")
        assert names(ext(s.url, filter_verb="filter", enable_https=True, tls_config=named)) == ["n1"]
    for s in serve(tls_server(pki, client_ca=True)):
        with pytest.raises(ExtenderError, match="filter: "):
            names(ext(s.url, filter_verb="filter", enable_https=True, tls_config=ca))
        with_data = ExtenderTLSConfig(
            ca_file=str(pki / "ca.crt"),
            cert_data=(pki / "client.crt").read_bytes(),
            key_data=(pki / "client.key").read_bytes(),
        )
        assert names(ext(s.url, filter_verb="filter", enable_https=True, tls_config=with_data)) == ["n1"]
        with_files = ExtenderTLSConfig(
            ca_file=str(pki / "ca.crt"), cert_file=str(pki / "client.crt"), key_file=str(pki / "client.key")
        )
        assert names(ext(s.url, filter_verb="filter", enable_https=True, tls_config=with_files)) == ["n1"]


# ------------------------------------------------------------------- the example extender, in-process


@network
def test_example_extender_round_trip_with_file_and_polled_state(tmp_path: Path) -> None:
    import functools
    import os
    from http.server import SimpleHTTPRequestHandler

    from examples.storage_health_extender.server import DOWN_REASON, ExtenderServer, FileState, PolledState

    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps({"n1": "down", "n2": "degraded"}))
    file_state = FileState(state_file)
    pod, nodes = make_pod().obj(), node_infos()
    for s in serve(ExtenderServer(("127.0.0.1", 0), file_state.get)):
        url = f"http://127.0.0.1:{s.server_address[1]}"
        for cache in (False, True):
            e = ext(
                url, filter_verb="filter", prioritize_verb="prioritize", weight=1, node_cache_capable=cache
            )
            kept, failed, unresolvable = e.filter(pod, nodes)
            assert (
                [n.name for n in kept] == ["n2", "n3"]
                and failed == {}
                and unresolvable == {"n1": DOWN_REASON}
            )
            assert e.prioritize(pod, nodes) == ({"n1": 0, "n2": 5, "n3": 10}, 1)
        tmp = tmp_path / "state.tmp"
        tmp.write_text(json.dumps({"n3": "down"}))
        os.replace(tmp, state_file)  # re-read on change
        assert [n.name for n in e.filter(pod, nodes)[0]] == ["n1", "n2"]
        state_file.write_text("not json")  # a broken update keeps the last good state
        assert [n.name for n in e.filter(pod, nodes)[0]] == ["n1", "n2"]
        assert not e.is_binder()

    (tmp_path / "links").write_text(json.dumps({"n2": "down"}))
    web = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    )
    for w in serve(web):
        polled = PolledState(f"http://127.0.0.1:{w.server_address[1]}/links", interval=3600)
        try:
            assert polled.get() == {"n2": "down"}
            (tmp_path / "links").write_text(json.dumps({"n1": "degraded"}))
            polled.poll()
            assert polled.get() == {"n1": "degraded"}
            (tmp_path / "links").unlink()
            polled.poll()  # 404: keep the last good state
            assert polled.get() == {"n1": "degraded"}
        finally:
            polled.stop()
