"""Karpenter's AWS side: controller role (Pod Identity), node role with its access entry, and the
SQS interruption queue fed by EventBridge (Spot interruptions, rebalance recommendations, instance
state changes, scheduled maintenance and capacity-reservation interruptions)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from cdktf import ITerraformDependable
from cdktf_cdktf_provider_aws.cloudwatch_event_rule import CloudwatchEventRule
from cdktf_cdktf_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
from cdktf_cdktf_provider_aws.eks_access_entry import EksAccessEntry
from cdktf_cdktf_provider_aws.sqs_queue import SqsQueue
from constructs import Construct

from components.iam import (
    EKS_NODE_POLICIES,
    PodIdentityBinding,
    ServiceRole,
    ServiceRoleProps,
    allow,
    deny_insecure_transport,
    pod_identity_association,
    pod_identity_role,
    policy_document,
)
from components.leaf_resources import LeafType

# The queue's policy and the rules' targets: nothing reads them, so they are rendered as data
# (components/leaf_resources.py).
QUEUE_POLICY = LeafType("aws_sqs_queue_policy", "SqsQueuePolicy")
EVENT_TARGET = LeafType("aws_cloudwatch_event_target", "CloudwatchEventTarget")

INTERRUPTION_EVENTS = {
    "scheduled-change": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
    "spot-interruption": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "state-change": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
    "reservation-interruption": {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
    },
}


@dataclass(frozen=True, kw_only=True)
class KarpenterScope:
    """What the controller policy is scoped to."""

    cluster_name: str
    """The cluster's name as a plain string (it appears inside tag condition keys)."""
    region: str
    """The region Karpenter launches into."""
    account_id: str
    """The account (instance profiles and the cluster ARN carry it)."""
    node_role_arn: str
    """The only role Karpenter may pass to EC2."""
    queue_arn: str
    """The interruption queue it reads."""


# Resource types Karpenter only references when it launches (never creates, tags or deletes them):
# RunInstances / CreateFleet need them without a tag condition.
_REFERENCED_BY_LAUNCH = ("image", "snapshot", "security-group", "subnet", "capacity-reservation", "placement-group")
# Resource types a launch creates: every action on them must carry the cluster's request tags.
_CREATED_BY_LAUNCH = ("fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request")


