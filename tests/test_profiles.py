"""Profile validation: every shipped profile loads; every validator rejects bad input with a
message that names the field, the bad value and what is allowed."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import pytest
import yaml

from profiles import ProfileError, available_profiles, load_profile, validate_profile
from profiles.base import did_you_mean
from profiles.capacity import CapacityBlock, OdcrCapacity
from profiles.catalog import CATALOG

BASE = yaml.safe_load((Path(__file__).resolve().parents[1] / "profiles" / "gpu-validation.yaml").read_text())


def mutated(**changes) -> dict:
    """The default profile with changes at `a__b__0__c` paths; a value of DELETE removes the key.
    Another Kubernetes minor without a release of its own also drops the profile's AMI pin (a
    release of the default minor), as a profile written for that minor would not have it."""
    if "cluster__kubernetes_version" in changes and "cluster__ami_release_version" not in changes:
        changes = {**changes, "cluster__ami_release_version": DELETE}
    return changed(BASE, **changes)


def changed(base: dict, **changes) -> dict:
    doc = copy.deepcopy(base)
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        if value is DELETE:
            del node[leaf]
        elif isinstance(node, list):
            node[int(leaf)] = value
        else:
            node[leaf] = value
    return doc


DELETE = object()


def problems(doc: dict) -> list[str]:
    with pytest.raises(ProfileError) as caught:
        validate_profile(doc)
    return caught.value.problems


def assert_reported(doc: dict, field: str, words: list[str]) -> None:
    """The profile is rejected with a problem on `field` whose text contains every word."""
    found = problems(doc)
    matching = [line for line in found if line.startswith(f"{field}: ")]
    assert matching, f"no problem reported for {field}; got {found}"
    for word in words:
        assert any(word in line for line in matching), f"{word!r} missing from {matching}"


def test_shipped_profiles_are_the_three_documented_ones():
    assert available_profiles() == ["gpu-validation", "p5-training", "p5en-training"]


@pytest.mark.parametrize("name", ["gpu-validation", "p5-training", "p5en-training"])
def test_shipped_profiles_load(name):
    config = load_profile(name)
    for group in config.cluster.gpu_node_groups:
        assert group.efa_enabled and group.catalog_entry.efa_supported


def test_defaults_are_safe_and_cheap():
    config = validate_profile(
        {
            "name": "tiny",
            "region": "us-west-2",
            "cluster": {"vpc": {"availability_zones": ["us-west-2a", "us-west-2b"]}},
        }
    )
    assert config.cluster.vpc.nat_gateways == "single"
    assert config.cluster.vpc.interface_endpoints == []
    assert config.cluster.endpoint_public_access_cidrs == []  # API private unless CIDRs are named
    assert config.cluster.gpu_node_groups == []
    assert config.storage.protect_from_destroy is True
    assert config.state.bucket is None


def test_catalog_matches_the_documented_efa_facts():
    expected = {
        "p4d.24xlarge": 4,
        "p5.48xlarge": 32,
        "p5e.48xlarge": 32,
        "p5en.48xlarge": 16,
        "p6-b200.48xlarge": 8,
        "p6-b300.48xlarge": 16,
        "g6.8xlarge": 1,
        "g6.xlarge": 0,
        "g6e.24xlarge": 2,
        "g6e.48xlarge": 4,
    }
    assert {name: CATALOG[name].max_efa_interfaces for name in expected} == expected
    b300 = CATALOG["p6-b300.48xlarge"]
    assert b300.network_cards == 17 and b300.efa_network_cards == tuple(range(1, 17))


# (changes to the default profile, expected field path, words the message must contain)
BAD_INPUT = [
    # a tenant quota below one node of the largest GPU group (gpu-validation: g6.8xlarge, 1 GPU)
    (
        {"workloads__tenants": [{"name": "t", "gpu_quota": 0}]},
        "workloads.tenants.0.gpu_quota",
        ["got 0", "smaller than one g6.8xlarge node (1 GPU)", "at least 1 GPU, or unset"],
    ),
    ({"workloads__tenants": [{"name": "t", "cpu_quota": "16"}]}, "workloads.tenants.0.cpu_quota", ["'16'", "32 vCPUs"]),
    (
        {"workloads__tenants": [{"name": "t", "memory_quota": "64Gi"}]},
        "workloads.tenants.0.memory_quota",
        ["'64Gi'", "128Gi"],
    ),
    # the Service CIDR: EKS's own rules, and never over the VPC (the API's ClusterIP is named by it)
    (
        {"cluster__service_ipv4_cidr": "10.0.0.0/20"},
        "cluster.service_ipv4_cidr",
        ["'10.0.0.0/20'", "overlaps the VPC (10.0.0.0/16)", "that does not overlap the VPC"],
    ),
    (
        {"cluster__service_ipv4_cidr": "100.64.0.0/16"},
        "cluster.service_ipv4_cidr",
        ["'100.64.0.0/16'", "EKS refuses", "10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16"],
    ),
    ({"cluster__service_ipv4_cidr": "172.20.0.0/26"}, "cluster.service_ipv4_cidr", ["'172.20.0.0/26'", "/12 to /24"]),
    ({"cluster__service_ipv4_cidr": "172.20.0.1/16"}, "cluster.service_ipv4_cidr", ["'172.20.0.1/16'", "host bits"]),
    # near-misses get a suggestion: unknown keys, literal choices, union tags, catalog names
    ({"clustr": {}}, "clustr", ["unknown setting", "did you mean 'cluster'?"]),
    ({"cluster__kubernetes_versoin": "1.35"}, "cluster.kubernetes_versoin", ["did you mean 'kubernetes_version'?"]),
    ({"cluster__control_plane_log_types": ["audt"]}, "cluster.control_plane_log_types.0", ["did you mean 'audit'?"]),
    (
        {"cluster__gpu_node_groups__0__capacity": {"type": "on_demnd"}},
        "cluster.gpu_node_groups.0.capacity.type",
        ["'on_demnd'", "did you mean 'on_demand'?"],
    ),
    (
        {"cluster__gpu_node_groups__0__instance_type": "g6.8xlarg"},
        "cluster.gpu_node_groups.0.instance_type",
        ["did you mean 'g6.8xlarge'?"],
    ),
    ({"name": "Bad_Name"}, "name", ["'Bad_Name'", "not in the expected form", "e.g. gpu-platform"]),
    ({"region": "mars-1"}, "region", ["'mars-1'"]),
    ({"colour": "blue"}, "colour", ["unknown setting", "allowed: name, region"]),
    # a setting written at the wrong level is pointed to where it belongs (no sibling is close)
    ({"tenants": []}, "tenants", ["unknown setting here; it belongs at workloads.tenants"]),
    (
        {"cluster__tenant": {}},
        "cluster.tenant",
        ["it belongs at workloads.tenants", "allowed: kubernetes_version"],
    ),
    ({"gpu_node_groups": []}, "gpu_node_groups", ["it belongs at cluster.gpu_node_groups"]),
    ({"state__bucket": "Not A Bucket"}, "state.bucket", ["'Not A Bucket'"]),
    ({"cluster__kubernetes_version": "1.20"}, "cluster.kubernetes_version", ["'1.20'", "allowed: 1.31, 1.32, 1.33"]),
    ({"cluster__vpc__cidr": "10.0.0.1/16"}, "cluster.vpc.cidr", ["host bits", "'10.0.0.1/16'"]),
    ({"cluster__vpc__cidr": "10.0.0.0/24"}, "cluster.vpc.cidr", ["/20 or larger"]),
    ({"cluster__vpc__availability_zones": ["us-west-2a"]}, "cluster.vpc.availability_zones", ["at least 2"]),
    (
        {"cluster__vpc__availability_zones": ["us-west-2a", "us-west-2a"]},
        "cluster.vpc.availability_zones",
        ["distinct"],
    ),
    (
        {"cluster__vpc__availability_zones": ["us-west-2a", "us-east-1b"]},
        "cluster.vpc.availability_zones.1",
        ["'us-east-1b'", "not an availability zone of region us-west-2"],
    ),
    (
        {"cluster__vpc__availability_zones": ["usw2-az1", "us-west-2b"]},
        "cluster.vpc.availability_zones",
        ["name every availability zone the same way", "zone IDs (here usw2-az1) or zone names"],
    ),
    (
        {"cluster__vpc__availability_zones": ["usw2-az1", "use1-az1"]},
        "cluster.vpc.availability_zones.1",
        ["'use1-az1'", "not a zone ID of region us-west-2", "usw2-az1, usw2-az2"],
    ),
    (
        {
            "cluster__vpc__availability_zones": ["usw2-az1", "usw2-az2"],
            "cluster__vpc__gpu_availability_zone": "us-west-2a",
        },
        "cluster.vpc.gpu_availability_zone",
        ["'us-west-2a'", "not one the VPC spans", "allowed: usw2-az1, usw2-az2"],
    ),
    (
        {"cluster__vpc__gpu_availability_zone": "us-west-2c"},
        "cluster.vpc.gpu_availability_zone",
        ["'us-west-2c'", "not one the VPC spans", "allowed: us-west-2a, us-west-2b"],
    ),
    ({"cluster__vpc__nat_gateways": "two"}, "cluster.vpc.nat_gateways", ["'two'", "allowed: single, per_az"]),
    (
        {"cluster__vpc__interface_endpoints": ["dynamodb"]},
        "cluster.vpc.interface_endpoints.0",
        ["'dynamodb'", "allowed: ecr.api, ecr.dkr"],
    ),
    (
        {
            "addons": {
                "karpenter": {"enabled": False},
                "jupyterhub": {
                    "enabled": True,
                    "allowed_users": ["a-sub"],
                    "oidc": {
                        "client_id": "hub",
                        "callback_url": "https://jupyter.example.com/hub/oauth_callback",
                        "authorize_url": "https://login.example.com/authorize",
                        "token_url": "https://login.example.com/token",
                        "userdata_url": "https://login.example.com/userinfo",
                    },
                },
            }
        },
        "addons.jupyterhub.enabled",
        ["run on Karpenter's node pools", "allowed: addons.karpenter.enabled: true"],
    ),
    ({"workloads__tenants": [{"name": "mount-s3"}]}, "workloads.tenants.0.name", ["'mount-s3'", "other components"]),
    (
        {"cluster__gpu_node_groups__0__labels": {"role": "mine"}},
        "cluster.gpu_node_groups.0.labels.role",
        ["'role' is a label the platform sets"],
    ),
    (
        {"cluster__gpu_node_groups__0__labels": {"platform/efa": "false"}},
        "cluster.gpu_node_groups.0.labels.platform/efa",
        ["'platform/efa' is a label the platform sets"],
    ),
    (
        {
            "cluster__gpu_node_groups__0__capacity": {
                "type": "capacity_block",
                "starts_at": "2099-02-22T11:30:00Z",
                "ends_at": "2099-03-01T11:30:00Z",
                "drain_minutes": 40,
                "reservation_id": "cr-0123456789abcdef0",
                "instance_count": 2,
                "availability_zone": "us-west-2a",
            }
        },
        "cluster.gpu_node_groups.0.capacity.drain_minutes",
        ["got 40", "greater than or equal to 45"],
    ),
    (
        {
            "cluster__gpu_node_groups__0__capacity": {
                "type": "capacity_block",
                "starts_at": "2030-02-22T11:30:00Z",
                "ends_at": "2030-03-01T11:30:00",
                "reservation_id": "cr-0123456789abcdef0",
                "instance_count": 2,
                "availability_zone": "us-west-2a",
            }
        },
        "cluster.gpu_node_groups.0.capacity.ends_at",
        ["give the time zone"],
    ),
    (
        {
            "cluster__gpu_node_groups__0__capacity": {
                "type": "capacity_block",
                "starts_at": "2030-02-22T11:30:00",
                "ends_at": "2030-03-01T11:30:00Z",
                "reservation_id": "cr-0123456789abcdef0",
                "instance_count": 2,
                "availability_zone": "us-west-2a",
            }
        },
        "cluster.gpu_node_groups.0.capacity.starts_at",
        ["give the time zone"],
    ),
    (
        {
            "cluster__gpu_node_groups__0__capacity": {
                "type": "capacity_block",
                "ends_at": "2030-03-01T11:30:00Z",
                "reservation_id": "cr-0123456789abcdef0",
                "instance_count": 2,
                "availability_zone": "us-west-2a",
            }
        },
        "cluster.gpu_node_groups.0.capacity.starts_at",
        ["Field required"],
    ),
    (
        {
            "cluster__gpu_node_groups__0__capacity": {
                "type": "capacity_block",
                "starts_at": "2030-03-01T11:30:00Z",
                "ends_at": "2030-02-22T11:30:00Z",
                "reservation_id": "cr-0123456789abcdef0",
                "instance_count": 2,
                "availability_zone": "us-west-2a",
            }
        },
        "cluster.gpu_node_groups.0.capacity.ends_at",
        [
            "the block ends before it starts",
            "got '2030-02-22T11:30:00Z'",
            "allowed: a time after starts_at (2030-03-01T11:30:00Z)",
        ],
    ),
    (
        {
            "cluster__gpu_node_groups__0__capacity": {
                "type": "capacity_block",
                "starts_at": "2030-03-01T10:30:00Z",
                "ends_at": "2030-03-01T11:30:00Z",
                "drain_minutes": 90,
                "reservation_id": "cr-0123456789abcdef0",
                "instance_count": 2,
                "availability_zone": "us-west-2a",
            }
        },
        "cluster.gpu_node_groups.0.capacity.drain_minutes",
        ["the drain would begin before the block starts (the block lasts 60 minutes)", "got 90", "allowed: 45 to 59"],
    ),
    (
        {
            "cluster__gpu_node_groups__0__capacity": {
                "type": "capacity_block",
                "starts_at": "2030-02-22T11:30:00Z",
                "ends_at": "2030-03-01T11:30:00Z",
                "warn_minutes": 2,
                "reservation_id": "cr-0123456789abcdef0",
                "instance_count": 2,
                "availability_zone": "us-west-2a",
            }
        },
        "cluster.gpu_node_groups.0.capacity.warn_minutes",
        ["got 2", "greater than or equal to 5"],
    ),
    (
        {"cluster__ami_release_version": "1.20.4-20240917"},
        "cluster.ami_release_version",
        ["'1.20.4-20240917'", "a release for Kubernetes 1.20", "YYYYMMDD release, or unset"],
    ),
    ({"cluster__ami_release_version": "latest"}, "cluster.ami_release_version", ["an EKS AMI release version"]),
    (
        {"state": {"bucket": "my-state", "key_prefix": "../other-team"}},
        "state.key_prefix",
        ["'../other-team'", "none starting with a dot"],
    ),
    ({"state": {"bucket": "my-state", "key_prefix": "/abs"}}, "state.key_prefix", ["'/abs'"]),
    ({"region": "us-gov-west-1"}, "region", ["'us-gov-west-1'", "aws-us-gov partition", "us-east-1"]),
    ({"region": "cn-north-1"}, "region", ["aws-cn partition"]),
    (
        {"cluster__private_endpoint_access__cidrs": ["203.0.113.0/24"]},
        "cluster.private_endpoint_access.cidrs",
        ["203.0.113.0/24 is not a private address range", "endpoint_public_access_cidrs"],
    ),
    (
        {"cluster__private_endpoint_access__cidrs": ["10.0.64.0/18"]},
        "cluster.private_endpoint_access.cidrs.0",
        ["'10.0.64.0/18'", "overlaps the cluster's VPC (10.0.0.0/16)", "private_endpoint_access.security_groups"],
    ),
    (
        {"cluster__private_endpoint_access__cidrs": ["10.8.0.1/16"]},
        "cluster.private_endpoint_access.cidrs",
        ["host bits"],
    ),
    (
        {"cluster__private_endpoint_access__security_groups": ["bastion"]},
        "cluster.private_endpoint_access.security_groups.0",
        ["'bastion'", "sg-"],
    ),
    (
        {"cluster__endpoint_public_access": True, "cluster__endpoint_public_access_cidrs": ["0.0.0.0/0"]},
        "cluster.endpoint_public_access_cidrs",
        ["0.0.0.0/0", "internet"],
    ),
    (  # each tenant gets its own copy of every association (datasets, checkpoints): 2 x 5 > 8
        {"workloads": {"tenants": [{"name": f"team-{index}"} for index in range(5)]}},
        "storage.fsx.data_repository_associations",
        ["2 associations x 5 tenants = 10", "at most 8"],
    ),
    (
        {"cluster__addon_versions": {"aws-mountpoint-s3-csi-driver": "v2.7.1-eksbuild.1"}},
        "cluster.addon_versions.aws-mountpoint-s3-csi-driver",
        ["'v2.7.1-eksbuild.1'", "Mountpoint", "allowed: v2.8.0-eksbuild.N or later"],
    ),
    (
        {"cluster__addon_versions": {"aws-mountpoint-s3-csi-driver": "latest"}},
        "cluster.addon_versions.aws-mountpoint-s3-csi-driver",
        ["'latest'"],
    ),
    (
        {"cluster__addon_versions": {"kubectl": "v1.0.0-eksbuild.1"}},
        "cluster.addon_versions.kubectl",
        ["bad key", "'kubectl'", "allowed: vpc-cni"],
    ),
    # Names AWS would reject after earlier layers are applied (issue 16's cases).
    ({"name": "a" * 30}, "name", ["EventBridge rule name", "65 characters long; at most 64"]),
    ({"workloads": {"tenants": [{"name": "t" * 60}]}}, "workloads.tenants.0.name", ["IAM role name", "at most 64"]),
    (
        {
            "workloads": {"tenants": [{"name": "x-build"}]},
            "build": {"reference_implementations": {"tenant-x": {"project_image": "nccl-tests"}}},
        },
        "build.reference_implementations.tenant-x",
        ["derives IAM role name 'gpu-validation-tenant-x-build'", "as workloads.tenants.0.name does"],
    ),
    ({"name": "xn--platform"}, "name", ["prefix or suffix S3 reserves"]),
    ({"name": "sthree-data"}, "name", ["prefix or suffix S3 reserves"]),
    ({"name": "a--b"}, "name", ["ECR repository name 'a--b/image' is not a valid name"]),
    ({"name": "gpu\n"}, "name", ["the character U+000A ('\\n') is never allowed", "without double quotes"]),
    ({"cluster__vpc__cidr": "10.0.0.0/8"}, "cluster.vpc.cidr", ["at most a /16"]),
    ({"cluster__vpc__cidr": "0.0.0.0/0"}, "cluster.vpc.cidr", ["at most a /16"]),
    ({"cluster__vpc__cidr": "52.94.0.0/16"}, "cluster.vpc.cidr", ["not a private address range", "allow_public_cidr"]),
    ({"cluster__vpc__interface_endpoints": ["sts", "sts"]}, "cluster.vpc.interface_endpoints", ["repeated: sts"]),
    (
        {"workloads": {"tenants": [{"name": "monitoring"}]}},
        "workloads.tenants.0.name",
        ["a namespace the platform creates"],
    ),
    (
        {"workloads": {"tenants": [{"name": "x"}, {"name": "x-identity"}]}},
        "workloads.tenants.1.name",
        ["collides with tenant x's identity"],
    ),
    (
        {"addons": {"argo_workflows": {"enabled": True, "namespace": "kube-system"}}},
        "addons.argo_workflows.namespace",
        ["system or platform namespace"],
    ),
    ({"addons": {"argo_workflows": {"quota_cpu": "banana"}}}, "addons.argo_workflows.quota_cpu", ["'banana'"]),
    (
        {"cluster__gpu_node_groups__0__name": "system"},
        "cluster.gpu_node_groups.0.name",
        ["derives launch template name 'gpu-validation-system'"],
    ),
    ({"tags": {"aws:owner": "me"}}, "tags.aws:owner", ["aws: prefix is reserved"]),
    ({"tags": {"k" * 200: "v"}}, "tags." + "k" * 200, ["bad key", "at most 128 characters"]),
    ({"tags": {"owner": "v" * 300}}, "tags.owner", ["at most 256 characters"]),
    ({"tags": {"": "v"}}, "tags.", ["bad key", "at least 1 character"]),
    (  # two halves of the internet are the internet
        {
            "cluster__endpoint_public_access": True,
            "cluster__endpoint_public_access_cidrs": ["0.0.0.0/1", "128.0.0.0/1"],
        },
        "cluster.endpoint_public_access_cidrs",
        ["4294967296 addresses", "at most 65536"],
    ),
    (  # overlapping blocks count once, but a /15 is still wider than a /16
        {
            "cluster__endpoint_public_access": True,
            "cluster__endpoint_public_access_cidrs": ["198.18.0.0/15", "198.18.0.0/16"],
        },
        "cluster.endpoint_public_access_cidrs",
        ["131072 addresses"],
    ),
    (
        {"cluster__endpoint_public_access": True},
        "cluster.endpoint_public_access_cidrs",
        ["needs your own egress CIDRs", "allowed: one or more CIDRs"],
    ),
    (
        {"cluster__endpoint_public_access_cidrs": ["203.0.113.0/24"]},
        "cluster.endpoint_public_access",
        ["the public endpoint is off", "allowed: true"],
    ),
    ({"cluster__admin_principal_arns": ["alice"]}, "cluster.admin_principal_arns.0", ["'alice'"]),
    (
        {"cluster__control_plane_log_types": ["everything"]},
        "cluster.control_plane_log_types.0",
        ["'everything'", "allowed: api, audit"],
    ),
    (
        {"cluster__system_node_group__desired_size": 9},
        "cluster.system_node_group.desired_size",
        ["got 9", "allowed: 2..3"],
    ),
    ({"cluster__system_node_group__min_size": 5}, "cluster.system_node_group.min_size", ["above max_size"]),
    (
        {"cluster__gpu_node_groups__0__instance_type": "p9.huge"},
        "cluster.gpu_node_groups.0.instance_type",
        ["unknown GPU instance type 'p9.huge'", "p5.48xlarge", "profiles/catalog.py"],
    ),
    (
        {"cluster__gpu_node_groups__0__instance_type": "g6.xlarge"},
        "cluster.gpu_node_groups.0.efa_enabled",
        ["g6.xlarge has no EFA", "g6.8xlarge"],
    ),
    (
        {"cluster__gpu_node_groups__0__desired_size": 3},
        "cluster.gpu_node_groups.0.desired_size",
        ["between min_size and max_size", "got 3", "0..2"],
    ),
    (
        {
            "cluster__gpu_node_groups__0__capacity": {
                "type": "capacity_block",
                "starts_at": "2099-02-22T11:30:00Z",
                "ends_at": "2099-03-01T11:30:00Z",
                "instance_count": 2,
                "availability_zone": "us-west-2a",
            }
        },
        "cluster.gpu_node_groups.0.capacity.reservation_id",
        ["needs the block's reservation id"],
    ),
    (
        {
            "cluster__gpu_node_groups__0__capacity": {
                "type": "capacity_block",
                "starts_at": "2099-02-22T11:30:00Z",
                "ends_at": "2099-03-01T11:30:00Z",
                "reservation_id": "cr-123",
                "instance_count": 2,
                "availability_zone": "us-west-2a",
            }
        },
        "cluster.gpu_node_groups.0.capacity.reservation_id",
        ["'cr-123'", "17 hex digits"],
    ),
    (
        {
            "cluster__gpu_node_groups__0__capacity": {
                "type": "capacity_block",
                "starts_at": "2099-02-22T11:30:00Z",
                "ends_at": "2099-03-01T11:30:00Z",
                "reservation_id": "cr-0123456789abcdef0",
                "instance_count": 1,
                "availability_zone": "us-west-2a",
            }
        },
        "cluster.gpu_node_groups.0.max_size",
        ["larger than its Capacity Block", "got 2"],
    ),
    (
        {
            "cluster__gpu_node_groups__0__capacity": {
                "type": "capacity_block",
                "starts_at": "2099-02-22T11:30:00Z",
                "ends_at": "2099-03-01T11:30:00Z",
                "reservation_id": "cr-0123456789abcdef0",
                "instance_count": 2,
                "availability_zone": "us-west-2b",
            }
        },
        "cluster.gpu_node_groups.0.capacity.availability_zone",
        ["'us-west-2b'", "GPU availability zone", "us-west-2a"],
    ),
    (
        {"cluster__gpu_node_groups__0__capacity": {"type": "odcr", "availability_zone": "us-west-2a"}},
        "cluster.gpu_node_groups.0.capacity.reservation_id",
        ["exactly one of reservation_id or resource_group_arn"],
    ),
    (
        {"cluster__gpu_node_groups__0__capacity": {"type": "spot"}},
        "cluster.gpu_node_groups.0.capacity.type",
        ["'spot'", "allowed: on_demand, odcr, capacity_block"],
    ),
    (
        {
            "cluster__gpu_node_groups__0__capacity": {
                "type": "odcr",
                "reservation_id": "cr-0123456789abcdef0",
                "availability_zone": "us-west-2a",
            },
            "cluster__gpu_node_groups__0__placement_group": "cluster",
        },
        "cluster.gpu_node_groups.0.placement_group",
        ["forcing a new one", "allowed: none, reservation"],
    ),
    (
        {"cluster__gpu_node_groups__0__placement_group": "reservation"},
        "cluster.gpu_node_groups.0.existing_placement_group",
        ["exactly when placement_group is 'reservation'"],
    ),
    (
        {
            "cluster__gpu_node_groups": [
                {"name": "gpu-a", "instance_type": "g6.8xlarge"},
                {"name": "gpu-a", "instance_type": "g6.8xlarge"},
            ]
        },
        "cluster.gpu_node_groups.1.name",
        ["unique", "'gpu-a'"],
    ),
    (
        {"cluster__gpu_node_groups__0__root_volume_size_gib": 10},
        "cluster.gpu_node_groups.0.root_volume_size_gib",
        ["greater than or equal to 50"],
    ),
    (
        {"build__reference_implementations": {"Bad_Name": {"repository_url": "https://example.com/x.git"}}},
        "build.reference_implementations",
        ["'Bad_Name'", "lowercase letters"],
    ),
    (
        {"build__reference_implementations": {"ok": {"repository_url": "git@example.com:x.git"}}},
        "build.reference_implementations.ok.repository_url",
        ["'git@example.com:x.git'"],
    ),
]


def test_every_problem_is_reported_at_once():
    found = problems(mutated(name="X", cluster__vpc__nat_gateways="two", colour=1))
    assert {line.split(":")[0] for line in found} == {"name", "cluster.vpc.nat_gateways", "colour"}


def test_reserved_capacity_defaults_to_no_forced_placement_group():
    doc = mutated(
        cluster__gpu_node_groups__0__capacity={
            "type": "capacity_block",
            "starts_at": "2099-02-22T11:30:00Z",
            "ends_at": "2099-03-01T11:30:00Z",
            "reservation_id": "cr-0123456789abcdef0",
            "instance_count": 2,
            "availability_zone": "us-west-2a",
        }
    )
    group = validate_profile(doc).cluster.gpu_node_groups[0]
    assert isinstance(group.capacity, CapacityBlock) and group.placement == "none"
    assert validate_profile(BASE).cluster.gpu_node_groups[0].placement == "cluster"


def test_odcr_accepts_a_resource_group():
    doc = mutated(
        cluster__gpu_node_groups__0__capacity={
            "type": "odcr",
            "resource_group_arn": "arn:aws:resource-groups:us-west-2:123456789012:group/gpu-odcrs",
            "availability_zone": "us-west-2a",
        }
    )
    assert isinstance(validate_profile(doc).cluster.gpu_node_groups[0].capacity, OdcrCapacity)


def test_unknown_profile_lists_the_available_ones():
    with pytest.raises(ProfileError) as caught:
        load_profile("p6-mystery")
    assert "available: gpu-validation, p5-training, p5en-training" in caught.value.problems[0]


def test_user_profile_file(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(mutated(name="my-cluster")))
    assert load_profile(str(path)).name == "my-cluster"


def test_yaml_that_is_not_a_mapping(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(ProfileError, match="mapping"):
        load_profile(str(path))


# Storage and build: sizing rules with the nearest valid values, and naming rules.
def fsx(**settings) -> dict:
    return mutated(storage__fsx=settings)


STORAGE_BAD_INPUT = [
    (
        fsx(deployment_type="PERSISTENT_2", storage_capacity_gib=2000, throughput_mbps_per_tib=125),
        "storage.fsx.storage_capacity_gib",
        ["got 2000", "not a valid PERSISTENT_2 capacity", "use 1200 or 2400"],
    ),
    (
        fsx(deployment_type="SCRATCH_2", storage_capacity_gib=1300),
        "storage.fsx.storage_capacity_gib",
        ["got 1300", "SCRATCH_2", "use 1200 or 2400"],
    ),
    (
        fsx(deployment_type="PERSISTENT_1", storage_capacity_gib=5000, throughput_mbps_per_tib=50),
        "storage.fsx.storage_capacity_gib",
        ["got 5000", "PERSISTENT_1", "use 4800 or 7200"],
    ),
    (
        fsx(deployment_type="PERSISTENT_2", efa_enabled=True, storage_capacity_gib=4800, throughput_mbps_per_tib=125),
        "storage.fsx.storage_capacity_gib",
        ["units of 38400", "nearest: 38400"],
    ),
    (
        fsx(deployment_type="PERSISTENT_2", efa_enabled=True, storage_capacity_gib=12000, throughput_mbps_per_tib=500),
        "storage.fsx.storage_capacity_gib",
        ["units of 9600", "nearest: 9600 or 19200"],
    ),
    (fsx(storage_capacity_gib=600), "storage.fsx.storage_capacity_gib", ["greater than or equal to 1200"]),
    (
        fsx(deployment_type="SCRATCH_2", throughput_mbps_per_tib=125),
        "storage.fsx.throughput_mbps_per_tib",
        ["SCRATCH_2 has no per-unit throughput", "got 125"],
    ),
    (
        fsx(deployment_type="PERSISTENT_2", throughput_mbps_per_tib=200),
        "storage.fsx.throughput_mbps_per_tib",
        ["got 200", "allowed: 125, 250, 500, 1000"],
    ),
    (
        fsx(deployment_type="PERSISTENT_1"),
        "storage.fsx.throughput_mbps_per_tib",
        ["got nothing (unset)", "allowed: 50, 100, 200"],
    ),
    (
        fsx(deployment_type="PERSISTENT_1", throughput_mbps_per_tib=100, efa_enabled=True),
        "storage.fsx.efa_enabled",
        ["PERSISTENT_2 with Lustre 2.15"],
    ),
    (fsx(deployment_type="SCRATCH_2", metadata_iops=3000), "storage.fsx.metadata_iops", ["PERSISTENT_2 setting"]),
    (
        fsx(deployment_type="PERSISTENT_2", throughput_mbps_per_tib=125, metadata_iops=5000),
        "storage.fsx.metadata_iops",
        ["got 5000", "multiple of 12000"],
    ),
    (fsx(automatic_backup_retention_days=7), "storage.fsx.automatic_backup_retention_days", ["no backups"]),
    (
        fsx(data_repository_associations=[{"file_system_path": f"/d{i}", "bucket": "datasets"} for i in range(9)]),
        "storage.fsx.data_repository_associations",
        ["too many", "at most 8", "got '9 associations'"],
    ),
    (
        fsx(
            data_repository_associations=[
                {"file_system_path": "/data", "bucket": "datasets"},
                {"file_system_path": "/data/sub", "bucket": "checkpoints"},
            ]
        ),
        "storage.fsx.data_repository_associations.0.file_system_path",
        ["must not repeat or nest"],
    ),
    (
        fsx(data_repository_associations=[{"file_system_path": "/data/../etc", "bucket": "datasets"}]),
        "storage.fsx.data_repository_associations.0.file_system_path",
        ["'/data/../etc'", "without . or .. segments"],
    ),
    (
        fsx(data_repository_associations=[{"file_system_path": "/data", "bucket": "datasets", "s3_prefix": "../x/"}]),
        "storage.fsx.data_repository_associations.0.s3_prefix",
        ["'../x/'", "none starting with a dot"],
    ),
    (
        fsx(data_repository_associations=[{"file_system_path": "/data", "bucket": "models"}]),
        "storage.fsx.data_repository_associations.0.bucket",
        ["'models'", "allowed: datasets, checkpoints"],
    ),
    (
        fsx(
            data_repository_associations=[{"file_system_path": "/data", "bucket": "datasets", "s3_prefix": "no-slash"}]
        ),
        "storage.fsx.data_repository_associations.0.s3_prefix",
        ["'no-slash'"],
    ),
    (fsx(deployment_type="SCRATCH_1"), "storage.fsx.deployment_type", ["'SCRATCH_1'", "'SCRATCH_2'"]),
    (
        mutated(storage__datasets_bucket={"noncurrent_version_expiration_days": 0}),
        "storage.datasets_bucket.noncurrent_version_expiration_days",
        ["greater than or equal to 1"],
    ),
    (
        mutated(build__compute_type="BUILD_GENERAL1_HUGE"),
        "build.compute_type",
        ["'BUILD_GENERAL1_HUGE'", "allowed: BUILD_GENERAL1_SMALL"],
    ),
    (
        mutated(build__reference_implementations={"-bad-": {"repository_url": "https://example.com/x.git"}}),
        "build.reference_implementations",
        ["'-bad-'"],
    ),
    (
        mutated(build__reference_implementations={"ok": {"repository_url": "https://example.com/x.git", "ref": "a b"}}),
        "build.reference_implementations.ok.ref",
        ["'a b'"],
    ),
]


@pytest.mark.parametrize(
    "settings",
    [
        {"deployment_type": "SCRATCH_2", "storage_capacity_gib": 2400},
        {"deployment_type": "PERSISTENT_1", "storage_capacity_gib": 7200, "throughput_mbps_per_tib": 200},
        {
            "deployment_type": "PERSISTENT_2",
            "storage_capacity_gib": 1200,
            "throughput_mbps_per_tib": 1000,
            "metadata_iops": 1500,
        },
        {
            "deployment_type": "PERSISTENT_2",
            "efa_enabled": True,
            "storage_capacity_gib": 76800,
            "throughput_mbps_per_tib": 125,
        },
    ],
)
def test_valid_fsx_sizes(settings):
    assert validate_profile(fsx(**settings)).storage.fsx.storage_capacity_gib == settings["storage_capacity_gib"]


CERT = "arn:aws:acm:us-west-2:123456789012:certificate/0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e"
JARK = yaml.safe_load((Path(__file__).parent / "fixtures" / "profiles" / "jark.yaml").read_text())


def jark(**changes) -> dict:
    return changed(JARK, **changes)


ADDON_BAD_INPUT = [
    (jark(addons__jupyterhub__oidc=None), "addons.jupyterhub.oidc", ["needs OIDC settings"]),
    (
        jark(addons__jupyterhub__exposure={"type": "public_nlb_tls", "source_cidrs": ["203.0.113.0/24"]}),
        "addons.jupyterhub.exposure.acm_certificate_arn",
        ["needs TLS", "allowed: arn:aws:acm:"],
    ),
    (
        jark(addons__jupyterhub__exposure={"type": "public_nlb_tls", "acm_certificate_arn": CERT}),
        "addons.jupyterhub.exposure.source_cidrs",
        ["only named client ranges"],
    ),
    (
        jark(
            addons__jupyterhub__exposure={
                "type": "public_nlb_tls",
                "acm_certificate_arn": CERT,
                "source_cidrs": ["203.0.113.7/24"],
            }
        ),
        "addons.jupyterhub.exposure.source_cidrs.0",
        ["host bits"],
    ),
    (
        jark(addons__jupyterhub__exposure={"type": "cluster_ip", "source_cidrs": ["203.0.113.0/24"]}),
        "addons.jupyterhub.exposure.source_cidrs",
        ["no public listener"],
    ),
    (
        jark(addons__jupyterhub__exposure={"type": "internet_http"}),
        "addons.jupyterhub.exposure.type",
        ["'internet_http'", "allowed: cluster_ip, internal_nlb, public_nlb_tls"],
    ),
    (
        jark(addons__jupyterhub__exposure={"type": "internal_nlb", "acm_certificate_arn": "my-cert"}),
        "addons.jupyterhub.exposure.acm_certificate_arn",
        ["'my-cert'"],
    ),
    (jark(addons__jupyterhub__allowed_users=[]), "addons.jupyterhub.allowed_users", ["empty allow-list", "got []"]),
    (
        jark(addons__jupyterhub__oidc={**JARK["addons"]["jupyterhub"]["oidc"], "token_url": "http://insecure/token"}),
        "addons.jupyterhub.oidc.token_url",
        ["'http://insecure/token'"],
    ),
    (
        jark(addons__jupyterhub__oidc={**JARK["addons"]["jupyterhub"]["oidc"], "client_secret": "s3cr3t"}),
        "addons.jupyterhub.oidc.client_secret",
        ["unknown setting"],
    ),
    (
        jark(cluster__kubernetes_version="1.33"),
        "addons.gpu_operator.dra",
        ["Kubernetes 1.34+", "runs 1.33", "allowed: cluster.kubernetes_version 1.34 or later"],
    ),
    (
        mutated(
            cluster__gpu_node_groups__0__capacity={
                "type": "capacity_block",
                "starts_at": "2099-02-22T11:30:00Z",
                "ends_at": "2099-03-01T11:30:00Z",
                "reservation_id": "cr-0123456789abcdef0",
                "instance_count": 2,
                "availability_zone": "us-west-2a",
            },
            cluster__kubernetes_version="1.32",  # no matrix minimum: the Capacity Block one speaks
            addons={"karpenter": {"chart_version": "1.5.2"}},
        ),
        "addons.karpenter.chart_version",
        ["'1.5.2'", "Capacity Blocks only from 1.6", "allowed: 1.6.0 or later"],
    ),
    (
        mutated(addons={"efa_device_plugin": {"chart_version": "v0.5.6"}}),
        "addons.efa_device_plugin.chart_version",
        ["'v0.5.6'", "NVLink", "0.5.18 or later"],
    ),
    (mutated(addons={"karpenter": {"chart_version": "latest"}}), "addons.karpenter.chart_version", ["'latest'"]),
    (
        mutated(addons={"monitoring": {"grafana_admin_password": "hunter2"}}),
        "addons.monitoring.grafana_admin_password",
        ["unknown setting"],
    ),
    (mutated(addons={"argo_workflows": {"namespace": "Argo_WF"}}), "addons.argo_workflows.namespace", ["'Argo_WF'"]),
    (
        mutated(addons={"gpu_operator": {"driver": True}}),
        "addons.gpu_operator.driver",
        ["unknown setting", "allowed: enabled"],
    ),
    # The settings Kueue, Trainer and the alert receiver brought.
    (
        mutated(addons={"kueue": {"pods_ready_timeout_minutes": 2}}),
        "addons.kueue.pods_ready_timeout_minutes",
        ["greater than or equal to 5", "got 2"],
    ),
    (mutated(addons={"kueue": {"requeue_limit": 0}}), "addons.kueue.requeue_limit", ["greater than or equal to 1"]),
    (
        mutated(addons={"gpu_operator": {"dra": True}, "kueue": {"enabled": False}, "trainer": {"enabled": True}}),
        "addons.trainer.enabled",
        ["ask for nvidia.com/gpu", "allowed: addons.trainer.enabled: false, or addons.gpu_operator.dra: false"],
    ),
    (
        mutated(addons={"monitoring": {"idle_gpu_alert_minutes": 1}}),
        "addons.monitoring.idle_gpu_alert_minutes",
        ["greater than or equal to 5", "got 1"],
    ),
    (
        mutated(addons={"monitoring": {"alert_receiver": {"type": "email"}}}),
        "addons.monitoring.alert_receiver.type",
        ["got 'email'", "allowed: slack, pagerduty"],
    ),
    (
        mutated(addons={"monitoring": {"alert_receiver": {"type": "slack", "secret_name": "Bad_Name"}}}),
        "addons.monitoring.alert_receiver.secret_name",
        ["'Bad_Name'", "a Kubernetes name"],
    ),
]


def test_karpenter_below_1_6_is_fine_without_capacity_blocks():
    assert (
        validate_profile(
            mutated(cluster__kubernetes_version="1.32", addons={"karpenter": {"chart_version": "1.5.2"}})
        ).addons.karpenter.chart_version
        == "1.5.2"
    )


ALICE = "arn:aws:iam::123456789012:role/alice"
SSO_ROLE = "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_ML_0a1b2c3d4e5f6a7b"
BOB = "arn:aws:iam::123456789012:role/bob"
WORKLOADS_AND_STATE_BAD_INPUT = [
    (
        mutated(workloads__tenants=[{"name": "t", "gpu_borrowing_limit": -1}]),
        "workloads.tenants.0.gpu_borrowing_limit",
        ["greater than or equal to 0", "got -1"],
    ),
    (
        mutated(workloads__tenants=[{"name": "t", "gpu_lending_limit": -2}]),
        "workloads.tenants.0.gpu_lending_limit",
        ["greater than or equal to 0", "got -2"],
    ),
    (
        mutated(workloads__gpu_pool__expire_after_hours=0),
        "workloads.gpu_pool.expire_after_hours",
        ["greater than or equal to 1", "got 0"],
    ),
    (
        mutated(state={"bucket": "tf-state", "region": "nowhere"}),
        "state.region",
        ["'nowhere'", "an AWS region, e.g. us-east-1"],
    ),
    (
        mutated(cluster__gpu_node_groups__0__labels={"bad key!": "x"}),
        "cluster.gpu_node_groups.0.labels.bad key!",
        ["bad key:", "'bad key!'", "a Kubernetes label key"],
    ),
    (
        mutated(cluster__gpu_node_groups__0__labels={"team": "not valid value"}),
        "cluster.gpu_node_groups.0.labels.team",
        ["'not valid value'", "a Kubernetes label value"],
    ),
    (
        mutated(workloads={"tenants": [{"name": "kube-system"}]}),
        "workloads.tenants.0.name",
        ["'kube-system' is a Kubernetes system namespace"],
    ),
    (mutated(workloads={"tenants": [{"name": "Team_A"}]}), "workloads.tenants.0.name", ["'Team_A'"]),
    (
        mutated(workloads={"tenants": [{"name": "team-a"}, {"name": "team-a"}]}),
        "workloads.tenants.1.name",
        ["unique", "'team-a'"],
    ),
    (
        mutated(workloads={"tenants": [{"name": "team-a", "gpu_quota": -1}]}),
        "workloads.tenants.0.gpu_quota",
        ["greater than or equal to 0"],
    ),
    (
        mutated(workloads={"tenants": [{"name": "team-a", "memory_quota": "lots"}]}),
        "workloads.tenants.0.memory_quota",
        ["'lots'"],
    ),
    (
        mutated(workloads={"tenants": [{"name": "team-a", "cpu_quota": "4 cores"}]}),
        "workloads.tenants.0.cpu_quota",
        ["'4 cores'"],
    ),
    (mutated(workloads={"dra_gpu_counts": [1, 1]}), "workloads.dra_gpu_counts", ["distinct and positive", "[1, 1]"]),
    (mutated(workloads={"dra_gpu_counts": [0]}), "workloads.dra_gpu_counts", ["distinct and positive"]),
    (
        mutated(workloads={"gpu_pool": {"instance_types": ["p9.huge"]}}),
        "workloads.gpu_pool.instance_types",
        ["not in the GPU instance catalog: p9.huge"],
    ),
    (
        mutated(workloads={"gpu_pool": {"capacity_types": ["preemptible"]}}),
        "workloads.gpu_pool.capacity_types.0",
        ["'preemptible'", "allowed: on-demand, spot, reserved"],
    ),
    (
        mutated(workloads={"cpu_pool": {"instance_categories": ["x"]}}),
        "workloads.cpu_pool.instance_categories.0",
        ["'x'"],
    ),
    (mutated(workloads={"cpu_pool": {"cpu_limit": 0}}), "workloads.cpu_pool.cpu_limit", ["greater than or equal to 1"]),
    # tenants' people: one EKS access entry per principal, so each is listed once per tenant and never as an admin
    (
        mutated(workloads={"tenants": [{"name": "team-a", "editors": ["alice"]}]}),
        "workloads.tenants.0.editors.0",
        ["'alice'", "an IAM role or user ARN"],
    ),
    (
        mutated(workloads={"tenants": [{"name": "team-a", "viewers": ["arn:aws:sts::123456789012:assumed-role/a/s"]}]}),
        "workloads.tenants.0.viewers.0",
        ["assumed-role", "an IAM role or user ARN"],
    ),
    (
        mutated(workloads={"tenants": [{"name": "team-a", "editors": [ALICE, ALICE]}]}),
        "workloads.tenants.0.editors.1",
        ["lists this principal twice", repr(ALICE), "each principal once per tenant"],
    ),
    (
        mutated(workloads={"tenants": [{"name": "team-a", "editors": [ALICE], "viewers": [BOB, ALICE]}]}),
        "workloads.tenants.0.viewers.1",
        ["as one of its editors too", repr(ALICE), "as an editor or as a viewer"],
    ),
    (
        mutated(
            workloads={
                "tenants": [
                    {"name": "team-a", "editors": [ALICE]},
                    {"name": "team-b", "viewers": [ALICE.replace("alice", "Alice")]},
                ]
            }
        ),
        "workloads.tenants.1.viewers.0",
        ["spelled differently", "ignore case", f"allowed: {ALICE}"],
    ),
    (
        mutated(cluster__admin_principal_arns=[BOB], workloads={"tenants": [{"name": "team-a", "viewers": [BOB]}]}),
        "workloads.tenants.0.viewers.0",
        ["cluster.admin_principal_arns", repr(BOB), "refuses a second access entry", "not a cluster admin"],
    ),
    (
        mutated(
            workloads={
                "tenants": [{"name": "team-a", "editors": ["arn:aws:iam::123456789012:role/AWSReservedSSO_ML_0a1b"]}]
            }
        ),
        "workloads.tenants.0.editors.0",
        ["AWSReservedSSO_ML_0a1b'", "aws iam get-role", "role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_ML_0a1b"],
    ),
]


def mlflow(**database) -> dict:
    return mutated(addons={"mlflow": {"enabled": True, "database": database}})


MLFLOW_BAD_INPUT = [
    (mlflow(instance_class="db.x9.huge"), "addons.mlflow.database.instance_class", ["'db.x9.huge'"]),
    (mlflow(instance_class="t4g.micro"), "addons.mlflow.database.instance_class", ["'t4g.micro'"]),
    (mlflow(allocated_storage_gib=10), "addons.mlflow.database.allocated_storage_gib", ["greater than or equal to 20"]),
    (
        mlflow(allocated_storage_gib=50, max_allocated_storage_gib=40),
        "addons.mlflow.database.max_allocated_storage_gib",
        ["below the allocated storage", "40", "at least"],
    ),
    (mlflow(backup_retention_days=0), "addons.mlflow.database.backup_retention_days", ["greater than or equal to 1"]),
    (mlflow(backup_retention_days=36), "addons.mlflow.database.backup_retention_days", ["less than or equal to 35"]),
    (mlflow(multi_az="sometimes"), "addons.mlflow.database.multi_az", ["'sometimes'"]),
    (mlflow(iops=3000), "addons.mlflow.database.iops", ["unknown setting", "instance_class"]),
    (
        mutated(addons={"mlflow": {"enabled": True, "admin_password_from": "envvar"}}),
        "addons.mlflow.admin_password_from",
        ["'envvar'", "variable", "existing_secret"],
    ),
    (
        mutated(addons={"mlflow": {"enabled": True, "admin_secret_name": "Admin_Secret"}}),
        "addons.mlflow.admin_secret_name",
        ["'Admin_Secret'"],
    ),
    (
        mutated(addons={"mlflow": {"enabled": True, "default_permission": "WRITE"}}),
        "addons.mlflow.default_permission",
        ["'WRITE'", "NO_PERMISSIONS", "MANAGE"],
    ),
    (mutated(addons={"mlflow": {"enabled": "sometimes"}}), "addons.mlflow.enabled", ["'sometimes'"]),
    (
        mutated(addons={"mlflow": {"enabled": True, "chart_version": "latest"}}),
        "addons.mlflow.chart_version",
        ["'latest'"],
    ),
]


# Every bad-input table, one test: the message names the field, the bad value and what is allowed.
ALL_BAD_INPUT = [
    *MLFLOW_BAD_INPUT,
    *((mutated(**changes), field, words) for changes, field, words in BAD_INPUT),
    *STORAGE_BAD_INPUT,
    *ADDON_BAD_INPUT,
    *WORKLOADS_AND_STATE_BAD_INPUT,
]


@pytest.mark.parametrize(
    "doc, field, words", ALL_BAD_INPUT, ids=[f"{case[1]}-{index}" for index, case in enumerate(ALL_BAD_INPUT)]
)
def test_bad_input_names_field_value_and_allowed(doc, field, words):
    assert_reported(doc, field, words)


def test_a_key_that_belongs_in_many_places_gets_no_guess():
    """`enabled` is a setting of every add-on: pointing at one of them would be a guess."""
    (line,) = [line for line in problems(mutated(enabled=True)) if line.startswith("enabled: ")]
    assert line.startswith("enabled: unknown setting (") and "belongs" not in line


def test_a_person_of_several_tenants_gets_one_grant_per_level_naming_its_namespaces():
    """EKS takes one access entry per principal and each access policy once per entry: the profile's
    people become principal -> level -> namespaces, each namespace one of a tenant that lists them."""
    config = validate_profile(
        mutated(
            workloads={
                "tenants": [
                    {"name": "team-a", "editors": [ALICE, SSO_ROLE], "viewers": [BOB]},
                    {"name": "team-b", "viewers": [ALICE]},
                    {"name": "team-c", "editors": [ALICE]},
                    {"name": "team-d"},
                ]
            }
        )
    )
    assert config.workloads.tenant_access() == {
        ALICE: {"editors": ("team-a", "team-c"), "viewers": ("team-b",)},
        SSO_ROLE: {"editors": ("team-a",)},
        BOB: {"viewers": ("team-a",)},
    }
    assert validate_profile(BASE).workloads.tenant_access() == {}  # nobody is named by default


def test_suggestions_only_for_near_misses_that_are_words():
    assert did_you_mean("on_demnd", ["on_demand", "odcr"]) == "did you mean 'on_demand'?"
    assert did_you_mean("banana", ["on_demand", "odcr"]) == ""  # nothing close: no guess
    assert did_you_mean("1.20", ["1.31", "1.32"]) == ""  # versions look alike without being typos
    assert did_you_mean(7, ["seven"]) == ""


def test_independent_cross_layer_problems_are_reported_together():
    doc = mutated(
        name="a" * 32,  # fits the name pattern, but a derived EventBridge rule name is too long
        workloads={"tenants": [{"name": "monitoring"}, {"name": "x"}, {"name": "x-identity"}]},
        cluster__vpc__availability_zones=["us-west-2a", "us-east-1b"],
    )
    fields = [problem.split(": ", 1)[0] for problem in problems(doc)]
    assert fields == [
        "name",
        "workloads.tenants.2.name",
        "workloads.tenants.0.name",
        "cluster.vpc.availability_zones.1",
    ], "one problem per field: a long name breaks many derived names but is reported once"


def test_the_service_cidr_defaults_to_what_eks_picks_and_names_the_api_clusterip():
    shipped = load_profile("gpu-validation").cluster
    assert (shipped.service_cidr, shipped.api_service_ip) == ("172.20.0.0/16", "172.20.0.1")
    for vpc in ("172.31.0.0/16", "192.168.0.0/16"):  # EKS picks 172.20.0.0/16 only for a VPC in 10.0.0.0/8
        other = validate_profile(mutated(cluster__vpc__cidr=vpc)).cluster
        assert (other.service_cidr, other.api_service_ip) == ("10.100.0.0/16", "10.100.0.1")
    chosen = validate_profile(mutated(cluster__service_ipv4_cidr="192.168.128.0/20")).cluster
    assert chosen.api_service_ip == "192.168.128.1"


def _string_paths(value: object, path: tuple = ()) -> list[tuple]:
    if isinstance(value, str):
        return [path]
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _string_paths(item, (*path, key))]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in _string_paths(item, (*path, index))]
    return []


@functools.cache
def _documents() -> dict[str, dict]:
    from profiles.loader import parse_profile_text, resolve
    from tests.cases import ALL_PROFILES, profile_source

    return {name: parse_profile_text(resolve(profile_source(name)).read_bytes(), name) for name in ALL_PROFILES}


TEMPLATE_CASES = [(name, path) for name, doc in _documents().items() for path in _string_paths(doc)]


@pytest.mark.parametrize(
    ("profile", "path"), TEMPLATE_CASES, ids=[f"{n}:{'.'.join(map(str, p))}" for n, p in TEMPLATE_CASES]
)
def test_no_profile_string_can_become_a_terraform_expression(profile, path):
    """Every string any shipped or fixture profile sets, with `${...}` or `%{...}` in it, is refused
    naming that field (the plan would otherwise evaluate it on the planning machine)."""
    for injected in ('${file("/etc/hostname")}', "x-%{ if true }y%{ endif }"):
        doc = copy.deepcopy(_documents()[profile])
        node = doc
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = injected
        assert_reported(doc, ".".join(map(str, path)), ["Terraform template sequence", repr(injected)])


def test_template_sequences_in_keys_are_refused_too():
    assert_reported(mutated(tags={"${x}": "v"}), "tags.${x}", ["Terraform template sequence"])
    assert len(TEMPLATE_CASES) > 100


NOT_PLAIN = [
    # Values the YAML loader no longer makes, given by a Python caller: each is refused where it
    # stands, not turned into text (bytes) or a list (a set) after the template check has looked.
    ({"name": b'${file("/etc/hostname")}'}, "name", "a bytes is not profile data"),
    ({"tags": {"a": bytearray(b"${path.cwd}")}}, "tags.a", "a bytearray is not profile data"),
    ({"cluster__admin_principal_arns": {"${path.cwd}"}}, "cluster.admin_principal_arns", "a set is not profile data"),
    ({"cluster__vpc__availability_zones": frozenset({"x"})}, "cluster.vpc.availability_zones", "a frozenset is not"),
    (
        {"cluster__ami_release_version": __import__("datetime").date(2026, 1, 1)},
        "cluster.ami_release_version",
        "a date",
    ),
    # Template sequences and unsafe characters at any depth, in keys as in values.
    ({"workloads": {"tenants": [{"name": "t", "editors": ["%{x}"]}]}}, "workloads.tenants.0.editors.0", "template"),
    (
        {"cluster": {"gpu_node_groups": [{"labels": {"%{ if true }": "x"}}]}},
        "cluster.gpu_node_groups.0.labels.%{ if true }",
        "template",
    ),
    ({"tags": {'a"b': "v"}}, 'tags.a"b', "U+0022 QUOTATION MARK"),
    ({"tags": {"a": "x\\"}}, "tags.a", "U+005C REVERSE SOLIDUS"),
    ({"tags": {"a": "x\x00y"}}, "tags.a", "U+0000"),
    ({"tags": {"a": "x\ty"}}, "tags.a", "U+0009"),
    ({"tags": {"a": "x\r"}}, "tags.a", "U+000D"),
    ({"tags": {"a": "x\u0085y"}}, "tags.a", "U+0085"),
    ({"tags": {"a": "x\u2028y"}}, "tags.a", "U+2028 LINE SEPARATOR"),
    ({"tags": {"a": "x\u2029y"}}, "tags.a", "U+2029 PARAGRAPH SEPARATOR"),
    ({"tags": {"a": "x\u202ey"}}, "tags.a", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ({"tags": {"a": "\ufeffx"}}, "tags.a", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
]


@pytest.mark.parametrize(("changes", "field", "words"), NOT_PLAIN, ids=[c[1] for c in NOT_PLAIN])
def test_only_plain_text_numbers_lists_and_mappings_reach_the_fields(changes, field, words):
    assert_reported(mutated(**changes), field, [words, "allowed: "])


def test_profile_fields_are_documented_one_way():
    """Every field of every profile model is documented by its attribute docstring (no
    `description=`): one style to read and to write, and every field has one."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    files = [*sorted((root / "profiles").glob("*.py")), *sorted((root / "addons").glob("*/__init__.py"))]
    undocumented, described = [], []
    for path in files:
        for cls in ast.walk(ast.parse(path.read_text())):
            if not isinstance(cls, ast.ClassDef) or not any(
                isinstance(b, ast.Name) and (b.id == "Strict" or b.id.endswith("Config")) for b in cls.bases
            ):
                continue
            for index, stmt in enumerate(cls.body):
                if not isinstance(stmt, ast.AnnAssign) or stmt.target.id.startswith("_"):
                    continue
                where = f"{path.relative_to(root)}:{stmt.lineno} {cls.name}.{stmt.target.id}"
                call = stmt.value
                if isinstance(call, ast.Call) and any(k.arg == "description" for k in call.keywords):
                    described.append(where)
                following = cls.body[index + 1] if index + 1 < len(cls.body) else None
                if not (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)):
                    undocumented.append(where)
    assert described == []
    assert undocumented == []


def test_the_public_endpoint_limit_is_the_one_documented():
    from profiles.cluster import MAX_PUBLIC_API_ADDRESSES, ClusterConfig
    from profiles.docstrings import attribute_docstrings

    assert (
        f"{MAX_PUBLIC_API_ADDRESSES} addresses" in attribute_docstrings(ClusterConfig)["endpoint_public_access_cidrs"]
    )


def test_the_labels_profiles_may_not_set_are_the_ones_the_platform_sets():
    from components import labels
    from profiles.reserved_keys import PLATFORM_LABEL_KEYS, PLATFORM_LABEL_PREFIX

    for key in (
        labels.ROLE_LABEL,
        labels.EFA_LABEL,
        labels.NODE_GROUP_LABEL,
        labels.NODE_POOL_LABEL,
        labels.TENANT_LABEL,
    ):
        assert key in PLATFORM_LABEL_KEYS or key.startswith(PLATFORM_LABEL_PREFIX), key
