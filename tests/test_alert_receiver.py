"""Alerts reach a person: the Alertmanager configuration the profile's receiver produces is checked
and routed by amtool itself (Debian's prometheus-alertmanager, fetched by make test): critical
alerts, the GPU fault among them, go to the receiver, warnings do not; the credential stays in a
Secret file; Alertmanager alone may reach the receiver's HTTPS API."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from addons.gpu_operator.rules import GPU_RULES
from addons.monitoring import AlertReceiver
from addons.monitoring.alerting import (
    ALERTMANAGER_SECRETS,
    CRITICAL_RECEIVER,
    HEARTBEAT_RECEIVER,
    alertmanager_config,
)
from addons.monitoring.install import ADDON, ALERTMANAGER_POD
from profiles import ProfileError, validate_profile
from tests.netpol import Peer, allowed
from tests.test_profiles import mutated

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def amtool() -> str:
    local = ROOT / ".tools/bin/amtool"
    found = os.environ.get("AMTOOL") or (str(local) if local.exists() else shutil.which("amtool"))
    if not found:
        if os.environ.get("CI") == "true":
            pytest.fail("CI needs amtool (make test fetches it into .tools/bin)")
        pytest.skip("SKIPPING Alertmanager checks: amtool not found (make test fetches it)")
    return found


TOPIC = "arn:aws:sns:us-west-2:123456789012:gpu-validation-alerts"
HEARTBEAT = "arn:aws:sns:us-west-2:123456789012:gpu-validation-alertmanager-heartbeat"


def configured(receiver: AlertReceiver | None) -> dict:
    return alertmanager_config(receiver, topic_arn=TOPIC, heartbeat_topic_arn=HEARTBEAT, region="us-west-2")


def written(tmp_path: Path, receiver: AlertReceiver | None) -> Path:
    path = tmp_path / "alertmanager.yaml"
    path.write_text(yaml.safe_dump(configured(receiver)))
    return path


def route(amtool: str, config: Path, **labels: str) -> str:
    result = subprocess.run(
        [amtool, "config", "routes", "test", f"--config.file={config}", *(f"{k}={v}" for k, v in labels.items())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.parametrize("kind", ["slack", "pagerduty"])
def test_the_configuration_is_valid_and_routes_critical_alerts_to_the_receiver(amtool, tmp_path, kind):
    config = written(tmp_path, AlertReceiver(type=kind, secret_name="oncall"))
    checked = subprocess.run([amtool, "check-config", str(config)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    critical = [
        rule
        for group in GPU_RULES["groups"]
        for rule in group["rules"]
        if rule.get("labels", {}).get("severity") == "critical"
    ]
    assert critical, "the platform has critical rules to route"
    for rule in critical:
        assert (
            route(amtool, config, alertname=rule["alert"], severity="critical", hostname="ip-10-0-1-2")
            == CRITICAL_RECEIVER
        )
    assert route(amtool, config, alertname="GpuXidCodeReported", severity="warning") == "null"
    assert route(amtool, config, alertname="Watchdog", severity="none") == HEARTBEAT_RECEIVER


def test_the_credential_is_a_mounted_file_never_a_value(tmp_path):
    for kind, key in (("slack", "url"), ("pagerduty", "routing_key")):
        text = yaml.safe_dump(configured(AlertReceiver(type=kind, secret_name="oncall")))
        assert f"{ALERTMANAGER_SECRETS}/oncall/{key}" in text
        assert "hooks.slack.com" not in text and "api_url:" not in text and "routing_key:" not in text


def test_the_receivers_secret_is_one_the_user_creates_and_alertmanager_mounts():
    config = validate_profile(mutated(addons={"monitoring": {"alert_receiver": {"type": "slack"}}}))
    settings = ADDON.settings(config)
    assert "alert-receiver" in ADDON.user_secrets(settings)  # preflight checks it exists before the layer
    with pytest.raises(ProfileError):
        validate_profile(mutated(addons={"monitoring": {"alert_receiver": {"type": "email"}}}))


def test_only_alertmanager_may_reach_the_receivers_api():
    from components.helm.addon import AddonContext
    from components.k8s.namespaces import ApiServerAddresses
    from stacks.contracts import BuildOutputs, StorageOutputs
    from tests.synth_helpers import example_cluster_outputs

    config = validate_profile(mutated(addons={"monitoring": {"alert_receiver": {"type": "pagerduty"}}}))
    ctx = AddonContext(
        scope=None,  # network_allows builds plain data: no construct scope needed
        config=config,
        cluster=example_cluster_outputs(vpc_cidr="10.0.0.0/16"),
        storage=StorageOutputs(
            bucket_names={}, bucket_arns={}, fsx_file_system_id=None, fsx_dns_name=None, fsx_mount_name=None
        ),
        build=BuildOutputs(
            repository_urls={}, image_tags={}, project_names={}, source_bucket_name="b", build_commands={}
        ),
        storage_class="gp3",
        storage_class_ready=None,
        api_server=ApiServerAddresses(vpc_cidr="10.0.0.0/16", service_ip="172.20.0.1"),
    )
    allows = ADDON.network_allows(ctx, ADDON.settings(config))
    deny = {
        "metadata": {"namespace": "monitoring", "name": "default-deny"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    }
    policies = [
        deny,
        *(
            {"metadata": {"namespace": "monitoring", "name": n}, "spec": {"podSelector": {}, **s}}
            for n, s in allows.items()
        ),
    ]
    pagerduty = Peer(ip="198.51.100.20")
    assert allowed(
        policies,
        namespace="monitoring",
        direction="Egress",
        peer=pagerduty,
        protocol="TCP",
        port=443,
        pod_labels=ALERTMANAGER_POD,
    )
    grafana = {"app.kubernetes.io/name": "grafana"}
    assert not allowed(
        policies,
        namespace="monitoring",
        direction="Egress",
        peer=pagerduty,
        protocol="TCP",
        port=443,
        pod_labels=grafana,
    )
    # Without Slack or PagerDuty, Alertmanager still publishes to the alert topic over HTTPS.
    without = validate_profile(mutated())
    assert "allow-alert-delivery" in ADDON.network_allows(ctx, ADDON.settings(without))


def test_warnings_reach_the_receiver_only_when_the_profile_asks(amtool, tmp_path):
    quiet = written(tmp_path, AlertReceiver(type="slack"))
    assert route(amtool, quiet, alertname="GpuAllocatedIdle", severity="warning") == "null"
    (tmp_path / "loud").mkdir()
    loud = written(tmp_path / "loud", AlertReceiver(type="slack", warnings=True))
    assert route(amtool, loud, alertname="GpuAllocatedIdle", severity="warning") == CRITICAL_RECEIVER
    assert route(amtool, loud, alertname="GpuCriticalXid", severity="critical") == CRITICAL_RECEIVER
    assert route(amtool, loud, alertname="Watchdog", severity="none") == HEARTBEAT_RECEIVER


# ------------------------------------------------------------------ verify: the receiver is reachable

METRICS = """# HELP alertmanager_notifications_failed_total The total number of failed notifications.
# TYPE alertmanager_notifications_failed_total counter
alertmanager_notifications_failed_total{{integration="email",reason="other"}} 0
alertmanager_notifications_failed_total{{integration="slack",reason="clientError"}} {client}
alertmanager_notifications_failed_total{{integration="slack",reason="other"}} 0
alertmanager_notifications_failed_total{{integration="sns",reason="serverError"}} {sns_failed}
# HELP alertmanager_notifications_total The total number of attempted notifications.
# TYPE alertmanager_notifications_total counter
alertmanager_notifications_total{{integration="email"}} 0
alertmanager_notifications_total{{integration="pagerduty"}} 0
alertmanager_notifications_total{{integration="slack"}} {attempted}
alertmanager_notifications_total{{integration="sns"}} {sns}
"""


class AlertmanagerKubectl:
    """kubectl against a running Alertmanager: its pod, amtool inside it, and its /metrics, whose
    slack counters move as `rounds` says (one (attempted, failed) pair per read), and its sns
    counters as `sns` says (or as the slack ones when not given)."""

    def __init__(self, rounds: list[tuple[int, int]], sns: list[tuple[int, int]] | None = None):
        self.rounds = rounds
        self.sns = sns
        self.calls: list[list[str]] = []

    def __call__(self, args: list[str]) -> subprocess.CompletedProcess:
        self.calls.append(args)
        out = ""
        if args[:2] == ["get", "pods"] and "app.kubernetes.io/name=alertmanager" in args:
            out = "alertmanager-monitoring-kube-prometheus-alertmanager-0"
        elif args[0] == "exec" and "wget" in args:
            attempted, failed = self.rounds.pop(0) if len(self.rounds) > 1 else self.rounds[0]
            sns = self.sns if self.sns is not None else [(attempted, failed)]
            published, refused = sns.pop(0) if len(sns) > 1 else sns[0]
            out = METRICS.format(attempted=attempted, client=failed, sns=published, sns_failed=refused)
        return subprocess.CompletedProcess(args, 0, out, "")


def receiver_profile():
    return validate_profile(mutated(addons={"monitoring": {"alert_receiver": {"type": "slack"}}}))


@pytest.mark.parametrize(
    ("rounds", "passed", "detail"),
    [
        ([(3, 0), (3, 0), (4, 0)], True, "a test alert reached the sns and slack receiver"),
        ([(3, 0), (4, 1)], False, "could not deliver to the slack receiver"),  # Slack refused the webhook
        ([(3, 0)], False, "no notification to slack within 180 seconds"),
    ],
)
def test_verify_sends_a_test_alert_and_watches_the_receivers_counters(rounds, passed, detail):
    from addons.monitoring.checks import check_alert_receiver

    kubectl = AlertmanagerKubectl(rounds, sns=[(5, 0), (6, 0)])  # the alert topic takes it
    result = check_alert_receiver(receiver_profile(), kubectl, sleep=lambda _: None)
    assert result.passed is passed and detail in result.detail, result
    (add,) = [call for call in kubectl.calls if "amtool" in call]
    assert add[:6] == [
        "exec",
        "-n",
        "monitoring",
        "alertmanager-monitoring-kube-prometheus-alertmanager-0",
        "-c",
        "alertmanager",
    ]
    assert "alertname=PlatformVerifyTestAlert" in add and "severity=critical" in add
    assert any(arg.startswith("--end=") for arg in add)  # it resolves by itself


def test_the_test_alert_routes_to_the_receiver(amtool, tmp_path):
    """The alert verify sends takes the same route as a real page (amtool reads the configuration)."""
    config = written(tmp_path, AlertReceiver(type="slack"))
    assert route(amtool, config, alertname="PlatformVerifyTestAlert", severity="critical") == CRITICAL_RECEIVER


def test_without_slack_or_pagerduty_the_test_alert_goes_to_the_alert_topic():
    from addons.monitoring.checks import check_alert_receiver

    kubectl = AlertmanagerKubectl([(0, 0)], sns=[(5, 0), (6, 0)])
    result = check_alert_receiver(validate_profile(mutated()), kubectl, sleep=lambda _: None)
    assert result.passed, result
    assert "reached the sns receiver" in result.detail


def test_a_refused_publish_names_the_role_and_the_path():
    from addons.monitoring.checks import check_alert_receiver

    kubectl = AlertmanagerKubectl([(0, 0)], sns=[(5, 0), (6, 1)])  # e.g. AccessDenied from SNS or KMS
    result = check_alert_receiver(validate_profile(mutated()), kubectl, sleep=lambda _: None)
    assert not result.passed
    assert "could not deliver to the sns receiver" in result.detail and "Pod Identity" in result.detail


def test_a_receiver_that_never_answers_is_named():
    from addons.monitoring.checks import check_alert_receiver

    kubectl = AlertmanagerKubectl([(3, 0)], sns=[(5, 0), (6, 0)])  # SNS took it, Slack saw nothing
    result = check_alert_receiver(receiver_profile(), kubectl, sleep=lambda _: None)
    assert not result.passed and "no notification to slack within" in result.detail


def test_verify_sends_the_test_alert_only_when_the_profile_runs_monitoring():
    from addons.contributions import addon_checks
    from addons.monitoring.checks import DASHBOARD_CHECK, RECEIVER_CHECK

    def names(config):
        return [check.name for check in addon_checks(config, None)]

    on = names(validate_profile(mutated()))
    assert on.index(DASHBOARD_CHECK) < on.index(RECEIVER_CHECK)  # read-only: Grafana first, then the page
    off = names(validate_profile(mutated(addons__monitoring__enabled=False)))
    assert DASHBOARD_CHECK not in off and RECEIVER_CHECK not in off
