"""Cluster-layer settings: the EKS control plane and its access; the VPC (profiles/vpc.py) and the node
groups (profiles/node_groups.py) it composes."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from profiles.base import (
    Cidr,
    FieldProblem,
    IamPrincipalArn,
    SecurityGroupId,
    Strict,
    check_cidr,
    check_unique,
    quoted_version,
    worded,
)
from profiles.limits import EKS_DEFAULT_NODES_PER_MANAGED_NODE_GROUP, INT32_MAX
from profiles.node_groups import GpuNodeGroupConfig, SystemNodeGroupConfig
from profiles.unique import unique
from profiles.versions import (
    DEFAULT_KUBERNETES_VERSION,
    KUBERNETES_VERSIONS,
    MANAGED_ADDON_MINIMUMS,
    KubernetesVersion,
    ManagedAddonName,
    version_tuple,
)
from profiles.vpc import PRIVATE_RANGES, VpcConfig, is_local_zone, other_form_hint

# A public API endpoint may be open to at most this many addresses (a /16): a company's egress or
# VPN ranges fit; more is the internet in effect (0.0.0.0/1 plus 128.0.0.0/1 is all of it).
MAX_PUBLIC_API_ADDRESSES = 65536  # a /16; endpoint_public_access_cidrs' docstring names it
# EKS requires the Service CIDR inside these (and not overlapping the VPC). When none is set it
# picks 172.20.0.0/16 for a VPC in 10.0.0.0/8 and 10.100.0.0/16 for any other (EKS API reference,
# KubernetesNetworkConfigRequest.serviceIpv4Cidr; the node side reads it the same way, as
# amazon-eks-ami's bootstrap.sh TEN_RANGE check shows).
SERVICE_CIDR_RANGES = tuple(ipaddress.IPv4Network(block) for block in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
ControlPlaneLogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]
AddonVersion = Annotated[
    str, worded(r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$", "an EKS add-on version, e.g. v1.20.0-eksbuild.1")
]
AmiReleaseVersion = Annotated[str, Field(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+-[0-9]{8}$")]


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
    kubernetes_version: Annotated[KubernetesVersion, quoted_version(KUBERNETES_VERSIONS)] = DEFAULT_KUBERNETES_VERSION
    """EKS Kubernetes version, in quotes (e.g. '1.35': YAML reads an unquoted 1.30 as 1.3). Default: the newest EKS
    version in standard support that every pinned component supports (profiles/versions.py lists the compatibility
    tables).
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
    managed_node_group_node_quota: int = Field(EKS_DEFAULT_NODES_PER_MANAGED_NODE_GROUP, ge=1, le=INT32_MAX)
    """Your account's EKS service quota "Nodes per managed node group" in this region: EKS's default is 450 and it is
    adjustable in Service Quotas (https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html). Every
    managed node group's max_size (the system group's and each GPU group's) is at most this; raise it here only
    after the quota itself was raised."""
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
    def _groups_within_the_node_quota(self) -> ClusterConfig:
        quota = self.managed_node_group_node_quota
        groups: list[tuple[tuple[str | int, ...], int]] = [(("system_node_group",), self.system_node_group.max_size)]
        groups += [(("gpu_node_groups", index), group.max_size) for index, group in enumerate(self.gpu_node_groups)]
        for where, max_size in groups:
            if max_size > quota:
                raise FieldProblem(
                    (*where, "max_size"),
                    max_size,
                    f"is above EKS's nodes per managed node group ({quota}, cluster.managed_node_group_node_quota)",
                    allowed=f"at most {quota}, or raise the quota in Service Quotas and then "
                    "cluster.managed_node_group_node_quota",
                )
        return self

    @model_validator(mode="after")
    def _groups(self) -> ClusterConfig:
        check_unique([group.name for group in self.gpu_node_groups], field="gpu_node_groups", what="GPU node group")
        vpc = self.vpc
        for index, group in enumerate(self.gpu_node_groups):
            capacity_az = getattr(group.capacity, "availability_zone", None)
            if capacity_az is not None and capacity_az != vpc.gpu_node_zone:
                kind = "Local Zone" if vpc.gpu_local_zone else "availability zone"
                if vpc.gpu_local_zone:
                    where = "cluster.vpc.gpu_local_zone"
                elif vpc.gpu_availability_zone:
                    where = "cluster.vpc.gpu_availability_zone"
                else:
                    where = "the first of cluster.vpc.availability_zones, the GPU zone by default"
                # A block in a Local Zone (P6e-GB200 UltraServers: the Dallas Local Zone) needs the
                # GPU subnet there.
                local = (
                    "; it is a Local Zone: set cluster.vpc.gpu_local_zone to it"
                    if is_local_zone(capacity_az) and vpc.gpu_local_zone is None
                    else ""
                )
                raise FieldProblem(
                    ("gpu_node_groups", index, "capacity", "availability_zone"),
                    capacity_az,
                    f"reserved capacity must be in the GPU {kind}, where the GPU node groups run"
                    + other_form_hint(capacity_az, vpc.availability_zones)
                    + local,
                    allowed=f"{vpc.gpu_node_zone} ({where})",
                )
        if vpc.gpu_local_zone is not None and not self.gpu_node_groups:
            raise FieldProblem(
                ("vpc", "gpu_local_zone"),
                vpc.gpu_local_zone,
                "the Local Zone subnet is for GPU node groups, and the profile has none",
                allowed="unset, or GPU node groups under cluster.gpu_node_groups",
            )
        return self
