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

from addons.monitoring import AlertReceiver
from addons.monitoring.install import (
    ADDON,
    ALERTMANAGER_POD,
    ALERTMANAGER_SECRETS,
    CRITICAL_RECEIVER,
    GPU_RULES,
    alertmanager_config,
)
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


def written(tmp_path: Path, receiver: AlertReceiver) -> Path:
    path = tmp_path / "alertmanager.yaml"
    path.write_text(yaml.safe_dump(alertmanager_config(receiver)))
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
    assert route(amtool, config, alertname="Watchdog", severity="none") == "null"


def test_the_credential_is_a_mounted_file_never_a_value(tmp_path):
    for kind, key in (("slack", "url"), ("pagerduty", "routing_key")):
        text = yaml.safe_dump(alertmanager_config(AlertReceiver(type=kind, secret_name="oncall")))
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
    from stacks.contracts import StorageOutputs
    from tests.synth_helpers import example_cluster_outputs

    config = validate_profile(mutated(addons={"monitoring": {"alert_receiver": {"type": "pagerduty"}}}))
    ctx = AddonContext(
        scope=None,  # network_allows builds plain data: no construct scope needed
        config=config,
        cluster=example_cluster_outputs(vpc_cidr="10.0.0.0/16"),
        storage=StorageOutputs(
            bucket_names={}, bucket_arns={}, fsx_file_system_id=None, fsx_dns_name=None, fsx_mount_name=None
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
    without = validate_profile(mutated())
    assert "allow-alert-receiver" not in ADDON.network_allows(ctx, ADDON.settings(without))


def test_warnings_reach_the_receiver_only_when_the_profile_asks(amtool, tmp_path):
    quiet = written(tmp_path, AlertReceiver(type="slack"))
    assert route(amtool, quiet, alertname="GpuAllocatedIdle", severity="warning") == "null"
    (tmp_path / "loud").mkdir()
    loud = written(tmp_path / "loud", AlertReceiver(type="slack", warnings=True))
    assert route(amtool, loud, alertname="GpuAllocatedIdle", severity="warning") == CRITICAL_RECEIVER
    assert route(amtool, loud, alertname="GpuCriticalXid", severity="critical") == CRITICAL_RECEIVER
    assert route(amtool, loud, alertname="Watchdog", severity="none") == "null"


# ------------------------------------------------------------------ verify: the receiver is reachable

METRICS = """# HELP alertmanager_notifications_failed_total The total number of failed notifications.
# TYPE alertmanager_notifications_failed_total counter
alertmanager_notifications_failed_total{{integration="email",reason="other"}} 0
alertmanager_notifications_failed_total{{integration="slack",reason="clientError"}} {client}
alertmanager_notifications_failed_total{{integration="slack",reason="other"}} 0
# HELP alertmanager_notifications_total The total number of attempted notifications.
# TYPE alertmanager_notifications_total counter
alertmanager_notifications_total{{integration="email"}} 0
alertmanager_notifications_total{{integration="pagerduty"}} 0
alertmanager_notifications_total{{integration="slack"}} {attempted}
"""


class AlertmanagerKubectl:
    """kubectl against a running Alertmanager: its pod, amtool inside it, and its /metrics, whose
    slack counters move as `rounds` says (one (attempted, failed) pair per read)."""

    def __init__(self, rounds: list[tuple[int, int]]):
        self.rounds = rounds
        self.calls: list[list[str]] = []

    def __call__(self, args: list[str]) -> subprocess.CompletedProcess:
        self.calls.append(args)
        out = ""
        if args[:2] == ["get", "pods"] and "app.kubernetes.io/name=alertmanager" in args:
            out = "alertmanager-monitoring-kube-prometheus-alertmanager-0"
        elif args[0] == "exec" and "wget" in args:
            attempted, failed = self.rounds.pop(0) if len(self.rounds) > 1 else self.rounds[0]
            out = METRICS.format(attempted=attempted, client=failed)
        return subprocess.CompletedProcess(args, 0, out, "")


def receiver_profile():
    return validate_profile(mutated(addons={"monitoring": {"alert_receiver": {"type": "slack"}}}))


@pytest.mark.parametrize(
    ("rounds", "passed", "detail"),
    [
        ([(3, 0), (3, 0), (4, 0)], True, "a test alert reached the slack receiver"),
        ([(3, 0), (4, 1)], False, "could not deliver to the slack receiver"),  # Slack refused the webhook
        ([(3, 0)], False, "no notification to slack within 180 seconds"),
    ],
)
def test_verify_sends_a_test_alert_and_watches_the_receivers_counters(rounds, passed, detail):
    from manifests.verify import check_alert_receiver

    kubectl = AlertmanagerKubectl(rounds)
    result = check_alert_receiver(receiver_profile(), kubectl, sleep=lambda _: None)
    assert result is not None and result.passed is passed and detail in result.detail, result
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


def test_no_receiver_no_test_alert():
    from manifests.verify import check_alert_receiver

    kubectl = AlertmanagerKubectl([(0, 0)])
    assert check_alert_receiver(validate_profile(mutated()), kubectl, sleep=lambda _: None) is None
    assert kubectl.calls == []
