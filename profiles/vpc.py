"""The VPC a profile's cluster runs in: its CIDR, zones (by name or ID) and endpoints."""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from profiles.base import Cidr, FieldProblem, Strict, check_cidr

# RFC 1918 and the shared address space: a VPC outside them would shadow public addresses.
PRIVATE_RANGES = tuple(
    ipaddress.IPv4Network(block) for block in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")
)
InterfaceEndpoint = Literal["ecr.api", "ecr.dkr", "sts", "ec2", "eks-auth", "ssm"]


# A zone's ID (use1-az4, usw2-az1, apne1-az4; a Local Zone's use1-bos1-az1): the same physical
# zone in every account, where a zone's name (us-east-1a) is mapped to a different one in each.
ZONE_ID = re.compile(r"^[a-z]{2,}[0-9]+(-[a-z]+[0-9]+)?-az[0-9]+$")


def is_zone_id(zone: str) -> bool:
    """Whether a profile's zone is a zone ID (use1-az4) rather than a zone name (us-east-1a)."""
    return ZONE_ID.fullmatch(zone) is not None


# A Local Zone is named <parent region>-<location>-<n><letter> (us-east-1-dfw-2a) and its ID is
# <parent region's ID prefix>-<location><n>-az<n> (use1-dfw2-az1); its group (what an account opts in
# to) is the name without the letter (us-east-1-dfw-2). AWS Local Zones User Guide, "Available Local
# Zones", https://docs.aws.amazon.com/local-zones/latest/ug/available-local-zones.html; EC2 API
# Reference, AvailabilityZone (groupName, zoneType local-zone),
# https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_AvailabilityZone.html. Wavelength Zones
# (us-east-1-wl1-bos-wlz-1, use1-wl1-bos-wlz1) have other shapes and are not Local Zones.
LOCAL_ZONE_NAME = re.compile(r"^(?P<region>[a-z]{2}(-[a-z]+)+-[0-9]+)-(?P<location>[a-z]+)-[0-9]+[a-z]$")
LOCAL_ZONE_ID = re.compile(r"^(?P<prefix>[a-z]{2,}[0-9]+)-(?P<location>[a-z]+)[0-9]+-az[0-9]+$")


def local_zone_region(zone: str) -> str | None:
    """The parent region a Local Zone name names (us-east-1 for us-east-1-dfw-2a); None for anything
    else. A Local Zone ID names its region only by the region's zone-ID prefix (use1)."""
    found = LOCAL_ZONE_NAME.fullmatch(zone)
    return found["region"] if found else None


def local_zone_id_prefix(zone: str) -> str | None:
    """The zone-ID prefix of the region a Local Zone ID belongs to (use1 for use1-dfw2-az1)."""
    found = LOCAL_ZONE_ID.fullmatch(zone)
    return found["prefix"] if found else None


def is_local_zone(zone: str) -> bool:
    """Whether `zone` has the shape of a Local Zone's name or ID (not a Wavelength Zone's or an AZ's)."""
    return local_zone_region(zone) is not None or local_zone_id_prefix(zone) is not None


def zone_form(zones: list[str]) -> str:
    """How these zones are named, for a message: 'zone IDs' or 'zone names'."""
    return "zone IDs" if zones and is_zone_id(zones[0]) else "zone names"


def other_form_hint(zone: str, zones: list[str]) -> str:
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
    first AZ. With gpu_local_zone, the GPU node groups run in the Local Zone instead and this zone keeps what stays in
    the region: the FSx for Lustre file system and the NAT gateway the Local Zone's traffic leaves by (its parent zone
    is the nearest)."""
    gpu_local_zone: str | None = Field(None)
    """A Local Zone of the profile's region for the GPU subnet, e.g. use1-dfw2-az1 (us-east-1-dfw-2a, Dallas: where
    P6e-GB200 UltraServer Capacity Blocks are delivered), named as availability_zones are (zone ID or name). Set, every
    GPU node group runs in a private subnet in that Local Zone, which routes to a NAT gateway in the region; the EKS
    control plane, the system nodes and the interface endpoints stay in availability_zones (EKS places no interface in a
    Local Zone subnet). The account must have opted in to the zone's group (aws ec2 modify-availability-zone-group
    --group-name us-east-1-dfw-2 --opt-in-status opted-in); the plan checks it. Default: none, the GPU subnet is in
    gpu_availability_zone."""
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
    def _gpu_local_zone(self) -> VpcConfig:
        zone = self.gpu_local_zone
        if zone is None:
            return self
        if zone in self.availability_zones or not is_local_zone(zone):
            raise FieldProblem(
                "gpu_local_zone",
                zone,
                "is one of availability_zones, not a Local Zone"
                if zone in self.availability_zones
                else "not the name or ID of a Local Zone",
                allowed="a Local Zone of the region, e.g. use1-dfw2-az1 or us-east-1-dfw-2a, or unset "
                "(the GPU subnet is then in gpu_availability_zone)",
            )
        if is_zone_id(zone) != self.zone_ids:
            raise FieldProblem(
                "gpu_local_zone",
                zone,
                f"cluster.vpc.availability_zones uses {zone_form(self.availability_zones)}: name the Local Zone "
                "the same way",
                allowed="its zone ID, e.g. use1-dfw2-az1" if self.zone_ids else "its zone name, e.g. us-east-1-dfw-2a",
            )
        return self

    @model_validator(mode="after")
    def _gpu_az_in_vpc(self) -> VpcConfig:
        if self.gpu_availability_zone is not None and self.gpu_availability_zone not in self.availability_zones:
            raise FieldProblem(
                "gpu_availability_zone",
                self.gpu_availability_zone,
                "the GPU availability zone is not one the VPC spans"
                + other_form_hint(self.gpu_availability_zone, self.availability_zones),
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
        """The GPU availability zone: the GPU subnet's, or with a Local Zone, the region's zone that keeps the
        file system and the NAT gateway the Local Zone leaves by."""
        return self.gpu_availability_zone or self.availability_zones[0]

    @property
    def gpu_node_zone(self) -> str:
        """Where the GPU node groups run (and their reserved capacity must be): the Local Zone, else the GPU AZ."""
        return self.gpu_local_zone or self.gpu_az

    @property
    def zone_ids(self) -> bool:
        """The profile names its zones by zone ID (else by zone name)."""
        return is_zone_id(self.availability_zones[0])
