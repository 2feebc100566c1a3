"""VPC over several AZs: private subnets for nodes, public subnets for NAT and load balancers."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

from cdktf_cdktf_provider_aws.default_security_group import DefaultSecurityGroup
from cdktf_cdktf_provider_aws.eip import Eip
from cdktf_cdktf_provider_aws.internet_gateway import InternetGateway
from cdktf_cdktf_provider_aws.nat_gateway import NatGateway
from cdktf_cdktf_provider_aws.route import Route
from cdktf_cdktf_provider_aws.route_table import RouteTable
from cdktf_cdktf_provider_aws.route_table_association import RouteTableAssociation
from cdktf_cdktf_provider_aws.subnet import Subnet
from cdktf_cdktf_provider_aws.vpc import Vpc
from cdktf_cdktf_provider_aws.vpc_endpoint import VpcEndpoint
from cdktf_cdktf_provider_aws.vpc_security_group_ingress_rule import VpcSecurityGroupIngressRule
from constructs import Construct

from profiles.vpc import is_zone_id


@dataclass(frozen=True, kw_only=True)
class NetworkProps:
    name: str
    """The platform's name: prefix of every network resource's Name tag."""
    cidr: str
    """The VPC's CIDR; a public and a private subnet per AZ are carved from it."""
    availability_zones: tuple[str, ...]
    """The AZs the VPC spans: all zone names (us-west-2a) or all zone IDs (usw2-az1)."""
    nat_gateways: Literal["single", "per_az"]
    """One shared NAT gateway, or one per AZ."""
    region: str
    """The VPC's region (for the S3 gateway endpoint)."""


def subnet_layout(cidr: str, az_count: int) -> tuple[list[str], list[str]]:
    """(private, public) CIDRs: the VPC is cut into 8 equal blocks; blocks 0..3 are the private
    subnets (large: the VPC CNI gives every pod a VPC address), block 7 is cut into small public ones."""
    vpc = ipaddress.IPv4Network(cidr)
    blocks = list(vpc.subnets(prefixlen_diff=3))
    private = [str(block) for block in blocks[:az_count]]
    public = [str(block) for block in list(blocks[7].subnets(prefixlen_diff=3))[:az_count]]
    return private, public


class Network(Construct):
    """Exposes `vpc_id`, `private_subnet_ids` and `public_subnet_ids` (both keyed by AZ)."""

    def __init__(self, scope: Construct, id_: str, *, props: NetworkProps):
        super().__init__(scope, id_)
        vpc = Vpc(
            self,
            "vpc",
            cidr_block=props.cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={"Name": props.name},
        )
        self._vpc_id = vpc.id
        self._cidr = props.cidr
        # Take over the VPC's default security group and leave it without rules: nothing may
        # fall back to it and silently get VPC-wide access.
        DefaultSecurityGroup(self, "default-sg", vpc_id=vpc.id, tags={"Name": f"{props.name}-default-unused"})
        igw = InternetGateway(self, "igw", vpc_id=vpc.id, tags={"Name": props.name})
        public_rt = RouteTable(self, "public", vpc_id=vpc.id, tags={"Name": f"{props.name}-public"})
        Route(
            self, "public-default", route_table_id=public_rt.id, destination_cidr_block="0.0.0.0/0", gateway_id=igw.id
        )

        private_cidrs, public_cidrs = subnet_layout(props.cidr, len(props.availability_zones))
        self._private_subnet_ids: dict[str, str] = {}
        self._public_subnet_ids: dict[str, str] = {}
        private_route_tables: list[RouteTable] = []
        nat_ids: list[str] = []
        # A zone ID places the subnet in the same physical zone in every account; a name, in the
        # zone this account maps it to.
        by_id = all(is_zone_id(zone) for zone in props.availability_zones)
        for index, zone in enumerate(props.availability_zones):
            public = Subnet(
                self,
                f"public-{zone}",
                vpc_id=vpc.id,
                cidr_block=public_cidrs[index],
                availability_zone=None if by_id else zone,
                availability_zone_id=zone if by_id else None,
                tags={"Name": f"{props.name}-public-{zone}", "kubernetes.io/role/elb": "1"},
            )
            RouteTableAssociation(self, f"public-{zone}-rt", subnet_id=public.id, route_table_id=public_rt.id)
            private = Subnet(
                self,
                f"private-{zone}",
                vpc_id=vpc.id,
                cidr_block=private_cidrs[index],
                availability_zone=None if by_id else zone,
                availability_zone_id=zone if by_id else None,
                tags={
                    "Name": f"{props.name}-private-{zone}",
                    "kubernetes.io/role/internal-elb": "1",
                    "karpenter.sh/discovery": props.name,
                },
            )
            self._public_subnet_ids[zone] = public.id
            self._private_subnet_ids[zone] = private.id
            if props.nat_gateways == "per_az" or index == 0:
                eip = Eip(self, f"nat-{zone}", domain="vpc", tags={"Name": f"{props.name}-nat-{zone}"})
                nat = NatGateway(
                    self,
                    f"nat-{zone}-gw",
                    allocation_id=eip.id,
                    subnet_id=public.id,
                    tags={"Name": f"{props.name}-{zone}"},
                    depends_on=[igw],
                )
                nat_ids.append(nat.id)
            route_table = RouteTable(
                self, f"private-{zone}-rt", vpc_id=vpc.id, tags={"Name": f"{props.name}-private-{zone}"}
            )
            Route(
                self,
                f"private-{zone}-default",
                route_table_id=route_table.id,
                destination_cidr_block="0.0.0.0/0",
                nat_gateway_id=nat_ids[-1],
            )
            RouteTableAssociation(self, f"private-{zone}-rta", subnet_id=private.id, route_table_id=route_table.id)
            private_route_tables.append(route_table)

        # The S3 gateway endpoint is free and keeps image layers and datasets off the NAT.
        VpcEndpoint(
            self,
            "s3",
            vpc_id=vpc.id,
            service_name=f"com.amazonaws.{props.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[table.id for table in private_route_tables],
            tags={"Name": f"{props.name}-s3"},
        )

    @property
    def vpc_id(self) -> str:
        """The VPC's id."""
        return self._vpc_id

    @property
    def cidr(self) -> str:
        """The VPC's CIDR."""
        return self._cidr

    @property
    def private_subnet_ids(self) -> dict[str, str]:
        """AZ -> private subnet id."""
        return self._private_subnet_ids

    @property
    def public_subnet_ids(self) -> dict[str, str]:
        """AZ -> public subnet id."""
        return self._public_subnet_ids


def admit_https(
    scope: Construct,
    rule_id: str,
    *,
    security_group_id: str,
    description: str,
    cidr: str | None = None,
    group_id: str | None = None,
) -> None:
    """An ingress rule for HTTPS (TCP 443) into `security_group_id` from a network or a group."""
    VpcSecurityGroupIngressRule(
        scope,
        rule_id,
        security_group_id=security_group_id,
        cidr_ipv4=cidr,
        referenced_security_group_id=group_id,
        ip_protocol="tcp",
        from_port=443,
        to_port=443,
        description=description,
    )
