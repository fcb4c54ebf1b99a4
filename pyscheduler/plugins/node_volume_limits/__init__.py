"""NodeVolumeLimits: a node can attach only so many volumes of each CSI driver.

Behaviour (kube-scheduler 1.36, pkg/scheduler/framework/plugins/nodevolumelimits, the CSI limits):

- PreFilter skips pods without a PVC, a generic ephemeral volume or an in-tree volume that could be
  migrated to CSI.
- Filter, per node. The pod's attachable volumes are found, each named ``<driver>/<volume handle>``:
  a claim bound to a CSI PV gives the PV's ``spec.csi`` driver and handle; a claim bound to an
  in-tree PV (AWS EBS, GCE PD, Azure Disk, Cinder, Portworx) counts under its CSI driver where that
  plugin's migration is on (the node has a CSINode; Portworx also needs the CSINode's
  migrated-plugins annotation); an unbound claim (or one whose PV is missing) counts under its
  StorageClass's provisioner, as a volume of its own; inline in-tree volumes are translated the
  same way. A missing claim of the incoming pod is UnschedulableAndUnresolvable (``looking up PVC
  <ns>/<name>: persistentvolumeclaim "<name>" not found``); missing claims of pods already on the
  node are not counted. The node's limits are the CSINode's ``spec.drivers[].allocatable.count``
  (over the node's legacy ``attachable-volumes-csi-<driver>`` allocatable); a node without limits
  fits. Volumes already used by pods on the node are not counted twice, VolumeAttachments to the
  node of volumes no pod there uses count too, and for every driver with a limit, used + new must
  not exceed it, else "node(s) exceed max volume count" (Unschedulable: preemption can free
  attachments).

Cluster objects read from ``handle.objects``: PersistentVolumeClaim, PersistentVolume,
StorageClass, CSINode and (when served) VolumeAttachment.

Cost: what a node has (its limits, the volumes its pods use, the attachments counted) does not depend
on the incoming pod, so it is derived once and kept across cycles, per node, while the NodeInfo's
generation (its node and pods) is the one it was derived from and none of the claims, volumes and the
CSINode it read has changed since: the object store counts the changes per kind and names the objects
changed (``ObjectStore.version`` / ``changed``), and each PreFilter drops the usages that read one of
them. Any change of a StorageClass or VolumeAttachment (or of a PV while VolumeAttachments exist, or
more changes than the store remembers) drops them all. Filter then only sets the pod's new volumes
against the node's usage (``filter_nodes`` for a whole batch). SchedulingCSIPVs at 5,000 nodes
(``python -m bench.csipvs_cycle``, in-process): 10.1 CPU ms per pod before, 0.8 after.

Extension points: PreFilter, Filter, EnqueueExtensions. Args: none.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    as_pod,
)
from pyscheduler.framework.helpers import signers
from pyscheduler.framework.helpers.storage import (
    CSI_NODE,
    PV,
    PVC,
    STORAGE_CLASS,
    claim_class,
    is_controlled_by,
    list_optional,
    meta,
    spec,
    store_changes,
    store_versions,
)
from pyscheduler.framework.interfaces import ClusterObjects, Handle, PreFilterResult
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod
from pyscheduler.plugins.node_volume_limits._intree import (
    ATTACHABLE_VOLUMES_PREFIX,
    BY_PLUGIN,
    SOURCE_KEYS,
    TranslationError,
    csi_attach_limit_key,
    in_tree_source,
    is_csi_migration_on,
    migrated_plugins,
)

NAME = "NodeVolumeLimits"
STATE_KEY = f"PreFilter{NAME}"

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

VOLUME_ATTACHMENT = "VolumeAttachment"

JSONMap = Mapping[str, Any]

__all__ = [
    "ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED",
    "NAME",
    "PLUGIN",
    "STATE_KEY",
    "NodeVolumeLimits",
    "csi_attach_limit_key",
    "new",
]


@dataclass(frozen=True, slots=True)
class _Vol:
    """One attachable volume of a pod, resolved as far as possible without knowing the node."""

    unique: str = ""  # <driver>/<handle>
    key: str = ""  # the driver's attach-limit key
    plugin: str = ""  # in-tree plugin: counts only where its CSI migration is on
    error: Status | None = None  # reported (for an in-tree plugin: only where migration is on)


@dataclass(slots=True)
class _State:
    new_volumes: list[_Vol]
    # the object store's versions of the kinds a node's usage is derived from, read at PreFilter (None:
    # the store keeps none, so nothing is kept across cycles)
    versions: tuple[int, ...] | None = None
    # the new volumes (<driver>/<handle> -> limit key) or the error they give, where no node can change
    # that (no in-tree volume, whose counting depends on the node's CSINode); None: per node
    fixed_new: tuple[dict[str, str], Status | None] | None = None
    # per-cycle caches shared by clones (filled by Filter; same values whoever fills them)
    existing: dict[str, tuple[list[_Vol], list[tuple[str, str]]]] = field(default_factory=dict)
    attachments: dict[str, list[tuple[str, str]]] | None = None

    def clone(self) -> _State:
        return self


@dataclass(frozen=True, slots=True)
class _Usage:
    """What a node has, for any incoming pod: its limits, the volumes its pods use (<driver>/<handle> ->
    limit key), how many are attached per limit key (its pods' and other VolumeAttachments'), or the
    error one of its pods' volumes gives (returned once the incoming pod has a volume to count)."""

    limits: dict[str, int]
    attached: dict[str, str]
    used: dict[str, int]
    error: Status | None
    # the fewest attachments left under any of the node's limits (-1 with an error; a large number
    # without limits): a pod with no more new volumes than that fits
    min_room: int
    # what it was derived from besides the store's objects: the NodeInfo's generation (node and pods)
    generation: int


