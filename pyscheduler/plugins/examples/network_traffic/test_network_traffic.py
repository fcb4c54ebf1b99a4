from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyscheduler.framework.interfaces import NodeScore
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.runtime import Framework, ProfilePlugins
from pyscheduler.framework.status import Code
from pyscheduler.plugins.examples.network_traffic import (
    FAILURE_HOLD_MIN,
    NAME,
    PLUGIN,
    STATE_KEY,
    UNKNOWN,
    WARN_INTERVAL,
    NetworkTraffic,
    NetworkTrafficArgs,
    node_of,
)
from pyscheduler.plugins.examples.network_traffic.prometheus import (
    PrometheusClient,
    PrometheusError,
    Sample,
    parse_response,
)
from pyscheduler.testing import make_handle, snapshot_of
from pyscheduler.testing.builders import make_cycle_state, make_node, make_node_info, make_pod
from pyscheduler.testing.clock import FakeClock

ADDR = "http://prometheus.test:9090"
DEFAULT_PROMQL = 'sum by (instance) (sum_over_time(node_network_transmit_bytes_total{device="eth0"}[2m]))'


class FakeClient:
    """Answers from a table; ``error`` makes every query fail."""

    def __init__(
        self, by_node: dict[str, float] | None = None, error: str = "", label: str = "instance"
    ) -> None:
        self.by_node = by_node or {}
        self.error = error
        self.label = label
        self.queries: list[tuple[str, float]] = []

    def query(self, promql: str, timeout: float) -> list[Sample]:
        self.queries.append((promql, timeout))
        if self.error:
            raise PrometheusError(self.error)
        if "{node}" not in promql and "node=" in promql:  # per-node template, filled in
            node = promql.split('node="')[1].split('"')[0]
            return [Sample({}, self.by_node[node])] if node in self.by_node else []
        return [Sample({self.label: n}, v) for n, v in self.by_node.items()]


class RecordingLog:
    def __init__(self) -> None:
        self.warnings: list[dict[str, Any]] = []

    def warning(self, event: str, **kw: Any) -> None:
        self.warnings.append({"event": event, **kw})


NODES = ("quiet", "busy", "mid")


def setup(
    client: FakeClient, clock: FakeClock | None = None, nodes: tuple[str, ...] = NODES, **args: Any
) -> tuple[NetworkTraffic, list[Any], RecordingLog]:
    infos = [make_node_info(make_node(n)) for n in nodes]
    a = NetworkTrafficArgs(prometheus_address=ADDR, **args)
    pl = NetworkTraffic(a, make_handle(snapshot_of(*infos), clock=clock or FakeClock()), client)
    rec = RecordingLog()
    pl.log = rec
    return pl, infos, rec


def run_scoring(pl: NetworkTraffic, infos: list[Any]) -> tuple[Any, dict[str, int]]:
    """PreScore, Score, NormalizeScore as the runtime runs them; (PreScore status, node -> score)."""
    state = make_cycle_state()
    pod = make_pod("p").obj()
    st = pl.pre_score(state, pod, infos)
    if st is not None and st.is_skip():
        return st, {}
    scores = []
    for ni in infos:
        v, s = pl.score(state, pod, ni)
        assert s is None
        scores.append(NodeScore(ni.name, v))
    assert pl.score_extensions().normalize_score(state, pod, scores) is None
    return st, {s.name: s.score for s in scores}


