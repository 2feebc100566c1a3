"""kube-prometheus-stack: Prometheus, Alertmanager, Grafana and the Prometheus operator."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from addons.definition import PROMETHEUS_RULES, AddonDefinition, ReleaseConfig
from profiles.base import K8sName, Strict
from profiles.naming import METRICS_NAMESPACE
from profiles.versions import ChartRef


class AlertReceiver(Strict):
    """Where critical alerts go. The credential is in a Secret you create in the monitoring namespace,
    never in the profile or the Terraform state."""

    type: Literal["slack", "pagerduty"]
    """slack: a Slack incoming-webhook URL (Secret key `url`); pagerduty: a PagerDuty Events API v2 routing
    key (Secret key `routing_key`)."""
    secret_name: K8sName = "alert-receiver"
    """The Secret in the monitoring namespace that holds the key."""
    warnings: bool = False
    """Send warnings too (an idle allocated GPU, a non-fatal XID, a crash-looping pod), not only critical alerts."""


class MonitoringConfig(ReleaseConfig):
    grafana_admin_password_from: Literal["variable", "existing_secret"] = "variable"
    """variable: the sensitive Terraform variable grafana_admin_password (TF_VAR_grafana_admin_password) at apply time;
    existing_secret: a Secret you create in the monitoring namespace.
    """
    grafana_admin_secret_name: K8sName = Field("grafana-admin")
    """With existing_secret: Secret holding keys admin-user and admin-password."""
    prometheus_retention_days: int = Field(15, ge=1, le=365)
    """How many days Prometheus keeps metrics."""
    prometheus_storage_gib: int = Field(50, ge=10)
    """Size of Prometheus' persistent volume, in GiB."""
    idle_gpu_alert_minutes: int = Field(30, ge=5, le=1440)
    """Minutes a GPU allocated to a pod may do no work before GpuAllocatedIdle warns (labelled with the pod)."""
    alert_receiver: AlertReceiver | None = None
    """Where Alertmanager sends alerts of severity critical (a GPU's fatal XID, among others). Unset: nowhere;
    Alertmanager runs and nobody is told."""


# The EFA counter sidecar's image (addons/monitoring/efa-counters.sh): kube-prometheus-stack runs
# node-exporter distroless (no shell), from prometheus-node-exporter 4.56.1, app version 1.12.1;
# the sidecar runs the same release's busybox variant, which has the sh, awk and sort it uses.
# It moves with the chart pin below.
EFA_SIDECAR_IMAGE = "quay.io/prometheus/node-exporter:v1.12.1"

# The kube-prometheus-stack release, and the Grafana Deployment its grafana subchart names after it
# (<release>-grafana), with Grafana's container and port.
RELEASE_NAME = "monitoring"
GRAFANA_DEPLOYMENT = f"{RELEASE_NAME}-grafana"
GRAFANA_CONTAINER = "grafana"
GRAFANA_PORT = 3000
# The Alertmanager pods (the Prometheus operator labels a StatefulSet's pods with the app's name).
ALERTMANAGER_POD = {"app.kubernetes.io/name": "alertmanager"}

DEFINITION = AddonDefinition(
    key="monitoring",
    settings_type=MonitoringConfig,
    description="kube-prometheus-stack with DCGM exporter scraping.",
    pin=ChartRef(
        repository="https://prometheus-community.github.io/helm-charts",
        chart="kube-prometheus-stack",
        version="88.5.3",
        app_version="v0.93.1",
    ),
    namespace=METRICS_NAMESPACE,
    provides=frozenset({PROMETHEUS_RULES}),
)
