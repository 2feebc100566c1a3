"""MLflow tracking server (community-charts' chart): PostgreSQL backend store in RDS, artifacts in
S3 proxied by the server, MLflow's basic auth on every request, a ClusterIP Service.

How the server logs in to its database: as an application role, with IAM database authentication.
Before the server starts, a setup Job (images/mlflow/db_setup.py, its own service account and Pod
Identity role) logs in once as the RDS master user, whose password RDS keeps in Secrets Manager,
and makes that role, the role that owns MLflow's tables, and the databases. The server's role can
mint IAM tokens for its application role only and cannot read the master secret. The pod's
`db-login` sidecar (images/mlflow/db_login.py) writes a fresh token to a libpq password file in a
memory-backed volume, which libpq reads on every new connection. No password passes through Helm
values, a Kubernetes Secret or Terraform state. The Kubernetes Secret the chart requires for its
database settings carries the user name and an empty password, which makes libpq use the file.

Every container runs this project's MLflow image (images/mlflow), which the build layer builds while
MLflow is enabled: the server, the chart's ini-file initializer, the sidecar and the setup Job, from
the build layer's ECR repository by the content-derived tag its build pushes. Run its build (`make
outputs` lists build_commands.mlflow) before the addons layer: until ECR has the tag, the setup Job
cannot pull its image and the apply fails at the Job's timeout.

No ServiceMonitor: MLflow's basic-auth app protects /metrics like every other route, so the server
runs without `--expose-prometheus`.
"""

from __future__ import annotations

import base64
from typing import Any

from cdktf import ITerraformDependable, TerraformVariable, TerraformVariableValidationConfig
from pydantic import Field

from addons.mlflow import DEFINITION, PROJECT_IMAGE, MlflowConfig, default_permission
from addons.mlflow.access import (
    NAMESPACE,
    SERVER_ALLOWED_HOSTS,
    SERVER_PORT,
    SERVER_SELECTOR,
    SERVICE_PORT,
    ingress_from_clients,
)
from addons.mlflow.backend import MlflowBackend
from addons.mlflow.identity import MlflowIdentity, MlflowIdentityProps, MlflowSetupIdentity
from addons.mlflow.login import (
    AUTH_DATABASE,
    DB_LOGIN_DIR,
    DB_LOGIN_SCRIPT,
    PASSFILE,
    SCRIPT_SOURCE,
    SETUP_JOB,
    SETUP_SCRIPT_SOURCE,
    SETUP_SERVICE_ACCOUNT,
    SETUP_TIMEOUT_MINUTES,
    TLS_ENV,
    db_login_sidecar,
    db_setup_job,
    login_volumes,
)
from addons.mlflow.store import POSTGRES_PORT, mlflow_store
from components.expressions import matches
from components.helm.addon import AddonContext, Companions, HelmAddonSpec, RuntimePath, StorageContext
from components.helm.release import SensitiveValue, Values
from components.k8s.job import CompletedJob, CompletedJobProps
from components.k8s.namespaces import egress_https_outside_the_node, egress_to_pod_identity_agent
from components.labels import SYSTEM_NODES

