"""kube-prometheus-stack: Prometheus, Alertmanager, Grafana and the Prometheus operator."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from addons.definition import (
    DEFAULT_IDLE_GPU_MINUTES,
    PROMETHEUS_RULES,
    AddonDefinition,
    AlertTuning,
    PlatformConfig,
    ReleaseConfig,
)
from profiles.base import FieldProblem, K8sName, Strict
from profiles.limits import EBS_GP3_MAX_GIB
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


# An address SNS's email protocol delivers to: a plain local part (no quotes or comments, which
# the profile's text rules refuse anyway) and a domain of at least two labels; RFC 5321's 254.
EMAIL_ADDRESS = re.compile(r"[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}")
MAX_EMAIL_LENGTH = 254


class MonitoringConfig(ReleaseConfig):
    grafana_admin_password_from: Literal["variable", "existing_secret"] = "variable"
    """variable: the sensitive Terraform variable grafana_admin_password (TF_VAR_grafana_admin_password) at apply time;
    existing_secret: a Secret you create in the monitoring namespace.
    """
    grafana_admin_secret_name: K8sName = Field("grafana-admin")
    """With existing_secret: Secret holding keys admin-user and admin-password."""
    prometheus_retention_days: int = Field(15, ge=1, le=365)
    """How many days Prometheus keeps metrics."""
    prometheus_storage_gib: int = Field(50, ge=10, le=EBS_GP3_MAX_GIB)
    """Size of Prometheus' persistent volume, in GiB."""
    idle_gpu_alert_minutes: int = Field(DEFAULT_IDLE_GPU_MINUTES, ge=5, le=1440)
    """Minutes a GPU allocated to a pod may do no work before GpuAllocatedIdle warns (labelled with the pod)."""
    alert_emails: list[str] = Field(default_factory=list)
    """Addresses subscribed by email to the platform's alert topic (SNS, <name>-alerts), where every critical alert
    and the dead-man's switch go. AWS mails each a confirmation link when the addons layer is applied: nothing
    arrives until it is clicked. Unset: the topic has no subscriber (synthesis warns); subscribe one yourself."""
    alert_receiver: AlertReceiver | None = None
    """Slack or PagerDuty, in addition to the alert topic: critical alerts (a GPU's fatal XID, among others) go to
    both. Unset: the alert topic only."""

    def alert_tuning(self) -> AlertTuning:
        # The setting stays here (the profile's schema), and the GPU Operator's rule reads it
        # through addons.definition.alert_tuning without naming this add-on.
        return AlertTuning(idle_gpu_minutes=self.idle_gpu_alert_minutes)

    @model_validator(mode="after")
    def _emails(self) -> MonitoringConfig:
        seen: set[str] = set()
        for index, address in enumerate(self.alert_emails):
            if len(address) > MAX_EMAIL_LENGTH or not EMAIL_ADDRESS.fullmatch(address):
                raise FieldProblem(
                    ("alert_emails", index),
                    address,
                    "is not an email address SNS can subscribe",
                    allowed=f"name@example.com: letters, digits and . _ % + - before the @, a domain with a dot "
                    f"after it, at most {MAX_EMAIL_LENGTH} characters",
                )
            if address.lower() in seen:
                raise FieldProblem(("alert_emails", index), address, "is listed twice", allowed="each address once")
            seen.add(address.lower())
        return self


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
# Alertmanager's service account: the chart's own name for it (<fullname>-alertmanager, fullname
# being the release and chart names cut to 26 characters: templates/_helpers.tpl at 88.5.3), set
# explicitly so that the Pod Identity association names the account the pods run as.
ALERTMANAGER_SERVICE_ACCOUNT = f"{RELEASE_NAME}-kube-prometheus-alertmanager"


def alert_topic_name(platform: str) -> str:
    """The SNS topic every critical alert and the dead-man's switch alarm reach."""
    return f"{platform}-alerts"


def heartbeat_topic_name(platform: str) -> str:
    """The SNS topic Alertmanager sends the Watchdog heartbeat to (nobody subscribes to it)."""
    return f"{platform}-alertmanager-heartbeat"


def alert_warnings(config: PlatformConfig) -> list[str]:
    """A profile whose alert topic nobody is subscribed to: the pages and the dead-man's switch
    are sent, and reach no one."""
    if not DEFINITION.enabled(config) or DEFINITION.settings(config).alert_emails:
        return []
    topic = alert_topic_name(config.name)
    told = (
        "critical alerts reach only the Slack or PagerDuty receiver and the dead-man's switch (Alertmanager silent) "
        "reaches no one"
        if DEFINITION.settings(config).alert_receiver
        else "critical alerts and the dead-man's switch (Alertmanager silent) reach no one"
    )
    return [
        f"warning: nobody is subscribed to the alert topic {topic}: {told}. Set addons.monitoring.alert_emails, or "
        f"subscribe once the addons layer is applied: aws sns subscribe --region {config.region} --protocol email "
        f"--notification-endpoint you@example.com --topic-arn <monitoring_alert_topic_arn, from make outputs>"
    ]
