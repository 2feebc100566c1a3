"""MLflow tracking server: RDS PostgreSQL backend store, S3 artifacts through the server, basic auth."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from addons.definition import AddonDefinition, PlatformConfig, ReleaseConfig
from profiles.base import FieldProblem, K8sName, Strict, worded
from profiles.versions import ChartRef

# RDS for PostgreSQL instance classes: burstable (t3, t4g) and general-purpose or memory-optimised
# Graviton and Intel families.
DbInstanceClass = Annotated[
    str,
    worded(
        r"^db\.(t3|t4g|m5|m6g|m6i|m7g|m7i|r5|r6g|r6i|r7g|r7i)\.(micro|small|medium|large|[0-9]*xlarge)$",
        "an RDS instance class: db., a family (t3, t4g, m5, m6g, m6i, m7g, m7i, r5, r6g, r6i, r7g, r7i), then micro, "
        "small, medium, large or Nxlarge, e.g. db.m6i.large",
    ),
]


class MlflowDatabaseConfig(Strict):
    """MLflow's backend store: an RDS for PostgreSQL instance the storage layer creates. Its master
    password is made and rotated by RDS in Secrets Manager; it is in no profile, plan or Helm value."""

    instance_class: DbInstanceClass = "db.t4g.micro"
    """RDS instance class. db.t4g.micro (default) is the cheapest; tracking traffic is small next to training."""
    multi_az: bool = False
    """A standby in a second availability zone (twice the instance cost). Off by default: backups and the final
    snapshot already protect the data; turn on where tracking must survive an AZ outage.
    """
    allocated_storage_gib: int = Field(20, ge=20, le=65536)
    """gp3 storage, in GiB (RDS minimum 20)."""
    max_allocated_storage_gib: int = Field(100, ge=20, le=65536)
    """Storage autoscaling ceiling, in GiB; equal to allocated_storage_gib turns autoscaling off."""
    backup_retention_days: int = Field(7, ge=1, le=35)
    """Days of automated backups (point-in-time recovery); at least 1."""

    @model_validator(mode="after")
    def _autoscaling_ceiling(self) -> MlflowDatabaseConfig:
        if self.max_allocated_storage_gib < self.allocated_storage_gib:
            raise FieldProblem(
                "max_allocated_storage_gib",
                self.max_allocated_storage_gib,
                "the autoscaling ceiling is below the allocated storage",
                allowed=f"at least allocated_storage_gib ({self.allocated_storage_gib})",
            )
        return self


class MlflowConfig(ReleaseConfig):
    """The MLflow tracking server: backend store in RDS, artifacts in S3 through the server, and
    MLflow's basic auth (every request authenticated; no anonymous reads or writes)."""

    enabled: bool = False
    """Install MLflow and create its database and artifact bucket (storage layer). Off by default."""
    database: MlflowDatabaseConfig = Field(default_factory=MlflowDatabaseConfig)
    """The RDS for PostgreSQL backend store."""
    admin_password_from: Literal["variable", "existing_secret"] = "variable"
    """The MLflow admin's password. variable: the sensitive Terraform variable mlflow_admin_password
    (TF_VAR_mlflow_admin_password) at apply time; existing_secret: a Secret you create in the mlflow namespace,
    named admin_secret_name, with keys username and password.
    """
    admin_secret_name: K8sName = Field("mlflow-admin")
    """With existing_secret: the Secret holding the admin's username and password."""
    default_permission: Literal["NO_PERMISSIONS", "READ", "EDIT", "MANAGE"] | None = None
    """What a signed-in user may do with experiments and models others own. Unset: NO_PERMISSIONS when the profile has
    more than one tenant (a team sees only what it made or was granted), READ with one."""


# The image every MLflow container runs (the server, the chart's ini-file initializer, the
# database-login sidecar and the setup Job): this project's images/mlflow, which the build layer
# builds while MLflow is enabled and the addons layer takes from ECR by its content-derived tag.
# Its Dockerfile pins MLflow at the chart's app version, and the lock every other package.
PROJECT_IMAGE = "mlflow"
IMAGE_USER = 1001  # the image's user (images/mlflow/Dockerfile), which the chart's pod security context names
# The backend store's RDS for PostgreSQL major version. RDS applies minor versions in the
# maintenance window, and the aws provider does not report them as drift against a major-only pin.
POSTGRES_MAJOR_VERSION = "17"

DEFINITION = AddonDefinition(
    key="mlflow",
    settings_type=MlflowConfig,
    description="MLflow tracking server with an RDS PostgreSQL backend store and S3 artifacts (off by default).",
    # community-charts' MLflow chart: maintained (monthly releases), and the one chart that takes an
    # external PostgreSQL with its credentials from an existing Secret, S3 artifacts through the
    # server, and MLflow's basic auth. It runs this project's image (PROJECT_IMAGE), not the chart's default.
    pin=ChartRef(
        repository="https://community-charts.github.io/helm-charts",
        chart="mlflow",
        version="1.11.5",
        app_version="3.15.1",
    ),
    namespace="mlflow",
    project_images=(PROJECT_IMAGE,),
)


def default_permission(config: PlatformConfig) -> str:
    """The MLflow permission on others' experiments and models: the profile's, else none between
    several tenants (MLflow's runs, metrics and artifacts are one store behind the server, so its
    permissions are the only wall between teams), read with one."""
    chosen = DEFINITION.settings(config).default_permission
    if chosen is not None:
        return chosen
    return "NO_PERMISSIONS" if len(config.workloads.tenants) > 1 else "READ"
