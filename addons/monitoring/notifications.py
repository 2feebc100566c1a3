"""The AWS side of alert delivery, created with the monitoring add-on in the addons layer:

- `<name>-alerts`, the SNS topic every critical alert is published to, with an email subscription
  per `addons.monitoring.alert_emails` address (AWS mails a confirmation link; nothing is
  delivered until it is clicked). The aws provider treats email as partially supported: an
  unconfirmed subscription cannot be deleted by Terraform (destroy only forgets it; deleting the
  topic removes it), and `pending_confirmation` shows its state.
- `<name>-alertmanager-heartbeat`, the topic Alertmanager sends the always-firing Watchdog alert
  to every few minutes, and the dead-man's switch: a CloudWatch alarm on the topic's
  NumberOfMessagesPublished (AWS/SNS, per TopicName) that treats missing data as breaching, so
  when Prometheus, Alertmanager or the path to SNS stops, the alarm publishes to the alert topic.
- One customer-managed KMS key for both topics. CloudWatch alarms cannot publish to a topic
  encrypted with the AWS managed key alias/aws/sns; the key policy must let cloudwatch.amazonaws.com
  use the key (AWS re:Post, "configure a CloudWatch alarm with an encrypted SNS topic"), here only
  on behalf of this account.
- Alertmanager's Pod Identity role: sns:Publish on the two topics and the key's data-key calls
  through SNS only.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from cdktf import ITerraformDependable
from cdktf_cdktf_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
from cdktf_cdktf_provider_aws.sns_topic import SnsTopic
from constructs import Construct

from addons.monitoring import alert_topic_name, heartbeat_topic_name
from addons.monitoring.alerting import HEARTBEAT_REPEAT_MINUTES
from addons.monitoring.delivery import AlertDelivery
from components.iam import (
    PodIdentityBinding,
    allow,
    deny_insecure_transport,
    pod_identity_association,
    pod_identity_role,
    policy_document,
)
from components.kms import account_administered_key
from components.leaf_resources import LeafType

# The topics' policies, the email subscriptions and the heartbeat alarm: nothing reads them, so
# they are rendered as data (components/leaf_resources.py).
TOPIC_POLICY = LeafType("aws_sns_topic_policy", "SnsTopicPolicy")
SUBSCRIPTION = LeafType("aws_sns_topic_subscription", "SnsTopicSubscription")
HEARTBEAT_ALARM = LeafType("aws_cloudwatch_metric_alarm", "CloudwatchMetricAlarm")

# The alarm looks at windows of this many minutes, each of which holds two heartbeats or more, and
# fires after this many empty windows in a row: about 20 minutes of silence.
HEARTBEAT_WINDOW_MINUTES = 2 * HEARTBEAT_REPEAT_MINUTES
HEARTBEAT_WINDOWS = 2


@dataclass(frozen=True, kw_only=True)
class AlertTopicsProps:
    platform_name: str
    """The platform's name (the cluster's as plain text): prefix of every name here."""
    region: str
    """The region the topics live in (SNS is regional; the key is used only through its SNS)."""
    cluster_name: str
    """The cluster's name (a token from the cluster layer: the association waits for it)."""
    namespace: str
    """Alertmanager's namespace."""
    service_account: str
    """Alertmanager's service account."""
    emails: tuple[str, ...]
    """Addresses subscribed to the alert topic."""


def subscription_id(address: str) -> str:
    """A construct id per address that does not move when the list is reordered (a moved id would
    unsubscribe and resubscribe, mailing a new confirmation)."""
    return "alert-email-" + hashlib.sha256(address.lower().encode()).hexdigest()[:12]