def test_quiet_node_scores_highest() -> None:
    client = FakeClient({"quiet": 1_000, "busy": 9_001_000, "mid": 4_501_000})
    pl, infos, _ = setup(client)
    st, scores = run_scoring(pl, infos)
    assert st is None
    assert scores == {"quiet": 100, "busy": 0, "mid": 50}
    assert client.queries == [(DEFAULT_PROMQL, 1.0)]


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        pytest.param([10, 20, 30], [100, 50, 0], id="spread"),
        pytest.param([7, 7, 7], [100, 100, 100], id="all equal"),
        pytest.param([0, 100, UNKNOWN], [100, 0, 50], id="unknown node is neutral"),
        pytest.param([UNKNOWN, UNKNOWN], [0, 0], id="no data at all"),
        pytest.param([5], [100], id="one node"),
        pytest.param([0, 3], [100, 0], id="integer division stays in range"),
        pytest.param([10**15, 10**15 + 3, 10**15 + 1], [100, 0, 66], id="huge byte counts"),
    ],
)
def test_normalize(raw: list[int], normalized: list[int]) -> None:
    pl, _, _ = setup(FakeClient())
    scores = [NodeScore(f"n{i}", v) for i, v in enumerate(raw)]
    assert pl.normalize_score(make_cycle_state(), make_pod("p").obj(), scores) is None
    assert [s.score for s in scores] == normalized


def test_node_without_samples_is_unknown_and_other_series_ignored() -> None:
    client = FakeClient({"quiet": 10, "busy": 20, "not-a-node": 5})
    pl, infos, _ = setup(client)
    _, scores = run_scoring(pl, infos)
    assert scores == {"quiet": 100, "busy": 0, "mid": 50}


def test_series_are_mapped_by_the_node_label_with_or_without_a_port() -> None:
    client = FakeClient({"quiet:9100": 10, "busy:9100": 30, "busy:9200": 30, "mid": 40}, label="node")
    pl, infos, _ = setup(client, node_label="node")
    state = make_cycle_state()
    assert pl.pre_score(state, make_pod("p").obj(), infos) is None
    assert state.read(STATE_KEY).bytes == {"quiet": 10, "busy": 60, "mid": 40}
    assert client.queries[0][0].startswith("sum by (node) (")


@pytest.mark.parametrize(
    ("value", "node"),
    [
        ("n1", "n1"),
        ("n1:9100", "n1"),
        ("10.0.0.1:9100", ""),
        ("n1:abc", ""),
        ("[n1]:9100", "n1"),
        ("", ""),
        ("n2", ""),
    ],
)
def test_node_of(value: str, node: str) -> None:
    assert node_of(value, {"n1"}) == node


def test_results_are_cached_for_cache_seconds() -> None:
    clock = FakeClock()
    client = FakeClient({"quiet": 1, "busy": 2, "mid": 3})
    pl, infos, _ = setup(client, clock, cache_seconds=5)
    for _ in range(3):
        run_scoring(pl, infos)
    assert len(client.queries) == 1
    clock.advance(4.9)
    run_scoring(pl, infos)
    assert len(client.queries) == 1
    clock.advance(0.1)
    client.by_node["quiet"] = 100  # the quiet node got busy
    _, scores = run_scoring(pl, infos)
    assert len(client.queries) == 2
    assert scores["quiet"] == 0


def test_cache_disabled_queries_every_cycle() -> None:
    client = FakeClient({"quiet": 1})
    pl, infos, _ = setup(client, cache_seconds=0)
    run_scoring(pl, infos)
    run_scoring(pl, infos)
    assert len(client.queries) == 2


def test_unreachable_prometheus_skips_and_warns_once_per_interval() -> None:
    clock = FakeClock()
    client = FakeClient(error="connection refused")
    pl, infos, rec = setup(client, clock, cache_seconds=5)
    st, _ = run_scoring(pl, infos)
    assert st is not None and st.code == Code.SKIP and st.plugin == NAME
    assert [(w["event"], w["error"], w["failures"]) for w in rec.warnings] == [
        ("prometheus query failed; scoring without NetworkTraffic", "connection refused", 1)
    ]
    # Within cacheSeconds the failure is remembered: no new query, still Skip.
    st, _ = run_scoring(pl, infos)
    assert st is not None and st.is_skip() and len(client.queries) == 1
    # Later failures are counted, not logged, until WARN_INTERVAL has passed.
    for _ in range(3):
        clock.advance(5)
        assert run_scoring(pl, infos)[0].is_skip()
    assert len(client.queries) == 4 and len(rec.warnings) == 1
    clock.advance(WARN_INTERVAL)
    run_scoring(pl, infos)
    assert [w["failures"] for w in rec.warnings] == [1, 4]
    # Prometheus is back: scoring resumes after the remembered failure expires.
    client.error = ""
    client.by_node = {"quiet": 1, "busy": 3, "mid": 2}
    clock.advance(5)
    st, scores = run_scoring(pl, infos)
    assert st is None and scores == {"quiet": 100, "busy": 0, "mid": 50}


