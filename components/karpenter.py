"""Karpenter's AWS side: controller role (Pod Identity), node role with its access entry, and the
SQS interruption queue fed by EventBridge (Spot interruptions, rebalance recommendations, instance
state changes, scheduled maintenance and capacity-reservation interruptions)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from cdktf import ITerraformDependable
from cdktf_cdktf_provider_aws.cloudwatch_event_rule import CloudwatchEventRule
from cdktf_cdktf_provider_aws.cloudwatch_event_target import CloudwatchEventTarget
from cdktf_cdktf_provider_aws.eks_access_entry import EksAccessEntry
from cdktf_cdktf_provider_aws.eks_pod_identity_association import EksPodIdentityAssociation
from cdktf_cdktf_provider_aws.sqs_queue import SqsQueue
from cdktf_cdktf_provider_aws.sqs_queue_policy import SqsQueuePolicy
from constructs import Construct

from components.iam import (
    EKS_NODE_POLICIES,
    ServiceRole,
    ServiceRoleProps,
    allow,
    deny_insecure_transport,
    pod_identity_role,
    policy_document,
)

INTERRUPTION_EVENTS = {
    "scheduled-change": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
    "spot-interruption": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "state-change": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
    "reservation-interruption": {"source": ["aws.ec2"],
                                 "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"]},
}


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


class KarpenterIdentity(Construct):
    """Exposes `queue_name`, `node_role_name`, `node_role_arn` and `ready` (what the chart needs first)."""

    def __init__(self, scope: Construct, id_: str, *, props: KarpenterIdentityProps):
        super().__init__(scope, id_)
        name = props.name
        node_role = ServiceRole(self, "node-role", props=ServiceRoleProps(
            name=f"{name}-karpenter-node", service="ec2.amazonaws.com", managed_policies=EKS_NODE_POLICIES,
        ))
        access = EksAccessEntry(self, "node-access", cluster_name=props.cluster_name,
                                principal_arn=node_role.arn, type="EC2_LINUX")

        queue = SqsQueue(self, "interruption-queue", name=f"{name}-karpenter", message_retention_seconds=300,
                         sqs_managed_sse_enabled=True)
        SqsQueuePolicy(self, "queue-policy", queue_url=queue.url, policy=policy_document(
            {"Effect": "Allow", "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
             "Action": "sqs:SendMessage", "Resource": queue.arn},
            deny_insecure_transport("sqs", queue.arn),
        ))
        for rule_id, pattern in INTERRUPTION_EVENTS.items():
            rule = CloudwatchEventRule(self, f"{rule_id}-rule", name=f"{name}-karpenter-{rule_id}",
                                       event_pattern=json.dumps(pattern, sort_keys=True))
            CloudwatchEventTarget(self, f"{rule_id}-target", rule=rule.name, arn=queue.arn, target_id="karpenter")

        owned = {"StringEquals": {f"aws:ResourceTag/kubernetes.io/cluster/{name}": "owned"}}
        controller = pod_identity_role(
            self,
            "controller-role",
            name=f"{name}-karpenter",
            inline_policy=policy_document(
                allow(
                    [
                        "ec2:DescribeAvailabilityZones",
                        "ec2:DescribeCapacityReservations",
                        "ec2:DescribeImages",
                        "ec2:DescribeInstanceTypeOfferings",
                        "ec2:DescribeInstanceTypes",
                        "ec2:DescribeInstances",
                        "ec2:DescribeLaunchTemplates",
                        "ec2:DescribePlacementGroups",
                        "ec2:DescribeSecurityGroups",
                        "ec2:DescribeSpotPriceHistory",
                        "ec2:DescribeSubnets",
                        "pricing:GetProducts",
                    ]
                ),
                allow(["ec2:CreateFleet", "ec2:CreateLaunchTemplate", "ec2:CreateTags", "ec2:RunInstances"]),
                allow(["ec2:DeleteLaunchTemplate", "ec2:TerminateInstances"], Condition=owned),
                allow(
                    ["iam:PassRole"],
                    node_role.arn,
                    Condition={"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
                ),
                allow(
                    [
                        "iam:AddRoleToInstanceProfile",
                        "iam:CreateInstanceProfile",
                        "iam:DeleteInstanceProfile",
                        "iam:GetInstanceProfile",
                        "iam:ListInstanceProfiles",
                        "iam:RemoveRoleFromInstanceProfile",
                        "iam:TagInstanceProfile",
                    ]
                ),
                allow(["ssm:GetParameter"], f"arn:aws:ssm:{props.region}::parameter/aws/service/*"),
                allow(["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"], queue.arn),
                allow(["eks:DescribeCluster"], f"arn:aws:eks:{props.region}:*:cluster/{name}"),
            ),
        )
        association = EksPodIdentityAssociation(
            self,
            "pod-identity",
            cluster_name=props.cluster_name,
            namespace=props.namespace,
            service_account=props.service_account,
            role_arn=controller.arn,
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
