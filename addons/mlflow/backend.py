"""MLflow's stores as the storage layer makes them and the addons layer reads them: one typed
record passed between the layers (binding-free)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from stacks.contracts import AddonRecord


@dataclass(frozen=True, kw_only=True)
class MlflowBackend(AddonRecord):
    """Where MLflow keeps its data, as the addons layer needs it to run the server."""

    OUTPUTS: ClassVar[Mapping[str, str]] = {
        "address": "db_address",
        "database": "db_name",
        "username": "db_username",
        "owner_role": "db_owner_role",
        "master_username": "db_master_username",
        "resource_id": "db_resource_id",
        "secret_arn": "db_secret_arn",
        "kms_key_arn": "kms_key_arn",
        "bucket_name": "artifact_bucket_name",
        "bucket_arn": "artifact_bucket_arn",
    }

    address: str
    """MLflow's PostgreSQL host (private DNS)."""
    database: str
    """MLflow's database name (its tracking tables live there)."""
    username: str
    """The application role the MLflow server logs in as, with IAM database authentication."""
    owner_role: str
    """The role (no login) that owns MLflow's databases and tables; the server acts as it."""
    master_username: str
    """The RDS master user: only the database setup job logs in as it."""
    resource_id: str
    """The database's resource id (db-...): IAM's rds-db:connect ARNs name it."""
    secret_arn: str
    """The RDS-managed Secrets Manager secret holding the master user's password (the setup job's)."""
    kms_key_arn: str
    """The KMS key that encrypts MLflow's database and its master secret."""
    bucket_name: str
    """The bucket MLflow keeps artifacts in."""
    bucket_arn: str
    """The ARN of the bucket MLflow keeps artifacts in."""