def test_a_failure_is_remembered_even_with_caching_disabled() -> None:
    # cacheSeconds 0 re-asks Prometheus every cycle; a dead one must not cost every pod a timeout.
    clock = FakeClock()
    client = FakeClient(error="timed out")
    pl, infos, rec = setup(client, clock, cache_seconds=0)
    for _ in range(3):
        assert run_scoring(pl, infos)[0].is_skip()
    assert len(client.queries) == 1 and len(rec.warnings) == 1
    clock.advance(FAILURE_HOLD_MIN)
    assert run_scoring(pl, infos)[0].is_skip()
    assert len(client.queries) == 2
    client.error = ""
    client.by_node = {"quiet": 1, "busy": 3, "mid": 2}
    clock.advance(FAILURE_HOLD_MIN)
    assert run_scoring(pl, infos)[1] == {"quiet": 100, "busy": 0, "mid": 50}
    run_scoring(pl, infos)
    assert len(client.queries) == 4  # caching disabled again once it answers


def test_skip_leaves_the_plugin_out_of_the_framework_scores() -> None:
    """Through the real runtime: with Prometheus down the pod is still scored (by the others)."""
    client = FakeClient(error="timed out")
    pl, infos, _ = setup(client)
    handle = make_handle(snapshot_of(*infos))
    fwk = Framework("p", {NAME: pl}, ProfilePlugins(points={"preScore": (NAME,), "score": (NAME,)}), handle)
    state = make_cycle_state()
    pod = make_pod("p").obj()
    assert fwk.run_pre_score_plugins(state, pod, infos) is None
    assert NAME in state.skip_score_plugins
    scored, status = fwk.run_score_plugins(state, pod, infos)
    assert status is None
    assert {name: detail for name, _, detail in scored} == {n: {} for n in NODES}


def test_score_without_pre_score_fetches_once_and_is_neutral_without_data() -> None:
    client = FakeClient({"quiet": 1, "busy": 9, "mid": 5})
    pl, infos, _ = setup(client)
    state, pod = make_cycle_state(), make_pod("p").obj()
    raw = [pl.score(state, pod, ni)[0] for ni in infos]
    assert raw == [1, 9, 5] and len(client.queries) == 1

    down = FakeClient(error="refused")
    pl, infos, _ = setup(down)
    state = make_cycle_state()
    scores = [NodeScore(ni.name, pl.score(state, pod, ni)[0]) for ni in infos]
    assert [s.score for s in scores] == [UNKNOWN] * 3 and len(down.queries) == 1
    pl.normalize_score(state, pod, scores)
    assert [s.score for s in scores] == [0, 0, 0]


def test_per_node_template_runs_one_query_per_node() -> None:
    client = FakeClient({"quiet": 2, "busy": 8})
    template = 'sum(rate(node_network_receive_bytes_total{node="{node}",device="{interface}"}[{range}]))'
    pl, infos, _ = setup(client, query=template, network_interface="ens5", time_range_in_minutes=5)
    _, scores = run_scoring(pl, infos)
    assert [q for q, _ in client.queries] == [
        f'sum(rate(node_network_receive_bytes_total{{node="{n}",device="ens5"}}[5m]))' for n in NODES
    ]
    assert scores == {"quiet": 100, "busy": 0, "mid": 50}
    run_scoring(pl, infos)
    assert len(client.queries) == 3  # cached per node


