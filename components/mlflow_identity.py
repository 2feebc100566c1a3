"""Pod Identity for MLflow's two service accounts, each with only what it needs.

- The server: its artifact bucket, and IAM database authentication as its application role
  (rds-db:connect for that one database user). Clients never touch S3: the server proxies artifact
  uploads and downloads (`--serve-artifacts`), so this role is the only way to the artifacts.
- The database setup job: the RDS-managed secret with the master user's password, decrypted only
  through Secrets Manager. Nothing else; the server cannot read that secret."""

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
    setup_service_account: str
    """The database setup job's service account."""
    backend: MlflowBackend
    """The database secret, key and artifact bucket the storage layer made."""


class MlflowIdentity(Construct):
    """Exposes `role_arn` (the server's), `ready` and `setup_ready` (each role's association)."""

    def __init__(self, scope: Construct, id_: str, *, props: MlflowIdentityProps):
        super().__init__(scope, id_)
        backend = props.backend
        account = DataAwsCallerIdentity(self, "account").account_id
        # IAM database authentication: a token for this database user of this instance only.
        database_user = f"arn:aws:rds-db:{props.region}:{account}:dbuser:{backend.resource_id}/{backend.username}"
        # The server's construct ids are the ones it had alone: its role and association keep their addresses.
        server = self._role(
            ("role", "association"),
            props,
            account=account,
            name=f"{props.platform_name}-mlflow",
            service_account=props.service_account,
            policy=policy_document(
                allow(["s3:ListBucket"], backend.bucket_arn),
                # MLflow deletes artifacts of deleted runs (`mlflow gc`) and aborts failed multipart uploads.
                allow(
                    ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
                    f"{backend.bucket_arn}/*",
                ),
                allow(["rds-db:connect"], database_user),
            ),
        )
        setup = self._role(
            ("setup-role", "setup-association"),
            props,
            account=account,
            name=f"{props.platform_name}-mlflow-db-setup",
            service_account=props.setup_service_account,
            policy=policy_document(
                allow(["secretsmanager:GetSecretValue"], backend.secret_arn),
                # The secret is encrypted with the store's key: decrypt only on Secrets Manager's behalf.
                allow(
                    ["kms:Decrypt"],
                    backend.kms_key_arn,
                    Condition={"StringEquals": {"kms:ViaService": f"secretsmanager.{props.region}.amazonaws.com"}},
                ),
            ),
        )
        self._role_arn = server[0]
        self._server_ready = server[1]
        self._setup_ready = setup[1]

    def _role(
        self,
        ids: tuple[str, str],
        props: MlflowIdentityProps,
        *,
        account: str,
        name: str,
        service_account: str,
        policy: str,
    ) -> tuple[str, tuple[ITerraformDependable, ...]]:
        """A Pod Identity role for one service account and its association: (ARN, what to wait for)."""
        role = pod_identity_role(
            self,
            ids[0],
            name=name,
            binding=PodIdentityBinding(
                account_id=account,
                cluster_name=props.platform_name,
                namespace=props.namespace,
                service_account=service_account,
            ),
            inline_policy=policy,
        )
        association = EksPodIdentityAssociation(
            self,
            ids[1],
            cluster_name=props.cluster_name,
            namespace=props.namespace,
            service_account=service_account,
            role_arn=role.arn,
            depends_on=role.attachments or None,
        )
        return role.arn, (association, *role.attachments)

    @property
    def role_arn(self) -> str:
        """The MLflow server role's ARN."""
        return self._role_arn

    @property
    def ready(self) -> tuple[ITerraformDependable, ...]:
        """What the server's release waits for (its role and association)."""
        return self._server_ready

    @property
    def setup_ready(self) -> tuple[ITerraformDependable, ...]:
        """What the database setup job waits for (its role and association)."""
        return self._setup_ready
