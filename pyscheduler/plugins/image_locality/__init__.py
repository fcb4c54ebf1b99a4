"""ImageLocality: prefer nodes that already have the pod's container images, weighted by image size and
damped for images that are on few nodes (so pods do not all pile onto the one node that has an image).

Extension points: Score only (0-100, no normalization). Args: none.

Formula (kube-scheduler's, integer arithmetic as in Go):

- For every init container and container (duplicates count again) whose normalized image name is in the
  node's image list: ``int(size * numNodesWithImage / totalNodes)`` (float spread, truncated), summed.
- The sum is clamped to [23 MiB, 1000 MiB * number of containers] and mapped linearly:
  ``100 * (sum - 23Mi) // (1000Mi * containers - 23Mi)``.

Image names are normalized exactly as kube does: ":latest" is appended when the name has no tag (no ':'
after the last '/'). kube does *not* add a "docker.io/library/" prefix, so "nginx" in a pod only matches a
node image listed as "nginx:latest" (kube's own TODO); we keep that behaviour to score as kube does.

``numNodesWithImage`` comes from ``handle.snapshot.num_nodes_with_image(name)`` (falling back to the
NodeInfo's ``image_states`` count) and ``totalNodes`` from ``len(handle.snapshot.list())``; both are read
once per scheduling cycle and cached in the CycleState.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import ClusterEventWithHint
from pyscheduler.framework.helpers import signers
from pyscheduler.framework.interfaces import MAX_NODE_SCORE, Handle
from pyscheduler.framework.node_info import ImageStateSummary
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod

NAME = "ImageLocality"
STATE_KEY = "Score" + NAME

MB = 1024 * 1024
# Bounds of the image score range: a reasonable size range for compressed container images.
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """kube's normalizedImageName: add ":latest" when the image has no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """Clamp the summed image scores and scale them to 0-100 (kube's calculatePriority)."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    num = MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD)
    den = max_threshold - MIN_THRESHOLD
    q = abs(num) // abs(den)  # Go int64 division truncates toward zero
    return q if (num >= 0) == (den >= 0) else -q


def scaled_image_score(size: int, num_nodes: int, total_nodes: int) -> int:
    """kube's scaledImageScore: int64(float64(size) * (float64(numNodes) / float64(totalNodes)))."""
    spread = float(num_nodes) / float(total_nodes)
    return int(float(size) * spread)


class _CycleData:
    """Per-cycle data shared by every Score call for one pod."""

    __slots__ = ("images", "num_containers", "num_nodes", "total_nodes")

    def __init__(self, images: tuple[str, ...], num_containers: int, total_nodes: int) -> None:
        self.images = images
        self.num_containers = num_containers
        self.total_nodes = total_nodes
        self.num_nodes: dict[str, int] = {}

    def clone(self) -> _CycleData:
        return self


class ImageLocality:
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching: what this plugin's answers read of the pod (kube's SignPod)."""
        names = {normalized_image_name(c.image) for c in (*pod.containers, *pod.init_containers)}
        return [(signers.IMAGE_NAMES, tuple(sorted(names)))], None

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle

    def _cycle_data(self, state: CycleState, pod: Pod) -> _CycleData:
        data = state.get(STATE_KEY)
        if isinstance(data, _CycleData):
            return data
        containers = (*pod.init_containers, *pod.containers)
        total = len(self.handle.snapshot.list()) if self.handle is not None else 0
        data = _CycleData(tuple(normalized_image_name(c.image) for c in containers), len(containers), total)
        state.write(STATE_KEY, data)
        return data

    def _num_nodes(self, data: _CycleData, image: str, summary: ImageStateSummary) -> int:
        n = data.num_nodes.get(image)
        if n is None:
            n = self.handle.snapshot.num_nodes_with_image(image) if self.handle is not None else 0
            data.num_nodes[image] = n
        # the node being scored has the image, so 0 means the snapshot does not track it
        return n if n > 0 else summary.num_nodes

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Skip when no node has any of the pod's images: every node would score 0 (below the
        23 MB threshold), so skipping changes no total and saves a call per node."""
        data = self._cycle_data(state, pod)
        if self.handle is not None and not any(
            self.handle.snapshot.num_nodes_with_image(image) for image in data.images
        ):
            return Status.skip()
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        data = self._cycle_data(state, pod)
        image_states = node_info.image_states
        total = 0
        if image_states:
            for image in data.images:
                summary = image_states.get(image)
                if summary is None:
                    continue
                num_nodes = self._num_nodes(data, image, summary)
                total += scaled_image_score(summary.size, num_nodes, max(data.total_nodes, num_nodes, 1))
        return calculate_priority(total, data.num_containers), None

    def score_extensions(self) -> None:
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # A Score plugin never makes a pod unschedulable: no event can be needed to retry it.
        return []


def new(args: None, handle: Handle) -> ImageLocality:
    return ImageLocality(handle)


PLUGIN = PluginSpec(NAME, new, None, "prefers nodes that already have the pod's container images")
