from dataclasses import dataclass

import pytest

from pyscheduler.framework.interfaces import QueueSortPlugin
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.priority_sort import PLUGIN, PrioritySort
from pyscheduler.testing import make_handle
from pyscheduler.testing.builders import make_pod


@dataclass
class Queued:
    pod: Pod
    timestamp: float
    attempts: int = 0


def queued(name: str, priority: int | None, timestamp: float) -> Queued:
    b = make_pod(name)
    if priority is not None:
        b.priority(priority)
    return Queued(b.obj(), timestamp)


@pytest.mark.parametrize(
    ("a", "b", "less"),
    [
        pytest.param((10, 2.0), (5, 1.0), True, id="higher priority first, even if later"),
        pytest.param((5, 1.0), (10, 2.0), False, id="lower priority after"),
        pytest.param((5, 1.0), (5, 2.0), True, id="same priority: earlier first"),
        pytest.param((5, 2.0), (5, 1.0), False, id="same priority: later after"),
        pytest.param((5, 1.0), (5, 1.0), False, id="equal: not less (strict order)"),
        pytest.param((None, 1.0), (0, 2.0), True, id="unset priority is 0"),
        pytest.param((-1, 1.0), (None, 2.0), False, id="negative priority after unset"),
        pytest.param((2_000_000_000, 5.0), (1_000_000_000, 1.0), True, id="system priorities"),
    ],
)
def test_less(a: tuple[int | None, float], b: tuple[int | None, float], less: bool) -> None:
    pl = PrioritySort()
    qa, qb = queued("a", *a), queued("b", *b)
    assert pl.less(qa, qb) is less
    # the queue compares sort keys instead when the plugin has them: the same order, ties equal
    assert (pl.sort_key(qa) < pl.sort_key(qb)) is less
    assert (pl.sort_key(qa) == pl.sort_key(qb)) is (not pl.less(qa, qb) and not pl.less(qb, qa))


def test_sorting_a_queue() -> None:
    pods = [
        queued("low-early", 1, 1.0),
        queued("high-late", 9, 3.0),
        queued("low-late", 1, 2.0),
        queued("high", 9, 2.5),
    ]
    order = sorted(pods, key=lambda q: (-q.pod.priority, q.timestamp))
    pl = PrioritySort()
    for i in range(len(order) - 1):
        assert pl.less(order[i], order[i + 1])
        assert not pl.less(order[i + 1], order[i])
    assert [q.pod.name for q in order] == ["high", "high-late", "low-early", "low-late"]


def test_spec() -> None:
    assert PLUGIN.name == "PrioritySort"
    assert PLUGIN.decode(None, "args") is None
    pl = PLUGIN.new(None, make_handle())
    assert isinstance(pl, QueueSortPlugin)
