"""Pod Identity for a tenant's workload service account: its own prefix of the shared buckets."""

from __future__ import annotations

from dataclasses import dataclass

from constructs import Construct

from components.iam import PodIdentityBinding, allow, pod_identity_association, pod_identity_role, policy_document
from profiles import tenancy


@dataclass(frozen=True, kw_only=True)
class TenantIdentityProps:
    platform_name: str
    """The platform's name (also the cluster's name as a plain string): prefix of the role name."""
    account_id: str
    """The account the cluster runs in (the role trusts Pod Identity only on its behalf)."""
    cluster_name: str
    """The cluster's name (a token from the cluster layer)."""
    namespace: str
    """The tenant's namespace, also its S3 prefix."""
    service_account: str
    """The tenant's workload service account."""
    bucket_arns: tuple[str, ...]
    """The platform's data buckets; the role reaches only the tenant's prefix in each."""


class TenantIdentity(Construct):
    """Exposes `role_arn`."""

    def __init__(self, scope: Construct, id_: str, *, props: TenantIdentityProps):
        super().__init__(scope, id_)
        prefix = tenancy.s3_prefix(props.namespace)
        binding = PodIdentityBinding(
            account_id=props.account_id,
            cluster_name=props.platform_name,
            namespace=props.namespace,
            service_account=props.service_account,
        )
        role = pod_identity_role(
            self,
            "role",
            name=tenancy.role_name(props.platform_name, props.namespace),
            binding=binding,
            inline_policy=policy_document(
                allow(
                    ["s3:ListBucket"],
                    list(props.bucket_arns),
                    Condition={"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}},
                ),
                allow(
                    ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
                    [f"{arn}/{prefix}*" for arn in props.bucket_arns],
                ),
            ),
        )
        pod_identity_association(self, "association", role=role, binding=binding, cluster_name=props.cluster_name)
        self._role_arn = role.arn

    @property
    def role_arn(self) -> str:
        """The tenant workload role's ARN."""
        return self._role_arn
