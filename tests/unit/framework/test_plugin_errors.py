"""A plugin that raises, at any extension point: the cycle gets one Error line naming the plugin and the
exception's type (kube-scheduler's wording, ``running Score plugins: plugin "X" failed with: KeyError: 'tier'``), and the
scheduler's log gets the traceback (file and line of the plugin's code) at error level, once per plugin and
exception site per minute. A plugin call slower than the threshold is a warning, rate-limited the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from structlog.testing import capture_logs

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import ClusterEventWithHint
from pyscheduler.framework.ratelimit import RateLimiter
from pyscheduler.framework.runtime import Framework, ProfilePlugins
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo
from pyscheduler.plugin_log import PluginProblemLog
from pyscheduler.testing import make_handle
from pyscheduler.testing.builders import make_node, make_node_info, make_pod
from pyscheduler.testing.clock import FakeClock

NODES = [make_node_info(make_node(f"n{i}")) for i in range(3)]
POD = make_pod("p").obj()


class Boom:
    """Every extension point reads a label that is not there."""

    name = "Boom"

    def __init__(self) -> None:
        self.labels: dict[str, str] = {}

    def explode(self) -> Any:
        return self.labels["tier"]

    def pre_enqueue(self, pod: Pod) -> Status | None:
        return self.explode()  # type: ignore[no-any-return]

    def pre_filter(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Any:
        return self.explode()

    def pre_filter_extensions(self) -> Any:
        return self

    def add_pod(self, state: CycleState, pod: Pod, other: PodInfo, node_info: NodeInfo) -> Status | None:
        return self.explode()  # type: ignore[no-any-return]

    def remove_pod(self, state: CycleState, pod: Pod, other: PodInfo, node_info: NodeInfo) -> Status | None:
        return self.explode()  # type: ignore[no-any-return]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return self.explode()  # type: ignore[no-any-return]

    def post_filter(self, state: CycleState, pod: Pod, filtered: Mapping[str, Status]) -> Any:
        return self.explode()

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        return self.explode()  # type: ignore[no-any-return]

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Any:
        return self.explode()

    def score_extensions(self) -> None:
        return None

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self.explode()  # type: ignore[no-any-return]

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.explode()

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> Any:
        return self.explode()

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self.explode()  # type: ignore[no-any-return]

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self.explode()  # type: ignore[no-any-return]

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.explode()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return self.explode()  # type: ignore[no-any-return]


BOOM_LINE = Boom.explode.__code__.co_firstlineno + 1  # the line of the plugin's code that raises

POINTS = [
    "preEnqueue",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
]


class Recorder:
    def __init__(self) -> None:
        self.errors: list[tuple[str, str, str, BaseException]] = []
        self.times: list[tuple[str, str, float]] = []

    def plugin_error(self, profile: str, plugin: str, extension_point: str, error: BaseException) -> None:
        self.errors.append((profile, plugin, extension_point, error))

    def plugin_time(self, profile: str, plugin: str, extension_point: str, seconds: float) -> None:
        self.times.append((plugin, extension_point, seconds))


def framework(observer: Any, *plugins: Any, slow: float = 0.1) -> Framework:
    points: dict[str, tuple[str, ...]] = {ep: tuple(p.name for p in plugins) for ep in POINTS}
    return Framework(
        "prof",
        {p.name: p for p in plugins},
        ProfilePlugins(points=points),
        make_handle(),
        observer=observer,
        slow_plugin_threshold=slow,
    )


def pod_info() -> PodInfo:
    return PodInfo(make_pod("other").node("n0").obj())


# extension point as reported -> how to run it -> the status the cycle sees (None: nothing returned)
RUNS: dict[str, Callable[[Framework], Status | None]] = {
    "PreEnqueue": lambda f: f.run_pre_enqueue_plugins(POD),
    "PreFilter": lambda f: f.run_pre_filter_plugins(CycleState(), POD, NODES)[1],
    "AddPod": lambda f: f.run_pre_filter_extension_add_pod(CycleState(), POD, pod_info(), NODES[0]),
    "RemovePod": lambda f: f.run_pre_filter_extension_remove_pod(CycleState(), POD, pod_info(), NODES[0]),
    "Filter": lambda f: f.run_filter_plugins(CycleState(), POD, NODES[0]),
    "PostFilter": lambda f: f.run_post_filter_plugins(CycleState(), POD, {})[1],
    "PreScore": lambda f: f.run_pre_score_plugins(CycleState(), POD, NODES),
    "Score": lambda f: f.run_score_plugins(CycleState(), POD, NODES)[1],
    "Reserve": lambda f: f.run_reserve_plugins_reserve(CycleState(), POD, "n0"),
    "Permit": lambda f: f.run_permit_plugins(CycleState(), POD, "n0"),
    "PreBind": lambda f: f.run_pre_bind_plugins(CycleState(), POD, "n0"),
    "Bind": lambda f: f.run_bind_plugins(CycleState(), POD, "n0"),
    "Unreserve": lambda f: f.run_reserve_plugins_unreserve(CycleState(), POD, "n0"),  # type: ignore[func-returns-value]
    "PostBind": lambda f: f.run_post_bind_plugins(CycleState(), POD, "n0"),  # type: ignore[func-returns-value]
    "EventsToRegister": lambda f: (f.events_to_register(), None)[1],
}
NO_STATUS = {"Unreserve", "PostBind", "EventsToRegister"}
# kube-scheduler's runtime (framework.go) words Filter and Score errors its own way; the other points
# are ``running <Point> plugin "X": <error>``.
KUBE_WORDING = {
    "Filter": 'running "Boom" filter plugin: {}',
    "Score": 'running Score plugins: plugin "Boom" failed with: {}',
}


@pytest.mark.parametrize("point", list(RUNS))
def test_a_raising_plugin_is_an_error_status_with_the_exception_type(point: str) -> None:
    rec = Recorder()
    st = RUNS[point](framework(rec, Boom()))
    if point in NO_STATUS:
        assert st is None  # nothing to fail: the error is only reported
    else:
        assert st is not None and st.code == Code.ERROR
        assert st.message() == KUBE_WORDING.get(point, f'running {point} plugin "Boom": {{}}').format(
            "KeyError: 'tier'"
        )
        assert st.plugin == "Boom"
    assert [(prof, plugin, ep) for prof, plugin, ep, _ in rec.errors] == [("prof", "Boom", point)]
    assert isinstance(rec.errors[0][3], KeyError)


def test_batch_filter_reports_the_error_once_per_cycle_not_per_node() -> None:
    rec = Recorder()
    statuses = framework(rec, Boom()).run_filter_plugins_batch(CycleState(), POD, NODES)
    assert all(
        s is not None and s.message() == "running \"Boom\" filter plugin: KeyError: 'tier'" for s in statuses
    )
    assert len(rec.errors) == 1


def test_an_exception_without_a_message_is_named_by_its_type() -> None:
    class Empty(Boom):
        def explode(self) -> Any:
            raise NotImplementedError

    st = framework(None, Empty()).run_pre_score_plugins(CycleState(), POD, NODES)
    assert st is not None and st.message() == 'running PreScore plugin "Boom": NotImplementedError'


@pytest.mark.parametrize("point", list(RUNS))
def test_the_log_has_the_type_and_the_traceback_at_error_level_once_a_minute(point: str) -> None:
    clock = FakeClock()
    fwk = framework(PluginProblemLog(clock), Boom())
    with capture_logs() as logs:
        for _ in range(5):  # a hot loop
            RUNS[point](fwk)
        clock.advance(59.0)
        RUNS[point](fwk)
    errors = [e for e in logs if e["log_level"] == "error"]
    assert len(errors) == 1, logs
    e = errors[0]
    assert e["plugin"] == "Boom" and e["extension_point"] == point and e["profile"] == "prof"
    assert e["exc_type"] == "KeyError" and e["error"] == "KeyError: 'tier'"
    assert e["file"] == __file__ and e["line"] == BOOM_LINE and e["function"] == "explode"
    tb = e["exception"]
    assert tb.startswith("Traceback (most recent call last):")
    assert f'File "{__file__}", line {BOOM_LINE}, in explode' in tb
    assert 'return self.labels["tier"]' in tb and tb.endswith("KeyError: 'tier'")
    assert "exc_info" not in e  # a plain string: no renderer adds frame locals to it
    with capture_logs() as later:
        clock.advance(1.0)  # a minute after the first
        RUNS[point](fwk)
    assert [(x["log_level"], x["suppressed"]) for x in later] == [("error", 5)]


def test_two_exception_sites_of_one_plugin_are_logged_separately() -> None:
    class TwoBugs(Boom):
        def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
            if not nodes:
                return Status.success() if 1 // len(nodes) else None  # ZeroDivisionError
            return self.explode()  # type: ignore[no-any-return]

    fwk = framework(PluginProblemLog(FakeClock()), TwoBugs())
    with capture_logs() as logs:
        for _ in range(3):
            fwk.run_pre_score_plugins(CycleState(), POD, [])
            fwk.run_pre_score_plugins(CycleState(), POD, NODES)
    assert sorted(e["exc_type"] for e in logs) == ["KeyError", "ZeroDivisionError"]


class Slow:
    name = "Slow"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        time.sleep(self.seconds)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return 1, None

    def score_extensions(self) -> None:
        return None


class Fast(Slow):
    name = "Fast"


def score_framework(observer: Any, slow: float, *plugins: Any) -> Framework:
    names = tuple(p.name for p in plugins)
    return Framework(
        "prof",
        {p.name: p for p in plugins},
        ProfilePlugins(points={"preScore": names, "score": names}),
        make_handle(),
        observer=observer,
        slow_plugin_threshold=slow,
    )


def test_a_slow_plugin_call_is_a_warning_naming_it_rate_limited() -> None:
    clock = FakeClock()
    fwk = score_framework(PluginProblemLog(clock, slow_threshold=0.05), 0.05, Fast(0.0), Slow(0.08))
    with capture_logs() as logs:
        for _ in range(3):
            assert fwk.run_pre_score_plugins(CycleState(), POD, NODES) is None
    assert len(logs) == 1, logs
    w = logs[0]
    assert w["log_level"] == "warning" and w["plugin"] == "Slow" and w["extension_point"] == "PreScore"
    assert w["duration_ms"] >= 80 and w["threshold_ms"] == 50
    clock.advance(60.0)
    with capture_logs() as later:
        fwk.run_pre_score_plugins(CycleState(), POD, NODES)
    assert [(x["plugin"], x["suppressed"]) for x in later] == [("Slow", 2)]


def test_every_call_is_timed_per_plugin_when_the_threshold_is_zero() -> None:
    rec = Recorder()
    fwk = score_framework(rec, 0.0, Fast(0.0), Slow(0.0))
    state = CycleState()
    fwk.run_pre_score_plugins(state, POD, NODES)
    fwk.run_score_plugins(state, POD, NODES)
    assert [(p, ep) for p, ep, _ in rec.times] == [
        ("Fast", "PreScore"),
        ("Slow", "PreScore"),
        ("Fast", "Score"),
        ("Slow", "Score"),
    ]
    assert all(s >= 0 for _, _, s in rec.times)


def test_a_failing_observer_does_not_break_the_cycle() -> None:
    class Broken(Recorder):
        def plugin_error(self, profile: str, plugin: str, extension_point: str, error: BaseException) -> None:
            raise RuntimeError("logging is down")

    st = framework(Broken(), Boom()).run_reserve_plugins_reserve(CycleState(), POD, "n0")
    assert st is not None and st.message() == "running Reserve plugin \"Boom\": KeyError: 'tier'"
    # not swallowed: the observer's failure rides on the plugin's exception (its traceback shows it)
    assert st.error is not None
    assert "reporting this to the plugin observer failed: RuntimeError: logging is down" in (
        st.error.__notes__
    )


def test_rate_limiter_lets_one_through_per_period_and_counts_the_rest() -> None:
    clock = FakeClock()
    rl = RateLimiter(clock, period=60.0, max_keys=4)
    assert rl.allow("a") == 0
    assert rl.allow("a") is None and rl.allow("a") is None
    assert rl.allow("b") == 0
    clock.advance(60.0)
    assert rl.allow("a") == 2 and rl.allow("a") is None
    for k in "cdefgh":  # more keys than it keeps: memory stays bounded, new keys still get through
        assert rl.allow(k) == 0
    assert len(rl._last) <= 4
    with pytest.raises(ValueError, match="period must be positive"):
        RateLimiter(clock, period=0)


class Returns(Boom):
    """Returns ``status`` (no exception) at every point that can fail a cycle."""

    name = "Ret"

    def __init__(self, status: Status) -> None:
        super().__init__()
        self.status = status

    def pre_filter(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Any:
        return None, self.status

    def pre_filter_extensions(self) -> Any:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return self.status

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        return self.status

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return 0, self.status

    def score_extensions(self) -> Any:
        return None

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self.status

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        return None

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        return self.status, 0.0

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self.status

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self.status


@pytest.mark.parametrize(
    ("point", "message"),
    [
        pytest.param("PreFilter", 'running PreFilter plugin "Ret": disk on fire', id="prefilter"),
        pytest.param("Filter", 'running "Ret" filter plugin: disk on fire', id="filter"),
        pytest.param("PreScore", 'running PreScore plugin "Ret": disk on fire', id="prescore"),
        pytest.param("Score", 'running Score plugins: plugin "Ret" failed with: disk on fire', id="score"),
        pytest.param("Reserve", 'running Reserve plugin "Ret": disk on fire', id="reserve"),
        pytest.param("Permit", 'running Permit plugin "Ret": disk on fire', id="permit"),
        pytest.param("PreBind", 'running PreBind plugin "Ret": disk on fire', id="prebind"),
        pytest.param("Bind", 'running Bind plugin "Ret": disk on fire', id="bind"),
    ],
)
def test_a_returned_error_is_worded_as_kube_scheduler_words_it(point: str, message: str) -> None:
    st = RUNS[point](framework(None, Returns(Status.as_error("disk on fire"))))
    assert st is not None and st.code == Code.ERROR and st.message() == message
    assert st.plugin == "Ret"


@pytest.mark.parametrize("point", ["PreFilter", "Filter", "Reserve", "Permit", "PreBind", "Bind"])
def test_a_rejection_keeps_the_plugins_own_words(point: str) -> None:
    st = RUNS[point](framework(None, Returns(Status.unschedulable("node(s) were too hot"))))
    assert st is not None and st.is_rejected() and st.message() == "node(s) were too hot"
    assert st.plugin == "Ret"
