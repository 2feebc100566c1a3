"""The profile model: everything a user sets, validated once, at the edge.

Strict by design: unknown keys are rejected, models are frozen, choices are literals in the
service's own vocabulary and units are part of field names. Defaults are the safe, cheap
choice; each field's description says what the default does.

Cross-field problems raise `FieldProblem`, which names the offending field so that the loader
can print `path.to.field: message (got value; allowed: ...)`.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from components.helm.charts import CHARTS, MIN_VERSIONS
from profiles.catalog import CATALOG, lookup


class FieldProblem(ValueError):
    """A validation problem in one named field of the model that raises it."""

    def __init__(self, field: str | tuple[str | int, ...], value: Any, message: str, allowed: str = ""):
        self.field = (field,) if isinstance(field, str) else tuple(field)
        self.value = value
        self.allowed = allowed
        super().__init__(message)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Name = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$")]
Region = Annotated[str, Field(pattern=r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d$", description="AWS region, e.g. us-east-1.")]
# Kubernetes label: optional DNS-subdomain prefix and a name of up to 63 characters; value up to 63.
LabelKey = Annotated[str, Field(pattern=r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")]
LabelValue = Annotated[str, Field(pattern=r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")]
Cidr = Annotated[str, Field(description="An IPv4 CIDR block, e.g. 10.0.0.0/16")]
IamPrincipalArn = Annotated[
    str, Field(pattern=r"^arn:aws[a-z-]*:iam::\d{12}:(role|user)/[\w+=,.@/-]+$")
]

KUBERNETES_VERSIONS = ("1.31", "1.32", "1.33", "1.34", "1.35")
KubernetesVersion = Literal["1.31", "1.32", "1.33", "1.34", "1.35"]
ControlPlaneLogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]
InterfaceEndpoint = Literal["ecr.api", "ecr.dkr", "sts", "ec2", "eks-auth", "ssm"]


def _check_cidr(value: str) -> str:
    try:
        ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"not an IPv4 CIDR block with its host bits zero ({exc})") from None
    return value


# --------------------------------------------------------------------------- state


class StateConfig(Strict):
    """Where each layer keeps its Terraform state (one state per layer)."""

    bucket: str | None = Field(
        None,
        description="S3 bucket for remote state with native S3 lock files. Unset: a local "
        "backend writes state/<layer>.tfstate next to the project.",
        pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$",
    )
    key_prefix: str = Field("gpu-platform", description="Keys are <key_prefix>/<profile name>/<layer>.tfstate.")
    region: Region | None = Field(None, description="Region of the state bucket; default: the profile's region.")


# --------------------------------------------------------------------------- cluster


class VpcConfig(Strict):
    cidr: Cidr = Field("10.0.0.0/16", description="VPC CIDR; subnets are carved from it per AZ.")
    availability_zones: list[str] = Field(
        ...,
        min_length=2,
        max_length=4,
        description="AZ names the VPC spans (at least two, as EKS requires). Named explicitly so "
        "synthesis is deterministic and GPU capacity can be pinned to a known AZ.",
    )
    gpu_availability_zone: str | None = Field(
        None, description="AZ of the GPU subnet (EFA does not cross AZs). Default: the first AZ."
    )
    nat_gateways: Literal["single", "per_az"] = Field(
        "single", description="One shared NAT gateway (cheap) or one per AZ (survives an AZ outage)."
    )
    interface_endpoints: list[InterfaceEndpoint] = Field(
        default_factory=list,
        description="Interface VPC endpoints in the private subnets. Default: none (each costs "
        "per hour per AZ); the S3 gateway endpoint is always created (free).",
    )

    @field_validator("cidr")
    @classmethod
    def _vpc_cidr(cls, value: str) -> str:
        return _check_cidr(value)

    @field_validator("availability_zones")
    @classmethod
    def _unique_azs(cls, zones: list[str]) -> list[str]:
        if len(set(zones)) != len(zones):
            raise ValueError("availability zones must be distinct")
        return zones

    @model_validator(mode="after")
    def _gpu_az_in_vpc(self) -> VpcConfig:
        if self.gpu_availability_zone is not None and self.gpu_availability_zone not in self.availability_zones:
            raise FieldProblem(
                "gpu_availability_zone",
                self.gpu_availability_zone,
                "the GPU availability zone is not one the VPC spans",
                allowed=", ".join(self.availability_zones),
            )
        if ipaddress.IPv4Network(self.cidr).prefixlen > 20:
            raise FieldProblem("cidr", self.cidr, "the VPC needs room for 2 subnets per AZ", allowed="a /20 or larger block")
        return self

    @property
    def gpu_az(self) -> str:
        return self.gpu_availability_zone or self.availability_zones[0]


class SystemNodeGroupConfig(Strict):
    instance_types: list[str] = Field(["m6i.xlarge"], min_length=1, description="Instance types for cluster services.")
    min_size: int = Field(2, ge=1)
    desired_size: int = Field(2, ge=1)
    max_size: int = Field(4, ge=1)
    disk_size_gib: int = Field(100, ge=20, le=16384, description="Encrypted gp3 root volume.")

    @model_validator(mode="after")
    def _sizes(self) -> SystemNodeGroupConfig:
        _check_sizes(self.min_size, self.desired_size, self.max_size)
        return self


def _check_sizes(min_size: int, desired_size: int, max_size: int) -> None:
    if min_size > max_size:
        raise FieldProblem("min_size", min_size, "min_size is above max_size", allowed=f"0..{max_size}")
    if not min_size <= desired_size <= max_size:
        raise FieldProblem(
            "desired_size", desired_size, "desired_size must lie between min_size and max_size",
            allowed=f"{min_size}..{max_size}",
        )


RESERVATION_ID = re.compile(r"^cr-[0-9a-f]{17}$")


class OnDemandCapacity(Strict):
    type: Literal["on_demand"] = "on_demand"


class OdcrCapacity(Strict):
    """On-Demand Capacity Reservation: one reservation, or a resource group of reservations
    (more capacity later needs no node-group change)."""

    type: Literal["odcr"]
    reservation_id: str | None = None
    resource_group_arn: str | None = Field(None, pattern=r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/[\w.-]+$")
    availability_zone: str = Field(..., description="The AZ the reservation was made in.")

    @model_validator(mode="after")
    def _one_target(self) -> OdcrCapacity:
        if (self.reservation_id is None) == (self.resource_group_arn is None):
            raise FieldProblem(
                "reservation_id", self.reservation_id,
                "an ODCR targets exactly one of reservation_id or resource_group_arn",
            )
        if self.reservation_id is not None:
            _check_reservation_id(self.reservation_id)
        return self


class CapacityBlock(Strict):
    """EC2 Capacity Block for ML: a fixed number of instances for a fixed window."""

    type: Literal["capacity_block"]
    reservation_id: str | None = Field(None, description="The Capacity Block's reservation id (cr-...).")
    instance_count: int = Field(..., ge=1, description="Instances in the block; node group sizes stay within it.")
    availability_zone: str = Field(..., description="The AZ the block was bought in.")

    @model_validator(mode="after")
    def _has_reservation(self) -> CapacityBlock:
        if self.reservation_id is None:
            raise FieldProblem(
                "reservation_id", None,
                "a Capacity Block node group needs the block's reservation id", allowed="cr- followed by 17 hex digits",
            )
        _check_reservation_id(self.reservation_id)
        return self


def _check_reservation_id(value: str) -> None:
    if not RESERVATION_ID.match(value):
        raise FieldProblem("reservation_id", value, "not a capacity reservation id", allowed="cr- followed by 17 hex digits")


Capacity = Annotated[OnDemandCapacity | OdcrCapacity | CapacityBlock, Field(discriminator="type")]


class GpuNodeGroupConfig(Strict):
    name: Name
    instance_type: str = Field(..., description="A type from the GPU instance catalog (profiles/catalog.py).")
    efa_enabled: bool = Field(
        False, description="Attach one EFA interface per EFA-capable network card. Only on types with EFA."
    )
    min_size: int = Field(0, ge=0)
    desired_size: int = Field(
        0, ge=0, description="Initial size only: after the first apply autoscalers own it (ignored on update)."
    )
    max_size: int = Field(2, ge=1)
    root_volume_size_gib: int = Field(200, ge=50, le=16384, description="Encrypted gp3 root volume (images are large).")
    capacity: Capacity = Field(default_factory=OnDemandCapacity)
    placement_group: Literal["cluster", "none", "reservation"] | None = Field(
        None,
        description="cluster: a new cluster placement group; none: no placement group; reservation: "
        "the one named in existing_placement_group. Default: cluster for on-demand capacity, none for "
        "reserved capacity (forcing a group onto a reservation bought without one fails to launch).",
    )
    existing_placement_group: str | None = Field(None, description="Placement group that came with the reservation.")
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict, description="Extra Kubernetes node labels.")
    max_unavailable: int = Field(1, ge=1, description="Nodes replaced at once during an update.")

    @field_validator("instance_type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in CATALOG:
            raise ValueError(
                f"unknown GPU instance type {value!r}; the catalog knows {', '.join(sorted(CATALOG))}. "
                "To add one, append its EC2 facts to profiles/catalog.py"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> GpuNodeGroupConfig:
        entry = lookup(self.instance_type)
        if self.efa_enabled and not entry.efa_supported:
            with_efa = sorted(n for n, e in CATALOG.items() if e.family == entry.family and e.efa_supported)
            raise FieldProblem(
                "efa_enabled", True, f"{self.instance_type} has no EFA",
                allowed=f"efa_enabled: false, or a size with EFA: {', '.join(with_efa) or 'none in this family'}",
            )
        _check_sizes(self.min_size, self.desired_size, self.max_size)
        if isinstance(self.capacity, CapacityBlock) and self.max_size > self.capacity.instance_count:
            raise FieldProblem(
                "max_size", self.max_size, "the node group is larger than its Capacity Block",
                allowed=f"at most capacity.instance_count ({self.capacity.instance_count})",
            )
        reserved = not isinstance(self.capacity, OnDemandCapacity)
        if self.placement_group == "cluster" and reserved:
            raise FieldProblem(
                "placement_group", "cluster",
                "reserved capacity comes with its own placement group or none; forcing a new one fails to launch",
                allowed="none, reservation",
            )
        if (self.placement_group == "reservation") != (self.existing_placement_group is not None):
            raise FieldProblem(
                "existing_placement_group", self.existing_placement_group,
                "existing_placement_group is set exactly when placement_group is 'reservation'",
            )
        return self

    @property
    def catalog_entry(self):
        return lookup(self.instance_type)

    @property
    def placement(self) -> Literal["cluster", "none", "reservation"]:
        if self.placement_group is not None:
            return self.placement_group
        return "cluster" if isinstance(self.capacity, OnDemandCapacity) else "none"


class ClusterConfig(Strict):
    kubernetes_version: KubernetesVersion = Field(
        "1.33", description="EKS version. Default: the newest EKS version current when hashicorp/aws 5.100.0 shipped."
    )
    vpc: VpcConfig
    endpoint_public_access_cidrs: list[Cidr] = Field(
        default_factory=list,
        description="CIDRs allowed to reach the public API endpoint. Empty (default): public endpoint "
        "off, the API is reachable only from inside the VPC. The private endpoint is always on.",
    )
    admin_principal_arns: list[IamPrincipalArn] = Field(
        default_factory=list,
        description="IAM roles/users granted cluster admin through access entries, besides the deploying principal.",
    )
    control_plane_log_types: list[ControlPlaneLogType] = Field(
        ["api", "audit", "authenticator"], description="Control-plane logs sent to CloudWatch."
    )
    system_node_group: SystemNodeGroupConfig = Field(default_factory=SystemNodeGroupConfig)
    gpu_node_groups: list[GpuNodeGroupConfig] = Field(default_factory=list)

    @field_validator("endpoint_public_access_cidrs")
    @classmethod
    def _cidrs(cls, cidrs: list[str]) -> list[str]:
        for cidr in cidrs:
            _check_cidr(cidr)
            if ipaddress.IPv4Network(cidr).prefixlen == 0:
                raise ValueError("0.0.0.0/0 opens the API endpoint to the internet; name your own egress CIDRs")
        return cidrs

    @model_validator(mode="after")
    def _groups(self) -> ClusterConfig:
        names = [group.name for group in self.gpu_node_groups]
        for index, name in enumerate(names):
            if names.index(name) != index:
                raise FieldProblem(("gpu_node_groups", index, "name"), name, "GPU node group names must be unique")
        for index, group in enumerate(self.gpu_node_groups):
            capacity_az = getattr(group.capacity, "availability_zone", None)
            if capacity_az is not None and capacity_az != self.vpc.gpu_az:
                raise FieldProblem(
                    ("gpu_node_groups", index, "capacity", "availability_zone"), capacity_az,
                    "reserved capacity must be in the GPU availability zone",
                    allowed=f"{self.vpc.gpu_az} (cluster.vpc.gpu_availability_zone)",
                )
        return self


# --------------------------------------------------------------------------- storage and build


FsxDeploymentType = Literal["SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"]
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

    file_system_path: str = Field(..., pattern=r"^/[A-Za-z0-9_.\-/]+$", description="e.g. /datasets")
    bucket: Literal["datasets", "checkpoints"]
    s3_prefix: str = Field("", pattern=r"^([A-Za-z0-9_.\-]+/)*$", description="Prefix ending in '/', or empty.")
    import_events: list[FsxEvent] = Field(["NEW", "CHANGED", "DELETED"], description="S3 changes FSx picks up.")
    export_events: list[FsxEvent] = Field(
        ["NEW", "CHANGED"], description="FSx changes written back to S3. DELETED is opt-in: it deletes S3 objects."
    )


class FsxConfig(Strict):
    enabled: bool = Field(True, description="Create the shared FSx for Lustre file system.")
    deployment_type: FsxDeploymentType = Field(
        "SCRATCH_2", description="SCRATCH_2 (default, cheapest, no replication) or PERSISTENT_1/2."
    )
    storage_capacity_gib: int = Field(1200, ge=1200, description="1200, 2400, then steps of 2400 (EFA: see FACTS).")
    throughput_mbps_per_tib: int | None = Field(
        None, description="Per-unit storage throughput; required for PERSISTENT types, not allowed for SCRATCH_2."
    )
    efa_enabled: bool = Field(False, description="EFA-enabled file system (PERSISTENT_2 with Lustre 2.15 only).")
    lustre_version: Literal["2.12", "2.15"] = "2.15"
    data_compression: Literal["NONE", "LZ4"] = Field("LZ4", description="LZ4 saves capacity and throughput on text data.")
    metadata_iops: int | None = Field(
        None, description="PERSISTENT_2 only: provisioned metadata IOPS (1500, 3000, 6000, 12000 or multiples of "
        "12000 up to 192000). Unset: AUTOMATIC, scaled with capacity.",
    )
    automatic_backup_retention_days: int = Field(0, ge=0, le=90, description="0 disables backups; SCRATCH_2 has none.")
    data_repository_associations: list[DataRepositoryAssociation] = Field(default_factory=list)

    @model_validator(mode="after")
    def _sizing(self) -> FsxConfig:
        kind, capacity, throughput = self.deployment_type, self.storage_capacity_gib, self.throughput_mbps_per_tib
        allowed_throughput = THROUGHPUT_MBPS_PER_TIB[kind]
        if not allowed_throughput and throughput is not None:
            raise FieldProblem("throughput_mbps_per_tib", throughput, f"{kind} has no per-unit throughput setting",
                               allowed="unset (null)")
        if allowed_throughput and throughput not in allowed_throughput:
            raise FieldProblem("throughput_mbps_per_tib", throughput, f"not a per-unit throughput of {kind}",
                               allowed=", ".join(map(str, allowed_throughput)))
        if self.efa_enabled:
            if kind != "PERSISTENT_2" or self.lustre_version != "2.15":
                raise FieldProblem("efa_enabled", True, "EFA-enabled file systems are PERSISTENT_2 with Lustre 2.15",
                                   allowed=f"false for {kind} / Lustre {self.lustre_version}")
            unit = EFA_CAPACITY_UNIT_GIB[throughput]
            if capacity % unit:
                nearest = _nearest_steps(capacity, (), unit)
                raise FieldProblem(
                    "storage_capacity_gib", capacity,
                    f"an EFA-enabled file system at {throughput} MB/s/TiB grows in units of {unit} GiB",
                    allowed=f"a multiple of {unit}; nearest: {' or '.join(map(str, nearest))}",
                )
        elif capacity not in (1200, 2400) and capacity % 2400:
            nearest = _nearest_steps(capacity, (1200, 2400), 2400)
            raise FieldProblem(
                "storage_capacity_gib", capacity, f"not a valid {kind} capacity",
                allowed=f"1200, 2400 or a multiple of 2400; use {' or '.join(map(str, nearest))}",
            )
        if self.metadata_iops is not None:
            valid_iops = (1500, 3000, 6000)
            if kind != "PERSISTENT_2":
                raise FieldProblem("metadata_iops", self.metadata_iops, "metadata IOPS are a PERSISTENT_2 setting",
                                   allowed="unset (null)")
            if self.metadata_iops not in valid_iops and (self.metadata_iops % 12000 or not 0 < self.metadata_iops <= 192000):
                raise FieldProblem("metadata_iops", self.metadata_iops, "not a metadata IOPS level",
                                   allowed="1500, 3000, 6000, 12000 or a multiple of 12000 up to 192000")
        if kind == "SCRATCH_2" and self.automatic_backup_retention_days:
            raise FieldProblem("automatic_backup_retention_days", self.automatic_backup_retention_days,
                               "SCRATCH_2 file systems have no backups", allowed="0, or a PERSISTENT deployment type")
        associations = self.data_repository_associations
        if len(associations) > MAX_DATA_REPOSITORY_ASSOCIATIONS:
            raise FieldProblem("data_repository_associations", f"{len(associations)} associations",
                               "too many data repository associations for one file system",
                               allowed=f"at most {MAX_DATA_REPOSITORY_ASSOCIATIONS}")
        paths = [a.file_system_path.rstrip("/") for a in associations]
        for index, path in enumerate(paths):
            if any(other == path or other.startswith(path + "/") for other in paths[:index] + paths[index + 1:]):
                raise FieldProblem(("data_repository_associations", index, "file_system_path"), path,
                                   "file system paths of associations must not repeat or nest")
        return self


class BucketLifecycle(Strict):
    noncurrent_version_expiration_days: int = Field(30, ge=1, description="Old object versions are deleted after this.")
    abort_incomplete_multipart_upload_days: int = Field(7, ge=1)
    intelligent_tiering_after_days: int | None = Field(
        None, ge=0, description="Move current objects to S3 Intelligent-Tiering after N days; unset: never."
    )


class StorageConfig(Strict):
    protect_from_destroy: bool = Field(
        True, description="prevent_destroy on the file system and buckets. Turn off only for throw-away environments."
    )
    fsx: FsxConfig = Field(default_factory=FsxConfig)
    datasets_bucket: BucketLifecycle = Field(default_factory=BucketLifecycle)
    checkpoints_bucket: BucketLifecycle = Field(default_factory=BucketLifecycle)


REFERENCE_NAME = r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$"


class ReferenceImplementation(Strict):
    repository_url: str = Field(..., pattern=r"^https://\S+$", description="Git repository the image is built from.")
    ref: str = Field("main", pattern=r"^[A-Za-z0-9._/-]+$", description="Branch or tag to build.")
    buildspec: str = Field("buildspec.yml", min_length=1, description="Buildspec path inside the source archive.")


CodeBuildComputeType = Literal[
    "BUILD_GENERAL1_SMALL", "BUILD_GENERAL1_MEDIUM", "BUILD_GENERAL1_LARGE",
    "BUILD_GENERAL1_XLARGE", "BUILD_GENERAL1_2XLARGE",
]


class BuildConfig(Strict):
    reference_implementations: dict[str, ReferenceImplementation] = Field(
        default_factory=dict, description="Name -> source. Each gets an ECR repository and a CodeBuild project."
    )
    compute_type: CodeBuildComputeType = Field(
        "BUILD_GENERAL1_LARGE", description="CodeBuild machine; CUDA images need disk and memory."
    )
    keep_images: int = Field(20, ge=1, le=1000, description="ECR keeps the newest N images per repository.")
    build_timeout_minutes: int = Field(120, ge=5, le=2160)

    @field_validator("reference_implementations")
    @classmethod
    def _names(cls, impls: dict[str, ReferenceImplementation]) -> dict[str, ReferenceImplementation]:
        for name in impls:
            if not re.match(REFERENCE_NAME, name):
                raise ValueError(
                    f"reference implementation name {name!r} is not usable as an ECR repository and CodeBuild "
                    "project name: use 1-40 lowercase letters, digits and inner hyphens"
                )
        return impls


# --------------------------------------------------------------------------- addons and workloads


HttpsUrl = Annotated[str, Field(pattern=r"^https://[^\s/]+(/\S*)?$")]
K8sName = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")]
ChartVersion = Annotated[str, Field(pattern=r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")]


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.split(r"[-+]", version.lstrip("v"))[0].split("."))


class ReleaseConfig(Strict):
    enabled: bool = True
    chart_version: ChartVersion | None = Field(
        None, description="Override the pinned chart version (components/helm/charts.py). Unset: the pinned one."
    )


class GpuOperatorConfig(ReleaseConfig):
    dra: bool = Field(
        False, description="Opt-in DRA mode: GPU Operator deploys the GPUCluster singleton instead of the "
        "ClusterPolicy. Needs Kubernetes 1.34 or later (resource.k8s.io/v1).",
    )


class MonitoringConfig(ReleaseConfig):
    grafana_admin_password_from: Literal["variable", "existing_secret"] = Field(
        "variable",
        description="variable: the sensitive Terraform variable grafana_admin_password (TF_VAR_grafana_admin_password) "
        "at apply time; existing_secret: a Secret you create in the monitoring namespace.",
    )
    grafana_admin_secret_name: K8sName = Field(
        "grafana-admin", description="With existing_secret: Secret holding keys admin-user and admin-password."
    )
    prometheus_retention_days: int = Field(15, ge=1, le=365)
    prometheus_storage_gib: int = Field(50, ge=10)


class OidcConfig(Strict):
    """An OIDC client for JupyterHub (e.g. a Cognito app client). The client secret is never in the
    profile: it is read from a Secret mounted into the hub at /run/secrets/oidc."""

    client_id: str = Field(..., min_length=1)
    client_secret_name: K8sName = Field("jupyterhub-oidc", description="Secret with key client-secret, in the hub namespace.")
    callback_url: HttpsUrl
    authorize_url: HttpsUrl
    token_url: HttpsUrl
    userdata_url: HttpsUrl
    scopes: list[str] = Field(["openid", "profile", "email"], min_length=1)
    username_claim: str = Field("sub", description="A stable claim: sub never changes, unlike email.")


class JupyterHubConfig(ReleaseConfig):
    enabled: bool = False
    oidc: OidcConfig | None = None
    allowed_users: list[str] = Field(default_factory=list, description="Values of the username claim allowed to log in.")
    cpu_image: str = Field("quay.io/jupyter/scipy-notebook:2025-12-01", description="Pinned CPU notebook image.")
    gpu_image: str = Field("quay.io/jupyter/pytorch-notebook:cuda12-2025-12-01", description="Pinned CUDA notebook image.")
    start_timeout_seconds: int = Field(1200, ge=300, description="GPU images are large: starts of many minutes are normal.")
    user_storage_gib: int = Field(20, ge=1)

    @model_validator(mode="after")
    def _authentication(self) -> JupyterHubConfig:
        if self.enabled and self.oidc is None:
            raise FieldProblem("oidc", None, "JupyterHub needs OIDC settings: it never runs without authentication",
                               allowed="client_id, callback_url, authorize_url, token_url, userdata_url")
        if self.enabled and not self.allowed_users:
            raise FieldProblem("allowed_users", [], "with allow_all false an empty allow-list lets nobody in",
                               allowed="one or more values of the username claim")
        return self


class ArgoWorkflowsConfig(ReleaseConfig):
    enabled: bool = False
    namespace: K8sName = "argo"
    default_active_deadline_seconds: int = Field(3600, ge=60, description="Workflows without a deadline get this one.")
    default_parallelism: int = Field(10, ge=1, description="Pods a workflow runs at once unless it says otherwise.")
    quota_cpu: str = Field("64", description="ResourceQuota requests.cpu of the workflow namespace.")
    quota_memory: str = Field("256Gi", description="ResourceQuota requests.memory of the workflow namespace.")
    quota_gpus: int = Field(8, ge=0, description="ResourceQuota requests.nvidia.com/gpu of the workflow namespace.")


class KarpenterConfig(ReleaseConfig):
    pass


class AddonsConfig(Strict):
    gpu_operator: GpuOperatorConfig = Field(default_factory=GpuOperatorConfig)
    efa_device_plugin: ReleaseConfig = Field(default_factory=ReleaseConfig)
    monitoring: MonitoringConfig = Field(default_factory=MonitoringConfig)
    kuberay: ReleaseConfig = Field(default_factory=lambda: ReleaseConfig(enabled=False))
    mpi_operator: ReleaseConfig = Field(default_factory=ReleaseConfig)
    jupyterhub: JupyterHubConfig = Field(default_factory=JupyterHubConfig)
    argo_workflows: ArgoWorkflowsConfig = Field(default_factory=ArgoWorkflowsConfig)
    karpenter: KarpenterConfig = Field(default_factory=KarpenterConfig)


CapacityType = Literal["on-demand", "spot", "reserved"]
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class CpuPoolConfig(Strict):
    instance_categories: list[Literal["c", "m", "r"]] = Field(["c", "m", "r"], min_length=1)
    capacity_types: list[CapacityType] = Field(["on-demand"], min_length=1)
    cpu_limit: int = Field(256, ge=1, description="Total vCPUs the pool may launch (a scheduling limit, not a cost cap).")
    consolidate_after_minutes: int = Field(5, ge=0)
    expire_after_hours: int = Field(720, ge=1, description="Nodes are replaced after this age (fresh AMIs).")


class GpuPoolConfig(Strict):
    """Karpenter GPU pool for notebooks and single-node work. Multi-node EFA training stays on the
    managed node groups (their launch templates carry every EFA interface)."""

    instance_types: list[str] = Field(["g6.xlarge", "g6.2xlarge", "g6.4xlarge", "g6e.xlarge"], min_length=1,
                                      description="Types from the GPU catalog.")
    capacity_types: list[CapacityType] = Field(["on-demand"], min_length=1)
    gpu_limit: int = Field(8, ge=1, description="Total GPUs the pool may launch.")
    consolidate_after_minutes: int = Field(30, ge=0, description="Idle GPU nodes are removed after this.")
    expire_after_hours: int = Field(720, ge=1)

    @field_validator("instance_types")
    @classmethod
    def _in_catalog(cls, types: list[str]) -> list[str]:
        unknown = [t for t in types if t not in CATALOG]
        if unknown:
            raise ValueError(f"not in the GPU instance catalog: {', '.join(unknown)}; known: {', '.join(sorted(CATALOG))}")
        return types


class TenantConfig(Strict):
    name: K8sName = Field(..., description="Namespace of the team; also its S3 prefix (<name>/).")
    gpu_quota: int = Field(8, ge=0, description="ResourceQuota requests.nvidia.com/gpu.")
    cpu_quota: str = Field("64", pattern=r"^\d+m?$")
    memory_quota: str = Field("256Gi", pattern=r"^\d+(Ki|Mi|Gi|Ti)$")
    max_persistent_volume_claims: int = Field(20, ge=0)

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name in RESERVED_NAMESPACES or name.startswith("kube-"):
            raise ValueError(f"{name!r} is a Kubernetes system namespace; choose a team name")
        return name


class WorkloadsConfig(Strict):
    cpu_pool: CpuPoolConfig = Field(default_factory=CpuPoolConfig)
    gpu_pool: GpuPoolConfig = Field(default_factory=GpuPoolConfig)
    tenants: list[TenantConfig] = Field(default_factory=lambda: [TenantConfig(name="ml-team")])
    dra_gpu_counts: list[int] = Field(
        [1, 8], description="With GPU Operator DRA mode: one ResourceClaimTemplate per GPU count (gpu-<n>) per tenant."
    )

    @model_validator(mode="after")
    def _unique(self) -> WorkloadsConfig:
        names = [tenant.name for tenant in self.tenants]
        for index, name in enumerate(names):
            if names.index(name) != index:
                raise FieldProblem(("tenants", index, "name"), name, "tenant names must be unique")
        if any(count < 1 for count in self.dra_gpu_counts) or len(set(self.dra_gpu_counts)) != len(self.dra_gpu_counts):
            raise FieldProblem("dra_gpu_counts", self.dra_gpu_counts, "GPU counts must be distinct and positive")
        return self


# --------------------------------------------------------------------------- the profile


class PlatformConfig(Strict):
    """One instance profile: the whole platform for one cluster."""

    name: Name = Field(..., description="Cluster name and prefix of every resource name.")
    region: Region
    tags: dict[str, str] = Field(default_factory=dict, description="Tags on every AWS resource (provider default tags).")
    state: StateConfig = Field(default_factory=StateConfig)
    cluster: ClusterConfig
    storage: StorageConfig = Field(default_factory=StorageConfig)
    build: BuildConfig = Field(default_factory=BuildConfig)
    addons: AddonsConfig = Field(default_factory=AddonsConfig)
    workloads: WorkloadsConfig = Field(default_factory=WorkloadsConfig)

    @model_validator(mode="after")
    def _addons_fit_the_cluster(self) -> PlatformConfig:
        addons = self.addons
        if addons.gpu_operator.enabled and addons.gpu_operator.dra:
            version = self.cluster.kubernetes_version
            if version_tuple(version) < (1, 34):
                raise FieldProblem(("addons", "gpu_operator", "dra"), True,
                                   f"DRA GPU allocation needs resource.k8s.io/v1 (Kubernetes 1.34+); the cluster runs {version}",
                                   allowed="cluster.kubernetes_version 1.34 or later, or dra: false")
        for key, release in (("karpenter", addons.karpenter), ("efa_device_plugin", addons.efa_device_plugin)):
            version = release.chart_version or CHARTS[key].version
            minimum, why = MIN_VERSIONS[key]
            uses_blocks = any(isinstance(g.capacity, CapacityBlock) for g in self.cluster.gpu_node_groups)
            if release.enabled and version_tuple(version) < minimum and (key != "karpenter" or uses_blocks):
                raise FieldProblem(("addons", key, "chart_version"), version, why,
                                   allowed=f"{'.'.join(map(str, minimum))} or later")
        return self

    @model_validator(mode="after")
    def _azs_in_region(self) -> PlatformConfig:
        for index, zone in enumerate(self.cluster.vpc.availability_zones):
            if not re.match(rf"^{re.escape(self.region)}[a-z]$", zone):
                raise FieldProblem(
                    ("cluster", "vpc", "availability_zones", index), zone,
                    f"not an availability zone of region {self.region}", allowed=f"{self.region}a, {self.region}b, ...",
                )
        return self
