from dataclasses import dataclass, field
from typing import Any

import pytest

from pyscheduler.framework.interfaces import BindPlugin
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.default_binder import NAME, PLUGIN, DefaultBinder
from pyscheduler.testing import make_cycle_state, make_handle, make_pod


@dataclass
class FakeClient:
    """The API client: records each bind and answers with ``result`` or raises ``error``."""

    result: Any = None
    error: BaseException | None = None
    calls: list[tuple[str, str]] = field(default_factory=list)

    def bind(self, pod: Pod, node_name: str) -> Any:
        self.calls.append((pod.key, node_name))
        if self.error is not None:
            raise self.error
        return self.result


def binder(client: FakeClient) -> DefaultBinder:
    return DefaultBinder(make_handle(client=client))


@pytest.mark.parametrize(
    ("result", "error", "code", "message"),
    [
        pytest.param(None, None, Code.SUCCESS, "", id="bound"),
        pytest.param(Status.success(), None, Code.SUCCESS, "", id="explicit success"),
        pytest.param(Status.as_error("conflict"), None, Code.ERROR, "conflict", id="client reports an error"),
        pytest.param(
            None, RuntimeError('pods "p" not found'), Code.ERROR, 'pods "p" not found', id="client raises"
        ),
        pytest.param(None, ConnectionError("reset"), Code.ERROR, "reset", id="connection lost"),
        pytest.param(42, None, Code.ERROR, "unexpected result 42", id="client returns garbage"),
    ],
)
def test_bind(result: Any, error: BaseException | None, code: Code, message: str) -> None:
    client = FakeClient(result, error)
    pod = make_pod("p", "ns").obj()
    status = binder(client).bind(make_cycle_state(), pod, "n1")
    assert client.calls == [("ns/p", "n1")]
    assert (status.code if status else Code.SUCCESS) == code
    if code != Code.SUCCESS:
        assert status is not None
        assert status.plugin == NAME
        assert message in status.message()
    if error is not None:
        assert status is not None and status.error is error


def test_spec() -> None:
    assert PLUGIN.name == "DefaultBinder"
    assert PLUGIN.decode(None, "args") is None
    pl = PLUGIN.new(None, make_handle(client=FakeClient()))
    assert isinstance(pl, BindPlugin)
    assert pl.bind(make_cycle_state(), make_pod("p").obj(), "n1") is None
