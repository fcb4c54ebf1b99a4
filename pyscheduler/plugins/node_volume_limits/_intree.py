"""In-tree volume plugins and their CSI drivers, as csi-translation-lib knows them: which volume
sources can be migrated, the CSI driver each one becomes, and the volume handle the translated
volume gets (so the same disk counts once whichever pod mounts it).

Only the plugins whose CSI migration kube-scheduler 1.36 considers on count against CSI limits:
AWS EBS, GCE PD, Azure Disk and Cinder on every node that has a CSINode, Portworx where the CSINode's
``storage.alpha.kubernetes.io/migrated-plugins`` annotation lists it. Azure File and vSphere volumes
are migratable but never counted here.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

JSONMap = Mapping[str, Any]

ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
CSI_ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
RESOURCE_NAME_LENGTH_LIMIT = 63

AWS_EBS = "kubernetes.io/aws-ebs"
GCE_PD = "kubernetes.io/gce-pd"
AZURE_DISK = "kubernetes.io/azure-disk"
AZURE_FILE = "kubernetes.io/azure-file"
CINDER = "kubernetes.io/cinder"
VSPHERE = "kubernetes.io/vsphere-volume"
PORTWORX = "kubernetes.io/portworx-volume"

_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
_GA_ZONE = "topology.kubernetes.io/zone"
_UNSPECIFIED = "UNSPECIFIED"
_AWS_VOLUME_RE = re.compile(r"^vol-[^/]*$")


class TranslationError(ValueError):
    pass


def csi_attach_limit_key(driver: str) -> str:
    """GetCSIAttachLimitKey: the resource name of a driver's attach limit (hashed when too long)."""
    if len(CSI_ATTACH_LIMIT_PREFIX) + len(driver) >= RESOURCE_NAME_LENGTH_LIMIT:
        digest = hashlib.sha1(driver.encode(), usedforsecurity=False).hexdigest()[:16]
        return CSI_ATTACH_LIMIT_PREFIX + driver[:23] + digest
    return CSI_ATTACH_LIMIT_PREFIX + driver


def ebs_volume_id(kubernetes_id: str) -> str:
    """KubernetesVolumeIDToEBSVolumeID: ``aws://zone/vol-123`` or ``vol-123`` -> ``vol-123``."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    try:
        url = urlparse(kubernetes_id)
    except ValueError as e:
        raise TranslationError(f"Invalid disk name ({kubernetes_id}): {e}") from e
    aws_id = url.path.strip("/")
    if not _AWS_VOLUME_RE.match(aws_id):
        raise TranslationError(f"Invalid format for AWS volume ({kubernetes_id})")
    return aws_id


def _gce_region(zones: list[str]) -> str:
    region = ""
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(
                f"zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {zone}"
            )
        r = "-".join(parts[:2])
        if region and r != region:
            raise TranslationError(f"multiple zones specified with different regions: {zones}")
        region = r
    return region


def _gce_inline(src: JSONMap) -> str:
    return f"projects/{_UNSPECIFIED}/zones/{_UNSPECIFIED}/disks/{src.get('pdName') or ''}"


def _gce_pv(src: JSONMap, pv: JSONMap) -> str:
    md = pv.get("metadata")
    labels = md.get("labels") if isinstance(md, Mapping) else None
    labels = labels if isinstance(labels, Mapping) else {}
    zones_label = str(labels.get(_BETA_ZONE) or labels.get(_GA_ZONE) or "")
    zones = zones_label.split("__")
    pd = src.get("pdName") or ""
    if len(zones) == 1 and zones[0]:
        return f"projects/{_UNSPECIFIED}/zones/{zones[0]}/disks/{pd}"
    if len(zones) > 1:
        return f"projects/{_UNSPECIFIED}/regions/{_gce_region(zones)}/disks/{pd}"
    return _gce_inline(src)


def _field(name: str) -> Callable[[JSONMap], str]:
    def get(src: JSONMap) -> str:
        return str(src.get(name) or "")

    return get


@dataclass(frozen=True, slots=True)
class InTree:
    source_key: str  # the volume source's field name in Volume / PersistentVolumeSpec
    plugin: str  # the in-tree plugin name
    driver: str  # the CSI driver it migrates to
    counted: bool  # whether the scheduler may consider its migration on
    needs_annotation: bool  # migration on only where the CSINode annotation lists the plugin
    inline_handle: Callable[[JSONMap], str]
    pv_handle: Callable[[JSONMap, JSONMap], str]


def _ebs(src: JSONMap) -> str:
    return ebs_volume_id(str(src.get("volumeID") or ""))


IN_TREE: tuple[InTree, ...] = (
    InTree("awsElasticBlockStore", AWS_EBS, "ebs.csi.aws.com", True, False, _ebs, lambda s, _: _ebs(s)),
    InTree("gcePersistentDisk", GCE_PD, "pd.csi.storage.gke.io", True, False, _gce_inline, _gce_pv),
    InTree(
        "azureDisk",
        AZURE_DISK,
        "disk.csi.azure.com",
        True,
        False,
        _field("diskURI"),
        lambda s, _: _field("diskURI")(s),
    ),
    InTree(
        "cinder",
        CINDER,
        "cinder.csi.openstack.org",
        True,
        False,
        _field("volumeID"),
        lambda s, _: _field("volumeID")(s),
    ),
    InTree(
        "portworxVolume",
        PORTWORX,
        "pxd.portworx.com",
        True,
        True,
        _field("volumeID"),
        lambda s, _: _field("volumeID")(s),
    ),
    InTree("azureFile", AZURE_FILE, "file.csi.azure.com", False, False, _field("shareName"), lambda s, _: ""),
    InTree(
        "vsphereVolume",
        VSPHERE,
        "csi.vsphere.vmware.com",
        False,
        False,
        _field("volumePath"),
        lambda s, _: "",
    ),
)
BY_PLUGIN = {t.plugin: t for t in IN_TREE}
SOURCE_KEYS = tuple(t.source_key for t in IN_TREE)


def in_tree_source(obj: JSONMap) -> tuple[InTree, JSONMap] | None:
    """The in-tree source of a Volume or PersistentVolumeSpec, if it has one."""
    for t in IN_TREE:
        src = obj.get(t.source_key)
        if src is not None:
            return t, src if isinstance(src, Mapping) else {}
    return None


def migrated_plugins(csi_node: JSONMap | None) -> frozenset[str]:
    if csi_node is None:
        return frozenset()
    md = csi_node.get("metadata")
    ann = md.get("annotations") if isinstance(md, Mapping) else None
    value = ann.get(ANN_MIGRATED_PLUGINS) if isinstance(ann, Mapping) else None
    return frozenset(str(value).split(",")) if value else frozenset()


def is_csi_migration_on(csi_node: JSONMap | None, plugin: str) -> bool:
    """isCSIMigrationOn: needs a CSINode; AWS EBS, GCE PD, Azure Disk and Cinder are always
    migrated; Portworx only where the node says so; everything else never."""
    if csi_node is None or not plugin:
        return False
    t = BY_PLUGIN.get(plugin)
    if t is None or not t.counted:
        return False
    if not t.needs_annotation:
        return True
    return plugin in migrated_plugins(csi_node)
