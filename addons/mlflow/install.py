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

No ServiceMonitor: MLflow's basic-auth app protects /metrics like every other route, so the server
runs without `--expose-prometheus`.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

from cdktf import ITerraformDependable, TerraformVariable, TerraformVariableValidationConfig
from pydantic import Field

from addons.mlflow import DEFINITION, IMAGE, IMAGE_USER, MlflowConfig, default_permission
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
from addons.mlflow.store import POSTGRES_PORT, mlflow_store
from components.expressions import matches
from components.helm.addon import AddonContext, Companions, HelmAddonSpec, RuntimePath, StorageContext
from components.helm.release import SensitiveValue, Values
from components.k8s.job import CompletedJob, CompletedJobProps
from components.k8s.namespaces import egress_https_outside_the_node, egress_to_pod_identity_agent
from components.k8s.security import non_root_container, non_root_pod
from components.labels import SYSTEM_NODES

SERVICE_ACCOUNT = "mlflow"
SETUP_SERVICE_ACCOUNT = "mlflow-db-setup"
SETUP_JOB = "mlflow-db-setup"
SETUP_TIMEOUT_MINUTES = 10
ADMIN_USERNAME = "admin"
AUTH_DATABASE = "mlflow_auth"
# The chart's database Secret: the user name, and an empty password (libpq then reads the file).
DB_LOGIN_SECRET = "mlflow-db-login"
DB_LOGIN_SCRIPT = "mlflow-db-login-script"
DB_LOGIN_DIR = "/run/mlflow-db"
SCRIPTS_DIR = "/opt/db-login"  # the login and setup scripts, from the DB_LOGIN_SCRIPT ConfigMap
PASSFILE = f"{DB_LOGIN_DIR}/pgpass"
READY_FILE = f"{DB_LOGIN_DIR}/ready"
# libpq checks the server's certificate against Amazon RDS's CAs and the host name (verify-full).
# The bundle is RDS's published one for every region (its trust store), fetched by the sidecar.
RDS_CA_BUNDLE = f"{DB_LOGIN_DIR}/rds-ca-bundle.pem"
RDS_CA_BUNDLE_URL = "https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem"
TLS_ENV = {"PGSSLMODE": "verify-full", "PGSSLROOTCERT": RDS_CA_BUNDLE}
SCRIPT_SOURCE = Path(__file__).resolve().parents[2] / "images" / "mlflow" / "db_login.py"
SETUP_SCRIPT_SOURCE = SCRIPT_SOURCE.with_name("db_setup.py")
# IAM authentication tokens are good for 15 minutes: a fresh one every 5 leaves room for retries.
REFRESH_SECONDS = 300
# The MLflow image runs as 1001 (the chart's pod security context): the sidecar and the setup Job
# match it, so the password file is the server's own and owner-only.
MLFLOW_USER = IMAGE_USER
SERVER_RESOURCES = {"requests": {"cpu": "250m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}
SIDECAR_RESOURCES = {"requests": {"cpu": "10m", "memory": "96Mi"}, "limits": {"memory": "256Mi"}}
# The MLflow admin password passes sed (the chart writes it into basic_auth.ini) and configparser
# (MLflow reads that file): '/', '&', '\\' and '%' would corrupt it, whitespace would be cut.
ADMIN_PASSWORD_RULE = "^[^/&%\\\\\\s]{12,}$"


def login_volumes() -> list[dict[str, Any]]:
    """The volumes of the pods that log in: a memory-backed folder for the password file and RDS's
    CA bundle, and the scripts. Fresh each time (no YAML anchors)."""
    return [
        {"name": "db-login", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
        {"name": "db-login-script", "configMap": {"name": DB_LOGIN_SCRIPT}},
    ]


def login_mounts() -> list[dict[str, Any]]:
    """Where the sidecar and the setup Job mount those volumes."""
    return [
        {"name": "db-login", "mountPath": DB_LOGIN_DIR},
        {"name": "db-login-script", "mountPath": SCRIPTS_DIR, "readOnly": True},
    ]


def db_login_sidecar(backend: MlflowBackend, region: str) -> dict[str, Any]:
    """A native sidecar (restartPolicy Always): it starts before the server, whose start waits for
    its startup probe (the CA bundle and the first token in the password file), and keeps running."""
    environment = {
        "PGPASSFILE": PASSFILE,
        "READY_FILE": READY_FILE,
        "REFRESH_SECONDS": str(REFRESH_SECONDS),
        "PGHOST": backend.address,
        "PGPORT": str(POSTGRES_PORT),
        "PGUSER": backend.username,
        **TLS_ENV,
        "RDS_CA_BUNDLE_URL": RDS_CA_BUNDLE_URL,
        "AWS_REGION": region,
    }
    return {
        "name": "db-login",
        "image": IMAGE,
        "restartPolicy": "Always",
        "command": ["python", f"{SCRIPTS_DIR}/db_login.py"],
        "env": [{"name": name, "value": value} for name, value in environment.items()],
        "startupProbe": {
            "exec": {"command": ["python", "-c", f"import os; assert os.path.exists({READY_FILE!r})"]},
            "periodSeconds": 5,
            "failureThreshold": 60,
        },
        "securityContext": non_root_container(MLFLOW_USER, group=MLFLOW_USER),
        "resources": SIDECAR_RESOURCES,
        "volumeMounts": login_mounts(),
    }


def db_setup_job(backend: MlflowBackend, region: str) -> dict[str, Any]:
    """The Job that makes the databases and roles as the master user (its name is added with a
    digest of its spec: components/k8s/job.py). On the system nodes, as the image's user, with the
    CA bundle in a memory-backed folder of its own."""
    environment = {
        "DB_SECRET_ARN": backend.secret_arn,
        "APP_ROLE": backend.username,
        "OWNER_ROLE": backend.owner_role,
        "AUTH_DATABASE": AUTH_DATABASE,
        "PGHOST": backend.address,
        "PGPORT": str(POSTGRES_PORT),
        "PGDATABASE": backend.database,
        **TLS_ENV,
        "RDS_CA_BUNDLE_URL": RDS_CA_BUNDLE_URL,
        "AWS_REGION": region,
        # The ConfigMap's scripts change the Job's spec (and so its name) when they change.
        "SCRIPTS_DIGEST": scripts_digest(),
    }
    container = {
        "name": "db-setup",
        "image": IMAGE,
        "command": ["python", f"{SCRIPTS_DIR}/db_setup.py"],
        "env": [{"name": name, "value": value} for name, value in environment.items()],
        "securityContext": non_root_container(MLFLOW_USER, group=MLFLOW_USER),
        "resources": SIDECAR_RESOURCES,
        "volumeMounts": login_mounts(),
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"namespace": NAMESPACE, "labels": {"app.kubernetes.io/name": SETUP_JOB}},
        "spec": {
            # A first pod may start before its new Pod Identity association takes effect: retries absorb it.
            "backoffLimit": 6,
            # Fails before the apply's wait does, so the Job's Failed condition is there to read.
            "activeDeadlineSeconds": (SETUP_TIMEOUT_MINUTES - 2) * 60,
            "template": {
                # Terraform deletes a replaced Job without its pods (no propagation policy): this
                # label finds them (docs/mlflow.md).
                "metadata": {"labels": {"app.kubernetes.io/name": SETUP_JOB}},
                "spec": {
                    "serviceAccountName": SETUP_SERVICE_ACCOUNT,
                    "automountServiceAccountToken": False,  # Pod Identity mounts its own token
                    "restartPolicy": "Never",
                    "nodeSelector": dict(SYSTEM_NODES),
                    "securityContext": non_root_pod(MLFLOW_USER, group=MLFLOW_USER),
                    "containers": [container],
                    "volumes": login_volumes(),
                },
            },
        },
    }


def scripts_digest() -> str:
    text = SCRIPT_SOURCE.read_text() + SETUP_SCRIPT_SOURCE.read_text()
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class MlflowValues(Values):
    image: dict[str, str]
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


def mlflow_values(settings: MlflowConfig, backend: MlflowBackend, *, region: str, permission: str) -> MlflowValues:
    repository, tag = IMAGE.rsplit(":", 1)
    database = {"enabled": True, "host": backend.address, "port": POSTGRES_PORT}
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
        # The server never calls the Kubernetes API; Pod Identity mounts its own token.
        service_account={"create": True, "name": SERVICE_ACCOUNT, "automount": False},
        service={"type": "ClusterIP", "port": SERVICE_PORT, "containerPort": SERVER_PORT},
        backend_store={"postgres": {**database, "database": backend.database}, "existingDatabaseSecret": login_secret},
        # Clients upload and download through the server: only its role reaches the bucket.
        artifact_root={"proxiedArtifactStorage": True, "s3": {"enabled": True, "bucket": backend.bucket_name}},
        auth=auth,
        extra_env_vars={"PGPASSFILE": PASSFILE, **TLS_ENV, "AWS_REGION": region},
        init_containers=[db_login_sidecar(backend, region)],
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
        job = CompletedJob(
            ctx.scope,
            "mlflow-db-setup",
            props=CompletedJobProps(
                job=db_setup_job(backend, ctx.config.region),
                name=SETUP_JOB,
                # A new database (restored from a snapshot, say) gets its roles made again.
                resolved_later=(backend.address, backend.secret_arn),
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
