"""A tenant namespace: quota, limits, default-deny network policy, a workload service account,
static PV/PVC pairs for FSx and the S3 buckets, (DRA mode) GPU claim templates, and the
RoleBindings of its people's groups."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from components.k8s.gpus import claim_template, gpu_quota
from components.k8s.namespaces import (
    NamespaceGuard,
    container_defaults,
    egress_https_outside_the_node,
    egress_to_pod_identity_agent,
    namespace_objects,
)
from components.k8s.tenant_rbac import role_bindings
from components.labels import TENANT_LABEL
from profiles import tenancy
from profiles.workloads import TenantConfig

SERVICE_ACCOUNT = "workload"


@dataclass(frozen=True, kw_only=True)
class SharedStorage:
    """What the storage layer provides; None where a part is disabled."""

    region: str
    """The platform's region (Mountpoint needs it)."""
    fsx_file_system_id: str | None
    """The FSx for Lustre file system; None: no file system, no FSx volume."""
    fsx_dns_name: str | None
    """The file system's DNS name."""
    fsx_mount_name: str | None
    """The file system's Lustre mount name."""
    fsx_capacity_gib: int
    """The file system's capacity, the size of its PersistentVolume."""
    fsx_tenant_directories: bool
    """Each tenant has a directory /<tenant> (made by its data repository associations): only then
    does a tenant get an FSx volume, a mount of that directory alone."""
    bucket_names: dict[str, str]
    """Purpose (datasets, checkpoints) -> bucket name."""

    @property
    def fsx_tenant_volume(self) -> bool:
        """Every tenant namespace gets an FSx volume (a claim named tenancy.FSX_VOLUME)."""
        return bool(self.fsx_file_system_id and self.fsx_mount_name and self.fsx_tenant_directories)


@dataclass(frozen=True, kw_only=True)
class TenantAdditions:
    """What others add to every tenant namespace (the enabled add-ons' parts)."""

    labels: Mapping[str, str] = field(default_factory=dict)
    """More labels on the namespace (e.g. the one a service's ingress policy admits its clients by)."""
    allow: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    """More NetworkPolicies (name -> spec): the add-ons' paths to and from the tenant's pods."""
    objects: tuple[dict[str, Any], ...] = ()
    """More objects in the namespace, created after the platform's own."""


@dataclass(frozen=True, kw_only=True)
class TenantProps:
    config: TenantConfig
    """The tenant's validated profile settings."""
    storage: SharedStorage
    """The shared volumes the tenant mounts."""
    dra_gpu_counts: tuple[int, ...]
    """One ResourceClaimTemplate per GPU count; empty: no DRA claim templates."""
    gpu_quota: int
    """The tenant's GPU quota (its setting, or the profile's whole GPU capacity)."""
    additions: TenantAdditions = field(default_factory=TenantAdditions)
    """What the enabled add-ons add to the namespace."""


def _meta(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return meta


def _static_volume(
    namespace: str, name: str, capacity: str, csi: dict[str, Any], mount_options: list[str] | None = None
) -> list[dict[str, Any]]:
    """A PV bound to exactly one PVC in the consuming namespace (a PVC cannot cross namespaces)."""
    pv_name = tenancy.persistent_volume(namespace, name)
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": _meta(pv_name),
        "spec": {
            "capacity": {"storage": capacity},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "claimRef": {"namespace": namespace, "name": name},
            "csi": csi,
            **({"mountOptions": mount_options} if mount_options else {}),
        },
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(name, namespace),
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": pv_name,
            "resources": {"requests": {"storage": capacity}},
        },
    }
    return [pv, pvc]


def tenant_objects(props: TenantProps) -> list[dict[str, Any]]:
    cfg, storage = props.config, props.storage
    ns = cfg.name
    guard = NamespaceGuard(
        name=ns,
        labels={TENANT_LABEL: ns, **props.additions.labels},
        allow={
            # Pod Identity: the agent hands out credentials, then the role is used against AWS APIs.
            "allow-pod-identity": egress_to_pod_identity_agent(),
            "allow-aws-apis": egress_https_outside_the_node(),
            **props.additions.allow,
        },
    )
    objects: list[dict[str, Any]] = [
        # No separate API-server allow: HTTPS outside the node already reaches its endpoint.
        *namespace_objects(guard, api=None),
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": _meta("compute", ns),
            "spec": {
                "hard": {
                    **({"requests.cpu": cfg.cpu_quota} if cfg.cpu_quota is not None else {}),
                    **({"requests.memory": cfg.memory_quota} if cfg.memory_quota is not None else {}),
                    **gpu_quota(props.gpu_quota, dra=bool(props.dra_gpu_counts)),
                    "persistentvolumeclaims": str(cfg.max_persistent_volume_claims),
                }
            },
        },
        # Defaults for containers that state nothing; GPU pods set their own requests and limits.
        container_defaults(ns),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(SERVICE_ACCOUNT, ns)},
    ]
    if storage.fsx_tenant_volume and storage.fsx_file_system_id and storage.fsx_mount_name:
        # A Lustre fileset mount of the tenant's own directory (/<tenant>, which the tenant's data
        # repository associations create): the rest of the file system is not visible through it.
        objects += _static_volume(
            ns,
            tenancy.FSX_VOLUME,
            f"{storage.fsx_capacity_gib}Gi",
            {
                "driver": "fsx.csi.aws.com",
                "volumeHandle": storage.fsx_file_system_id,
                "volumeAttributes": {
                    "dnsname": storage.fsx_dns_name,
                    "mountname": tenancy.fileset_mount_name(storage.fsx_mount_name, ns),
                },
            },
            mount_options=["flock"],
        )
    for purpose, bucket in sorted(storage.bucket_names.items()):
        # Mountpoint for S3 supports static provisioning only; the tenant sees its own prefix.
        objects += _static_volume(
            ns,
            tenancy.s3_volume(purpose),
            "1200Gi",
            {
                "driver": "s3.csi.aws.com",
                "volumeHandle": f"s3-{ns}-{purpose}",
                "volumeAttributes": {"bucketName": bucket},
            },
            mount_options=["allow-delete", f"region {storage.region}", f"prefix {tenancy.s3_prefix(ns)}"],
        )
    objects += [claim_template(ns, count) for count in props.dra_gpu_counts]
    objects += role_bindings(cfg)
    objects += props.additions.objects
    return objects
