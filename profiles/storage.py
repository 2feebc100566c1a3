"""Storage-layer settings: FSx for Lustre sizing rules and the data buckets' lifecycles."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, model_validator

from profiles.base import FieldProblem, Strict, quoted_version
from profiles.limits import (
    FSX_MAX_METADATA_IOPS,
    FSX_MAX_STORAGE_CAPACITY_GIB,
    FSX_MAX_THROUGHPUT_MBPS_PER_TIB,
    S3_MAX_LIFECYCLE_DAYS,
)
from profiles.unique import unique

# The storage layer's data buckets, by purpose (each tenant has a prefix and a volume in each).
DataBucketPurpose = Literal["datasets", "checkpoints"]
DATA_BUCKET_PURPOSES: tuple[DataBucketPurpose, ...] = ("datasets", "checkpoints")


def data_bucket_name(platform_name: str, purpose: str, account_id: str) -> str:
    """Bucket names are global: the account id keeps them unique. One definition, because the
    cluster layer scopes the Mountpoint role to these exact names before the buckets exist."""
    return f"{platform_name}-{purpose}-{account_id}"


FsxDeploymentType = Literal["SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"]
LustreVersion = Literal["2.12", "2.15"]
THROUGHPUT_MBPS_PER_TIB: dict[str, tuple[int, ...]] = {
    "SCRATCH_2": (),
    "PERSISTENT_1": (50, 100, 200),
    "PERSISTENT_2": (125, 250, 500, 1000),
}
# EFA-enabled PERSISTENT_2 file systems grow in units that depend on per-unit throughput.
EFA_CAPACITY_UNIT_GIB = {125: 38400, 250: 19200, 500: 9600, 1000: 4800}
MAX_DATA_REPOSITORY_ASSOCIATIONS = 8
FsxEvent = Literal["NEW", "CHANGED", "DELETED"]


def _nearest_steps(value: int, first: tuple[int, ...], step: int) -> list[int]:
    """The valid capacities just below and above `value`: `first` values, then multiples of `step`."""
    valid = sorted(set(first) | set(range(step, max(value, step) + 2 * step, step)))
    below = [v for v in valid if v < value][-1:]
    above = [v for v in valid if v > value][:1]
    return below + above


class DataRepositoryAssociation(Strict):
    """Links a directory of the file system to an S3 prefix of one of the platform's buckets."""

    file_system_path: str = Field(..., pattern=r"^(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)+$")
    """An absolute directory of the file system, e.g. /datasets (no . or .. segments, no trailing /)."""
    bucket: DataBucketPurpose
    """Which platform bucket this association links to the file system."""
    s3_prefix: str = Field("", pattern=r"^([A-Za-z0-9_-][A-Za-z0-9_.-]*/)*$")
    """Prefix ending in '/', or empty."""
    import_events: Annotated[list[FsxEvent], unique()] = Field(["NEW", "CHANGED", "DELETED"])
    """S3 changes FSx picks up."""
    export_events: Annotated[list[FsxEvent], unique()] = Field(["NEW", "CHANGED"])
    """FSx changes written back to S3. DELETED is opt-in: it deletes S3 objects."""


