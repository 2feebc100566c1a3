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
        return self.gpu_availability_zone or self.availability_zones[0]

    @property
    def zone_ids(self) -> bool:
        """The profile names its zones by zone ID (else by zone name)."""
        return is_zone_id(self.availability_zones[0])
