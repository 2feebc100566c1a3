"""VPC over several AZs: private subnets for nodes, public subnets for NAT and load balancers; and,
for GPU capacity delivered in a Local Zone, one private subnet there.

A Local Zone subnet (AWS facts, each read from AWS's documentation):
- the account must have opted in to the zone's group first (Amazon VPC User Guide, "Subnets in AWS
  Local Zones", https://docs.aws.amazon.com/vpc/latest/userguide/Extend_VPCs.html; opt in with
  `aws ec2 modify-availability-zone-group`, EC2 API Reference, ModifyAvailabilityZoneGroup); the
  plan checks it with DescribeAvailabilityZones (zoneType local-zone, optInStatus opted-in; EC2 API
  Reference, AvailabilityZone);
- it follows the same routing rules as an AZ's subnet: route tables, security groups, network ACLs
  (same VPC page; AWS Local Zones User Guide, "How Local Zones work");
- NAT gateways exist only in some Local Zones (Local Zones User Guide, "NAT gateway connection in
  Local Zones", which defers to the Local Zones features list), and a NAT gateway's Elastic IP must be
  of its zone's network border group (EC2 API Reference, CreateNatGateway). Its default route
  therefore goes to a NAT gateway of the region, which works in every Local Zone;
- EKS places no interface of its control plane in a Local Zone subnet, so the cluster is never
  given one (EKS User Guide, "Launch low-latency EKS clusters with AWS Local Zones",
  awsdocs/amazon-eks-user-guide latest/ug/integrations/local-zones.adoc); managed node groups may
  run there (same page). The subnet carries no load-balancer or Karpenter discovery tag: only the
  GPU node groups are placed in it, by id.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

from cdktf import Precondition, TerraformResourceLifecycle
from cdktf_cdktf_provider_aws.data_aws_availability_zone import DataAwsAvailabilityZone
from cdktf_cdktf_provider_aws.default_security_group import DefaultSecurityGroup
from cdktf_cdktf_provider_aws.eip import Eip
from cdktf_cdktf_provider_aws.internet_gateway import InternetGateway
from cdktf_cdktf_provider_aws.nat_gateway import NatGateway
from cdktf_cdktf_provider_aws.route_table import RouteTable
from cdktf_cdktf_provider_aws.subnet import Subnet
from cdktf_cdktf_provider_aws.vpc import Vpc
from cdktf_cdktf_provider_aws.vpc_endpoint import VpcEndpoint
from constructs import Construct

from components.expressions import Expression, expression, interpolated, string_literal
from components.leaf_resources import LeafType
from profiles.vpc import is_zone_id

# Routes, route table associations and security group rules: nothing reads them, so they are
# rendered as data (components/leaf_resources.py).
ROUTE = LeafType("aws_route", "Route")
ROUTE_TABLE_ASSOCIATION = LeafType("aws_route_table_association", "RouteTableAssociation")
INGRESS_RULE = LeafType("aws_vpc_security_group_ingress_rule", "VpcSecurityGroupIngressRule")
EGRESS_RULE = LeafType("aws_vpc_security_group_egress_rule", "VpcSecurityGroupEgressRule")


@dataclass(frozen=True, kw_only=True)
class LocalZoneSubnetProps:
    zone: str
    """The Local Zone, named as the VPC's zones are (zone ID or name)."""
    egress_zone: str
    """One of the VPC's AZs: its NAT gateway (the shared one with a single NAT gateway) takes the
    Local Zone subnet's default route."""


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
    local_zone: LocalZoneSubnetProps | None = None
    """A private subnet in a Local Zone for the GPU node groups; None: no Local Zone subnet."""


# Which of the VPC's 8 blocks the Local Zone's private subnet takes: blocks 0..3 are the AZs'
# private subnets (at most 4 AZs), block 7 holds the public ones (subnet_layout).
LOCAL_ZONE_BLOCK = 4


