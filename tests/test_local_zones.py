"""A GPU subnet in a Local Zone (cluster.vpc.gpu_local_zone): P6e-GB200 UltraServer Capacity Blocks are
delivered in the Dallas Local Zone (EC2 User Guide, "Launch instances using Capacity Blocks"), so the gb200
fixture's GPU group runs in a private subnet there, while the control plane, the system nodes, the interface
endpoints and the file system stay in the region's zones (EKS places no interface in a Local Zone subnet;
docs/gb200.md). Each rule of the profile is shown failing on a change of the fixture."""

from __future__ import annotations

import pytest

from components.network import local_zone_cidr, subnet_layout
from profiles import validate_profile
from profiles.loader import parse_profile_text
from profiles.vpc import is_local_zone, local_zone_id_prefix, local_zone_region
from tests.cases import FIXTURE_PROFILES
from tests.synth_helpers import by_path, path_of, ref, resources
from tests.test_profiles import DELETE, assert_reported, changed, mutated

GB200 = parse_profile_text((FIXTURE_PROFILES / "gb200.yaml").read_bytes(), "gb200")
CAPACITY_ZONE = "cluster__gpu_node_groups__0__capacity__availability_zone"
# The Dallas Local Zone: name, zone ID and parent zone (AWS Local Zones User Guide, "Available Local Zones").
DALLAS, DALLAS_ID, DALLAS_PARENT = "us-east-1-dfw-2a", "use1-dfw2-az1", "use1-az4"


def by_names(doc: dict) -> dict:
    """The gb200 fixture with every zone named by name instead of by ID (zone names of one account)."""
    return changed(
        doc,
        cluster__vpc__availability_zones=["us-east-1a", "us-east-1b"],
        cluster__vpc__gpu_availability_zone="us-east-1a",
        cluster__vpc__gpu_local_zone=DALLAS,
        **{CAPACITY_ZONE: DALLAS},
    )


@pytest.mark.parametrize(
    ("zone", "region", "prefix"),
    [
        (DALLAS, "us-east-1", None),
        (DALLAS_ID, None, "use1"),
        ("us-west-2-lax-1a", "us-west-2", None),
        ("usw2-lax1-az1", None, "usw2"),
        ("us-east-1a", None, None),  # an AZ
        ("use1-az4", None, None),
        ("us-east-1-wl1-bos-wlz-1", None, None),  # a Wavelength Zone
        ("use1-wl1-bos-wlz1", None, None),
    ],
)
def test_local_zone_names_and_ids_are_told_apart(zone, region, prefix):
    assert (local_zone_region(zone), local_zone_id_prefix(zone)) == (region, prefix)
    assert is_local_zone(zone) == (region is not None or prefix is not None)


