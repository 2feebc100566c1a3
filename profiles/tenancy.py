"""Where a tenant's data lives, stated once for every layer that builds on it.

A tenant is a namespace. Its data lives under `<tenant>/` in every platform bucket and under
`/<tenant>` in the FSx file system (each data repository association is made once per tenant,
linking `/<tenant><path>` with `s3://<bucket>/<tenant>/<prefix>`). Its workload role may use only
its prefix of the buckets, and its volumes mount only its directory (a Lustre fileset mount of
`/<tenant>`, Mountpoint for S3 with `prefix <tenant>/`). The storage layer (associations), the
workloads layer (role, volumes) and the name checks all read this module.
"""

from __future__ import annotations

# The static volumes every tenant namespace gets: the FSx directory and one per data bucket.
FSX_VOLUME = "fsx"


def s3_prefix(tenant: str) -> str:
    """The tenant's prefix in every platform bucket (its role reaches nothing else)."""
    return f"{tenant}/"


def fsx_directory(tenant: str) -> str:
    """The tenant's directory in the FSx file system (its volume mounts nothing else)."""
    return f"/{tenant}"


def association(tenant: str | None, file_system_path: str, s3_key_prefix: str) -> tuple[str, str]:
    """An association's (file system path, S3 key prefix) for a tenant, or as written without one."""
    if tenant is None:
        return file_system_path, s3_key_prefix
    return f"{fsx_directory(tenant)}{file_system_path}", f"{s3_prefix(tenant)}{s3_key_prefix}"


def fileset_mount_name(mount_name: str, tenant: str) -> str:
    """The Lustre mount name that mounts only the tenant's directory (a fileset mount)."""
    return f"{mount_name}{fsx_directory(tenant)}"


def s3_volume(bucket_purpose: str) -> str:
    """The tenant's volume (PVC) name for one data bucket."""
    return f"s3-{bucket_purpose}"


def persistent_volume(tenant: str, volume: str) -> str:
    """The cluster-wide PersistentVolume name behind a tenant's volume."""
    return f"{tenant}-{volume}"


def role_name(platform: str, tenant: str) -> str:
    """The IAM role the tenant's workloads run as."""
    return f"{platform}-tenant-{tenant}"