class AlertTopics(Construct):
    """The topics, their key, the subscriptions, the heartbeat alarm and Alertmanager's role.
    Exposes `delivery` and `ready`."""

    def __init__(self, scope: Construct, id_: str, *, props: AlertTopicsProps):
        super().__init__(scope, id_)
        account = DataAwsCallerIdentity(self, "account").account_id
        alarm_name = f"{props.platform_name}-alertmanager-heartbeat-missing"
        alarm_arn = f"arn:aws:cloudwatch:{props.region}:{account}:alarm:{alarm_name}"
        key = account_administered_key(
            self,
            "key",
            description=f"{props.platform_name}: alert topics",
            alias=f"{props.platform_name}-alerts",
            account_id=account,
            service_statements=(
                {
                    "Sid": "CloudWatchAlarmsPublishToEncryptedTopics",
                    "Effect": "Allow",
                    "Principal": {"Service": "cloudwatch.amazonaws.com"},
                    "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                    "Resource": "*",
                    "Condition": {"StringEquals": {"aws:SourceAccount": account}},
                },
            ),
        )
        alerts = SnsTopic(self, "alerts", name=alert_topic_name(props.platform_name), kms_master_key_id=key.arn)
        heartbeat = SnsTopic(
            self, "heartbeat", name=heartbeat_topic_name(props.platform_name), kms_master_key_id=key.arn
        )
        alerts_arn, heartbeat_arn = alerts.arn, heartbeat.arn  # each attribute read is a jsii round trip
        TOPIC_POLICY.add(
            self,
            "alerts-policy",
            arn=alerts_arn,
            policy=policy_document(
                {
                    "Sid": "HeartbeatAlarmPublishes",
                    "Effect": "Allow",
                    "Principal": {"Service": "cloudwatch.amazonaws.com"},
                    "Action": "sns:Publish",
                    "Resource": alerts_arn,
                    "Condition": {
                        "ArnEquals": {"aws:SourceArn": alarm_arn},
                        "StringEquals": {"aws:SourceAccount": account},
                    },
                },
                deny_insecure_transport("sns", alerts_arn),
            ),
        )
        TOPIC_POLICY.add(
            self,
            "heartbeat-policy",
            arn=heartbeat_arn,
            policy=policy_document(deny_insecure_transport("sns", heartbeat_arn)),
        )
        for address in props.emails:
            SUBSCRIPTION.add(self, subscription_id(address), topic_arn=alerts_arn, protocol="email", endpoint=address)
        HEARTBEAT_ALARM.add(
            self,
            "heartbeat-missing",
            alarm_name=alarm_name,
            alarm_description=(
                "Dead-man's switch: Alertmanager's Watchdog heartbeat has not reached SNS for about "
                f"{HEARTBEAT_WINDOW_MINUTES * HEARTBEAT_WINDOWS} minutes. Prometheus or Alertmanager is down (or the "
                "cluster is paused), or Alertmanager cannot reach SNS: until it is back, no alert reaches you."
            ),
            namespace="AWS/SNS",
            metric_name="NumberOfMessagesPublished",
            dimensions={"TopicName": heartbeat.name},
            statistic="Sum",
            period=HEARTBEAT_WINDOW_MINUTES * 60,
            evaluation_periods=HEARTBEAT_WINDOWS,
            datapoints_to_alarm=HEARTBEAT_WINDOWS,
            threshold=1,
            comparison_operator="LessThanThreshold",
            treat_missing_data="breaching",
            alarm_actions=[alerts_arn],
            ok_actions=[alerts_arn],
        )
        binding = PodIdentityBinding(
            account_id=account,
            cluster_name=props.platform_name,
            namespace=props.namespace,
            service_account=props.service_account,
        )
        role = pod_identity_role(
            self,
            "alertmanager-role",
            name=f"{props.platform_name}-alertmanager",
            binding=binding,
            inline_policy=policy_document(
                allow(["sns:Publish"], [alerts_arn, heartbeat_arn]),
                # Publishing to an encrypted topic: SNS asks KMS for a data key on the caller's behalf,
                # with GenerateDataKey (AWS's examples for publishers to an encrypted topic grant exactly
                # kms:GenerateDataKey and kms:Decrypt; the IAM gate refuses wildcards in actions).
                allow(
                    ["kms:Decrypt", "kms:GenerateDataKey"],
                    key.arn,
                    Condition={"StringEquals": {"kms:ViaService": f"sns.{props.region}.amazonaws.com"}},
                ),
            ),
        )
        association = pod_identity_association(
            self,
            "alertmanager-pod-identity",
            role=role,
            binding=binding,
            cluster_name=props.cluster_name,
            depends_on=tuple(role.attachments),
        )
        self._delivery = AlertDelivery(topic_arn=alerts_arn, heartbeat_topic_arn=heartbeat_arn)
        self._ready: tuple[ITerraformDependable, ...] = (association, *role.attachments)

    @property
    def delivery(self) -> AlertDelivery:
        """The topics Alertmanager publishes to."""
        return self._delivery

    @property
    def ready(self) -> tuple[ITerraformDependable, ...]:
        """What Alertmanager's pods wait for: its role's policy and association (Pod Identity
        injects credentials only into pods created after the association)."""
        return self._ready
