"""IAM roles: trusted by an AWS service, or by EKS Pod Identity for one service account."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cdktf import ITerraformDependable
from cdktf_cdktf_provider_aws.iam_role import IamRole
from constructs import Construct

from components.leaf_resources import LeafType

# A role's policies and its Pod Identity association: nothing reads them, so they are rendered as
# data (components/leaf_resources.py).
POLICY_ATTACHMENT = LeafType("aws_iam_role_policy_attachment", "IamRolePolicyAttachment")
INLINE_POLICY = LeafType("aws_iam_role_policy", "IamRolePolicy")
POD_IDENTITY_ASSOCIATION = LeafType("aws_eks_pod_identity_association", "EksPodIdentityAssociation")

AWS_MANAGED = "arn:aws:iam::aws:policy/"
# Managed policies every EKS node role carries (managed node groups and Karpenter nodes alike).
EKS_NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonSSMManagedInstanceCore",  # Session Manager instead of SSH keys
)


def policy_document(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)}, sort_keys=True)


def allow(actions: list[str], resources: list[str] | str = "*", **extra: Any) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": sorted(actions), "Resource": resources, **extra}


def deny_insecure_transport(service: str, resources: list[str] | str) -> dict[str, Any]:
    """The resource-policy statement that refuses every request not made over TLS."""
    return {
        "Sid": "DenyInsecureTransport",
        "Effect": "Deny",
        "Principal": "*",
        "Action": f"{service}:*",
        "Resource": resources,
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }


@dataclass(frozen=True, kw_only=True)
class ServiceRoleProps:
    name: str
    """The role's name."""
    service: str
    """Service principal (e.g. eks.amazonaws.com); Pod Identity roles use pods.eks.amazonaws.com."""
    managed_policies: tuple[str, ...] = ()
    """AWS managed policies, by name under arn:aws:iam::aws:policy/. Default: none."""
    inline_policy: str | None = None
    """A JSON policy document attached inline. Default: none."""
    trust_actions: tuple[str, ...] = ("sts:AssumeRole",)
    """What the service may do with the role. Default: assume it."""
    trust_conditions: dict[str, Any] | None = None
    """Conditions on the trust statement (aws:SourceAccount, aws:SourceArn, session tags), so the
    service assumes the role only on behalf of this account's resources. Default: none."""
    tags: dict[str, str] = field(default_factory=dict)
    """Tags besides the provider's default tags. Default: none."""
    policy_after: tuple[ITerraformDependable, ...] = ()
    """The inline policy is written only after these (e.g. a setup the role's old permissions must
    outlast). Default: nothing."""


class ServiceRole(Construct):
    """A role one AWS service may assume. Exposes `arn`, `name` and `attachments` (the managed
    policy attachments, so dependants can outlive-order against them)."""

    def __init__(self, scope: Construct, id_: str, *, props: ServiceRoleProps):
        super().__init__(scope, id_)
        statement: dict[str, Any] = {
            "Effect": "Allow",
            "Principal": {"Service": props.service},
            "Action": list(props.trust_actions),
        }
        if props.trust_conditions:
            statement["Condition"] = props.trust_conditions
        trust = policy_document(statement)
        role = IamRole(self, "role", name=props.name, assume_role_policy=trust, tags=props.tags or None)
        self._arn = role.arn
        self._name = role.name
        self._attachments: list[ITerraformDependable] = [
            POLICY_ATTACHMENT.add(self, policy.replace("/", "-"), role=self._name, policy_arn=AWS_MANAGED + policy)
            for policy in props.managed_policies
        ]
        if props.inline_policy is not None:
            self._attachments.append(
                INLINE_POLICY.add(
                    self,
                    "inline",
                    role=role.id,
                    name=props.name,
                    policy=props.inline_policy,
                    depends_on=props.policy_after,
                )
            )

    @property
    def arn(self) -> str:
        """The role's ARN."""
        return self._arn

    @property
    def name(self) -> str:
        """The role's name."""
        return self._name

    @property
    def attachments(self) -> list[ITerraformDependable]:
        """Its policy attachments (dependants can order against them)."""
        return self._attachments


@dataclass(frozen=True, kw_only=True)
class PodIdentityBinding:
    """The one service account of one cluster that may assume a Pod Identity role."""

    account_id: str
    """The account the cluster runs in (aws:SourceAccount)."""
    cluster_name: str
    """The cluster's name as a plain string (Pod Identity's eks-cluster-name session tag)."""
    namespace: str
    """The service account's namespace (kubernetes-namespace session tag)."""
    service_account: str
    """The service account (kubernetes-service-account session tag)."""


def pod_identity_role(
    scope: Construct,
    id_: str,
    *,
    name: str,
    binding: PodIdentityBinding,
    managed_policies: tuple[str, ...] = (),
    inline_policy: str | None = None,
    policy_after: tuple[ITerraformDependable, ...] = (),
) -> ServiceRole:
    """A role for EKS Pod Identity: the agent assumes it and tags the session. The trust policy
    admits only the bound service account: Pod Identity sets the cluster, namespace and service
    account as session tags, so another association in the account cannot assume the role."""
    return ServiceRole(
        scope,
        id_,
        props=ServiceRoleProps(
            name=name,
            service="pods.eks.amazonaws.com",
            managed_policies=managed_policies,
            inline_policy=inline_policy,
            policy_after=policy_after,
            trust_actions=("sts:AssumeRole", "sts:TagSession"),
            trust_conditions={
                "StringEquals": {
                    "aws:SourceAccount": binding.account_id,
                    "aws:RequestTag/eks-cluster-name": binding.cluster_name,
                    "aws:RequestTag/kubernetes-namespace": binding.namespace,
                    "aws:RequestTag/kubernetes-service-account": binding.service_account,
                }
            },
        ),
    )


def pod_identity_association(
    scope: Construct,
    id_: str,
    *,
    role: ServiceRole,
    binding: PodIdentityBinding,
    cluster_name: str,
    depends_on: tuple[ITerraformDependable, ...] = (),
) -> ITerraformDependable:
    """Bind `role` to the service account its trust policy admits (`binding`). `cluster_name` is
    the cluster layer's token (the association waits for the cluster); the binding's is plain text."""
    return POD_IDENTITY_ASSOCIATION.add(
        scope,
        id_,
        cluster_name=cluster_name,
        namespace=binding.namespace,
        service_account=binding.service_account,
        role_arn=role.arn,
        depends_on=depends_on,
    )