def controller_policy(scope: KarpenterScope) -> str:
    """Karpenter's controller permissions, equal in scope to the controller policy Karpenter
    publishes for its v1.14 getting-started guide: every mutating EC2 action is tied to the
    cluster's tags (kubernetes.io/cluster/<name>=owned, eks:eks-cluster-name, karpenter.sh/nodepool),
    tagging only at creation (ec2:CreateAction) or of Karpenter's own instances, instance profiles
    only with the cluster's and region's tags, PassRole only for the node role and only to EC2."""
    name, region, account = scope.cluster_name, scope.region, scope.account_id
    cluster_tag = f"kubernetes.io/cluster/{name}"

    def ec2(*types: str) -> list[str]:
        # Images and snapshots may belong to other accounts (AWS's AMIs): their ARNs carry no account.
        return [f"arn:aws:ec2:{region}:{'' if t in ('image', 'snapshot') else '*'}:{t}/*" for t in types]

    request_tags = {
        "StringEquals": {f"aws:RequestTag/{cluster_tag}": "owned", "aws:RequestTag/eks:eks-cluster-name": name},
        "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
    }
    owned_by_pool = {
        "StringEquals": {f"aws:ResourceTag/{cluster_tag}": "owned"},
        "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
    }
    profiles = f"arn:aws:iam::{account}:instance-profile/*"
    profile_tags = {f"aws:ResourceTag/{cluster_tag}": "owned", "aws:ResourceTag/topology.kubernetes.io/region": region}
    return policy_document(
        allow(["ec2:CreateFleet", "ec2:RunInstances"], ec2(*_REFERENCED_BY_LAUNCH), Sid="LaunchWithSharedResources"),
        allow(
            ["ec2:CreateFleet", "ec2:RunInstances"],
            ec2("launch-template"),
            Condition=owned_by_pool,
            Sid="LaunchFromOwnLaunchTemplates",
        ),
        allow(
            ["ec2:CreateFleet", "ec2:CreateLaunchTemplate", "ec2:RunInstances"],
            ec2(*_CREATED_BY_LAUNCH),
            Condition=request_tags,
            Sid="CreateTaggedResources",
        ),
        allow(
            ["ec2:CreateTags"],
            ec2(*_CREATED_BY_LAUNCH),
            Sid="TagOnlyAtCreation",
            Condition={
                "StringEquals": {
                    **request_tags["StringEquals"],
                    "ec2:CreateAction": ["CreateFleet", "CreateLaunchTemplate", "RunInstances"],
                },
                "StringLike": request_tags["StringLike"],
            },
        ),
        allow(
            ["ec2:CreateTags"],
            ec2("instance"),
            Sid="LabelOwnInstances",
            Condition={
                **owned_by_pool,
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": name},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                },
            },
        ),
        allow(
            ["ec2:DeleteLaunchTemplate", "ec2:TerminateInstances"],
            ec2("instance", "launch-template"),
            Condition=owned_by_pool,
            Sid="DeleteOwnResources",
        ),
        allow(
            [
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstanceStatus",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeInstances",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
            ],
            Condition={"StringEquals": {"aws:RequestedRegion": region}},
            Sid="ReadRegion",
        ),
        allow(["ssm:GetParameter"], f"arn:aws:ssm:{region}::parameter/aws/service/*", Sid="ReadAmiParameters"),
        allow(["pricing:GetProducts"], Sid="ReadPrices"),
        allow(
            ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"], scope.queue_arn, Sid="ReadInterruptionQueue"
        ),
        allow(
            ["iam:PassRole"],
            scope.node_role_arn,
            Sid="PassNodeRoleToEc2",
            Condition={"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        ),
        allow(
            ["iam:CreateInstanceProfile"],
            profiles,
            Sid="CreateTaggedInstanceProfiles",
            Condition={
                "StringEquals": {
                    f"aws:RequestTag/{cluster_tag}": "owned",
                    "aws:RequestTag/eks:eks-cluster-name": name,
                    "aws:RequestTag/topology.kubernetes.io/region": region,
                },
                "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        ),
        allow(
            ["iam:TagInstanceProfile"],
            profiles,
            Sid="TagOwnInstanceProfiles",
            Condition={
                "StringEquals": {
                    **profile_tags,
                    f"aws:RequestTag/{cluster_tag}": "owned",
                    "aws:RequestTag/eks:eks-cluster-name": name,
                    "aws:RequestTag/topology.kubernetes.io/region": region,
                },
                "StringLike": {
                    "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                },
            },
        ),
        allow(
            ["iam:AddRoleToInstanceProfile", "iam:DeleteInstanceProfile", "iam:RemoveRoleFromInstanceProfile"],
            profiles,
            Sid="ManageOwnInstanceProfiles",
            Condition={
                "StringEquals": profile_tags,
                "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        ),
        allow(["iam:GetInstanceProfile"], profiles, Sid="ReadInstanceProfiles"),
        allow(["iam:ListInstanceProfiles"], Sid="ListInstanceProfiles"),
        allow(["eks:DescribeCluster"], f"arn:aws:eks:{region}:{account}:cluster/{name}", Sid="DiscoverApiEndpoint"),
    )


@dataclass(frozen=True, kw_only=True)
class KarpenterIdentityProps:
    name: str
    """The platform's name (the cluster's name as a plain string): prefix of every resource name."""
    region: str
    """The platform's region."""
    cluster_name: str
    """The cluster's name as a token from the cluster layer (orders the access entry after it)."""
    namespace: str
    """Namespace of Karpenter's service account."""
    service_account: str
    """Karpenter's service account, which Pod Identity gives the controller role."""
    handles_reservation_interruptions: bool
    """The installed Karpenter acts on capacity-reservation interruption warnings (1.10 and later):
    only then is that event routed to its queue."""


class KarpenterIdentity(Construct):
    """Exposes `queue_name`, `node_role_name`, `node_role_arn` and `ready` (what the chart needs first)."""

    def __init__(self, scope: Construct, id_: str, *, props: KarpenterIdentityProps):
        super().__init__(scope, id_)
        name = props.name
        node_role = ServiceRole(
            self,
            "node-role",
            props=ServiceRoleProps(
                name=f"{name}-karpenter-node",
                service="ec2.amazonaws.com",
                managed_policies=EKS_NODE_POLICIES,
            ),
        )
        access = EksAccessEntry(
            self, "node-access", cluster_name=props.cluster_name, principal_arn=node_role.arn, type="EC2_LINUX"
        )

        queue = SqsQueue(
            self,
            "interruption-queue",
            name=f"{name}-karpenter",
            message_retention_seconds=300,
            sqs_managed_sse_enabled=True,
        )
        queue_arn = queue.arn  # each attribute read is a jsii round trip: read once
        account_id = DataAwsCallerIdentity(self, "account").account_id
        QUEUE_POLICY.add(
            self,
            "queue-policy",
            queue_url=queue.url,
            policy=policy_document(
                # Only this account's rules may send (the confused deputy: another account's rule could
                # otherwise feed Karpenter interruption events for instances it then deletes).
                {
                    "Effect": "Allow",
                    "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                    "Action": "sqs:SendMessage",
                    "Resource": queue_arn,
                    "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
                },
                deny_insecure_transport("sqs", queue_arn),
            ),
        )
        for rule_id, pattern in INTERRUPTION_EVENTS.items():
            if rule_id == "reservation-interruption" and not props.handles_reservation_interruptions:
                continue
            rule = CloudwatchEventRule(
                self,
                f"{rule_id}-rule",
                name=f"{name}-karpenter-{rule_id}",
                event_pattern=json.dumps(pattern, sort_keys=True),
            )
            EVENT_TARGET.add(self, f"{rule_id}-target", rule=rule.name, arn=queue_arn, target_id="karpenter")

        binding = PodIdentityBinding(
            account_id=account_id,
            cluster_name=name,
            namespace=props.namespace,
            service_account=props.service_account,
        )
        controller = pod_identity_role(
            self,
            "controller-role",
            name=f"{name}-karpenter",
            binding=binding,
            inline_policy=controller_policy(
                KarpenterScope(
                    cluster_name=name,
                    region=props.region,
                    account_id=account_id,
                    node_role_arn=node_role.arn,
                    queue_arn=queue_arn,
                )
            ),
        )
        association = pod_identity_association(
            self, "pod-identity", role=controller, binding=binding, cluster_name=props.cluster_name
        )
        self._queue_name = queue.name
        self._node_role_name = node_role.name
        self._node_role_arn = node_role.arn
        self._ready = (access, association, *controller.attachments)

    @property
    def queue_name(self) -> str:
        """The SQS interruption queue's name."""
        return self._queue_name

    @property
    def node_role_name(self) -> str:
        """The role Karpenter's nodes run as."""
        return self._node_role_name

    @property
    def node_role_arn(self) -> str:
        """Its ARN."""
        return self._node_role_arn

    @property
    def ready(self) -> tuple[ITerraformDependable, ...]:
        """What must exist before the controller starts."""
        return self._ready