def test_the_fixture_runs_its_gpu_group_in_the_dallas_local_zone():
    vpc = validate_profile(GB200).cluster.vpc
    assert (vpc.gpu_local_zone, vpc.gpu_node_zone, vpc.gpu_az) == (DALLAS_ID, DALLAS_ID, DALLAS_PARENT)
    assert validate_profile(by_names(GB200)).cluster.vpc.gpu_node_zone == DALLAS


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        (  # named the other way than availability_zones
            {"cluster__vpc__gpu_local_zone": DALLAS},
            "cluster.vpc.gpu_local_zone",
            [
                f"'{DALLAS}'",
                "uses zone IDs: name the Local Zone the same way",
                f"allowed: its zone ID, e.g. {DALLAS_ID}",
            ],
        ),
        (  # a Local Zone of another region
            {"cluster__vpc__gpu_local_zone": "usw2-lax1-az1", CAPACITY_ZONE: "usw2-lax1-az1"},
            "cluster.vpc.gpu_local_zone",
            ["'usw2-lax1-az1'", "not a Local Zone of region us-east-1", "use1-<location><n>-az<n>"],
        ),
        (  # a Wavelength Zone is no Local Zone
            {"cluster__vpc__gpu_local_zone": "use1-wl1-bos-wlz1"},
            "cluster.vpc.gpu_local_zone",
            ["'use1-wl1-bos-wlz1'", "not the name or ID of a Local Zone", "e.g. use1-dfw2-az1 or us-east-1-dfw-2a"],
        ),
        (  # one of the VPC's own zones
            {"cluster__vpc__gpu_local_zone": "use1-az6"},
            "cluster.vpc.gpu_local_zone",
            ["'use1-az6'", "is one of availability_zones, not a Local Zone"],
        ),
        (  # the block is in the Local Zone, the GPU subnet is not
            {"cluster__vpc__gpu_local_zone": DELETE},
            "cluster.gpu_node_groups.0.capacity.availability_zone",
            [
                f"'{DALLAS_ID}'",
                "must be in the GPU availability zone",
                "it is a Local Zone: set cluster.vpc.gpu_local_zone to it",
                f"allowed: {DALLAS_PARENT} (cluster.vpc.gpu_availability_zone)",
            ],
        ),
        (  # the GPU subnet is in the Local Zone, the block is not
            {CAPACITY_ZONE: DALLAS_PARENT},
            "cluster.gpu_node_groups.0.capacity.availability_zone",
            [
                f"'{DALLAS_PARENT}'",
                "must be in the GPU Local Zone",
                f"allowed: {DALLAS_ID} (cluster.vpc.gpu_local_zone)",
            ],
        ),
        (  # no GPU group to run there
            {"cluster__gpu_node_groups": [], "addons__gpu_operator": {"dra": False}},
            "cluster.vpc.gpu_local_zone",
            [f"'{DALLAS_ID}'", "for GPU node groups, and the profile has none"],
        ),
        (  # a Local Zone is no zone of the control plane
            {
                "cluster__vpc__availability_zones": [DALLAS_PARENT, DALLAS_ID],
                "cluster__vpc__gpu_local_zone": DELETE,
                CAPACITY_ZONE: DALLAS_PARENT,
            },
            "cluster.vpc.availability_zones.1",
            [f"'{DALLAS_ID}'", "not a zone ID of region us-east-1", "a Local Zone takes the GPU subnet only"],
        ),
        (  # Lustre over EFA would cross from the Local Zone to the file system's zone
            {
                "storage__fsx": {
                    "deployment_type": "PERSISTENT_2",
                    "efa_enabled": True,
                    "storage_capacity_gib": 4800,
                    "throughput_mbps_per_tib": 1000,
                    "metadata_iops": 12000,
                }
            },
            "storage.fsx.efa_enabled",
            [f"Local Zone {DALLAS_ID}", f"file system in {DALLAS_PARENT}", "allowed: efa_enabled: false"],
        ),
    ],
    ids=[
        "named-by-name",
        "other-region",
        "wavelength-zone",
        "an-az",
        "block-in-the-local-zone",
        "block-outside-it",
        "no-gpu-group",
        "in-availability-zones",
        "lustre-over-efa",
    ],
)
def test_a_bad_local_zone_is_refused_naming_the_field_the_value_and_what_is_allowed(changes, field, words):
    assert_reported(changed(GB200, **changes), field, words)


def test_zone_names_check_the_local_zone_s_region_by_its_name():
    assert_reported(
        changed(
            by_names(GB200), cluster__vpc__gpu_local_zone="us-west-2-lax-1a", **{CAPACITY_ZONE: "us-west-2-lax-1a"}
        ),
        "cluster.vpc.gpu_local_zone",
        ["'us-west-2-lax-1a'", "not a Local Zone of region us-east-1", "us-east-1-<location>-<n><letter>"],
    )
    assert_reported(
        changed(GB200, cluster__vpc__gpu_local_zone=DALLAS_ID.replace("az1", "az")),
        "cluster.vpc.gpu_local_zone",
        ["not the name or ID of a Local Zone"],
    )


def test_lustre_over_tcp_is_fine_from_the_local_zone():
    fsx = {"deployment_type": "PERSISTENT_2", "storage_capacity_gib": 1200, "throughput_mbps_per_tib": 125}
    assert validate_profile(changed(GB200, storage__fsx=fsx)).storage.fsx.enabled


