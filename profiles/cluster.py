"""Cluster-layer settings: VPC, EKS control plane, system and GPU node groups with their capacity."""

from __future__ import annotations

import ipaddress
import re
from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from profiles.aws_facts import instance_types
from profiles.base import (
    Cidr,
    FieldProblem,
    IamPrincipalArn,
    LabelKey,
    LabelValue,
    Name,
    SecurityGroupId,
    Strict,
    check_cidr,
    check_sizes,
    check_unique,
    did_you_mean,
)
from profiles.capacity import (
    Capacity,
    CapacityBlock,
    OdcrCapacity,
    OnDemandCapacity,
    block_sizes,
    check_reservation_placement,
)
from profiles.catalog import CATALOG, INSTANCE_TYPES, GpuInstanceType, lookup
from profiles.limits import EBS_GP3_MAX_GIB, EKS_MAX_UNAVAILABLE_NODES, INT32_MAX, NodeCount
from profiles.reserved_keys import NodeLabels
from profiles.unique import unique
from profiles.versions import (
    DEFAULT_KUBERNETES_VERSION,
    MANAGED_ADDON_MINIMUMS,
    KubernetesVersion,
    ManagedAddonName,
    version_tuple,
)

# Capacity models live in profiles/capacity.py; importable from here as before.
__all__ = ["CapacityBlock", "OdcrCapacity", "OnDemandCapacity"]

