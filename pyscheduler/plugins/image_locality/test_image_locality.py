from collections.abc import Sequence
from typing import Any

import pytest

from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.types import NodeInfo, Pod
from pyscheduler.plugins.image_locality import (
    MB,
    NAME,
    PLUGIN,
    ImageLocality,
    calculate_priority,
    normalized_image_name,
)
from pyscheduler.testing import (
    make_cycle_state,
    make_handle,
    make_node,
    make_node_info,
    make_pod,
    snapshot_of,
)


class CountingSnapshot(Snapshot):
    """The real snapshot, counting the reads the plugin makes of it."""

    def __init__(self) -> None:
        super().__init__()
        self.list_calls = 0
        self.count_calls = 0

    def list(self) -> Sequence[NodeInfo]:
        self.list_calls += 1
        return super().list()

    def num_nodes_with_image(self, image: str) -> int:
        self.count_calls += 1
        return super().num_nodes_with_image(image)


def nodes_with(*images_per_node: list[tuple[str, int]]) -> list[NodeInfo]:
    """One NodeInfo per argument; each argument is a list of (image name, size in MB)."""
    infos = []
    for i, images in enumerate(images_per_node):
        b = make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=110)
        for name, size in images:
            b.image(name, size * MB)
        infos.append(make_node_info(b))
    return infos


def pod_with(*images: str, init: tuple[str, ...] = ()) -> Pod:
    d = make_pod("p").json()
    d["spec"]["containers"] = [{"name": f"c{i}", "image": img} for i, img in enumerate(images)]
    if init:
        d["spec"]["initContainers"] = [{"name": f"i{i}", "image": img} for i, img in enumerate(init)]
    return Pod.from_dict(d)


def scores(pod: Pod, infos: list[NodeInfo], snapshot: Snapshot | None = None) -> list[int]:
    """Score each of ``infos`` (in that order) with the cycle's snapshot: by default the snapshot of
    ``infos`` themselves, as the scheduler would have it."""
    snapshot = snapshot if snapshot is not None else snapshot_of(*infos)
    plugin = PLUGIN.new(None, make_handle(snapshot))
    state = make_cycle_state()
    out = []
    for info in infos:
        score, status = plugin.score(state, pod, info)
        assert status is None
        out.append(score)
    return out


def expected(sum_bytes: float, containers: int) -> int:
    return calculate_priority(int(sum_bytes), containers)


NODES_40_300__250_10: tuple[list[tuple[str, int]], ...] = (
    [("gcr.io/40:latest", 40), ("gcr.io/300:latest", 300)],
    [("gcr.io/250:latest", 250), ("gcr.io/10:latest", 10)],
)

CASES = [
    # kube's table: 100 * (40M/2 - 23M) / (1000M*2 - 23M) = 0 ; 100 * (250M/2 - 23M) / (1000M*2 - 23M) = 5
    pytest.param(
        pod_with("gcr.io/40", "gcr.io/250"),
        NODES_40_300__250_10,
        [0, 5],
        id="prefer the node with the larger image",
    ),
    pytest.param(
        pod_with("gcr.io/300:latest"),
        ([("gcr.io/300:latest", 300)], [("gcr.io/300:latest", 300)]),
        [28, 28],
        id="images spread on every node score full size",
    ),  # 100*(300-23)/977
    pytest.param(
        pod_with("big:v1"),
        ([("big:v1", 400)], [], [], []),
        [7, 0, 0, 0],
        id="image on one node out of four is damped",
    ),  # 400/4=100MB: 100*(100-23)/977 = 7
    pytest.param(
        pod_with("huge:1"),
        ([("huge:1", 2000)], [("huge:1", 2000)]),
        [100, 100],
        id="above the max threshold clamps to 100",
    ),
    pytest.param(pod_with("small:1"), ([("small:1", 20)], []), [0, 0], id="below the min threshold is 0"),
    pytest.param(pod_with("nginx"), ([("nginx:latest", 500)],), [48], id="tag-less image matches :latest"),
    pytest.param(
        pod_with("nginx:1.25"), ([("nginx:latest", 500)],), [0], id="explicit tag does not match :latest"
    ),
    pytest.param(
        pod_with("nginx"),
        ([("docker.io/library/nginx:latest", 500)],),
        [0],
        id="no docker.io/library prefix added (kube)",
    ),
    pytest.param(
        pod_with("localhost:5000/app"),
        ([("localhost:5000/app:latest", 500)],),
        [48],
        id="registry with a port is not a tag",
    ),
    # (1000 + 1000/2 - 23) / 1977 and (1000 - 23) / 1977
    pytest.param(
        pod_with("a:1", init=("b:1",)),
        ([("a:1", 1000), ("b:1", 1000)], [("a:1", 1000)]),
        [74, 49],
        id="init containers count and share the threshold",
    ),
    # (1200 - 23) / 1977
    pytest.param(pod_with("a:1", "a:1"), ([("a:1", 600)],), [59], id="the same image twice counts twice"),
    pytest.param(pod_with("x:1"), ([], []), [0, 0], id="no image on any node"),
]