def test_a_profile_without_a_local_zone_is_unchanged():
    vpc = validate_profile(mutated()).cluster.vpc
    assert vpc.gpu_local_zone is None and vpc.gpu_node_zone == vpc.gpu_az == "us-west-2a"


@pytest.mark.parametrize("cidr", ["10.0.0.0/16", "10.0.0.0/20", "192.168.0.0/18"])
def test_the_local_zone_subnet_has_a_block_of_its_own(cidr):
    import ipaddress

    private, public = subnet_layout(cidr, 4)  # the most AZs a profile may name
    local = ipaddress.IPv4Network(local_zone_cidr(cidr))
    assert local.subnet_of(ipaddress.IPv4Network(cidr))
    assert local.prefixlen == ipaddress.IPv4Network(private[0]).prefixlen
    assert not any(local.overlaps(ipaddress.IPv4Network(block)) for block in private + public)


# Synthesis: the gb200 fixture's cluster layer.


def cluster(synthesized):
    return synthesized.stack("gb200", "cluster")


def test_the_gpu_group_runs_in_the_local_zone_subnet(synthesized):
    stack = cluster(synthesized)
    subnet_id, subnet = by_path(stack, "aws_subnet", f"network/local-{DALLAS_ID}")
    assert subnet["availability_zone_id"] == DALLAS_ID and "availability_zone" not in subnet
    assert subnet["cidr_block"] == local_zone_cidr("10.0.0.0/16") == "10.0.128.0/19"
    assert not subnet.get("map_public_ip_on_launch")
    # Only the GPU groups are placed in it, by id: no load balancer or Karpenter discovery tag.
    assert subnet["tags"] == {"Name": f"gb200-training-private-{DALLAS_ID}"}
    groups = [g for g in resources(stack, "aws_eks_node_group").values() if g["node_group_name"] != "system"]
    assert [g["subnet_ids"] for g in groups] == [[ref("aws_subnet", subnet_id)]]
    # The plan asks EC2 whether the type is offered in the Local Zone, not in the parent zone.
    _, offered = by_path(stack, "aws_ec2_instance_type_offerings", "gpu-gb200-nvl36/offered-in-zone", section="data")
    assert {f["name"]: f["values"] for f in offered["filter"]}["location"] == [DALLAS_ID]
    (template,) = [t for t in resources(stack, "aws_launch_template").values() if "/gpu-" in path_of(t)]
    (offer,) = [c for c in template["lifecycle"]["precondition"] if "does not offer" in c["error_message"]]
    assert "Set cluster.vpc.gpu_local_zone (or the capacity's zone)" in offer["error_message"]


def test_the_local_zone_leaves_by_the_nat_gateway_of_the_region(synthesized):
    stack = cluster(synthesized)
    table_id, _ = by_path(stack, "aws_route_table", f"network/local-{DALLAS_ID}-rt")
    (route,) = [
        r for r in resources(stack, "aws_route").values() if r["route_table_id"] == ref("aws_route_table", table_id)
    ]
    assert route["destination_cidr_block"] == "0.0.0.0/0" and "gateway_id" not in route
    nat_id, nat = by_path(stack, "aws_nat_gateway", f"network/nat-{DALLAS_PARENT}-gw")
    assert route["nat_gateway_id"] == ref("aws_nat_gateway", nat_id)
    # The NAT gateway is in the region: in the parent zone's public subnet.
    public_id, _ = by_path(stack, "aws_subnet", f"network/public-{DALLAS_PARENT}")
    assert nat["subnet_id"] == ref("aws_subnet", public_id)
    assert len(resources(stack, "aws_nat_gateway")) == 1  # none in the Local Zone
    subnet_id, _ = by_path(stack, "aws_subnet", f"network/local-{DALLAS_ID}")
    (association,) = [
        a
        for a in resources(stack, "aws_route_table_association").values()
        if a["subnet_id"] == ref("aws_subnet", subnet_id)
    ]
    assert association["route_table_id"] == ref("aws_route_table", table_id)
    # S3 traffic from the Local Zone takes the gateway endpoint too.
    (s3,) = resources(stack, "aws_vpc_endpoint").values()
    assert ref("aws_route_table", table_id) in s3["route_table_ids"]