def test_args_promql() -> None:
    assert NetworkTrafficArgs(ADDR).promql() == DEFAULT_PROMQL
    a = NetworkTrafficArgs(ADDR, network_interface="ens5", time_range_in_minutes=10, node_label="node")
    assert a.promql() == (
        'sum by (node) (sum_over_time(node_network_transmit_bytes_total{device="ens5"}[10m]))'
    )
    assert not a.per_node()
    custom = NetworkTrafficArgs(ADDR, query='x{device="{interface}",n="{node}"}[{range}]')
    assert custom.promql() == 'x{device="eth0",n="{node}"}[2m]' and custom.per_node()


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        pytest.param({}, "args.prometheusAddress: required", id="address missing"),
        pytest.param(
            {"prometheusAddress": "prometheus:9090"},
            "args.prometheusAddress: must be an http or https URL",
            id="address not a URL",
        ),
        pytest.param(
            {"prometheusAddress": ADDR, "timeRangeInMinutes": 0},
            "args.timeRangeInMinutes: must be at least 1",
            id="time range zero",
        ),
        pytest.param(
            {"prometheusAddress": ADDR, "timeoutSeconds": 0},
            "args.timeoutSeconds: must be greater than 0",
            id="timeout zero",
        ),
        pytest.param(
            {"prometheusAddress": ADDR, "cacheSeconds": -1},
            "args.cacheSeconds: must not be negative",
            id="cache negative",
        ),
        pytest.param(
            {"prometheusAddress": ADDR, "networkInterface": ""},
            "args.networkInterface: must not be empty",
            id="interface empty",
        ),
        pytest.param(
            {"prometheusAddress": ADDR, "nodeLabel": ""},
            "args.nodeLabel: must not be empty",
            id="node label empty",
        ),
        pytest.param(
            {"prometheusAddress": ADDR, "timeRangeInMinutes": 1.5},
            "args.timeRangeInMinutes: must be an integer",
            id="time range not an integer",
        ),
        pytest.param(
            {"prometheusAddress": ADDR, "interface": "eth0"},
            "args.interface: unknown field",
            id="unknown field",
        ),
    ],
)
def test_bad_args(raw: dict[str, Any], error: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert str(e.value).startswith(error)


def test_args_defaults_and_factory() -> None:
    args = PLUGIN.decode({"prometheusAddress": ADDR}, "args")
    assert args == NetworkTrafficArgs(ADDR, "eth0", "", 2, 1.0, "instance", 5.0)
    pl = PLUGIN.new(args, make_handle())
    assert isinstance(pl, NetworkTraffic) and pl.name == NAME
    assert list(pl.events_to_register()) == []


# ------------------------------------------------------------------------------ response parsing


def _answer(kind: str, result: Any, status: str = "success") -> bytes:
    return json.dumps({"status": status, "data": {"resultType": kind, "result": result}}).encode()


@pytest.mark.parametrize(
    ("raw", "samples"),
    [
        pytest.param(
            _answer("vector", [{"metric": {"instance": "a"}, "value": [1, "12.5"]}]),
            [Sample({"instance": "a"}, 12.5)],
            id="one sample",
        ),
        pytest.param(_answer("vector", []), [], id="empty vector"),
        pytest.param(_answer("scalar", [1, "3"]), [Sample({}, 3.0)], id="scalar"),
        pytest.param(
            _answer("vector", [{"metric": {"instance": "a"}, "value": [1, "NaN"]}]), [], id="NaN dropped"
        ),
        pytest.param(
            _answer("vector", [{"metric": {"instance": "a"}, "value": [1, "+Inf"]}]), [], id="Inf dropped"
        ),
    ],
)
def test_parse_response(raw: bytes, samples: list[Sample]) -> None:
    assert parse_response(raw) == samples


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        pytest.param(b"<html>", "answer is not JSON", id="not JSON"),
        pytest.param(
            _answer("matrix", []), "the query must give an instant vector, got a matrix", id="a matrix"
        ),
        pytest.param(
            json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}).encode(),
            "bad_data: parse error",
            id="Prometheus error",
        ),
        pytest.param(
            _answer("vector", [{"metric": {}, "value": [1, "x"]}]), "malformed sample", id="malformed sample"
        ),
    ],
)
def test_parse_response_errors(raw: bytes, error: str) -> None:
    with pytest.raises(PrometheusError, match=error):
        parse_response(raw)


