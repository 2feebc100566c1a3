"""Karpenter's controller policy, read from the synthesized addons stack: the same scope as the
policy Karpenter publishes for the pinned version (its getting-started CloudFormation template),
statement by statement."""

from __future__ import annotations

import json

import pytest

from addons.catalog import CHARTS
from tests.cases import FIXTURES, SHIPPED
from tests.synth_helpers import path_of, resources

# The actions of Karpenter's published v1.14 controller policy (NodeLifecycle, IAMIntegration,
# EKSIntegration, Interruption and ResourceDiscovery policies), written down once. The platform
# leaves out only the zonal-shift read, which matters when ARC zonal shift is on (it is not here).
PUBLISHED_ACTIONS = {
    "ec2:RunInstances",
    "ec2:CreateFleet",
    "ec2:CreateLaunchTemplate",
    "ec2:CreateTags",
    "ec2:TerminateInstances",
    "ec2:DeleteLaunchTemplate",
    "ec2:DescribeCapacityReservations",
    "ec2:DescribeImages",
    "ec2:DescribeInstances",
    "ec2:DescribeInstanceStatus",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribePlacementGroups",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSpotPriceHistory",
    "ec2:DescribeSubnets",
    "ssm:GetParameter",
    "pricing:GetProducts",
    "sqs:DeleteMessage",
    "sqs:GetQueueUrl",
    "sqs:ReceiveMessage",
    "iam:PassRole",
    "iam:CreateInstanceProfile",
    "iam:TagInstanceProfile",
    "iam:AddRoleToInstanceProfile",
    "iam:RemoveRoleFromInstanceProfile",
    "iam:DeleteInstanceProfile",
    "iam:GetInstanceProfile",
    "iam:ListInstanceProfiles",
    "eks:DescribeCluster",
}
MUTATING_EC2 = {
    "ec2:RunInstances",
    "ec2:CreateFleet",
    "ec2:CreateLaunchTemplate",
    "ec2:CreateTags",
    "ec2:TerminateInstances",
    "ec2:DeleteLaunchTemplate",
}
# Launches reference these without creating them: an untagged AMI, subnet or security group must
# be usable, so these resource types carry no tag condition (as in Karpenter's own policy).
REFERENCED_ONLY = {"image", "snapshot", "security-group", "subnet", "capacity-reservation", "placement-group"}
PROFILE_ACTIONS = {
    "iam:CreateInstanceProfile",
    "iam:TagInstanceProfile",
    "iam:AddRoleToInstanceProfile",
    "iam:RemoveRoleFromInstanceProfile",
    "iam:DeleteInstanceProfile",
}
PROFILES = list(SHIPPED + FIXTURES)


def controller_statements(synthesized, profile) -> list[dict]:
    stack = synthesized.stack(profile, "addons")
    (policy,) = [
        body
        for body in resources(stack, "aws_iam_role_policy").values()
        if path_of(body).endswith("karpenter-identity/controller-role/inline")
    ]
    return json.loads(policy["policy"])["Statement"]


def actions(statement: dict) -> set[str]:
    found = statement["Action"]
    return {found} if isinstance(found, str) else set(found)


def resource_types(statement: dict) -> set[str]:
    listed = statement["Resource"]
    return {arn.split(":", 5)[5].split("/")[0] for arn in ([listed] if isinstance(listed, str) else listed)}


def conditions(statement: dict) -> dict[str, object]:
    """Condition key -> value, across operators."""
    return {key: value for block in statement.get("Condition", {}).values() for key, value in block.items()}


def test_the_pinned_karpenter_is_the_version_the_policy_follows():
    assert CHARTS["karpenter"].version == "1.14.1"


@pytest.mark.parametrize("profile", ["gpu-validation", "p5-training"])
def test_same_actions_as_the_published_policy(synthesized, profile):
    granted = set().union(*(actions(s) for s in controller_statements(synthesized, profile)))
    assert granted == PUBLISHED_ACTIONS


@pytest.mark.parametrize("profile", ["gpu-validation", "p5-training"])
def test_every_mutating_ec2_action_is_tied_to_the_cluster(synthesized, profile):
    name = synthesized.configs[profile].name
    for statement in controller_statements(synthesized, profile):
        mutating = actions(statement) & MUTATING_EC2
        if not mutating:
            continue
        assert statement["Resource"] != "*", statement["Sid"]
        if resource_types(statement) <= REFERENCED_ONLY:
            assert mutating <= {"ec2:RunInstances", "ec2:CreateFleet"}, statement["Sid"]
            continue
        keys = conditions(statement)
        request = keys.get(f"aws:RequestTag/kubernetes.io/cluster/{name}")
        existing = keys.get(f"aws:ResourceTag/kubernetes.io/cluster/{name}")
        assert "owned" in (request, existing), f"{statement['Sid']} is not conditioned on the cluster tag"
        pool = keys.get("aws:RequestTag/karpenter.sh/nodepool") or keys.get("aws:ResourceTag/karpenter.sh/nodepool")
        assert pool == "*", f"{statement['Sid']} is not limited to NodePool-owned resources"
        if request is not None:
            assert keys.get("aws:RequestTag/eks:eks-cluster-name") == name, statement["Sid"]
        if "ec2:CreateTags" in mutating and request is not None:
            assert set(keys["ec2:CreateAction"]) == {"RunInstances", "CreateFleet", "CreateLaunchTemplate"}
        if "ec2:CreateTags" in mutating and request is None:
            assert set(keys["aws:TagKeys"]) == {"eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"}


@pytest.mark.parametrize("profile", ["gpu-validation", "p5-training"])
def test_instance_profile_actions_need_the_cluster_and_region_tags(synthesized, profile):
    config = synthesized.configs[profile]
    for statement in controller_statements(synthesized, profile):
        granted = actions(statement) & PROFILE_ACTIONS
        if not granted:
            continue
        resource = statement["Resource"]
        assert resource.startswith("arn:aws:iam::") and resource.endswith(":instance-profile/*")
        keys = conditions(statement)
        prefix = "aws:RequestTag/" if granted == {"iam:CreateInstanceProfile"} else "aws:ResourceTag/"
        assert keys[f"{prefix}kubernetes.io/cluster/{config.name}"] == "owned", statement["Sid"]
        assert keys[f"{prefix}topology.kubernetes.io/region"] == config.region, statement["Sid"]
        assert keys[f"{prefix}karpenter.k8s.aws/ec2nodeclass"] == "*", statement["Sid"]


def test_pass_role_only_the_node_role_only_to_ec2(synthesized):
    (statement,) = [s for s in controller_statements(synthesized, "gpu-validation") if "iam:PassRole" in actions(s)]
    assert statement["Resource"].startswith("${aws_iam_role.karpenter-identity_node-role")
    assert statement["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}


@pytest.mark.parametrize("profile", PROFILES)
def test_the_policy_fits_an_inline_policy(synthesized, profile):
    if not synthesized.configs[profile].addons.karpenter.enabled:
        pytest.skip("Karpenter is off in this profile")
    compact = json.dumps({"Statement": controller_statements(synthesized, profile)}, separators=(",", ":"))
    assert len(compact) < 10240, "IAM's limit for a role's inline policies (whitespace not counted)"
