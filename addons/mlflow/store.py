"""MLflow's stores in the storage layer: an RDS for PostgreSQL backend store and an S3 artifact
bucket. The database sits in the private subnets behind its own security group, which admits
PostgreSQL only from the cluster's node group (pods share it: the VPC CNI gives them the node's
security group). Its master password is made, kept and rotated by RDS in Secrets Manager,
encrypted with the store's own KMS key: no password is in the profile, the JSON or the state.

MLflow itself never logs in as the master user (a member of rds_superuser): it connects as an
application role with IAM database authentication, which the addons layer's setup job creates with
the master password (docs/mlflow.md)."""

from __future__ import annotations

from dataclasses import dataclass

from cdktf import TerraformResourceLifecycle
from cdktf_cdktf_provider_aws.db_instance import DbInstance
from cdktf_cdktf_provider_aws.db_subnet_group import DbSubnetGroup
from cdktf_cdktf_provider_aws.security_group import SecurityGroup
from constructs import Construct

from addons.mlflow import POSTGRES_MAJOR_VERSION, MlflowDatabaseConfig
from addons.mlflow.backend import MlflowBackend
from components.expressions import Expression, interpolated
from components.helm.addon import StorageContext
from components.kms import account_administered_key
from components.network import EGRESS_RULE, INGRESS_RULE
from components.s3 import SecureBucket, SecureBucketProps

POSTGRES_PORT = 5432
DATABASE_NAME = "mlflow"
MASTER_USERNAME = "mlflow"
# The role MLflow's server logs in as (IAM database authentication, a member of rds_iam), and the
# role without a login that owns MLflow's databases and tables (docs/mlflow.md).
APP_USERNAME = "mlflow_app"
OWNER_ROLE = "mlflow_owner"


def artifact_bucket_name(platform_name: str, account_id: str) -> str:
    return f"{platform_name}-mlflow-artifacts-{account_id}"


@dataclass(frozen=True, kw_only=True)
class MlflowStoreProps:
    name: str
    """The platform's name: prefix of the database's, key's, group's and bucket's names."""
    account_id: str
    """The account id (a token): it makes the artifact bucket's name globally unique, and its root
    administers the key through IAM."""
    vpc_id: str
    """The cluster's VPC."""
    subnet_ids: list[str]
    """The VPC's private subnets (two or more availability zones, as RDS requires)."""
    client_security_group_id: str
    """The cluster nodes' security group: the only source the database admits."""
    config: MlflowDatabaseConfig
    """The database's validated profile settings."""
    protect: bool
    """storage.protect_from_destroy: deletion protection, prevent_destroy and a final snapshot."""