# ------------------------------------------------------------------------------ the HTTP client


class _Api(http.server.BaseHTTPRequestHandler):
    mode = "ok"
    release = threading.Event()
    queries: list[str] = []

    def do_GET(self) -> None:
        from urllib.parse import parse_qs, urlsplit

        u = urlsplit(self.path)
        type(self).queries.append(parse_qs(u.query)["query"][0])
        if self.mode == "slow":
            self.release.wait(10)
        if self.mode.startswith("trickle"):  # one byte every 50 ms: each read waits less than the timeout
            body = _answer("vector", [{"metric": {"instance": "n1"}, "value": [1, "42"]}])
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            whole = head.encode() + body
            if self.mode == "trickle-body":
                self.wfile.write(head.encode())
                whole = body
            for i in range(len(whole)):
                if self.release.is_set():
                    return
                self.wfile.write(whole[i : i + 1])
                self.wfile.flush()
                time.sleep(0.05)
            return
        if self.mode == "bad":
            body = json.dumps(
                {"status": "error", "errorType": "bad_data", "error": "1:5: parse error"}
            ).encode()
            self.send_response(400)
        else:
            body = _answer("vector", [{"metric": {"instance": "n1"}, "value": [1, "42"]}])
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def api() -> Iterator[Any]:
    handler: Any = type("Api", (_Api,), {"mode": "ok", "release": threading.Event(), "queries": []})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    t.start()
    handler.address = f"http://127.0.0.1:{srv.server_address[1]}"
    yield handler
    handler.release.set()
    srv.shutdown()
    srv.server_close()


@pytest.mark.network
def test_client_queries_the_http_api(api: Any) -> None:
    got = PrometheusClient(api.address + "/").query('up{job="x"}', 2)
    assert got == [Sample({"instance": "n1"}, 42.0)]
    assert api.queries == ['up{job="x"}']


@pytest.mark.network
def test_client_reports_the_servers_error(api: Any) -> None:
    api.mode = "bad"
    with pytest.raises(PrometheusError, match="HTTP 400: bad_data: 1:5: parse error"):
        PrometheusClient(api.address).query("up{", 2)


@pytest.mark.network
def test_client_times_out_on_a_slow_server(api: Any) -> None:
    api.mode = "slow"
    start = time.monotonic()
    with pytest.raises(PrometheusError):
        PrometheusClient(api.address).query("up", 0.2)
    assert time.monotonic() - start < 2


@pytest.mark.network
@pytest.mark.parametrize("mode", ["trickle-head", "trickle-body"])
def test_client_timeout_bounds_the_whole_query_not_each_read(api: Any, mode: str) -> None:
    # The answer arrives a byte at a time, each within the timeout: ~6 s to read it all. The scheduling
    # cycle waiting on it must get its answer (an error) after the timeout, not after the last byte.
    api.mode = mode
    start = time.monotonic()
    with pytest.raises(PrometheusError, match=r"no answer within 0\.3s"):
        PrometheusClient(api.address).query("up", 0.3)
    assert time.monotonic() - start < 2


@pytest.mark.network
def test_client_reports_a_refused_connection(api: Any) -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(PrometheusError):
        PrometheusClient(f"http://127.0.0.1:{port}").query("up", 1)