SERVICE_ACCOUNT = "mlflow"
ADMIN_USERNAME = "admin"
# The chart's database Secret: the user name, and an empty password (libpq then reads the file).
DB_LOGIN_SECRET = "mlflow-db-login"
# The SQLAlchemy driver of both database URIs (the chart's backendStore.postgres.driver and
# auth.postgres.driver make them postgresql+psycopg2://): SQLAlchemy 2.1, which the image's lock
# holds, loads psycopg (3) for a bare postgresql://, which the image does not have (a server of the
# image's lock on PostgreSQL 15 failed to start with "No module named 'psycopg'"; with the driver
# named it ran, and verify's tracking check passed against it). psycopg2 is db_setup.py's too.
POSTGRES_DRIVER = "psycopg2"
SERVER_RESOURCES = {"requests": {"cpu": "250m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}
# The MLflow admin password passes sed (the chart writes it into basic_auth.ini) and configparser
# (MLflow reads that file): '/', '&', '\\' and '%' would corrupt it, whitespace would be cut.
ADMIN_PASSWORD_RULE = "^[^/&%\\\\\\s]{12,}$"


class MlflowValues(Values):
    image: dict[str, str]
    init_images: dict[str, dict[str, str]]
    pod_annotations: dict[str, str] = Field(default_factory=dict)
    service_account: dict[str, Any]
    service: dict[str, Any]
    backend_store: dict[str, Any]
    artifact_root: dict[str, Any]
    auth: dict[str, Any]
    extra_env_vars: dict[str, str]
    init_containers: list[dict[str, Any]]
    extra_volumes: list[dict[str, Any]]
    extra_volume_mounts: list[dict[str, Any]]
    resources: dict[str, Any]
    server_allowed_hosts: list[str] = Field(default_factory=lambda: list(SERVER_ALLOWED_HOSTS))
    service_monitor: dict[str, bool] = Field(default_factory=lambda: {"enabled": False})
    telemetry: dict[str, bool] = Field(default_factory=lambda: {"enabled": False})
    node_selector: dict[str, str] = Field(default_factory=lambda: dict(SYSTEM_NODES))


def mlflow_values(
    settings: MlflowConfig, backend: MlflowBackend, *, region: str, permission: str, image: tuple[str, str]
) -> MlflowValues:
    repository, tag = image
    database = {"enabled": True, "host": backend.address, "port": POSTGRES_PORT, "driver": POSTGRES_DRIVER}
    login_secret = {"name": DB_LOGIN_SECRET, "usernameKey": "username", "passwordKey": "password"}
    auth: dict[str, Any] = {
        "enabled": True,
        "appName": "basic-auth",
        "defaultPermission": permission,
        "postgres": {**database, "database": AUTH_DATABASE, "existingSecret": login_secret},
    }
    if settings.admin_password_from == "variable":
        auth["adminUsername"] = ADMIN_USERNAME  # the password is set at apply time (sensitive)
    else:
        auth["existingAdminSecret"] = {
            "name": settings.admin_secret_name,
            "usernameKey": "username",
            "passwordKey": "password",
        }
    # The chart rolls its pod only when configmap.yaml changes (templates/deployment.yaml at
    # mlflow-1.11.5), and MLflow reads the auth file (written at pod start) only when it starts: an
    # annotation of the permission makes a change of it roll the server.
    annotations = {"gpu-platform/mlflow-default-permission": permission}
    return MlflowValues(
        pod_annotations=annotations,
        image={"repository": repository, "tag": tag},
        # The chart's own init containers run the same image, not its defaults (a Docker Hub
        # busybox; the migration one, off here, a personal MLflow image): the ini-file
        # initializer is a sh and sed script, which the Python image's Debian base carries.
        init_images={
            "iniFileInitializer": {"repository": repository, "tag": tag},
            "mlflowDbMigration": {"repository": repository, "tag": tag},
        },
        # The server never calls the Kubernetes API; Pod Identity mounts its own token.
        service_account={"create": True, "name": SERVICE_ACCOUNT, "automount": False},
        service={"type": "ClusterIP", "port": SERVICE_PORT, "containerPort": SERVER_PORT},
        backend_store={"postgres": {**database, "database": backend.database}, "existingDatabaseSecret": login_secret},
        # Clients upload and download through the server: only its role reaches the bucket.
        artifact_root={"proxiedArtifactStorage": True, "s3": {"enabled": True, "bucket": backend.bucket_name}},
        auth=auth,
        extra_env_vars={"PGPASSFILE": PASSFILE, **TLS_ENV, "AWS_REGION": region},
        init_containers=[db_login_sidecar(backend, region, f"{repository}:{tag}")],
        extra_volumes=login_volumes(),
        extra_volume_mounts=[{"name": "db-login", "mountPath": DB_LOGIN_DIR, "readOnly": True}],
        resources=SERVER_RESOURCES,
    )


class MlflowAddon(HelmAddonSpec[MlflowConfig]):
    definition = DEFINITION
    release_name = "mlflow"

    def storage(self, ctx: StorageContext) -> MlflowBackend:
        return mlflow_store(ctx, self.settings(ctx.config).database)

    def user_secrets(self, settings: MlflowConfig) -> tuple[str, ...]:
        return (settings.admin_secret_name,) if settings.admin_password_from == "existing_secret" else ()

    def network_allows(self, ctx: AddonContext, settings: MlflowConfig) -> dict[str, dict[str, Any]]:
        return {
            "allow-tracking-clients": ingress_from_clients(),
            "allow-pod-identity": egress_to_pod_identity_agent(),
            # Secrets Manager, S3, STS, and RDS's CA trust store (the bundle libpq verifies against).
            "allow-aws-apis": egress_https_outside_the_node(),
            # The database's interfaces sit in the VPC's private subnets.
            "allow-postgres": {
                "policyTypes": ["Egress"],
                "egress": [
                    {"to": [{"ipBlock": {"cidr": ctx.vpc_cidr}}], "ports": [{"protocol": "TCP", "port": POSTGRES_PORT}]}
                ],
            },
        }

    def runtime_paths(self, settings: MlflowConfig) -> tuple[RuntimePath, ...]:
        server = dict(SERVER_SELECTOR)
        return (
            RuntimePath(
                what="tenants' runs log to the tracking server",
                direction="Ingress",
                peer="tenants",
                port=SERVER_PORT,
                pod_labels=server,
            ),
            RuntimePath(
                what="the server and its login sidecar reach PostgreSQL in the private subnets",
                direction="Egress",
                peer="vpc",
                port=POSTGRES_PORT,
            ),
            RuntimePath(
                what="artifacts in S3, the database secret in Secrets Manager, STS, RDS's CA trust store",
                direction="Egress",
                peer="internet",
                port=443,
            ),
        )

    def namespace_objects(self, ctx: AddonContext, settings: MlflowConfig) -> list[dict[str, Any]]:
        backend = ctx.storage_record(DEFINITION.key, MlflowBackend)
        return [
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "Opaque",
                "metadata": {"name": DB_LOGIN_SECRET, "namespace": NAMESPACE},
                "data": {"username": base64.b64encode(backend.username.encode()).decode(), "password": ""},
            },
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": DB_LOGIN_SCRIPT, "namespace": NAMESPACE},
                "data": {
                    "db_login.py": SCRIPT_SOURCE.read_text(),
                    "db_setup.py": SETUP_SCRIPT_SOURCE.read_text(),
                },
            },
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": SETUP_SERVICE_ACCOUNT, "namespace": NAMESPACE},
                "automountServiceAccountToken": False,
            },
        ]

    def values(self, ctx: AddonContext, settings: MlflowConfig) -> MlflowValues:
        return mlflow_values(
            settings,
            ctx.storage_record(DEFINITION.key, MlflowBackend),
            region=ctx.config.region,
            permission=default_permission(ctx.config),
            image=ctx.project_image(PROJECT_IMAGE),
        )

    def state_secrets(self, settings: MlflowConfig) -> tuple[str, ...]:
        # Helm's set_sensitive keeps the value in the release's state.
        return ("the MLflow admin password",) if settings.admin_password_from == "variable" else ()

    def sensitive_values(self, ctx: AddonContext, settings: MlflowConfig) -> tuple[SensitiveValue, ...]:
        if settings.admin_password_from != "variable":
            return ()
        password = TerraformVariable(
            ctx.scope,
            "mlflow_admin_password",
            type="string",
            sensitive=True,
            nullable=False,
            description="MLflow admin password (set TF_VAR_mlflow_admin_password); stored only in a Secret.",
            validation=[
                TerraformVariableValidationConfig(
                    condition=matches(ADMIN_PASSWORD_RULE, "var.mlflow_admin_password"),
                    error_message="mlflow_admin_password must be at least 12 characters, without whitespace, "
                    "'/', '&', '%' or backslashes.",
                )
            ],
        )
        return (SensitiveValue(path="auth.adminPassword", value=password.string_value),)

    def companions(self, ctx: AddonContext, settings: MlflowConfig) -> Companions:
        # The setup job's role first; the server's comes after the job (before_release).
        setup = MlflowSetupIdentity(
            ctx.scope, "mlflow-db-setup-identity", props=self._identity(ctx, SETUP_SERVICE_ACCOUNT)
        )
        return Companions(ready=setup.ready)

    def before_release(
        self, ctx: AddonContext, settings: MlflowConfig, *, after: tuple[ITerraformDependable, ...]
    ) -> tuple[ITerraformDependable, ...]:
        # The job runs once its namespace objects (service account, scripts, NetworkPolicies) and
        # its role exist; Terraform waits for it to complete. Only then does the server's role get
        # its permissions and the release its new pods: until the database has the server's role,
        # a running server keeps the access it had.
        backend = ctx.storage_record(DEFINITION.key, MlflowBackend)
        repository, tag = ctx.project_image(PROJECT_IMAGE)
        job = CompletedJob(
            ctx.scope,
            "mlflow-db-setup",
            props=CompletedJobProps(
                job=db_setup_job(backend, ctx.config.region, f"{repository}:{tag}"),
                name=SETUP_JOB,
                # A new database (restored from a snapshot, say) gets its roles made again; the
                # image's repository comes from the build layer's state (its tag is in the spec).
                resolved_later=(backend.address, backend.secret_arn, repository),
                timeout_minutes=SETUP_TIMEOUT_MINUTES,
                depends_on=after,
            ),
        )
        server = MlflowIdentity(
            ctx.scope, "mlflow-identity", props=self._identity(ctx, SERVICE_ACCOUNT, after=(job.resource,))
        )
        return (job.resource, *server.ready)

    def _identity(
        self, ctx: AddonContext, service_account: str, after: tuple[ITerraformDependable, ...] = ()
    ) -> MlflowIdentityProps:
        return MlflowIdentityProps(
            platform_name=ctx.config.name,
            region=ctx.config.region,
            cluster_name=ctx.cluster.cluster_name,
            namespace=NAMESPACE,
            service_account=service_account,
            backend=ctx.storage_record(DEFINITION.key, MlflowBackend),
            after=after,
        )


ADDON = MlflowAddon()
