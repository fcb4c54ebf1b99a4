import pytest

from pyscheduler.framework.status import Code
from pyscheduler.plugins.node_name import ERR_REASON, NodeName
from pyscheduler.testing.builders import make_cycle_state, make_node, make_node_info, make_pod


@pytest.mark.parametrize(
    ("pod_node", "node", "code"),
    [
        ("", "n1", Code.SUCCESS),  # no name asked: any node
        ("n1", "n1", Code.SUCCESS),
        ("n2", "n1", Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
    ],
)
def test_filter(pod_node: str, node: str, code: Code) -> None:
    b = make_pod("p")
    if pod_node:
        b.node(pod_node)
    status = NodeName().filter(make_cycle_state(), b.obj(), make_node_info(make_node(node)))
    assert (status.code if status else Code.SUCCESS) == code
    if status:
        assert status.reasons == (ERR_REASON,)