# the kinds a node's _Usage is derived from, besides the NodeInfo: claims, volumes, classes (unbound
# claims count under their class's provisioner), CSINodes and VolumeAttachments
_VERSIONED_KINDS = (PVC, PV, STORAGE_CLASS, CSI_NODE, VOLUME_ATTACHMENT)
_PV_AT, _VA_AT = (
    _VERSIONED_KINDS.index(PV),
    _VERSIONED_KINDS.index(VOLUME_ATTACHMENT),
)  # what attachments read

_NO_LIMIT = 1 << 62

_EXCEEDED = Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, plugin=NAME)


def has_attachable_volume(pod: Pod) -> bool:
    return any(
        v.get("persistentVolumeClaim") is not None
        or v.get("ephemeral") is not None
        or any(v.get(k) is not None for k in SOURCE_KEYS)
        for v in pod.volumes
    )


def node_volume_limits(node_info: NodeInfo, csi_node: JSONMap | None) -> dict[str, int]:
    """getVolumeLimits: the node's attachable-volumes-* allocatable, overridden by the CSINode."""
    limits = {
        k: v for k, v in node_info.allocatable.scalar.items() if k.startswith(ATTACHABLE_VOLUMES_PREFIX)
    }
    if csi_node is not None:
        for d in spec(csi_node).get("drivers") or ():
            if not isinstance(d, Mapping):
                continue
            alloc = d.get("allocatable")
            count = alloc.get("count") if isinstance(alloc, Mapping) else None
            if count is not None:
                limits[csi_attach_limit_key(str(d.get("name") or ""))] = int(count)
    return limits


