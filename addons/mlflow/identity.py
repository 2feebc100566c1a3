"""Pod Identity for MLflow's two service accounts, each with only what it needs.

- The server (`MlflowIdentity`): its artifact bucket, and IAM database authentication as its
  application role (rds-db:connect for that one database user). Clients never touch S3: the server
  proxies artifact uploads and downloads (`--serve-artifacts`), so this role is the only way to the
  artifacts. Its permissions change only after the database setup job has completed (`after`): a
  platform whose server logged in with the master password keeps that access until the database
  has the server's new role, so a failed setup leaves the running server as it was.
- The database setup job (`MlflowSetupIdentity`): the RDS-managed secret with the master user's
  password, decrypted only through Secrets Manager. Nothing else; the server cannot read it."""

from __future__ import annotations

from dataclasses import dataclass, field

from cdktf import ITerraformDependable
from cdktf_cdktf_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
from constructs import Construct

from addons.mlflow.backend import MlflowBackend
from components.iam import PodIdentityBinding, allow, pod_identity_association, pod_identity_role, policy_document


@dataclass(frozen=True, kw_only=True)
class MlflowIdentityProps:
    platform_name: str
    """The platform's name (also the cluster's name as a plain string): prefix of the role name."""
    region: str
    """The region: the key may be used only through this region's Secrets Manager."""
    cluster_name: str
    """The cluster's name (a token from the cluster layer)."""
    namespace: str
    """MLflow's namespace."""
    service_account: str
    """The service account the role is for."""
    backend: MlflowBackend
    """The database, its secret and key, and the artifact bucket the storage layer made."""
    after: tuple[ITerraformDependable, ...] = field(default=())
    """The role's permissions are set, and its association made, only after these."""


def _bound_role(
    scope: Construct, props: MlflowIdentityProps, *, account: str, name: str, policy: str
) -> tuple[str, tuple[ITerraformDependable, ...]]:
    """A Pod Identity role for the props' service account, with its inline policy and association,
    in `scope`: (its ARN, what its pods wait for)."""
    binding = PodIdentityBinding(
        account_id=account,
        cluster_name=props.platform_name,
        namespace=props.namespace,
        service_account=props.service_account,
    )
    role = pod_identity_role(scope, "role", name=name, binding=binding, inline_policy=policy, policy_after=props.after)
    association = pod_identity_association(
        scope,
        "association",
        role=role,
        binding=binding,
        cluster_name=props.cluster_name,
        depends_on=(*role.attachments, *props.after),
    )
    return role.arn, (association, *role.attachments)


class MlflowIdentity(Construct):
    """The server's role. Exposes `role_arn` and `ready`."""

    def __init__(self, scope: Construct, id_: str, *, props: MlflowIdentityProps):
        super().__init__(scope, id_)
        backend = props.backend
        account = DataAwsCallerIdentity(self, "account").account_id
        self._role_arn, self._ready = _bound_role(
            self,
            props,
            account=account,
            name=f"{props.platform_name}-mlflow",
            policy=policy_document(
                allow(["s3:ListBucket"], backend.bucket_arn),
                # MLflow deletes artifacts of deleted runs (`mlflow gc`) and aborts failed multipart uploads.
                allow(
                    ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
                    f"{backend.bucket_arn}/*",
                ),
                # IAM database authentication: a token for this database user of this instance only.
                allow(
                    ["rds-db:connect"],
                    f"arn:aws:rds-db:{props.region}:{account}:dbuser:{backend.resource_id}/{backend.username}",
                ),
            ),
        )

    @property
    def role_arn(self) -> str:
        """The MLflow server role's ARN."""
        return self._role_arn

    @property
    def ready(self) -> tuple[ITerraformDependable, ...]:
        """What the server's release waits for (its role's policy and association)."""
        return self._ready


class MlflowSetupIdentity(Construct):
    """The database setup job's role. Exposes `ready`."""

    def __init__(self, scope: Construct, id_: str, *, props: MlflowIdentityProps):
        super().__init__(scope, id_)
        backend = props.backend
        _, self._ready = _bound_role(
            self,
            props,
            account=DataAwsCallerIdentity(self, "account").account_id,
            name=f"{props.platform_name}-mlflow-db-setup",
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

    @property
    def ready(self) -> tuple[ITerraformDependable, ...]:
        """What the setup job waits for (its role's policy and association)."""
        return self._ready