@pytest.mark.parametrize(
    ("pod", "node_images", "want"),
    CASES,
)
def test_score(pod: Pod, node_images: tuple[list[tuple[str, int]], ...], want: list[int]) -> None:
    assert scores(pod, nodes_with(*node_images)) == want


def test_formula_matches_hand_computation() -> None:
    # 250MB image on 1 of 2 nodes, 2 containers
    assert expected(250 * MB / 2, 2) == 100 * (125 * MB - 23 * MB) // (2000 * MB - 23 * MB) == 5


def test_snapshot_read_once_per_cycle() -> None:
    infos = nodes_with(*([("a:1", 100)] for _ in range(5)))
    snap = CountingSnapshot.from_nodes([i.node for i in infos if i.node is not None])
    assert isinstance(snap, CountingSnapshot)
    scores(pod_with("a:1", "b:1"), infos, snap)
    assert snap.list_calls == 1
    assert snap.count_calls == 1  # "b:1" is on no node and is never looked up


def test_snapshot_count_preferred_over_node_info() -> None:
    scored = nodes_with([("a:1", 400)], [], [], [])  # NodeInfo.image_states: the image is on 1 node
    everywhere = snapshot_of(*nodes_with(*([("a:1", 400)] for _ in range(4))))
    assert everywhere.num_nodes_with_image("a:1") == 4
    assert scores(pod_with("a:1"), scored, everywhere) == [38, 0, 0, 0]
    # a snapshot that does not know the image falls back to NodeInfo.image_states
    nowhere = snapshot_of(*nodes_with([], [], [], []))
    assert scores(pod_with("a:1"), scored, nowhere) == [7, 0, 0, 0]


def test_without_handle() -> None:
    info = nodes_with([("a:1", 500)])[0]
    score, status = ImageLocality(None).score(make_cycle_state(), pod_with("a:1"), info)
    assert (score, status) == (48, None)


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.25", "nginx:1.25"),
        ("gcr.io/a/b", "gcr.io/a/b:latest"),
        ("localhost:5000/a", "localhost:5000/a:latest"),
        ("localhost:5000/a:v2", "localhost:5000/a:v2"),
        ("a@sha256:0123", "a@sha256:0123"),
        ("", ":latest"),
    ],
)
def test_normalized_image_name(name: str, want: str) -> None:
    assert normalized_image_name(name) == want


@pytest.mark.parametrize(
    ("sum_bytes", "containers", "want"),
    [
        (0, 1, 0),
        (23 * MB, 1, 0),
        (1000 * MB, 1, 100),
        (5000 * MB, 1, 100),
        (500 * MB, 1, 48),
        (500 * MB, 3, 16),  # 100 * 477 / 2977
    ],
)
def test_calculate_priority(sum_bytes: int, containers: int, want: int) -> None:
    assert calculate_priority(sum_bytes, containers) == want


def test_plugin_spec() -> None:
    assert PLUGIN.name == NAME == "ImageLocality"
    assert PLUGIN.args_type is None
    plugin: Any = PLUGIN.new(PLUGIN.decode(None, "args"), make_handle())
    assert plugin.score_extensions() is None
    assert plugin.events_to_register() == []
