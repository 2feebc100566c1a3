"""The IAM gate's rules: what it refuses in a policy statement, a policy document or a stack's
IAM resources (tests/test_iam_gate.py runs it over every profile's synthesized stacks)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

# resource type -> attributes holding a policy document, and what kind of policy it is
POLICY_ATTRIBUTES = {
    "aws_iam_role": {"assume_role_policy": "trust"},
    "aws_iam_role_policy": {"policy": "identity"},
    "aws_iam_policy": {"policy": "identity"},
    "aws_kms_key": {"policy": "resource"},
    "aws_s3_bucket_policy": {"policy": "resource"},
    "aws_sqs_queue_policy": {"policy": "resource"},
    "aws_sns_topic_policy": {"policy": "resource"},
}
READ_ONLY = re.compile(r"^[a-z0-9-]+:(Describe|Get|List)[A-Za-z]*$")
# Reads that hand out a secret: never "read-only" for the gate.
SECRET_READS = re.compile(
    r"^(secretsmanager:GetSecretValue|ssm:GetParameters?(ByPath)?|kms:Decrypt|"
    r"ecr:GetAuthorizationToken|sts:GetFederationToken|iam:GetCredentialReport)$"
)
# Condition keys that only name a region, a time or a transport: they narrow nothing a policy grants.
NON_SCOPING_KEYS = re.compile(
    r"^aws:(RequestedRegion|CurrentTime|EpochTime|SecureTransport|ViaAWSService)$", re.IGNORECASE
)
# Mutating actions AWS documents as taking no resource (or only "*"), each with why it is needed.
RESOURCELESS = {
    "ecr:GetAuthorizationToken": "CodeBuild logs in to ECR; the token call has no resource (read-only anyway)",
}
# AWS managed policies the platform attaches, and why each is needed (their text is AWS's).
MANAGED_POLICIES = {
    "AmazonEKSClusterPolicy": "the EKS cluster role",
    "AmazonEKSWorkerNodePolicy": "node roles (managed node groups and Karpenter nodes)",
    "AmazonEKS_CNI_Policy": "node roles: the VPC CNI runs with the node's identity on the host network",
    "AmazonEC2ContainerRegistryReadOnly": "node roles: image pulls from ECR",
    "AmazonSSMManagedInstanceCore": "node roles: Session Manager instead of SSH keys",
    "service-role/AmazonEBSCSIDriverPolicy": "the EBS CSI controller (its permissions are tag-scoped by AWS)",
}
# Service principals and whether their role assumption can be pinned to this account.
SOURCE_ACCOUNT_SUPPORTED = {"pods.eks.amazonaws.com", "codebuild.amazonaws.com"}
SOURCE_ACCOUNT_EXEMPT = {
    "ec2.amazonaws.com": "roles reach EC2 through instance profiles that only this account attaches",
    "eks.amazonaws.com": "EKS documents the cluster role's trust policy without source conditions",
}


def policies(stack: dict) -> Iterator[tuple[str, str, dict]]:
    """(resource address, kind, parsed document) for every policy document in a stack."""
    for resource_type, attributes in POLICY_ATTRIBUTES.items():
        for logical_id, body in stack.get("resource", {}).get(resource_type, {}).items():
            for attribute, kind in attributes.items():
                if attribute in body:
                    yield f"{resource_type}.{logical_id}", kind, json.loads(body[attribute])


def listed(value: object) -> list[str]:
    return [value] if isinstance(value, str) else list(value)  # type: ignore[arg-type]


def statements(profile_stacks) -> Iterator[tuple[str, str, dict]]:
    for stack in profile_stacks.values():
        for address, kind, document in policies(stack):
            for statement in document["Statement"]:
                yield address, kind, statement


# A bucket ARN the platform creates: in the same stack, or another layer's bucket through remote state.
BUCKET_REFERENCE = re.compile(
    r"^\$\{(aws_s3_bucket\.[\w-]+\.arn|data\.terraform_remote_state\.[\w-]+\.outputs\."
    r"cross-stack-output-aws_s3_bucket[\w-]+arn)\}(/|$)"
)


def _wide_resource(resource: str) -> bool:
    """'*', or an ARN that names no particular resource: a wildcard service, account-wide
    `*`, or a whole resource type (`instance/*`)."""
    if resource == "*":
        return True
    parts = resource.split(":", 5)
    if len(parts) < 6 or parts[0] != "arn":
        return False
    service, name = parts[2], parts[5]
    return "*" in service or name in ("*", "*/*") or bool(re.fullmatch(r"[\w-]+[/:]\*", name))


def _scoping(condition: dict) -> bool:
    """Does the condition narrow what the statement grants (a tag, a source, a passed-to service)?"""
    keys = [key for operator in condition.values() if isinstance(operator, dict) for key in operator]
    return any(not NON_SCOPING_KEYS.match(key) for key in keys)


# Resources a new instance only uses (RunInstances and CreateFleet need a grant on each resource the
# launch names: its image, subnet, security groups, reservation, placement group): no action is
# taken on them. Karpenter's published controller policy grants these without a condition
# (AllowScopedEC2InstanceAccessActions); the instance itself is tag-scoped in another statement.
LAUNCH_INPUTS = re.compile(
    r"^arn:aws:ec2:[^:]*:[^:]*:(image|snapshot|security-group|subnet|capacity-reservation|"
    r"placement-group)/\*$"
)
LAUNCHES = {"ec2:RunInstances", "ec2:CreateFleet"}


def _wide_actions(address: str, actions: list[str], resources: list[str], condition: dict) -> list[str]:
    found = [f"{address}: the action wildcard {a!r}" for a in actions if a == "*" or a.endswith(":*")]
    mutating = [a for a in actions if (not READ_ONLY.match(a) or SECRET_READS.match(a)) and a not in RESOURCELESS]
    launch_inputs_only = set(mutating) <= LAUNCHES
    wide = [r for r in resources if _wide_resource(r) and not (launch_inputs_only and LAUNCH_INPUTS.match(r))]
    if wide and mutating and not _scoping(condition):
        found.append(f"{address}: {mutating} on {wide} without a scoping condition")
    return found


def _negations(address: str, statement: dict) -> list[str]:
    """NotAction, NotResource and NotPrincipal grant everything they do not name."""
    return [
        f"{address}: {key} grants everything it does not name"
        for key in ("NotAction", "NotResource", "NotPrincipal")
        if key in statement
    ]


def _principal_of_this_account(principal: str) -> bool:
    return "${data.aws_caller_identity." in principal or "${data.aws_iam_session_context." in principal


def _pass_role(address: str, actions: list[str], resources: list[str], condition: dict) -> list[str]:
    if "iam:PassRole" not in actions:
        return []
    found = []
    if any("*" in r for r in resources):
        found.append(f"{address}: iam:PassRole on {resources}, not one role")
    if "iam:PassedToService" not in json.dumps(condition):
        found.append(f"{address}: iam:PassRole without iam:PassedToService")
    return found


def _s3_scope(address: str, actions: list[str], resources: list[str], platform: str) -> list[str]:
    """S3 actions only on the platform's own buckets: a reference to a bucket it creates, or an
    exact name <platform>-... (wildcards only in the key part)."""
    if not any(a.startswith("s3:") for a in actions):
        return []
    found = []
    for resource in resources:
        if BUCKET_REFERENCE.match(resource):
            continue
        bucket = resource.removeprefix("arn:aws:s3:::").split("/", 1)[0]
        if not resource.startswith("arn:aws:s3:::") or "*" in bucket or not bucket.startswith(f"{platform}-"):
            found.append(f"{address}: S3 access to {resource}, not one of the platform's buckets")
    return found


def _trust(address: str, statement: dict, condition: dict) -> list[str]:
    found = []
    principal = statement.get("Principal", {})
    for aws in listed(principal.get("AWS", [])) if isinstance(principal, dict) else ["*"]:
        if not _principal_of_this_account(aws):
            found.append(f"{address}: trust for AWS principal {aws!r}, not this account")
    for service in listed(statement.get("Principal", {}).get("Service", [])):
        if service in SOURCE_ACCOUNT_EXEMPT:
            continue
        if service not in SOURCE_ACCOUNT_SUPPORTED:
            found.append(f"{address}: trust for {service}: decide whether it supports aws:SourceAccount")
        elif "aws:SourceAccount" not in json.dumps(condition):
            found.append(f"{address}: trust for {service} without aws:SourceAccount")
    return found


def problems_of(address: str, kind: str, statement: dict, *, platform: str) -> list[str]:
    """What the gate refuses in one statement."""
    if statement["Effect"] != "Allow":
        return []
    actions = listed(statement.get("Action", []))
    resources = listed(statement.get("Resource", []))
    condition = statement.get("Condition", {})
    negations = _negations(address, statement)
    if kind == "trust":
        return [*negations, *_trust(address, statement, condition)]
    if kind == "resource":
        return [*negations, *_resource_policy(address, statement, condition)]
    return [
        *negations,
        *_wide_actions(address, actions, resources, condition),
        *_pass_role(address, actions, resources, condition),
        *_s3_scope(address, actions, resources, platform),
    ]


def _resource_policy(address: str, statement: dict, condition: dict) -> list[str]:
    principal = statement.get("Principal")
    if principal == "*" or (isinstance(principal, dict) and "*" in listed(principal.get("AWS", []))):
        return [] if _scoping(condition) else [f"{address}: allows everyone without a scoping condition"]
    found = []
    if isinstance(principal, dict):
        for aws in listed(principal.get("AWS", [])):
            if not _principal_of_this_account(aws):
                found.append(f"{address}: grants AWS principal {aws!r}, not this account")
        source = json.dumps(condition)
        if principal.get("Service") and "aws:SourceArn" not in source and "aws:SourceAccount" not in source:
            found.append(
                f"{address}: grants {principal['Service']} without aws:SourceArn or aws:SourceAccount "
                "(the confused deputy)"
            )
    return found


def stack_problems(stack: dict, *, platform: str) -> list[str]:
    """Everything the gate refuses in one synthesized stack."""
    problems = []
    for address, kind, document in policies(stack):
        for statement in document["Statement"]:
            problems += problems_of(address, kind, statement, platform=platform)
    for logical_id, body in stack.get("resource", {}).get("aws_iam_role_policy_attachment", {}).items():
        name = body["policy_arn"].removeprefix("arn:aws:iam::aws:policy/")
        if name not in MANAGED_POLICIES:
            problems.append(
                f"aws_iam_role_policy_attachment.{logical_id}: {body['policy_arn']}: say why the platform needs it"
            )
    return problems
