"""The emulator's extensions (tests/emulator/extensions.py), exercised with boto3."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.emulator.server import start_emulator

# Left out of `make check` (the emulator and its extensions, through boto3); `make test` runs it.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def emulator():
    running = start_emulator()
    yield running
    running.stop()


def client(emulator, service):
    return boto3.client(
        service,
        region_name="us-west-2",
        endpoint_url=emulator.endpoint,
        aws_access_key_id="emulator",
        aws_secret_access_key="emulator",
    )


def test_placement_groups(emulator):
    ec2 = client(emulator, "ec2")
    ec2.create_placement_group(
        GroupName="pg-a",
        Strategy="cluster",
        TagSpecifications=[{"ResourceType": "placement-group", "Tags": [{"Key": "k", "Value": "v"}]}],
    )
    (group,) = ec2.describe_placement_groups(GroupNames=["pg-a"])["PlacementGroups"]
    assert (group["GroupName"], group["Strategy"], group["State"]) == ("pg-a", "cluster", "available")
    assert group["Tags"] == [{"Key": "k", "Value": "v"}]
    ec2.delete_placement_group(GroupName="pg-a")
    assert ec2.describe_placement_groups(GroupNames=["pg-a"])["PlacementGroups"] == []


@pytest.fixture(scope="module")
def cluster(emulator):
    ec2, eks = client(emulator, "ec2"), client(emulator, "eks")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.0.0/24")["Subnet"]["SubnetId"]
    created = eks.create_cluster(
        name="emu", roleArn="arn:aws:iam::123456789012:role/x", resourcesVpcConfig={"subnetIds": [subnet]}
    )["cluster"]
    return created, vpc


def test_cluster_security_group_lives_and_dies_with_the_cluster(emulator, cluster):
    created, vpc = cluster
    group_id = created["resourcesVpcConfig"]["clusterSecurityGroupId"]
    ec2 = client(emulator, "ec2")
    (group,) = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"]
    assert group["VpcId"] == vpc
    described = client(emulator, "eks").describe_cluster(name="emu")["cluster"]
    assert described["resourcesVpcConfig"]["clusterSecurityGroupId"] == group_id


def test_access_entries_and_policies(emulator, cluster):
    eks = client(emulator, "eks")
    principal = "arn:aws:iam::123456789012:role/admins"
    eks.create_access_entry(clusterName="emu", principalArn=principal, type="STANDARD")
    assert (
        eks.describe_access_entry(clusterName="emu", principalArn=principal)["accessEntry"]["principalArn"] == principal
    )
    policy = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    eks.associate_access_policy(
        clusterName="emu", principalArn=principal, policyArn=policy, accessScope={"type": "cluster"}
    )
    listed = eks.list_associated_access_policies(clusterName="emu", principalArn=principal)["associatedAccessPolicies"]
    assert [p["policyArn"] for p in listed] == [policy]
    eks.delete_access_entry(clusterName="emu", principalArn=principal)
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        eks.describe_access_entry(clusterName="emu", principalArn=principal)


def test_addons_create_their_pod_identity_associations(emulator, cluster):
    eks = client(emulator, "eks")
    addon = eks.create_addon(
        clusterName="emu",
        addonName="aws-ebs-csi-driver",
        podIdentityAssociations=[
            {"serviceAccount": "ebs-csi-controller-sa", "roleArn": "arn:aws:iam::123456789012:role/ebs"}
        ],
    )["addon"]
    assert addon["status"] == "ACTIVE" and len(addon["podIdentityAssociations"]) == 1
    (summary,) = eks.list_pod_identity_associations(clusterName="emu")["associations"]
    association = eks.describe_pod_identity_association(clusterName="emu", associationId=summary["associationId"])
    assert association["association"]["serviceAccount"] == "ebs-csi-controller-sa"
    eks.delete_addon(clusterName="emu", addonName="aws-ebs-csi-driver")
    assert eks.list_pod_identity_associations(clusterName="emu")["associations"] == []
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        eks.describe_addon(clusterName="emu", addonName="aws-ebs-csi-driver")


def test_pod_identity_associations(emulator, cluster):
    eks = client(emulator, "eks")
    created = eks.create_pod_identity_association(
        clusterName="emu",
        namespace="kube-system",
        serviceAccount="karpenter",
        roleArn="arn:aws:iam::123456789012:role/k",
    )["association"]
    fetched = eks.describe_pod_identity_association(clusterName="emu", associationId=created["associationId"])
    assert fetched["association"]["namespace"] == "kube-system"
    eks.delete_pod_identity_association(clusterName="emu", associationId=created["associationId"])
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        eks.describe_pod_identity_association(clusterName="emu", associationId=created["associationId"])


def test_cluster_deletion_removes_its_security_group(emulator, cluster):
    created, _ = cluster
    group_id = created["resourcesVpcConfig"]["clusterSecurityGroupId"]
    client(emulator, "eks").delete_cluster(name="emu")
    with pytest.raises(ClientError, match=r"InvalidGroup\.NotFound"):
        client(emulator, "ec2").describe_security_groups(GroupIds=[group_id])


def test_addon_versions_answer_with_one_default(emulator):
    eks = client(emulator, "eks")
    found = eks.describe_addon_versions(addonName="aws-mountpoint-s3-csi-driver", kubernetesVersion="1.35")
    (addon,) = found["addons"]
    (version,) = addon["addonVersions"]
    assert version["addonVersion"] == "v2.8.0-eksbuild.1"
    assert version["compatibilities"] == [{"clusterVersion": "1.35", "platformVersions": ["*"], "defaultVersion": True}]


def test_deleting_a_gateway_endpoint_again_succeeds_as_on_aws(emulator):
    """The SDK retries a request whose response was lost; the retried delete must not fail the
    teardown (moto removed the endpoint's routes a second time and failed)."""
    ec2 = client(emulator, "ec2")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    tables = [ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"] for _ in range(2)]
    endpoint = ec2.create_vpc_endpoint(
        VpcId=vpc, ServiceName="com.amazonaws.us-west-2.s3", VpcEndpointType="Gateway", RouteTableIds=tables
    )["VpcEndpoint"]["VpcEndpointId"]
    routes = ec2.describe_route_tables(RouteTableIds=tables)["RouteTables"]
    assert all(any(r.get("GatewayId") == endpoint for r in table["Routes"]) for table in routes)
    ec2.delete_vpc_endpoints(VpcEndpointIds=[endpoint])
    ec2.delete_vpc_endpoints(VpcEndpointIds=[endpoint])  # the retry
    routes = ec2.describe_route_tables(RouteTableIds=tables)["RouteTables"]
    assert not any(r.get("GatewayId") == endpoint for table in routes for r in table["Routes"])
