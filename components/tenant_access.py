"""Kubernetes access for tenants' people: one EKS access entry per person, and access policies
scoped to the namespaces of the tenants that list them, never to the cluster. The entry also
carries the person's tenant groups, which only their own namespaces bind (components/k8s/tenant_rbac.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cdktf_cdktf_provider_aws.eks_access_entry import EksAccessEntry
from cdktf_cdktf_provider_aws.eks_access_policy_association import (
    EksAccessPolicyAssociation,
    EksAccessPolicyAssociationAccessScope,
)
from constructs import Construct

from components.k8s.tenant_rbac import access_group
from profiles.workloads import AccessLevel


@dataclass(frozen=True)
class TenantAccessDefaults:
    # EKS's own access policies (arn:aws:eks::aws:cluster-access-policy/..., not IAM policies), like
    # Kubernetes' edit and view roles; neither reaches RBAC objects, quotas or the namespace itself.
    policies: Mapping[AccessLevel, str] = field(
        default_factory=lambda: {
            "editors": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy",
            "viewers": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy",
        }
    )


DEFAULTS = TenantAccessDefaults()


@dataclass(frozen=True, kw_only=True)
class TenantAccessProps:
    cluster_name: str
    """The cluster's name (a token from the cluster layer)."""
    grants: Mapping[str, Mapping[AccessLevel, tuple[str, ...]]]
    """Principal ARN -> level -> the tenant namespaces where it holds that level (as
    WorkloadsConfig.tenant_access() gives them: each principal once, no empty namespace list)."""


class TenantAccess(Construct):
    """Exposes `entries` (principal ARN -> its access entry)."""

    def __init__(self, scope: Construct, id_: str, *, props: TenantAccessProps):
        super().__init__(scope, id_)
        self.entries: dict[str, EksAccessEntry] = {}
        for principal, levels in props.grants.items():
            # Named by the principal, not its position: removing one person leaves everyone
            # else's entry at its address (a moved entry is a create before the old one's
            # destroy, which EKS refuses while the old one holds the principal).
            person = Construct(self, principal.split(":", 4)[4])
            entry = EksAccessEntry(
                person,
                "entry",
                cluster_name=props.cluster_name,
                principal_arn=principal,
                type="STANDARD",
                # For the job kinds EKS's policies leave out: each group is bound in its own namespace only.
                kubernetes_groups=[
                    access_group(ns, level) for level, namespaces in levels.items() for ns in namespaces
                ],
            )
            for level, namespaces in levels.items():
                # EKS takes each access policy once per entry: one association per level, naming
                # every namespace where the person holds it.
                EksAccessPolicyAssociation(
                    person,
                    level,
                    cluster_name=props.cluster_name,
                    principal_arn=entry.principal_arn,
                    policy_arn=DEFAULTS.policies[level],
                    access_scope=EksAccessPolicyAssociationAccessScope(type="namespace", namespaces=list(namespaces)),
                )
            self.entries[principal] = entry
