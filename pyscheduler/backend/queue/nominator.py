"""The nominator: pods that preemption (or the API, through ``status.nominatedNodeName``) placed on a
node, so that Filter counts them there for pods of lower priority (kube's nominator).

Not thread-safe by itself: the queue owns one and calls it with the queue's lock held, except for the
lock-free emptiness checks (a dict's truth value is read atomically).
"""

from __future__ import annotations

from pyscheduler.framework.types import Pod, PodInfo


class Nominator:
    __slots__ = ("by_node", "node_of")

    def __init__(self) -> None:
        self.by_node: dict[str, list[PodInfo]] = {}
        self.node_of: dict[str, str] = {}  # uid -> node

    def add(self, pod_info: PodInfo, node_name: str = "") -> None:
        """Nominate the pod on ``node_name`` ("" = its ``status.nominatedNodeName``), replacing any
        earlier nomination."""
        pod = pod_info.pod
        self.delete(pod.uid)
        node = node_name or pod.nominated_node_name
        if not node or pod.node_name:
            return  # nothing to nominate, or already assigned
        self.node_of[pod.uid] = node
        self.by_node.setdefault(node, []).append(pod_info)

    def delete(self, uid: str) -> None:
        node = self.node_of.pop(uid, None)
        if node is None:
            return
        pods = [pi for pi in self.by_node.get(node, ()) if pi.pod.uid != uid]
        if pods:
            self.by_node[node] = pods
        else:
            self.by_node.pop(node, None)

    def update(self, old: Pod, new_info: PodInfo) -> None:
        """kube's updateNominatedPodUnlocked: keep an in-memory nomination when an update carries
        none (the status write may not have landed yet); otherwise follow the pod's status."""
        if old.uid not in self.node_of and not new_info.pod.nominated_node_name:
            return
        keep = ""
        if not old.nominated_node_name and not new_info.pod.nominated_node_name:
            keep = self.node_of.get(old.uid, "")
        self.add(new_info, keep)