class FsxConfig(Strict):
    enabled: bool = Field(True)
    """Create the shared FSx for Lustre file system."""
    deployment_type: FsxDeploymentType = Field("SCRATCH_2")
    """SCRATCH_2 (default, cheapest, no replication) or PERSISTENT_1/2."""
    storage_capacity_gib: int = Field(1200, ge=1200, le=FSX_MAX_STORAGE_CAPACITY_GIB)
    """1200, 2400, then steps of 2400 (EFA: see FACTS)."""
    throughput_mbps_per_tib: int | None = Field(None, ge=0, le=FSX_MAX_THROUGHPUT_MBPS_PER_TIB)
    """Per-unit storage throughput; required for PERSISTENT types, not allowed for SCRATCH_2."""
    efa_enabled: bool = Field(False)
    """EFA-enabled file system (PERSISTENT_2 with Lustre 2.15 only)."""
    lustre_version: Annotated[LustreVersion, quoted_version(get_args(LustreVersion))] = "2.15"
    """Lustre version of the file system, in quotes (e.g. '2.15')."""
    data_compression: Literal["NONE", "LZ4"] = Field("LZ4")
    """LZ4 saves capacity and throughput on text data."""
    metadata_iops: int | None = Field(None, ge=0, le=FSX_MAX_METADATA_IOPS)
    """PERSISTENT_2 only: provisioned metadata IOPS (1500, 3000, 6000, 12000 or multiples of 12000 up to 192000).
    Unset: AUTOMATIC, scaled with capacity.
    """
    automatic_backup_retention_days: int = Field(0, ge=0, le=90)
    """0 disables backups; SCRATCH_2 has none."""

    @property
    def tenant_directories(self) -> bool:
        """Each tenant has a directory /<tenant> in the file system (its data repository
        associations make it), so each tenant namespace gets an FSx volume of it."""
        return self.enabled and bool(self.data_repository_associations)

    data_repository_associations: list[DataRepositoryAssociation] = Field(default_factory=list)
    """Links between FSx paths and S3 prefixes; each tenant gets its own copy under /<tenant>."""

    @property
    def checkpoint_export(self) -> DataRepositoryAssociation | None:
        """The association that exports new and changed files to the checkpoints bucket: where the
        Trainer runtimes put a tenant's checkpoints on FSx (under its /<tenant>), so each one also
        lands in s3://<checkpoints>/<tenant>/ without the job copying it. None: there is none."""
        for association in self.data_repository_associations:
            if association.bucket == "checkpoints" and {"NEW", "CHANGED"} <= set(association.export_events):
                return association
        return None

    # One validator per sizing rule, run in this order; the first broken rule is reported.
    @model_validator(mode="after")
    def _throughput_fits_the_deployment_type(self) -> FsxConfig:
        kind, throughput = self.deployment_type, self.throughput_mbps_per_tib
        allowed = THROUGHPUT_MBPS_PER_TIB[kind]
        if not allowed and throughput is not None:
            raise FieldProblem(
                "throughput_mbps_per_tib",
                throughput,
                f"{kind} has no per-unit throughput setting",
                allowed="unset (null)",
            )
        if allowed and throughput not in allowed:
            raise FieldProblem(
                "throughput_mbps_per_tib",
                throughput,
                f"not a per-unit throughput of {kind}",
                allowed=", ".join(map(str, allowed)),
            )
        return self

    @model_validator(mode="after")
    def _capacity_is_a_valid_step(self) -> FsxConfig:
        kind, capacity, throughput = self.deployment_type, self.storage_capacity_gib, self.throughput_mbps_per_tib
        if self.efa_enabled:
            if kind != "PERSISTENT_2" or self.lustre_version != "2.15" or throughput is None:
                raise FieldProblem(
                    "efa_enabled",
                    True,
                    "EFA-enabled file systems are PERSISTENT_2 with Lustre 2.15",
                    allowed=f"false for {kind} / Lustre {self.lustre_version}",
                )
            unit = EFA_CAPACITY_UNIT_GIB[throughput]
            if capacity % unit:
                nearest = " or ".join(map(str, _nearest_steps(capacity, (), unit)))
                raise FieldProblem(
                    "storage_capacity_gib",
                    capacity,
                    f"an EFA-enabled file system at {throughput} MB/s/TiB grows in units of {unit} GiB",
                    allowed=f"a multiple of {unit}; nearest: {nearest}",
                )
        elif capacity not in (1200, 2400) and capacity % 2400:
            nearest = " or ".join(map(str, _nearest_steps(capacity, (1200, 2400), 2400)))
            raise FieldProblem(
                "storage_capacity_gib",
                capacity,
                f"not a valid {kind} capacity",
                allowed=f"1200, 2400 or a multiple of 2400; use {nearest}",
            )
        return self

    @model_validator(mode="after")
    def _metadata_iops_level(self) -> FsxConfig:
        iops = self.metadata_iops
        if iops is None:
            return self
        if self.deployment_type != "PERSISTENT_2":
            raise FieldProblem(
                "metadata_iops", iops, "metadata IOPS are a PERSISTENT_2 setting", allowed="unset (null)"
            )
        if iops not in (1500, 3000, 6000) and (iops % 12000 or not 0 < iops <= 192000):
            raise FieldProblem(
                "metadata_iops",
                iops,
                "not a metadata IOPS level",
                allowed="1500, 3000, 6000, 12000 or a multiple of 12000 up to 192000",
            )
        return self

    @model_validator(mode="after")
    def _backups_only_when_persistent(self) -> FsxConfig:
        if self.deployment_type == "SCRATCH_2" and self.automatic_backup_retention_days:
            raise FieldProblem(
                "automatic_backup_retention_days",
                self.automatic_backup_retention_days,
                "SCRATCH_2 file systems have no backups",
                allowed="0, or a PERSISTENT deployment type",
            )
        return self

    @model_validator(mode="after")
    def _associations_fit(self) -> FsxConfig:
        associations = self.data_repository_associations
        if len(associations) > MAX_DATA_REPOSITORY_ASSOCIATIONS:
            raise FieldProblem(
                "data_repository_associations",
                f"{len(associations)} associations",
                "too many data repository associations for one file system",
                allowed=f"at most {MAX_DATA_REPOSITORY_ASSOCIATIONS}",
            )
        paths = [a.file_system_path.rstrip("/") for a in associations]
        for index, path in enumerate(paths):
            if any(other == path or other.startswith(path + "/") for other in paths[:index] + paths[index + 1 :]):
                raise FieldProblem(
                    ("data_repository_associations", index, "file_system_path"),
                    path,
                    "file system paths of associations must not repeat or nest",
                )
        return self


class BucketLifecycle(Strict):
    noncurrent_version_expiration_days: int = Field(30, ge=1, le=S3_MAX_LIFECYCLE_DAYS)
    """Old object versions are deleted after this."""
    abort_incomplete_multipart_upload_days: int = Field(7, ge=1, le=S3_MAX_LIFECYCLE_DAYS)
    """Days after which unfinished multipart uploads are aborted (they are billed until then)."""
    intelligent_tiering_after_days: int | None = Field(None, ge=0, le=S3_MAX_LIFECYCLE_DAYS)
    """Move current objects to S3 Intelligent-Tiering after N days; unset: never."""


class StorageConfig(Strict):
    protect_from_destroy: bool = Field(True)
    """prevent_destroy on the file system and buckets. Turn off only for throw-away environments."""
    fsx: FsxConfig = Field(default_factory=FsxConfig)
    """FSx for Lustre file system shared by training jobs."""
    datasets_bucket: BucketLifecycle = Field(default_factory=BucketLifecycle)
    """Lifecycle of the datasets bucket."""
    checkpoints_bucket: BucketLifecycle = Field(default_factory=BucketLifecycle)
    """Lifecycle of the checkpoints bucket."""