class MlflowStore(Construct):
    """Exposes `backend` (an `MlflowBackend`)."""

    def __init__(self, scope: Construct, id_: str, *, props: MlflowStoreProps):
        super().__init__(scope, id_)
        name, cfg = f"{props.name}-mlflow", props.config
        # The account administers the key through IAM; RDS and Secrets Manager use it on behalf of
        # callers that IAM allows (the MLflow server's role may decrypt through Secrets Manager only).
        key = account_administered_key(
            self,
            "key",
            description=f"MLflow database and its master secret for {props.name}",
            alias=name,
            account_id=props.account_id,
        )

        group_id = SecurityGroup(
            self,
            "security-group",
            name=f"{name}-db",
            vpc_id=props.vpc_id,
            description="PostgreSQL for MLflow from cluster nodes only",
            tags={"Name": f"{name}-db"},
        ).id  # each attribute read is a jsii round trip: read once
        INGRESS_RULE.add(
            self,
            "postgres-from-nodes",
            security_group_id=group_id,
            referenced_security_group_id=props.client_security_group_id,
            ip_protocol="tcp",
            from_port=POSTGRES_PORT,
            to_port=POSTGRES_PORT,
            description="PostgreSQL from cluster nodes and pods",
        )
        # The node group's egress is explicit (no allow-all): open this one path.
        EGRESS_RULE.add(
            self,
            "nodes-postgres-to-db",
            security_group_id=props.client_security_group_id,
            referenced_security_group_id=group_id,
            ip_protocol="tcp",
            from_port=POSTGRES_PORT,
            to_port=POSTGRES_PORT,
            description="PostgreSQL to the MLflow database",
        )
        subnets = DbSubnetGroup(
            self, "subnet-group", name=name, subnet_ids=props.subnet_ids, description=f"Private subnets of {props.name}"
        )
        database = DbInstance(
            self,
            "database",
            identifier=name,
            engine="postgres",
            engine_version=POSTGRES_MAJOR_VERSION,
            auto_minor_version_upgrade=True,
            instance_class=cfg.instance_class,
            multi_az=cfg.multi_az,
            allocated_storage=cfg.allocated_storage_gib,
            max_allocated_storage=(
                cfg.max_allocated_storage_gib if cfg.max_allocated_storage_gib > cfg.allocated_storage_gib else None
            ),
            storage_type="gp3",
            storage_encrypted=True,
            kms_key_id=key.arn,
            db_name=DATABASE_NAME,
            port=POSTGRES_PORT,
            username=MASTER_USERNAME,
            # RDS makes the password, keeps it in Secrets Manager (encrypted with this key) and
            # rotates it; Terraform never sees it.
            manage_master_user_password=True,
            master_user_secret_kms_key_id=key.arn,
            db_subnet_group_name=subnets.name,
            vpc_security_group_ids=[group_id],
            publicly_accessible=False,
            backup_retention_period=cfg.backup_retention_days,
            copy_tags_to_snapshot=True,
            deletion_protection=props.protect,
            skip_final_snapshot=not props.protect,
            # Named at creation (then ignored): each database of this name gets its own final
            # snapshot, so a platform deployed and torn down twice does not meet the first one's.
            final_snapshot_identifier=interpolated(
                f"{name}-final-", Expression('formatdate("YYYYMMDDhhmmss", timestamp())')
            )
            if props.protect
            else None,
            # The server logs in with 15-minute tokens its Pod Identity role mints (rds-db:connect).
            iam_database_authentication_enabled=True,
            performance_insights_enabled=False,
            enabled_cloudwatch_logs_exports=["postgresql"],
            # A change is made when the plan that shows it is applied, not in the next maintenance
            # window: the addons layer relies on IAM authentication being on once this layer is
            # applied. (An instance class change restarts the database then: MLflow pauses.)
            apply_immediately=True,
            lifecycle=TerraformResourceLifecycle(
                prevent_destroy=props.protect, ignore_changes=["final_snapshot_identifier"] if props.protect else None
            ),
        )
        bucket = SecureBucket(
            self,
            "artifacts",
            props=SecureBucketProps(
                bucket_name=artifact_bucket_name(props.name, props.account_id),
                prevent_destroy=props.protect,
            ),
        )
        self._backend = MlflowBackend(
            address=database.address,
            database=DATABASE_NAME,
            username=APP_USERNAME,
            owner_role=OWNER_ROLE,
            master_username=MASTER_USERNAME,
            resource_id=database.resource_id,
            secret_arn=database.master_user_secret.get(0).secret_arn,
            kms_key_arn=key.arn,
            bucket_name=bucket.name,
            bucket_arn=bucket.arn,
        )

    @property
    def backend(self) -> MlflowBackend:
        """The database and bucket, for the addons layer."""
        return self._backend


def mlflow_store(ctx: StorageContext, database: MlflowDatabaseConfig) -> MlflowBackend:
    """The storage layer's part of MLflow (`AddonSpec.storage`): its database and artifact bucket."""
    cluster = ctx.cluster
    return MlflowStore(
        ctx.scope,
        "mlflow",
        props=MlflowStoreProps(
            name=ctx.config.name,
            account_id=ctx.account_id,
            vpc_id=cluster.vpc_id,
            subnet_ids=cluster.private_subnet_ids,
            client_security_group_id=cluster.node_security_group_id,
            config=database,
            protect=ctx.config.storage.protect_from_destroy,
        ),
    ).backend
