"""Pod Identity for the MLflow server: its artifact bucket, and its database password through
Secrets Manager, nothing else. Clients never touch S3: the server proxies artifact uploads and
downloads (`--serve-artifacts`), so this one role is the only way to the artifacts."""

from __future__ import annotations

from dataclasses import dataclass

from cdktf import ITerraformDependable
from cdktf_cdktf_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
from cdktf_cdktf_provider_aws.eks_pod_identity_association import EksPodIdentityAssociation
from constructs import Construct

from components.iam import PodIdentityBinding, allow, pod_identity_role, policy_document
from components.mlflow_backend import MlflowBackend


@dataclass(frozen=True, kw_only=True)
class MlflowIdentityProps:
    platform_name: str
    """The platform's name (also the cluster's name as a plain string): prefix of the role name."""
    region: str
    """The region: the key may be used only through this region's Secrets Manager."""
    cluster_name: str
    """The cluster's name (a token from the cluster layer)."""
    namespace: str
    """The MLflow server's namespace."""
    service_account: str
    """The MLflow server's service account."""
    backend: MlflowBackend
    """The database secret, key and artifact bucket the storage layer made."""


class MlflowIdentity(Construct):
    """Exposes `role_arn` and `ready` (the association, before the server starts)."""

    def __init__(self, scope: Construct, id_: str, *, props: MlflowIdentityProps):
        super().__init__(scope, id_)
        backend = props.backend
        account = DataAwsCallerIdentity(self, "account").account_id
        role = pod_identity_role(
            self,
            "role",
            name=f"{props.platform_name}-mlflow",
            binding=PodIdentityBinding(
                account_id=account,
                cluster_name=props.platform_name,
                namespace=props.namespace,
                service_account=props.service_account,
            ),
            inline_policy=policy_document(
                allow(["s3:ListBucket"], backend.bucket_arn),
                # MLflow deletes artifacts of deleted runs (`mlflow gc`) and aborts failed multipart uploads.
                allow(
                    ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
                    f"{backend.bucket_arn}/*",
                ),
                allow(["secretsmanager:GetSecretValue"], backend.secret_arn),
                # The secret is encrypted with the store's key: decrypt only on Secrets Manager's behalf.
                allow(
                    ["kms:Decrypt"],
                    backend.kms_key_arn,
                    Condition={"StringEquals": {"kms:ViaService": f"secretsmanager.{props.region}.amazonaws.com"}},
                ),
            ),
        )
        association = EksPodIdentityAssociation(
            self,
            "association",
            cluster_name=props.cluster_name,
            namespace=props.namespace,
            service_account=props.service_account,
            role_arn=role.arn,
            depends_on=role.attachments or None,
        )
        self._role_arn = role.arn
        self._ready: tuple[ITerraformDependable, ...] = (association, *role.attachments)

    @property
    def role_arn(self) -> str:
        """The MLflow server role's ARN."""
        return self._role_arn

    @property
    def ready(self) -> tuple[ITerraformDependable, ...]:
        """What the server's release waits for."""
        return self._ready
