"""Where Alertmanager sends what: critical alerts to the platform's SNS topic (and to Slack or
PagerDuty when the profile names one), the Watchdog heartbeat to a topic of its own that a
CloudWatch alarm watches (the dead-man's switch, addons/monitoring/notifications.py), the rest
nowhere.

At the pin (kube-prometheus-stack 88.5.3 runs Alertmanager v0.34.0, values.yaml
alertmanager.alertmanagerSpec.image.tag), an `sns_configs` entry takes `topic_arn` and `sigv4`
(`region`, and `access_key`/`secret_key`, `profile` or `role_arn`, all optional), `subject`,
`message` and `attributes` (config/notifiers.go SNSConfig). With none of the credentials set, the
notifier loads the AWS SDK for Go v2's default chain (notify/sns/sns.go createSNSClient,
aws-sdk-go-v2/config v1.32.33), whose container provider reads the variables EKS Pod Identity
injects (AWS_CONTAINER_CREDENTIALS_FULL_URI, AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE) and asks the
node's Pod Identity agent at 169.254.170.23:80 (EKS user guide, "Use pod identity with the AWS SDK":
Pod Identity is part of the SDKs' container credential provider since their late-2023 releases; the
Go v2 modules in v0.34.0's go.mod are from 2026). The region is set here: the pod is told no other
way which region it is in.
"""

from __future__ import annotations

from typing import Any

from addons.monitoring import AlertReceiver

# Alertmanager mounts each Secret of alertmanagerSpec.secrets here (the Prometheus operator's
# convention), so its configuration names the credential's file, never the credential.
ALERTMANAGER_SECRETS = "/etc/alertmanager/secrets"
CRITICAL_RECEIVER = "platform-critical"
HEARTBEAT_RECEIVER = "heartbeat"
# The chart's always-firing alert (its general.rules group): its silence means the pipeline broke.
WATCHDOG = "Watchdog"
# How often the heartbeat is sent while Watchdog fires: Alertmanager re-sends a firing group once
# repeat_interval has passed, checked every group_interval (dispatch/dispatch.go).
HEARTBEAT_REPEAT_MINUTES = 5
# The Secret key each receiver type reads.
RECEIVER_KEYS = {"slack": "url", "pagerduty": "routing_key"}
# SNS refuses a subject of 100 characters or more, or with a line break (Publish API), and v0.34.0
# passes the rendered subject on uncut (notify/sns/sns.go createPublishInput): the default one names
# every common label and can run past it. This one stays short: status, alert, severity, count.
SUBJECT = "[{{ .Status | toUpper }}] {{ .GroupLabels.alertname }} {{ .CommonLabels.severity }} ({{ len .Alerts }})"


def _sns(topic_arn: str, region: str, *, send_resolved: bool) -> dict[str, Any]:
    return {
        "topic_arn": topic_arn,
        "sigv4": {"region": region},
        "subject": SUBJECT,
        "send_resolved": send_resolved,
    }


def alertmanager_config(
    receiver: AlertReceiver | None, *, topic_arn: str, heartbeat_topic_arn: str, region: str
) -> dict[str, Any]:
    """Alerts of severity critical (and, if the profile's receiver says so, warning) go to the alert
    topic and the profile's receiver; Watchdog goes to the heartbeat topic every few minutes; the
    rest (info, the chart's InfoInhibitor) to nothing. Grouped per alert and GPU node, re-sent every
    4 hours while they fire."""
    severities = "critical|warning" if receiver and receiver.warnings else "critical"
    extra: dict[str, Any] = {}
    if receiver is not None:
        credential = f"{ALERTMANAGER_SECRETS}/{receiver.secret_name}/{RECEIVER_KEYS[receiver.type]}"
        extra = (
            {"slack_configs": [{"api_url_file": credential, "send_resolved": True}]}
            if receiver.type == "slack"
            else {"pagerduty_configs": [{"routing_key_file": credential, "send_resolved": True}]}
        )
    return {
        "route": {
            "receiver": "null",
            # One group per node: the DCGM exporter's host label (Hostname, hostname from 4.6).
            "group_by": ["alertname", "namespace", "Hostname", "hostname"],
            "repeat_interval": "4h",
            "routes": [
                {
                    "matchers": [f'alertname="{WATCHDOG}"'],
                    "receiver": HEARTBEAT_RECEIVER,
                    "group_wait": "0s",
                    "group_interval": "1m",
                    "repeat_interval": f"{HEARTBEAT_REPEAT_MINUTES}m",
                },
                {"matchers": [f'severity=~"{severities}"'], "receiver": CRITICAL_RECEIVER},
            ],
        },
        "receivers": [
            {"name": "null"},
            {"name": CRITICAL_RECEIVER, "sns_configs": [_sns(topic_arn, region, send_resolved=True)], **extra},
            {"name": HEARTBEAT_RECEIVER, "sns_configs": [_sns(heartbeat_topic_arn, region, send_resolved=False)]},
        ],
    }


def integrations(receiver: AlertReceiver | None) -> tuple[str, ...]:
    """The notifier integrations a critical alert is sent through (Alertmanager's metric label)."""
    return ("sns", *((receiver.type,) if receiver else ()))
