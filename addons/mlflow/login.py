"""The pods the platform adds to MLflow's chart for its database login: the `db-login` sidecar of
the server (images/mlflow/db_login.py) and the setup Job (images/mlflow/db_setup.py), both running
the build layer's MLflow image (its reference is the caller's: the addons layer reads it from the
build layer's contract). Plain data; addons/mlflow/install.py places them."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from addons.mlflow import IMAGE_USER
from addons.mlflow.access import NAMESPACE
from addons.mlflow.backend import MlflowBackend
from addons.mlflow.store import POSTGRES_PORT
from components.k8s.security import non_root_container, non_root_pod
from components.labels import SYSTEM_NODES

SETUP_SERVICE_ACCOUNT = "mlflow-db-setup"
SETUP_JOB = "mlflow-db-setup"
SETUP_TIMEOUT_MINUTES = 10
AUTH_DATABASE = "mlflow_auth"
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
SIDECAR_RESOURCES = {"requests": {"cpu": "10m", "memory": "96Mi"}, "limits": {"memory": "256Mi"}}


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


def db_login_sidecar(backend: MlflowBackend, region: str, image: str) -> dict[str, Any]:
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
        "image": image,
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


def db_setup_job(backend: MlflowBackend, region: str, image: str) -> dict[str, Any]:
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
        "image": image,
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