def test_the_plan_refuses_a_local_zone_the_account_did_not_opt_in_to(synthesized):
    stack = cluster(synthesized)
    zone_id, zone = by_path(stack, "aws_availability_zone", f"network/local-{DALLAS_ID}-zone", section="data")
    assert zone == {**zone, "zone_id": DALLAS_ID, "all_availability_zones": True}
    _, subnet = by_path(stack, "aws_subnet", f"network/local-{DALLAS_ID}")
    (check,) = subnet["lifecycle"]["precondition"]
    data = f"data.aws_availability_zone.{zone_id}"
    assert check["condition"] == f'${{{data}.zone_type == "local-zone" && {data}.opt_in_status == "opted-in"}}'
    assert f"--group-name ${{{data}.group_name}} --opt-in-status opted-in" in check["error_message"]


def test_the_control_plane_and_system_nodes_stay_in_the_region_s_zones(synthesized):
    stack = cluster(synthesized)
    regional = [
        ref("aws_subnet", by_path(stack, "aws_subnet", f"network/private-{z}")[0]) for z in (DALLAS_PARENT, "use1-az6")
    ]
    (eks,) = resources(stack, "aws_eks_cluster").values()
    assert eks["vpc_config"]["subnet_ids"] == regional
    (system,) = [g for g in resources(stack, "aws_eks_node_group").values() if g["node_group_name"] == "system"]
    assert system["subnet_ids"] == regional
    outputs = stack["output"]
    assert outputs["private_subnet_ids"]["value"] == regional
    # The file system's subnet (storage layer) is the GPU AZ's; the Local Zone's is published apart.
    assert outputs["gpu_subnet_id"]["value"] == regional[0]
    local = ref("aws_subnet", by_path(stack, "aws_subnet", f"network/local-{DALLAS_ID}")[0])
    assert outputs["gpu_local_zone_subnet_id"]["value"] == local


def test_the_efa_group_stays_in_the_local_zone_subnet(synthesized):
    """The launch template's interfaces carry the EFA group (all traffic among its members only);
    the subnet is the node group's, so every EFA interface is in the Local Zone."""
    stack = cluster(synthesized)
    (template,) = [t for t in resources(stack, "aws_launch_template").values() if "/gpu-" in path_of(t)]
    efa_sg = ref("aws_security_group", by_path(stack, "aws_security_group", "efa-sg/group")[0])
    interfaces = template["network_interfaces"]
    assert len(interfaces) == 5 and all(efa_sg in nic["security_groups"] for nic in interfaces)
    assert all("subnet_id" not in nic for nic in interfaces)
    assert "placement" not in template  # the Capacity Block brings its own placement (or none)


def test_the_emulated_deploy_applies_no_local_zone_which_the_emulator_does_not_know():
    """The emulated deploy (tests/emulator) applies profiles against moto, whose EC2 model (5.2.5)
    knows no Local Zone: DescribeAvailabilityZones lists none, so the plan's zone check finds nothing,
    and CreateSubnet refuses the zone. No emulated profile has one; when moto learns Local Zones this
    test says so, and the gb200 fixture could join the emulated profiles."""
    import boto3
    from botocore.exceptions import ClientError
    from moto import mock_aws

    from tests.cases import EMULATED_PROFILES, profile_config

    assert all(profile_config(name).cluster.vpc.gpu_local_zone is None for name in EMULATED_PROFILES)
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        zones = ec2.describe_availability_zones(AllAvailabilityZones=True)["AvailabilityZones"]
        assert {zone["ZoneType"] for zone in zones} == {"availability-zone"}
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        with pytest.raises(ClientError, match="InvalidParameterValue"):
            ec2.create_subnet(VpcId=vpc, CidrBlock=local_zone_cidr("10.0.0.0/16"), AvailabilityZoneId=DALLAS_ID)
