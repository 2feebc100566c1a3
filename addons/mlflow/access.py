"""How pods reach the MLflow tracking server: its address, the namespaces allowed to call it, and
the NetworkPolicies on both sides. Pure data, shared by the MLflow add-on, the add-ons whose pods
log to it (JupyterHub, Argo Workflows), the tenants and the validation check."""

from __future__ import annotations

from typing import Any

from addons.mlflow import DEFINITION, MlflowConfig

NAMESPACE = DEFINITION.namespace
SERVICE = "mlflow"  # the chart's full name for a release named mlflow
SERVICE_PORT = 80
SERVER_PORT = 5000  # the container port NetworkPolicies see
TRACKING_URI = f"http://{SERVICE}.{NAMESPACE}.svc.cluster.local:{SERVICE_PORT}"
SERVER_SELECTOR = {"app.kubernetes.io/name": "mlflow"}
# MLflow (3.5+) answers 403 to a Host header it does not allow, and setting the list replaces its
# defaults (localhost and private IPs): the Service's names, with or without a port, and localhost
# for `kubectl port-forward`. Exact names or fnmatch patterns, as MLflow matches them.
SERVER_ALLOWED_HOSTS = tuple(
    pattern
    for host in (
        f"{SERVICE}.{NAMESPACE}.svc.cluster.local",
        f"{SERVICE}.{NAMESPACE}.svc",
        f"{SERVICE}.{NAMESPACE}",
        SERVICE,
        "localhost",
        "127.0.0.1",
    )
    for pattern in (host, f"{host}:*")
)
# Namespaces carrying this label may call the server (the server admits no one else).
CLIENT_LABEL = {"gpu-platform/mlflow-client": "true"}
TRACKING_CONFIG_MAP = "mlflow-tracking"
# The chart's admin Secret when the password comes from the Terraform variable.
CHART_ADMIN_SECRET = f"{SERVICE}-auth-admin-secret"


def admin_secret(settings: MlflowConfig) -> str:
    """The Secret holding the MLflow admin's username and password (keys username, password)."""
    return CHART_ADMIN_SECRET if settings.admin_password_from == "variable" else settings.admin_secret_name


def tracking_env() -> list[dict[str, str]]:
    """The environment MLflow's client reads (credentials come from the user: MLFLOW_TRACKING_USERNAME
    and MLFLOW_TRACKING_PASSWORD, or a token)."""
    return [{"name": "MLFLOW_TRACKING_URI", "value": TRACKING_URI}]


def tracking_config_map(namespace: str) -> dict[str, Any]:
    """The tracking URI as a ConfigMap, for pods the platform does not template (Ray clusters, MPI
    jobs): `envFrom: [{configMapRef: {name: mlflow-tracking}}]`."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": TRACKING_CONFIG_MAP, "namespace": namespace},
        "data": {env["name"]: env["value"] for env in tracking_env()},
    }


def egress_to_mlflow() -> dict[str, Any]:
    """A client namespace's allow: to the tracking server's pods, on the server's port only."""
    return {
        "policyTypes": ["Egress"],
        "egress": [
            {
                "to": [
                    {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}},
                        "podSelector": {"matchLabels": dict(SERVER_SELECTOR)},
                    }
                ],
                "ports": [{"protocol": "TCP", "port": SERVER_PORT}],
            }
        ],
    }


def ingress_from_clients() -> dict[str, Any]:
    """The server namespace's allow: from labelled client namespaces, to the server's port only."""
    return {
        "policyTypes": ["Ingress"],
        "podSelector": {"matchLabels": dict(SERVER_SELECTOR)},
        "ingress": [
            {
                "from": [{"namespaceSelector": {"matchLabels": dict(CLIENT_LABEL)}}],
                "ports": [{"protocol": "TCP", "port": SERVER_PORT}],
            }
        ],
    }


def client_access(enabled: bool) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """The namespace labels and NetworkPolicy allows of a namespace whose pods log to MLflow
    (nothing when MLflow is off)."""
    return (dict(CLIENT_LABEL), {"allow-mlflow": egress_to_mlflow()}) if enabled else ({}, {})