def subnet_layout(cidr: str, az_count: int) -> tuple[list[str], list[str]]:
    """(private, public) CIDRs: the VPC is cut into 8 equal blocks; blocks 0..3 are the private
    subnets (large: the VPC CNI gives every pod a VPC address), block 7 is cut into small public ones."""
    vpc = ipaddress.IPv4Network(cidr)
    blocks = list(vpc.subnets(prefixlen_diff=3))
    private = [str(block) for block in blocks[:az_count]]
    public = [str(block) for block in list(blocks[7].subnets(prefixlen_diff=3))[:az_count]]
    return private, public


def local_zone_cidr(cidr: str) -> str:
    """The Local Zone subnet's CIDR: a private-sized block of its own, apart from every AZ's."""
    return str(list(ipaddress.IPv4Network(cidr).subnets(prefixlen_diff=3))[LOCAL_ZONE_BLOCK])


class Network(Construct):
    """Exposes `vpc_id`, `private_subnet_ids` and `public_subnet_ids` (both keyed by AZ), and
    `local_zone_subnet_id` (None without a Local Zone)."""

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
        self._vpc_id = vpc_id = vpc.id  # each attribute read is a jsii round trip: read once
        self._cidr = props.cidr
        # Take over the VPC's default security group and leave it without rules: nothing may
        # fall back to it and silently get VPC-wide access.
        DefaultSecurityGroup(self, "default-sg", vpc_id=vpc_id, tags={"Name": f"{props.name}-default-unused"})
        igw = InternetGateway(self, "igw", vpc_id=vpc_id, tags={"Name": props.name})
        public_rt_id = RouteTable(self, "public", vpc_id=vpc_id, tags={"Name": f"{props.name}-public"}).id
        ROUTE.add(
            self, "public-default", route_table_id=public_rt_id, destination_cidr_block="0.0.0.0/0", gateway_id=igw.id
        )

        private_cidrs, public_cidrs = subnet_layout(props.cidr, len(props.availability_zones))
        self._private_subnet_ids: dict[str, str] = {}
        self._public_subnet_ids: dict[str, str] = {}
        private_route_table_ids: list[str] = []
        nat_ids: list[str] = []
        # The NAT gateway each AZ's private subnet routes to (its own, or the shared one).
        nat_by_zone: dict[str, str] = {}
        # A zone ID places the subnet in the same physical zone in every account; a name, in the
        # zone this account maps it to.
        by_id = all(is_zone_id(zone) for zone in props.availability_zones)
        for index, zone in enumerate(props.availability_zones):
            public_id = Subnet(
                self,
                f"public-{zone}",
                vpc_id=vpc_id,
                cidr_block=public_cidrs[index],
                availability_zone=None if by_id else zone,
                availability_zone_id=zone if by_id else None,
                tags={"Name": f"{props.name}-public-{zone}", "kubernetes.io/role/elb": "1"},
            ).id
            ROUTE_TABLE_ASSOCIATION.add(self, f"public-{zone}-rt", subnet_id=public_id, route_table_id=public_rt_id)
            private_id = Subnet(
                self,
                f"private-{zone}",
                vpc_id=vpc_id,
                cidr_block=private_cidrs[index],
                availability_zone=None if by_id else zone,
                availability_zone_id=zone if by_id else None,
                tags={
                    "Name": f"{props.name}-private-{zone}",
                    "kubernetes.io/role/internal-elb": "1",
                    "karpenter.sh/discovery": props.name,
                },
            ).id
            self._public_subnet_ids[zone] = public_id
            self._private_subnet_ids[zone] = private_id
            if props.nat_gateways == "per_az" or index == 0:
                eip = Eip(self, f"nat-{zone}", domain="vpc", tags={"Name": f"{props.name}-nat-{zone}"})
                nat = NatGateway(
                    self,
                    f"nat-{zone}-gw",
                    allocation_id=eip.id,
                    subnet_id=public_id,
                    tags={"Name": f"{props.name}-{zone}"},
                    depends_on=[igw],
                )
                nat_ids.append(nat.id)
            nat_by_zone[zone] = nat_ids[-1]
            route_table_id = RouteTable(
                self, f"private-{zone}-rt", vpc_id=vpc_id, tags={"Name": f"{props.name}-private-{zone}"}
            ).id
            ROUTE.add(
                self,
                f"private-{zone}-default",
                route_table_id=route_table_id,
                destination_cidr_block="0.0.0.0/0",
                nat_gateway_id=nat_ids[-1],
            )
            ROUTE_TABLE_ASSOCIATION.add(
                self, f"private-{zone}-rta", subnet_id=private_id, route_table_id=route_table_id
            )
            private_route_table_ids.append(route_table_id)

        self._local_zone_subnet_id: str | None = None
        if props.local_zone is not None:
            local = props.local_zone
            table_id = self._local_zone_subnet(
                vpc_id=vpc_id,
                local=local,
                cidr=local_zone_cidr(props.cidr),
                by_id=by_id,
                nat_id=nat_by_zone[local.egress_zone],
                name=props.name,
            )
            private_route_table_ids.append(table_id)

        # The S3 gateway endpoint is free and keeps image layers and datasets off the NAT. A Local
        # Zone subnet's route table is one of the VPC's like any other (routing rules above).
        VpcEndpoint(
            self,
            "s3",
            vpc_id=vpc_id,
            service_name=f"com.amazonaws.{props.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=private_route_table_ids,
            tags={"Name": f"{props.name}-s3"},
        )

    def _local_zone_subnet(
        self, *, vpc_id: str, local: LocalZoneSubnetProps, cidr: str, by_id: bool, nat_id: str, name: str
    ) -> str:
        """The Local Zone's private subnet, checked at plan time to be an opted-in Local Zone, with a
        route table whose default route goes to `nat_id`, a NAT gateway of the region. Returns the
        route table's id."""
        zone = local.zone
        found = DataAwsAvailabilityZone(
            self,
            f"local-{zone}-zone",
            all_availability_zones=True,  # a zone not opted in is found too, to say so
            zone_id=zone if by_id else None,
            name=None if by_id else zone,
        )
        subnet = Subnet(
            self,
            f"local-{zone}",
            vpc_id=vpc_id,
            cidr_block=cidr,
            availability_zone=None if by_id else zone,
            availability_zone_id=zone if by_id else None,
            tags={"Name": f"{name}-private-{zone}"},
            lifecycle=TerraformResourceLifecycle(
                precondition=[
                    Precondition(
                        condition=expression(
                            f"{found.fqn}.zone_type == {string_literal('local-zone')} && "
                            f"{found.fqn}.opt_in_status == {string_literal('opted-in')}"
                        ),
                        error_message=interpolated(
                            f"cluster.vpc.gpu_local_zone {zone} is a ",
                            Expression(f"{found.fqn}.zone_type"),
                            " whose opt-in status in this account is ",
                            Expression(f"{found.fqn}.opt_in_status"),
                            ": it must be a Local Zone this account opted in to "
                            "(aws ec2 modify-availability-zone-group --group-name ",
                            Expression(f"{found.fqn}.group_name"),
                            " --opt-in-status opted-in).",
                        ),
                    )
                ]
            ),
        )
        table_id = RouteTable(self, f"local-{zone}-rt", vpc_id=vpc_id, tags={"Name": f"{name}-private-{zone}"}).id
        ROUTE.add(
            self,
            f"local-{zone}-default",
            route_table_id=table_id,
            destination_cidr_block="0.0.0.0/0",
            nat_gateway_id=nat_id,
        )
        self._local_zone_subnet_id = subnet_id = subnet.id
        ROUTE_TABLE_ASSOCIATION.add(self, f"local-{zone}-rta", subnet_id=subnet_id, route_table_id=table_id)
        return table_id

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

    @property
    def local_zone_subnet_id(self) -> str | None:
        """The Local Zone's private subnet id; None without a Local Zone."""
        return self._local_zone_subnet_id


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
    INGRESS_RULE.add(
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
