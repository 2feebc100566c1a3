"""Pod Identity for a tenant's workload service account: its own prefix of the shared buckets."""

from __future__ import annotations

from dataclasses import dataclass

from cdktf_cdktf_provider_aws.eks_pod_identity_association import EksPodIdentityAssociation
from constructs import Construct

from components.iam import allow, pod_identity_role, policy_document


@dataclass(frozen=True)
class TenantIdentityProps:
    platform_name: str
    cluster_name: str
    namespace: str
    service_account: str
    bucket_arns: tuple[str, ...]


class TenantIdentity(Construct):
    """Exposes `role_arn`."""

    def __init__(self, scope: Construct, id_: str, *, props: TenantIdentityProps):
        super().__init__(scope, id_)
        prefix = f"{props.namespace}/"
        role = pod_identity_role(self, "role", name=f"{props.platform_name}-tenant-{props.namespace}",
                                 inline_policy=policy_document(
            allow(["s3:ListBucket"], list(props.bucket_arns),
                  Condition={"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}}),
            allow(["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
                  [f"{arn}/{prefix}*" for arn in props.bucket_arns]),
        ))
        EksPodIdentityAssociation(self, "association", cluster_name=props.cluster_name, namespace=props.namespace,
                                  service_account=props.service_account, role_arn=role.arn)
        self.role_arn = role.arn