class NodeVolumeLimits:
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching: what this plugin's answers read of the pod (kube's SignPod)."""
        return [(signers.VOLUMES, signers.volumes(pod))], None

    def __init__(self, handle: Handle) -> None:
        self._handle = handle
        # unbound claims count as volumes of their own; the prefix keeps them apart from real handles
        self._random_prefix = secrets.token_hex(16)
        # node name -> its usage, kept across cycles while the NodeInfo's generation is the one it was
        # derived from and, of the objects it was derived from, none changed: the store's versions of
        # _VERSIONED_KINDS are ``_usage_versions``, moved on by ``_sync_kept`` (which drops the usages
        # that read an object changed since)
        self._usage: dict[str, _Usage] = {}
        self._usage_versions: tuple[int, ...] | None = None
        # (kind, key) of a claim, volume or CSINode -> the nodes whose kept usage read it (or once did)
        self._deps: dict[tuple[str, str], set[str]] = {}
        # whether a kept usage was derived while VolumeAttachments existed (then any PV change drops
        # them all: which attachments count depends on the PVs they name)
        self._usage_saw_attachments = False
        self._attachments_listed = False  # whether the last listing of VolumeAttachments found any
        # VolumeAttachments by node, with the (PV, VolumeAttachment) versions they were read at
        self._attachments_cache: tuple[tuple[int, int], dict[str, list[tuple[str, str]]]] | None = None

    # -- resolving a pod's volumes --------------------------------------------------------------
    def _resolve(
        self, objects: ClusterObjects, pod: Pod, new_pod: bool, deps: list[tuple[str, str]] | None = None
    ) -> list[_Vol]:
        """The pod's attachable volumes; ``deps`` gets the (kind, key) of each claim and volume read,
        found or not (a StorageClass read is not named: any change of one drops every kept usage)."""
        out: list[_Vol] = []
        for vol in pod.volumes:
            src = vol.get("persistentVolumeClaim")
            ephemeral = False
            if src is not None:
                claim = str(src.get("claimName") or "") if isinstance(src, Mapping) else ""
            elif vol.get("ephemeral") is not None:
                claim = f"{pod.name}-{vol.get('name') or ''}"
                ephemeral = True
            else:
                inline = self._inline(vol, pod)
                if inline is not None:
                    out.append(inline)
                continue
            if not claim:
                out.append(_Vol(error=Status.as_error("PersistentVolumeClaim had no name", plugin=NAME)))
                break
            if deps is not None:
                deps.append((PVC, f"{pod.namespace}/{claim}"))
            pvc = objects.get(PVC, pod.namespace, claim)
            if pvc is None:
                if new_pod:
                    msg = f'looking up PVC {pod.namespace}/{claim}: persistentvolumeclaim "{claim}" not found'
                    out.append(_Vol(error=Status.unresolvable(msg, plugin=NAME)))
                    break
                continue
            if ephemeral and not is_controlled_by(pvc, pod):
                msg = (
                    f"PVC {pod.namespace}/{claim} was not created for pod "
                    f"{pod.namespace}/{pod.name} (pod is not owner)"
                )
                out.append(_Vol(error=Status.as_error(msg, plugin=NAME)))
                break
            driver, handle, plugin = self._driver_info(objects, pvc, deps)
            if driver and handle:
                out.append(_Vol(f"{driver}/{handle}", csi_attach_limit_key(driver), plugin))
        return out

    @staticmethod
    def _inline(vol: JSONMap, pod: Pod) -> _Vol | None:
        found = in_tree_source(vol)
        if found is None:
            return None
        t, src = found
        if not t.counted:
            return None
        try:
            handle = t.inline_handle(src)
        except TranslationError as e:
            msg = f"converting volume({vol.get('name') or ''}) from inline to csi: {e}"
            return _Vol(plugin=t.plugin, error=Status.as_error(msg, plugin=NAME))
        return _Vol(f"{t.driver}/{handle}", csi_attach_limit_key(t.driver), t.plugin)

    def _driver_info(
        self, objects: ClusterObjects, pvc: JSONMap, deps: list[tuple[str, str]] | None = None
    ) -> tuple[str, str, str]:
        """(driver, volume handle, in-tree plugin or "") of a claim; empty when not countable."""
        pv_name = str(spec(pvc).get("volumeName") or "")
        if pv_name and deps is not None:
            deps.append((PV, f"/{pv_name}"))
        pv = objects.get(PV, "", pv_name) if pv_name else None
        if pv is None:
            return self._driver_info_from_class(objects, pvc)
        csi = spec(pv).get("csi")
        if isinstance(csi, Mapping):
            return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or ""), ""
        found = in_tree_source(spec(pv))
        if found is None:
            return "", "", ""
        t, src = found
        if not t.counted:
            return "", "", ""
        try:
            return t.driver, t.pv_handle(src, pv), t.plugin
        except TranslationError:
            return "", "", ""

    def _driver_info_from_class(self, objects: ClusterObjects, pvc: JSONMap) -> tuple[str, str, str]:
        cls = claim_class(pvc)
        if not cls:
            # no class: an immediate claim that must be bound before scheduling
            return "", "", ""
        sc = objects.get(STORAGE_CLASS, "", cls)
        if sc is None:
            return "", "", ""
        md = meta(pvc)
        handle = f"{self._random_prefix}-{md.get('namespace') or ''}/{md.get('name') or ''}"
        provisioner = str(sc.get("provisioner") or "")
        t = BY_PLUGIN.get(provisioner)
        if t is not None:
            return (t.driver, handle, t.plugin) if t.counted else ("", "", "")
        return provisioner, handle, ""

    @staticmethod
    def _collect(vols: Sequence[_Vol], csi_node: JSONMap | None, into: dict[str, str]) -> Status | None:
        for v in vols:
            if v.plugin and not is_csi_migration_on(csi_node, v.plugin):
                continue
            if v.error is not None:
                return v.error
            into[v.unique] = v.key
        return None

    def _attachments(self, objects: ClusterObjects, st: _State) -> dict[str, list[tuple[str, str]]]:
        """VolumeAttachments by node: (<attacher>/<handle>, limit key) of attached CSI PVs."""
        if st.attachments is None:
            key = (st.versions[_PV_AT], st.versions[_VA_AT]) if st.versions is not None else None
            cached = self._attachments_cache
            if key is not None and cached is not None and cached[0] == key:
                st.attachments = cached[1]
                return cached[1]
            by_node: dict[str, list[tuple[str, str]]] = {}
            listed = list_optional(objects, VOLUME_ATTACHMENT)
            self._attachments_listed = bool(listed)
            for va in listed:
                s = spec(va)
                attacher = str(s.get("attacher") or "")
                source = s.get("source")
                pv_name = source.get("persistentVolumeName") if isinstance(source, Mapping) else None
                if not attacher or not pv_name:
                    continue
                pv = objects.get(PV, "", str(pv_name))
                csi = spec(pv).get("csi") if pv is not None else None
                if not isinstance(csi, Mapping):
                    continue
                unique = f"{attacher}/{csi.get('volumeHandle') or ''}"
                by_node.setdefault(str(s.get("nodeName") or ""), []).append(
                    (unique, csi_attach_limit_key(attacher))
                )
            st.attachments = by_node
            if key is not None:
                self._attachments_cache = (key, by_node)
        return st.attachments

    def _kept(self, st: _State) -> dict[str, _Usage] | None:
        """The usages kept for the store's versions this cycle read, if any may be kept."""
        versions = st.versions
        if versions is None or versions != self._usage_versions:
            return None
        return self._usage

    def _kept_usage(self, st: _State, node_info: NodeInfo, node_name: str) -> _Usage | None:
        """The node's _Usage kept from an earlier cycle, if derived from this NodeInfo generation."""
        kept = self._kept(st)
        usage = kept.get(node_name) if kept is not None else None
        if usage is not None and usage.generation == node_info.generation:
            return usage
        return None

    def _node_usage(
        self,
        objects: ClusterObjects,
        st: _State,
        node_info: NodeInfo,
        node_name: str,
        csi_node: JSONMap | None,
    ) -> _Usage:
        """The node's _Usage derived now (and kept when the store keeps versions)."""
        kept = self._kept(st)
        limits = node_volume_limits(node_info, csi_node)
        attached: dict[str, str] = {}
        used: dict[str, int] = {}
        error: Status | None = None
        deps: list[tuple[str, str]] = [(CSI_NODE, f"/{node_name}")]
        if limits:  # without limits the node fits whatever its pods use: nothing more to derive
            for pi in node_info.pods:
                found = st.existing.get(pi.pod.uid)
                if found is None:
                    pod_deps: list[tuple[str, str]] = []
                    found = (self._resolve(objects, pi.pod, False, pod_deps), pod_deps)
                    st.existing[pi.pod.uid] = found
                deps.extend(found[1])
                error = self._collect(found[0], csi_node, attached)
                if error is not None:
                    break
            if error is None:
                for key in attached.values():
                    used[key] = used.get(key, 0) + 1
                seen: set[str] = set()
                attachments = self._attachments(objects, st)
                if self._attachments_listed:
                    self._usage_saw_attachments = True
                for unique, key in attachments.get(node_name, ()):
                    if unique not in attached and unique not in seen:
                        seen.add(unique)
                        used[key] = used.get(key, 0) + 1
        if error is not None:
            min_room = -1
        else:
            min_room = min((n - used.get(k, 0) for k, n in limits.items()), default=_NO_LIMIT)
        usage = _Usage(limits, attached, used, error, min_room, node_info.generation)
        if kept is not None:
            kept[node_name] = usage
            index = self._deps
            for dep in deps:
                names = index.get(dep)
                if names is None:
                    index[dep] = {node_name}
                else:
                    names.add(node_name)
        return usage

    # -- extension points ----------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not has_attachable_volume(pod):
            return None, Status.skip(NAME)
        state.write(STATE_KEY, self._new_state(pod, len(nodes)))
        return None, None

    def _new_state(self, pod: Pod, nodes: int) -> _State:
        objects = self._handle.objects
        # the versions are read before any object, so that what is derived from the objects read after
        # is at least as new as the versions it is stamped with
        versions = store_versions(objects, _VERSIONED_KINDS)
        self._sync_kept(objects, versions, nodes)
        new_volumes = self._resolve(objects, pod, True)
        st = _State(new_volumes, versions)
        if not any(v.plugin for v in new_volumes):
            fixed: dict[str, str] = {}
            st.fixed_new = (fixed, self._collect(new_volumes, None, fixed))
        return st

    def pre_filter_extensions(self) -> None:
        return None

    def _sync_kept(self, objects: ClusterObjects, versions: tuple[int, ...] | None, nodes: int) -> None:
        """Bring the kept usages to ``versions``: drop those that read an object changed since the
        versions they were kept at, or all of them where that cannot be told (a StorageClass or
        VolumeAttachment changed, a PV changed while VolumeAttachments counted, more changes than the
        store remembers), and all of them when they have outgrown the cluster (nodes that went away)."""
        old = self._usage_versions
        # (the index needs no such bound: a key leaves it when its object changes or goes)
        if nodes and len(self._usage) > 2 * nodes + 64:
            self._drop_kept()
        if versions == old:
            return
        self._usage_versions = versions
        if versions is None or old is None:
            self._drop_kept()
            return
        for kind, before, now in zip(_VERSIONED_KINDS, old, versions, strict=True):
            if before == now:
                continue
            if kind in (STORAGE_CLASS, VOLUME_ATTACHMENT) or (kind == PV and self._usage_saw_attachments):
                self._drop_kept()
                return
            keys = store_changes(objects, kind, before)
            if keys is None:
                self._drop_kept()
                return
            for key in keys:
                for name in self._deps.pop((kind, key), ()):
                    self._usage.pop(name, None)

    def _drop_kept(self) -> None:
        self._usage = {}
        self._deps = {}
        self._usage_saw_attachments = False

    def _state(self, state: CycleState, pod: Pod) -> _State:
        st = state.get(STATE_KEY)
        if not isinstance(st, _State):
            st = self._new_state(pod, 0)
            state.write(STATE_KEY, st)
        return st

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.volumes:
            return None
        return self._filter(self._handle.objects, self._state(state, pod), node_info)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        if not pod.volumes:
            return [None] * len(nodes)
        objects = self._handle.objects
        st = self._state(state, pod)
        f = self._filter
        kept = self._kept(st)
        if st.fixed_new is None or kept is None:
            return [f(objects, st, ni) for ni in nodes]
        new_volumes, err = st.fixed_new
        if err is not None:
            return [f(objects, st, ni) for ni in nodes]
        if not new_volumes:
            return [None] * len(nodes)
        # _filter's common case inline: the new volumes known, each node's usage kept from before
        count, verdict = len(new_volumes), _verdict
        out: list[Status | None] = []
        for ni in nodes:
            node = ni.node
            usage = kept.get(node.name) if node is not None else None
            if usage is None or usage.generation != ni.generation:
                out.append(f(objects, st, ni))
            elif count <= usage.min_room:
                out.append(None)
            else:
                out.append(verdict(usage, new_volumes))
        return out

    def _filter(self, objects: ClusterObjects, st: _State, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.as_error("node not found", plugin=NAME)
        name = node.name
        read = False  # the CSINode: read only when the pod's volumes or a derived usage need it
        csi_node = None
        if st.fixed_new is not None:  # the common case
            new_volumes, err = st.fixed_new
        else:
            csi_node, read = objects.get(CSI_NODE, "", name), True
            new_volumes = {}
            err = self._collect(st.new_volumes, csi_node, new_volumes)
        if err is not None:
            return err
        if not new_volumes:
            return None
        usage = self._kept_usage(st, node_info, name)
        if usage is None:
            if not read:
                csi_node = objects.get(CSI_NODE, "", name)
            usage = self._node_usage(objects, st, node_info, name, csi_node)
        return _verdict(usage, new_volumes)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            # any new CSINode may bring room (or limits it did not have)
            ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, Action.ADD)),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_NODE, Action.UPDATE), is_schedulable_after_csi_node_updated
            ),
            # a deleted pod frees its attachments
            ClusterEventWithHint(
                ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE), is_schedulable_after_pod_deleted
            ),
            # the claim the pod waits for got created
            ClusterEventWithHint(ClusterEvent(Resource.PVC, Action.ADD), is_schedulable_after_pvc_added),
        ]