# A public API endpoint may be open to at most this many addresses (a /16): a company's egress or
# VPN ranges fit; more is the internet in effect (0.0.0.0/1 plus 128.0.0.0/1 is all of it).
MAX_PUBLIC_API_ADDRESSES = 65536  # a /16; endpoint_public_access_cidrs' docstring names it
PRIVATE_RANGES = tuple(
    ipaddress.IPv4Network(block) for block in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")
)
# EKS requires the Service CIDR inside these (and not overlapping the VPC). When none is set it
# picks 172.20.0.0/16 for a VPC in 10.0.0.0/8 and 10.100.0.0/16 for any other (EKS API reference,
# KubernetesNetworkConfigRequest.serviceIpv4Cidr; the node side reads it the same way, as
# amazon-eks-ami's bootstrap.sh TEN_RANGE check shows).
SERVICE_CIDR_RANGES = tuple(ipaddress.IPv4Network(block) for block in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
ControlPlaneLogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]
AddonVersion = Annotated[str, Field(pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$")]
AmiReleaseVersion = Annotated[str, Field(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+-[0-9]{8}$")]
InterfaceEndpoint = Literal["ecr.api", "ecr.dkr", "sts", "ec2", "eks-auth", "ssm"]


# A zone's ID (use1-az4, usw2-az1, apne1-az4; a Local Zone's use1-bos1-az1): the same physical
# zone in every account, where a zone's name (us-east-1a) is mapped to a different one in each.
ZONE_ID = re.compile(r"^[a-z]{2,}[0-9]+(-[a-z]+[0-9]+)?-az[0-9]+$")


def is_zone_id(zone: str) -> bool:
    """Whether a profile's zone is a zone ID (use1-az4) rather than a zone name (us-east-1a)."""
    return ZONE_ID.fullmatch(zone) is not None


def zone_form(zones: list[str]) -> str:
    """How these zones are named, for a message: 'zone IDs' or 'zone names'."""
    return "zone IDs" if zones and is_zone_id(zones[0]) else "zone names"


def _other_form(zone: str, zones: list[str]) -> str:
    """A hint when `zone` is named the other way than `zones`."""
    if zones and is_zone_id(zone) != is_zone_id(zones[0]):
        return f"; cluster.vpc.availability_zones uses {zone_form(zones)}: name it the same way"
    return ""


class VpcConfig(Strict):
    cidr: Cidr = Field("10.0.0.0/16")
    """VPC CIDR; subnets are carved from it per AZ."""
    availability_zones: list[str] = Field(..., min_length=2, max_length=4)
    """The AZs the VPC spans (at least two, as EKS requires), all named one way: zone names (us-west-2a) or zone IDs
    (usw2-az1). Prefer zone IDs: an ID is the same physical zone in every account, while names are mapped to
    different zones in each account, so a profile shared between accounts, or one whose GPU group uses a reservation
    (EC2 reports its zone ID too), means the same zone everywhere. Named explicitly so synthesis is deterministic and
    GPU capacity can be pinned to a known AZ.
    """
    gpu_availability_zone: str | None = Field(None)
    """AZ of the GPU subnet (EFA does not cross AZs), one of availability_zones, named the same way. Default: the
    first AZ."""
    nat_gateways: Literal["single", "per_az"] = Field("single")
    """One shared NAT gateway (cheap) or one per AZ (survives an AZ outage)."""
    allow_public_cidr: bool = Field(False)
    """Allow a VPC CIDR outside the private ranges (RFC 1918 and 100.64.0.0/10). Default: refused."""
    interface_endpoints: list[InterfaceEndpoint] = Field(default_factory=list)
    """Interface VPC endpoints in the private subnets. Default: none (each costs per hour per AZ); the S3 gateway
    endpoint is always created (free).
    """

    @field_validator("cidr")
    @classmethod
    def _vpc_cidr(cls, value: str) -> str:
        return check_cidr(value)

    @field_validator("interface_endpoints")
    @classmethod
    def _unique_endpoints(cls, endpoints: list[str]) -> list[str]:
        repeated = sorted({e for e in endpoints if endpoints.count(e) > 1})
        if repeated:
            raise ValueError(f"interface endpoints must be distinct; repeated: {', '.join(repeated)}")
        return endpoints

    @field_validator("availability_zones")
    @classmethod
    def _unique_azs(cls, zones: list[str]) -> list[str]:
        if len(set(zones)) != len(zones):
            raise ValueError("availability zones must be distinct")
        if len({is_zone_id(zone) for zone in zones}) > 1:
            ids = ", ".join(zone for zone in zones if is_zone_id(zone))
            raise ValueError(
                f"name every availability zone the same way: zone IDs (here {ids}) or zone names, not both"
            )
        return zones

    @model_validator(mode="after")
    def _gpu_az_in_vpc(self) -> VpcConfig:
        if self.gpu_availability_zone is not None and self.gpu_availability_zone not in self.availability_zones:
            raise FieldProblem(
                "gpu_availability_zone",
                self.gpu_availability_zone,
                "the GPU availability zone is not one the VPC spans"
                + _other_form(self.gpu_availability_zone, self.availability_zones),
                allowed=", ".join(self.availability_zones),
            )
        network = ipaddress.IPv4Network(self.cidr)
        if network.prefixlen > 20:
            raise FieldProblem(
                "cidr", self.cidr, "the VPC needs room for 2 subnets per AZ", allowed="a /20 or larger block"
            )
        if network.prefixlen < 16:
            raise FieldProblem("cidr", self.cidr, "AWS VPCs are at most a /16", allowed="a /16 to /20 block")
        if not any(network.subnet_of(private) for private in PRIVATE_RANGES) and not self.allow_public_cidr:
            raise FieldProblem(
                "cidr",
                self.cidr,
                "not a private address range: the VPC would shadow public addresses",
                allowed="within 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or 100.64.0.0/10, "
                "or set allow_public_cidr: true",
            )
        return self

    @property
    def gpu_az(self) -> str:
        return self.gpu_availability_zone or self.availability_zones[0]

    @property
    def zone_ids(self) -> bool:
        """The profile names its zones by zone ID (else by zone name)."""
        return is_zone_id(self.availability_zones[0])


class SystemNodeGroupConfig(Strict):
    instance_types: Annotated[list[str], unique()] = Field(["m6i.xlarge"], min_length=1)
    """Instance types for cluster services."""
    min_size: NodeCount = Field(2, ge=1)
    """Fewest system nodes."""
    desired_size: NodeCount = Field(2, ge=1)
    """System nodes to start with."""
    max_size: NodeCount = Field(4, ge=1)
    """Most system nodes (an EKS managed node group holds at most 450)."""
    disk_size_gib: int = Field(100, ge=20, le=EBS_GP3_MAX_GIB)
    """Encrypted gp3 root volume."""

    @field_validator("instance_types")
    @classmethod
    def _known_types(cls, types: list[str]) -> list[str]:
        known = instance_types()
        for name in types:
            if name not in known:
                hint = did_you_mean(name, sorted(known))
                raise ValueError(f"{name!r} is not an EC2 instance type{'; ' + hint if hint else ''}")
        return types

    @model_validator(mode="after")
    def _sizes(self) -> SystemNodeGroupConfig:
        check_sizes(self.min_size, self.desired_size, self.max_size)
        return self


class GpuNodeGroupConfig(Strict):
    name: Name
    """Node group name, unique in the profile and not 'system'."""
    instance_type: str = Field(..., json_schema_extra={"enum": list(INSTANCE_TYPES)})
    """A type from the GPU instance catalog (profiles/catalog.py)."""
    efa_enabled: bool = Field(False)
    """Attach one EFA interface per EFA-capable network card. Only on types with EFA."""
    min_size: NodeCount = Field(0, ge=0)
    """Fewest nodes the group scales to."""
    desired_size: NodeCount = Field(0, ge=0)
    """Nodes the group runs, applied on every deploy (no autoscaler manages GPU groups; on a Capacity Block, only in
    its window). Lowering it removes nodes and their jobs. make pause scales it to 0 until the next resume or apply.
    """
    max_size: NodeCount = Field(2, ge=1)
    """Most nodes the group scales to (an EKS managed node group holds at most 450)."""
    root_volume_size_gib: int = Field(200, ge=50, le=EBS_GP3_MAX_GIB)
    """Encrypted gp3 root volume (images are large)."""
    capacity: Capacity = Field(default_factory=OnDemandCapacity)
    """How the instances are bought: on_demand, odcr or capacity_block."""
    placement_group: Literal["cluster", "none", "reservation"] | None = None
    """cluster: a new cluster placement group; none: no placement group; reservation: the one named in
    existing_placement_group. Default: cluster for on-demand capacity, none for reserved capacity (forcing a group
    onto a reservation bought without one fails to launch).
    """
    existing_placement_group: str | None = Field(None)
    """Placement group that came with the reservation."""
    labels: Annotated[dict[LabelKey, LabelValue], NodeLabels] = Field(default_factory=dict)
    """Extra Kubernetes node labels: not `role` or `platform/...` (the platform's own, which schedulers select on),
    nor in kubernetes.io/ or k8s.io/ and their subdomains (Kubernetes' own; profiles/reserved_keys.py)."""

    max_unavailable: int = Field(1, ge=1, le=EKS_MAX_UNAVAILABLE_NODES)
    """Nodes replaced at once during an update."""

    @field_validator("instance_type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in CATALOG:
            hint = did_you_mean(value, INSTANCE_TYPES)
            raise ValueError(
                f"unknown GPU instance type {value!r}; {hint + ' ' if hint else ''}"
                f"The catalog knows {', '.join(INSTANCE_TYPES)}. "
                "To add one, append its EC2 facts to profiles/catalog.py"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> GpuNodeGroupConfig:
        entry = lookup(self.instance_type)
        if self.efa_enabled and not entry.efa_supported:
            with_efa = [n for n in INSTANCE_TYPES if CATALOG[n].family == entry.family and CATALOG[n].efa_supported]
            raise FieldProblem(
                "efa_enabled",
                True,
                f"{self.instance_type} has no EFA",
                allowed=f"efa_enabled: false, or a size with EFA: {', '.join(with_efa) or 'none in this family'}",
            )
        check_sizes(self.min_size, self.desired_size, self.max_size)
        if isinstance(self.capacity, CapacityBlock) and self.max_size > self.capacity.instance_count:
            raise FieldProblem(
                "max_size",
                self.max_size,
                "the node group is larger than its Capacity Block",
                allowed=f"at most capacity.instance_count ({self.capacity.instance_count})",
            )
        reserved = not isinstance(self.capacity, OnDemandCapacity)
        if self.placement_group == "cluster" and reserved:
            raise FieldProblem(
                "placement_group",
                "cluster",
                "reserved capacity comes with its own placement group or none; forcing a new one fails to launch",
                allowed="none, reservation",
            )
        if (self.placement_group == "reservation") != (self.existing_placement_group is not None):
            raise FieldProblem(
                "existing_placement_group",
                self.existing_placement_group,
                "existing_placement_group is set exactly when placement_group is 'reservation'",
            )
        check_reservation_placement(self.capacity, self.placement_group)
        return self

    @property
    def catalog_entry(self) -> GpuInstanceType:
        return lookup(self.instance_type)

    @property
    def placement(self) -> Literal["cluster", "none", "reservation"]:
        if self.placement_group is not None:
            return self.placement_group
        return "cluster" if isinstance(self.capacity, OnDemandCapacity) else "none"

    def sizes_at(self, now: datetime) -> tuple[int, int, int]:
        """(min, desired, max) at `now`: a Capacity Block's group is at 0 outside its window."""
        return block_sizes(self.capacity, (self.min_size, self.desired_size, self.max_size), now)


class PrivateApiAccess(Strict):
    cidrs: Annotated[list[Cidr], unique()] = Field(default_factory=list)
    """Networks routed into the VPC that may reach the private API endpoint on TCP 443: a peered VPC, a Direct
    Connect or site-to-site VPN network. Private address ranges outside this VPC. (A Client VPN endpoint associated
    with this VPC translates its clients to its own addresses here: list its security group instead.)
    """
    security_groups: Annotated[list[SecurityGroupId], unique()] = Field(default_factory=list)
    """Security groups in this VPC whose members may reach the private API endpoint on TCP 443: a Client VPN
    endpoint's, a bastion's, the instance an SSM port forward runs through, a CI runner's (sg-0123456789abcdef0).
    """

    @field_validator("cidrs")
    @classmethod
    def _private_networks(cls, cidrs: list[str]) -> list[str]:
        for cidr in cidrs:
            check_cidr(cidr)
            if not any(ipaddress.IPv4Network(cidr).subnet_of(private) for private in PRIVATE_RANGES):
                raise ValueError(
                    f"{cidr} is not a private address range: the private endpoint is reached over the VPC's own "
                    "routes (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or 100.64.0.0/10); for your public "
                    "egress use endpoint_public_access_cidrs"
                )
        return cidrs


class ClusterConfig(Strict):
    kubernetes_version: KubernetesVersion = DEFAULT_KUBERNETES_VERSION
    """EKS Kubernetes version. Default: the newest EKS version in standard support that every pinned component supports
    (profiles/versions.py lists the compatibility tables).
    """
    vpc: VpcConfig
    """The VPC the cluster runs in."""
    endpoint_public_access: bool = False
    """Open the public API endpoint to endpoint_public_access_cidrs. Default: off; the API is reachable only from
    inside the VPC (VPN, SSM port forwarding or a bastion; see docs/operations.md). The private endpoint is always
    on.
    """
    endpoint_public_access_cidrs: Annotated[list[Cidr], unique()] = Field(default_factory=list)
    """Your own egress CIDRs that may reach the public endpoint (with endpoint_public_access). Together at most
    65536 addresses (a /16): wider is the internet in effect."""
    private_endpoint_access: PrivateApiAccess = Field(default_factory=PrivateApiAccess)
    """Who may reach the private API endpoint from outside the cluster's own nodes (a VPN, a bastion, an SSM port
    forward; docs/operations.md, Reaching the API). Default: nobody; the endpoint's security group admits only the
    cluster's own nodes and control plane.
    """
    service_ipv4_cidr: Cidr | None = None
    """The Kubernetes Service CIDR (ClusterIPs; the API server's `kubernetes` Service is its first address). Unset:
    172.20.0.0/16 for a VPC in 10.0.0.0/8, else 10.100.0.0/16, as EKS itself picks. A /12 to /24 block in
    10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16, apart from the VPC. Changing it replaces the cluster.
    """
    admin_principal_arns: Annotated[list[IamPrincipalArn], unique(ignore_case=True)] = Field(default_factory=list)
    """IAM roles/users granted cluster admin through access entries, besides the principal that first applied the
    cluster layer (it keeps its entry when others apply later). List CI roles and teammates who deploy here."""
    control_plane_log_types: Annotated[list[ControlPlaneLogType], unique()] = Field(["api", "audit", "authenticator"])
    """Control-plane logs sent to CloudWatch."""
    addon_versions: dict[ManagedAddonName, AddonVersion] = Field(default_factory=dict)
    """Pin an EKS managed add-on to a version, e.g. {aws-mountpoint-s3-csi-driver: v2.8.0-eksbuild.1}. Unset: EKS's
    default version for the cluster's Kubernetes version, read at plan time.
    """
    ami_release_version: AmiReleaseVersion | None = None
    """The EKS AL2023 AMI release every node runs, e.g. 1.34.2-20251120 (the managed node groups' release_version;
    Karpenter gets alias al2023@v20251120). Unset: managed groups take the newest release when they are created
    and Karpenter follows al2023@latest, so a new AMI and NVIDIA driver reach Karpenter's nodes unplanned and the
    groups differ in age. Pinned: an upgrade is a change to this line that plans like any other. Its Kubernetes
    minor must be the cluster's.
    """
    system_node_group: SystemNodeGroupConfig = Field(default_factory=SystemNodeGroupConfig)
    """CPU nodes for the platform's controllers."""
    gpu_node_groups: list[GpuNodeGroupConfig] = Field(default_factory=list)
    """Managed GPU node groups; EFA-enabled ones get one EFA interface per EFA network card."""
    gpu_node_warning_threshold: int = Field(16, ge=1, le=INT32_MAX)
    """Synthesis (so plan, deploy and verify), cost and quotas warn when the GPU node groups' max_size add up to more
    GPU nodes than this (a typo such as 100 for 10 would otherwise only show on the bill)."""

    @field_validator("endpoint_public_access_cidrs")
    @classmethod
    def _cidrs(cls, cidrs: list[str]) -> list[str]:
        for cidr in cidrs:
            check_cidr(cidr)
            if ipaddress.IPv4Network(cidr).prefixlen == 0:
                raise ValueError("0.0.0.0/0 opens the API endpoint to the internet; name your own egress CIDRs")
        # Overlapping blocks count once: the union is what the endpoint is open to.
        union = ipaddress.collapse_addresses(ipaddress.IPv4Network(cidr) for cidr in cidrs)
        total = sum(network.num_addresses for network in union)
        if total > MAX_PUBLIC_API_ADDRESSES:
            raise ValueError(
                f"these CIDRs open the API endpoint to {total} addresses; at most {MAX_PUBLIC_API_ADDRESSES} "
                "(a /16) are allowed: name your organisation's egress or VPN ranges"
            )
        return cidrs

    @property
    def service_cidr(self) -> str:
        """The Service CIDR the cluster uses: the profile's, or the one EKS would pick."""
        if self.service_ipv4_cidr is not None:
            return self.service_ipv4_cidr
        in_ten = ipaddress.IPv4Network(self.vpc.cidr).subnet_of(ipaddress.IPv4Network("10.0.0.0/8"))
        return "172.20.0.0/16" if in_ten else "10.100.0.0/16"

    @property
    def api_service_ip(self) -> str:
        """The `kubernetes` Service's ClusterIP: the first address of the Service CIDR, where
        in-cluster clients (client-go's in-cluster config) reach the API server."""
        return str(ipaddress.IPv4Network(self.service_cidr).network_address + 1)

    @field_validator("service_ipv4_cidr")
    @classmethod
    def _service_cidr_block(cls, value: str | None) -> str | None:
        return None if value is None else check_cidr(value)

    @model_validator(mode="after")
    def _service_cidr(self) -> ClusterConfig:
        if self.service_ipv4_cidr is None:
            return self
        network = ipaddress.IPv4Network(self.service_ipv4_cidr)
        allowed = "a /12 to /24 block in 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16 that does not overlap the VPC"
        if not 12 <= network.prefixlen <= 24 or not any(network.subnet_of(r) for r in SERVICE_CIDR_RANGES):
            raise FieldProblem(
                "service_ipv4_cidr", self.service_ipv4_cidr, "EKS refuses this Service CIDR", allowed=allowed
            )
        if network.overlaps(ipaddress.IPv4Network(self.vpc.cidr)):
            raise FieldProblem(
                "service_ipv4_cidr",
                self.service_ipv4_cidr,
                f"overlaps the VPC ({self.vpc.cidr}): Service and node addresses would collide",
                allowed=allowed,
            )
        return self

    @model_validator(mode="after")
    def _addon_minimums(self) -> ClusterConfig:
        for name, version in self.addon_versions.items():
            minimum = MANAGED_ADDON_MINIMUMS.get(name)
            if minimum and version_tuple(version) < minimum.version:
                raise FieldProblem(
                    ("addon_versions", name),
                    version,
                    minimum.why,
                    allowed=f"v{'.'.join(map(str, minimum.version))}-eksbuild.N or later",
                )
        return self

    @model_validator(mode="after")
    def _public_endpoint(self) -> ClusterConfig:
        if self.endpoint_public_access and not self.endpoint_public_access_cidrs:
            raise FieldProblem(
                "endpoint_public_access_cidrs",
                [],
                "a public API endpoint needs your own egress CIDRs; it is never open to everyone",
                allowed="one or more CIDRs, e.g. [203.0.113.0/24]",
            )
        if self.endpoint_public_access_cidrs and not self.endpoint_public_access:
            raise FieldProblem(
                "endpoint_public_access",
                False,
                "endpoint_public_access_cidrs are set but the public endpoint is off",
                allowed="true (open the endpoint to those CIDRs), or remove the CIDRs",
            )
        return self

    @model_validator(mode="after")
    def _ami_release_matches_the_cluster(self) -> ClusterConfig:
        release = self.ami_release_version
        minor = ".".join(release.split(".")[:2]) if release else None
        if release is not None and minor != self.kubernetes_version:
            raise FieldProblem(
                "ami_release_version",
                release,
                f"is a release for Kubernetes {minor}; the cluster runs {self.kubernetes_version}",
                allowed=f"a {self.kubernetes_version}.N-YYYYMMDD release, or unset",
            )
        return self

    @property
    def karpenter_ami_alias(self) -> str:
        """The EC2NodeClass alias of the same AMI release (al2023@latest when unpinned)."""
        if self.ami_release_version is None:
            return "al2023@latest"
        return f"al2023@v{self.ami_release_version.rsplit('-', 1)[1]}"

    @model_validator(mode="after")
    def _private_access_outside_vpc(self) -> ClusterConfig:
        vpc = ipaddress.IPv4Network(self.vpc.cidr)
        for index, cidr in enumerate(self.private_endpoint_access.cidrs):
            if ipaddress.IPv4Network(cidr).overlaps(vpc):
                raise FieldProblem(
                    ("private_endpoint_access", "cidrs", index),
                    cidr,
                    f"overlaps the cluster's VPC ({self.vpc.cidr}): a host inside the VPC is admitted by its "
                    "security group, not by an address range that would also admit every pod and node there",
                    allowed="a network outside the VPC (a VPN's client range, a peered VPC), or list the host's "
                    "group under private_endpoint_access.security_groups",
                )
        return self

    @model_validator(mode="after")
    def _groups(self) -> ClusterConfig:
        check_unique([group.name for group in self.gpu_node_groups], field="gpu_node_groups", what="GPU node group")
        for index, group in enumerate(self.gpu_node_groups):
            capacity_az = getattr(group.capacity, "availability_zone", None)
            if capacity_az is not None and capacity_az != self.vpc.gpu_az:
                where = (
                    "cluster.vpc.gpu_availability_zone"
                    if self.vpc.gpu_availability_zone
                    else "the first of cluster.vpc.availability_zones, the GPU zone by default"
                )
                raise FieldProblem(
                    ("gpu_node_groups", index, "capacity", "availability_zone"),
                    capacity_az,
                    "reserved capacity must be in the GPU availability zone"
                    + _other_form(capacity_az, self.vpc.availability_zones),
                    allowed=f"{self.vpc.gpu_az} ({where})",
                )
        return self
