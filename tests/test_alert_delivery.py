"""Alerts reach a person by default: every profile's Alertmanager publishes critical alerts to the
platform's own encrypted SNS topic with a Pod Identity role (no credential anywhere), emails from
the profile subscribe to it, and the Watchdog heartbeat feeds a CloudWatch alarm that tells the
same topic when Alertmanager falls silent (the dead-man's switch). Routing is judged by amtool."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from addons.gpu_operator.rules import GPU_RULES
from addons.monitoring import ALERTMANAGER_SERVICE_ACCOUNT, alert_topic_name, alert_warnings, heartbeat_topic_name
from addons.monitoring.alerting import (
    CRITICAL_RECEIVER,
    HEARTBEAT_RECEIVER,
    HEARTBEAT_REPEAT_MINUTES,
    SUBJECT,
    WATCHDOG,
)
from addons.monitoring.notifications import HEARTBEAT_WINDOW_MINUTES, HEARTBEAT_WINDOWS, subscription_id
from profiles import ProfileError, validate_profile
from tests.cases import FIXTURES, SHIPPED
from tests.synth_helpers import resources
from tests.test_alert_receiver import amtool, configured, route, written  # noqa: F401 (amtool: a fixture)
from tests.test_profiles import mutated

ALL = SHIPPED + FIXTURES


def addons(synthesized, profile: str) -> dict:
    return synthesized.stack(profile, "addons")


def monitoring_values(synthesized, profile: str) -> dict:
    (release,) = [
        r for r in resources(addons(synthesized, profile), "helm_release").values() if r["name"] == "monitoring"
    ]
    return yaml.safe_load(release["values"][0])


def by_name(stack: dict, kind: str) -> dict[str, tuple[str, dict]]:
    return {body["name"]: (key, body) for key, body in resources(stack, kind).items() if "name" in body}


# ------------------------------------------------------------------ the configuration, by amtool


def test_with_no_receiver_critical_alerts_still_go_to_the_alert_topic(amtool, tmp_path):  # noqa: F811
    config = written(tmp_path, None)
    checked = subprocess.run([amtool, "check-config", str(config)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for rule in (
        r for g in GPU_RULES["groups"] for r in g["rules"] if r.get("labels", {}).get("severity") == "critical"
    ):
        assert route(amtool, config, alertname=rule["alert"], severity="critical") == CRITICAL_RECEIVER
    assert route(amtool, config, alertname=WATCHDOG, severity="none") == HEARTBEAT_RECEIVER
    assert route(amtool, config, alertname="InfoInhibitor", severity="none") == "null"
    assert route(amtool, config, alertname="GpuAllocatedIdle", severity="warning") == "null"


def test_alertmanager_signs_with_the_pods_role_never_a_key():
    """No access key, profile or role_arn: the notifier takes the SDK's default chain, which reads the
    Pod Identity variables (addons/monitoring/alerting.py). The region must be given."""
    from addons.monitoring import AlertReceiver

    for receiver in (None, AlertReceiver(type="slack")):
        receivers = {r["name"]: r for r in configured(receiver)["receivers"]}
        for name in (CRITICAL_RECEIVER, HEARTBEAT_RECEIVER):
            (sns,) = receivers[name]["sns_configs"]
            assert sns["sigv4"] == {"region": "us-west-2"}
        assert receivers[HEARTBEAT_RECEIVER]["sns_configs"][0]["send_resolved"] is False
    assert (
        "slack_configs"
        in {r["name"]: r for r in configured(AlertReceiver(type="slack"))["receivers"]}[CRITICAL_RECEIVER]
    )


def test_the_heartbeat_is_sent_often_enough_for_the_alarm():
    """The Watchdog route repeats every few minutes; the alarm's window holds at least two heartbeats,
    so one late send does not trip it."""
    watchdog = configured(None)["route"]["routes"][0]
    assert watchdog["matchers"] == [f'alertname="{WATCHDOG}"'] and watchdog["receiver"] == HEARTBEAT_RECEIVER
    assert watchdog["repeat_interval"] == f"{HEARTBEAT_REPEAT_MINUTES}m"
    assert HEARTBEAT_WINDOW_MINUTES >= 2 * HEARTBEAT_REPEAT_MINUTES and HEARTBEAT_WINDOWS >= 2


def test_the_email_subject_stays_within_what_sns_accepts():
    """SNS refuses a subject of 100 characters or more, or with a line break; v0.34.0 does not cut it."""
    longest = max((r["alert"] for g in GPU_RULES["groups"] for r in g["rules"] if "alert" in r), key=len)
    rendered = (
        SUBJECT.replace("{{ .Status | toUpper }}", "RESOLVED")
        .replace("{{ .GroupLabels.alertname }}", longest)
        .replace("{{ .CommonLabels.severity }}", "critical")
        .replace("{{ len .Alerts }}", "999")
    )
    assert "{{" not in rendered and "\n" not in rendered and len(rendered) < 100


# ------------------------------------------------------------------ the synthesized layer


@pytest.mark.parametrize("profile", ALL)
def test_every_profile_publishes_to_its_own_encrypted_topic_with_a_pod_identity_role(synthesized, profile):
    config = synthesized.configs[profile]
    stack = addons(synthesized, profile)
    topics = by_name(stack, "aws_sns_topic")
    alerts_key, alerts = topics[alert_topic_name(config.name)]
    heartbeat_key, heartbeat = topics[heartbeat_topic_name(config.name)]
    for topic in (alerts, heartbeat):
        assert topic["kms_master_key_id"].startswith("${aws_kms_key."), "a customer-managed key (CloudWatch needs it)"
    values = monitoring_values(synthesized, profile)["alertmanager"]
    receivers = {r["name"]: r for r in values["config"]["receivers"]}
    assert receivers[CRITICAL_RECEIVER]["sns_configs"][0]["topic_arn"] == f"${{aws_sns_topic.{alerts_key}.arn}}"
    assert receivers[HEARTBEAT_RECEIVER]["sns_configs"][0]["topic_arn"] == f"${{aws_sns_topic.{heartbeat_key}.arn}}"
    assert receivers[CRITICAL_RECEIVER]["sns_configs"][0]["sigv4"] == {"region": config.region}
    # The association names the service account the chart's pods run as.
    assert values["serviceAccount"]["name"] == ALERTMANAGER_SERVICE_ACCOUNT
    (association_key,) = [
        key
        for key, body in resources(stack, "aws_eks_pod_identity_association").items()
        if body["service_account"] == ALERTMANAGER_SERVICE_ACCOUNT and body["namespace"] == "monitoring"
    ]
    role_key = resources(stack, "aws_eks_pod_identity_association")[association_key]["role_arn"].split(".")[1]
    (inline,) = [
        p for p in resources(stack, "aws_iam_role_policy").values() if p["role"] == f"${{aws_iam_role.{role_key}.id}}"
    ]
    statements = json.loads(inline["policy"])["Statement"]
    publish = next(s for s in statements if s["Action"] == ["sns:Publish"])
    assert sorted(publish["Resource"]) == sorted(
        [f"${{aws_sns_topic.{alerts_key}.arn}}", f"${{aws_sns_topic.{heartbeat_key}.arn}}"]
    )
    kms = next(s for s in statements if "kms:Decrypt" in s["Action"])
    assert kms["Condition"] == {"StringEquals": {"kms:ViaService": f"sns.{config.region}.amazonaws.com"}}
    # Alertmanager's pods start only once the association exists (Pod Identity injects credentials at pod creation).
    (release,) = [r for r in resources(stack, "helm_release").values() if r["name"] == "monitoring"]
    assert f"aws_eks_pod_identity_association.{association_key}" in release["depends_on"]


@pytest.mark.parametrize("profile", ALL)
def test_the_dead_mans_switch_alarm_fires_on_silence_into_the_alert_topic(synthesized, profile):
    config = synthesized.configs[profile]
    stack = addons(synthesized, profile)
    topics = by_name(stack, "aws_sns_topic")
    alerts_key, _ = topics[alert_topic_name(config.name)]
    heartbeat_key, _ = topics[heartbeat_topic_name(config.name)]
    (alarm,) = resources(stack, "aws_cloudwatch_metric_alarm").values()
    assert (alarm["namespace"], alarm["metric_name"], alarm["statistic"]) == (
        "AWS/SNS",
        "NumberOfMessagesPublished",
        "Sum",
    )
    assert alarm["dimensions"] == {"TopicName": f"${{aws_sns_topic.{heartbeat_key}.name}}"}
    assert alarm["treat_missing_data"] == "breaching", "no heartbeat at all is the case it exists for"
    assert (alarm["comparison_operator"], alarm["threshold"]) == ("LessThanThreshold", 1)
    assert alarm["alarm_actions"] == alarm["ok_actions"] == [f"${{aws_sns_topic.{alerts_key}.arn}}"]
    # The alert topic admits this alarm (CloudWatch publishes as a service) and its key lets CloudWatch encrypt.
    (policy,) = [p for p in resources(stack, "aws_sns_topic_policy").values() if alerts_key in p["arn"]]
    allow = next(s for s in json.loads(policy["policy"])["Statement"] if s["Effect"] == "Allow")
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert allow["Condition"]["ArnEquals"]["aws:SourceArn"].endswith(f":alarm:{alarm['alarm_name']}")
    key_ref = by_name(stack, "aws_sns_topic")[alert_topic_name(config.name)][1]["kms_master_key_id"]
    key = resources(stack, "aws_kms_key")[key_ref.split(".")[1]]
    cloudwatch = [
        s
        for s in json.loads(key["policy"])["Statement"]
        if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert cloudwatch and "kms:GenerateDataKey*" in cloudwatch[0]["Action"]


@pytest.mark.parametrize("profile", ALL)
def test_the_profiles_addresses_are_the_topics_subscriptions(synthesized, profile):
    config = synthesized.configs[profile]
    emails = config.addons.monitoring.alert_emails
    subscriptions = resources(addons(synthesized, profile), "aws_sns_topic_subscription")
    assert sorted(s["endpoint"] for s in subscriptions.values()) == sorted(emails)
    assert all(s["protocol"] == "email" for s in subscriptions.values())


def test_a_subscription_keeps_its_address_when_the_list_is_reordered():
    """Its construct id comes from the address, not its place: reordering re-sends no confirmation."""
    assert subscription_id("Oncall@Example.com") == subscription_id("oncall@example.com")
    assert subscription_id("a@example.com") != subscription_id("b@example.com")


# ------------------------------------------------------------------ the profile's addresses


def test_the_profile_takes_email_addresses():
    config = validate_profile(
        mutated(addons__monitoring__alert_emails=["ml-oncall@example.com", "a.b+gpu@corp.example.org"])
    )
    assert config.addons.monitoring.alert_emails == ["ml-oncall@example.com", "a.b+gpu@corp.example.org"]
    assert alert_warnings(config) == []


@pytest.mark.parametrize(
    "address",
    [
        "oncall",
        "oncall@localhost",
        "@example.com",
        "on call@example.com",
        "oncall@example..com",
        "a@-x.com",
        "x" * 250 + "@e.com",
    ],
)
def test_a_bad_address_is_refused_naming_the_field_the_value_and_what_is_allowed(address):
    with pytest.raises(ProfileError) as refused:
        validate_profile(mutated(addons__monitoring__alert_emails=["ok@example.com", address]))
    text = str(refused.value)
    assert "addons.monitoring.alert_emails.1" in text and "not an email address" in text
    assert "name@example.com" in text and (address[:20] in text)


def test_an_address_listed_twice_is_refused():
    with pytest.raises(ProfileError) as refused:
        validate_profile(mutated(addons__monitoring__alert_emails=["a@example.com", "A@example.com"]))
    assert "addons.monitoring.alert_emails.1" in str(refused.value) and "listed twice" in str(refused.value)


def test_a_topic_nobody_is_subscribed_to_is_warned_with_the_command_to_subscribe():
    config = validate_profile(mutated())
    (warning,) = alert_warnings(config)
    assert alert_topic_name(config.name) in warning and "addons.monitoring.alert_emails" in warning
    assert f"aws sns subscribe --region {config.region} --protocol email" in warning
    assert alert_warnings(validate_profile(mutated(addons__monitoring__enabled=False))) == []