def _verdict(usage: _Usage, new_volumes: Mapping[str, str]) -> Status | None:
    """Whether the new volumes (<driver>/<handle> -> limit key, at least one) fit the node's usage."""
    limits = usage.limits
    if not limits:
        return None
    if usage.error is not None:
        return usage.error
    attached, used = usage.attached, usage.used
    wanted: dict[str, int] = {}
    for unique, key in new_volumes.items():
        # a volume already used on the node is not attached again
        if unique not in attached:
            wanted[key] = wanted.get(key, 0) + 1
    for key, count in wanted.items():
        limit = limits.get(key)
        if limit is not None and used.get(key, 0) + count > limit:
            return _EXCEEDED
    return None


# ------------------------------------------------------------------------------------ hints


def _driver_counts(csi_node: JSONMap) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in spec(csi_node).get("drivers") or ():
        if isinstance(d, Mapping):
            alloc = d.get("allocatable")
            count = alloc.get("count") if isinstance(alloc, Mapping) else None
            if count is not None:
                out[str(d.get("name") or "")] = int(count)
    return out


def is_schedulable_after_csi_node_updated(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A driver's attach limit was raised or lifted, or the migrated plugins changed."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return QueueingHint.QUEUE
    before, after = _driver_counts(old), _driver_counts(new)
    for driver, count in before.items():
        if driver not in after or after[driver] > count:
            return QueueingHint.QUEUE
    if migrated_plugins(old) != migrated_plugins(new):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A pod that was on (or nominated to) a node and had attachable volumes went away."""
    deleted = as_pod(old)
    if deleted is None:
        return QueueingHint.QUEUE
    if not deleted.volumes:
        return QueueingHint.SKIP
    if not deleted.node_name and not deleted.nominated_node_name:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE if has_attachable_volume(deleted) else QueueingHint.SKIP


def is_schedulable_after_pvc_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A claim the pod uses (a PVC volume or a generic ephemeral volume's claim) was created."""
    if not isinstance(new, Mapping):
        return QueueingHint.QUEUE
    md = meta(new)
    if str(md.get("namespace") or "") != pod.namespace:
        return QueueingHint.SKIP
    name = str(md.get("name") or "")
    for v in pod.volumes:
        src = v.get("persistentVolumeClaim")
        if src is not None:
            claim = str(src.get("claimName") or "") if isinstance(src, Mapping) else ""
        elif v.get("ephemeral") is not None:
            claim = f"{pod.name}-{v.get('name') or ''}"
        else:
            continue
        if claim == name:
            return QueueingHint.QUEUE
    return QueueingHint.SKIP


def new(args: None, handle: Handle) -> NodeVolumeLimits:
    return NodeVolumeLimits(handle)


PLUGIN = PluginSpec(NAME, new, None, "CSI volumes per driver must fit the node's attach limits")
