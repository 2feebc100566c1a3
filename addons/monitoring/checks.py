"""kube-prometheus-stack's acceptance checks (`verify`, read-only, contributed through
MonitoringParts.checks): Grafana serves every dashboard the add-ons provisioned, and a test alert
reaches each receiver Alertmanager is configured with."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable

from addons.monitoring import ALERTMANAGER_POD, DEFINITION, GRAFANA_CONTAINER, GRAFANA_DEPLOYMENT, GRAFANA_PORT
from components.acceptance import AcceptanceCheck, CheckResult, CheckRun
from components.dashboards import DASHBOARD_LABEL
from profiles.models import PlatformConfig

# How these checks run kubectl (verify's runner, or a test's fake): arguments in, finished process out.
Kubectl = Callable[[list[str]], subprocess.CompletedProcess[str]]

DASHBOARD_CHECK = "grafana-dashboards"
# Run inside Grafana's container, as its admin (the chart passes the admin user and password to it
# as GF_SECURITY_ADMIN_USER and GF_SECURITY_ADMIN_PASSWORD): Grafana's search API lists the
# dashboards it has loaded. busybox wget in the image; nothing leaves the pod, no port-forward.
GRAFANA_SEARCH = (
    'auth=$(printf %s "$GF_SECURITY_ADMIN_USER:$GF_SECURITY_ADMIN_PASSWORD" | base64 | tr -d "\\n"); '
    f'wget -qO- --header "Authorization: Basic $auth" "http://localhost:{GRAFANA_PORT}/api/search?type=dash-db"'
)


def provisioned_dashboards(configmaps_json: str) -> set[str]:
    """The uids of the dashboards provisioned for Grafana: every dashboard JSON in the ConfigMaps
    its sidecar loads (labelled grafana_dashboard=1 in the monitoring namespace; the platform's
    add-ons' and the chart's own)."""
    found = set()
    for item in json.loads(configmaps_json).get("items", []):
        for text in item.get("data", {}).values():
            try:
                model = json.loads(text)
            except json.JSONDecodeError:
                continue
            if isinstance(model, dict) and model.get("uid"):
                found.add(model["uid"])
    return found


def check_dashboards(search_json: str, expected: set[str]) -> CheckResult:
    """Grafana's search answer lists every dashboard the platform provisioned."""
    try:
        loaded = {entry["uid"] for entry in json.loads(search_json) if isinstance(entry, dict) and "uid" in entry}
    except (json.JSONDecodeError, TypeError):
        return CheckResult(DASHBOARD_CHECK, False, f"Grafana's search did not answer JSON: {search_json[:200]!r}")
    missing = sorted(expected - loaded)
    if missing:
        return CheckResult(
            DASHBOARD_CHECK,
            False,
            f"Grafana has not loaded {', '.join(missing)} (its dashboard sidecar reads ConfigMaps labelled "
            "grafana_dashboard=1 in the monitoring namespace)",
        )
    return CheckResult(DASHBOARD_CHECK, True, f"Grafana serves the platform's {len(expected)} dashboards")


def grafana_dashboards(config: PlatformConfig, kubectl: Kubectl) -> CheckResult:
    """Ask the running Grafana which dashboards it has loaded."""
    namespace = DEFINITION.namespace_of(DEFINITION.settings(config))
    label = "=".join(DASHBOARD_LABEL)
    maps = kubectl(["get", "configmap", "-n", namespace, "-l", label, "-o", "json"])
    expected = provisioned_dashboards(maps.stdout) if maps.returncode == 0 else set()
    if not expected:
        return CheckResult(
            DASHBOARD_CHECK, False, f"no dashboard ConfigMap ({label}) in {namespace}: apply the addons layer"
        )
    answer = kubectl(
        [
            "exec",
            "-n",
            namespace,
            f"deploy/{GRAFANA_DEPLOYMENT}",
            "-c",
            GRAFANA_CONTAINER,
            "--",
            "sh",
            "-c",
            GRAFANA_SEARCH,
        ]
    )
    if answer.returncode != 0:
        return CheckResult(DASHBOARD_CHECK, False, f"could not ask Grafana: {answer.stderr.strip()[:300]}")
    return check_dashboards(answer.stdout, expected)


RECEIVER_CHECK = "alert-receiver"
TEST_ALERT = "PlatformVerifyTestAlert"
ALERTMANAGER_CONTAINER = "alertmanager"
ALERTMANAGER_URL = "http://localhost:9093"
ALERTMANAGER_SELECTOR = ",".join(f"{key}={value}" for key, value in ALERTMANAGER_POD.items())
SNS_HINT = "check its Pod Identity association and the network path to SNS (docs/addons/monitoring.md)"
# Alertmanager counts each notification it attempts per integration, and each that failed
# (alertmanager_notifications_total and alertmanager_notifications_failed_total, notify/notify.go).
_NOTIFICATIONS = re.compile(r"^alertmanager_notifications(_failed)?_total\{([^}]*)\}\s+(\S+)$", re.MULTILINE)


def notification_counts(metrics: str, integration: str) -> tuple[float, float]:
    """(attempted, failed) notifications of one integration, from Alertmanager's /metrics."""
    attempted = failed = 0.0
    for found in _NOTIFICATIONS.finditer(metrics):
        if f'integration="{integration}"' in found.group(2):
            if found.group(1):
                failed += float(found.group(3))
            else:
                attempted += float(found.group(3))
    return attempted, failed


def check_alert_receiver(
    config: PlatformConfig, kubectl: Kubectl, *, sleep: Callable[[float], None] = time.sleep, rounds: int = 12
) -> CheckResult:
    """Send a short-lived critical test alert through the running Alertmanager (amtool, from inside
    its pod) and watch its notification counters: each receiver (the alert topic's sns, and Slack or
    PagerDuty when named) is reachable when a notification was attempted and none failed."""
    settings = DEFINITION.settings(config)
    receiver = settings.alert_receiver
    wanted = ("sns", *((receiver.type,) if receiver else ()))
    namespace = DEFINITION.namespace_of(settings)
    pod = kubectl(
        ["get", "pods", "-n", namespace, "-l", ALERTMANAGER_SELECTOR, "-o", "jsonpath={.items[0].metadata.name}"]
    ).stdout.strip()
    if not pod:
        return CheckResult(RECEIVER_CHECK, False, f"no Alertmanager pod in {namespace}")

    def inside(*command: str) -> subprocess.CompletedProcess[str]:
        return kubectl(["exec", "-n", namespace, pod, "-c", ALERTMANAGER_CONTAINER, "--", *command])

    def counts() -> dict[str, tuple[float, float]]:
        metrics = inside("wget", "-qO-", f"{ALERTMANAGER_URL}/metrics").stdout
        return {integration: notification_counts(metrics, integration) for integration in wanted}

    before = counts()
    ends = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 300))
    labels = (f"alertname={TEST_ALERT}", "severity=critical")
    note = "--annotation=summary=make verify: a test alert, to check that alerts reach this receiver (no action)"
    sent = inside("amtool", "alert", "add", *labels, note, f"--end={ends}", f"--alertmanager.url={ALERTMANAGER_URL}")
    if sent.returncode != 0:
        return CheckResult(RECEIVER_CHECK, False, f"Alertmanager refused the test alert: {sent.stderr.strip()[:300]}")
    reached: set[str] = set()
    for round_ in range(rounds):
        sleep(15 if round_ else 0)
        for integration, (attempted, failed) in counts().items():
            if failed > before[integration][1]:
                fix = SNS_HINT if integration == "sns" or not receiver else f"check the Secret {receiver.secret_name}"
                log = f"kubectl logs -n {namespace} {pod} -c {ALERTMANAGER_CONTAINER}"
                detail = f"Alertmanager could not deliver to the {integration} receiver (see its log: {log}); {fix}"
                return CheckResult(RECEIVER_CHECK, False, detail)
            reached |= {integration} if attempted > before[integration][0] else set()
        if reached == set(wanted):
            return CheckResult(RECEIVER_CHECK, True, f"a test alert reached the {' and '.join(wanted)} receiver")
    missing = " and ".join(i for i in wanted if i not in reached)
    return CheckResult(RECEIVER_CHECK, False, f"no notification to {missing} within {rounds * 15} seconds")


def monitoring_checks(config: PlatformConfig) -> tuple[AcceptanceCheck, ...]:
    """The dashboards check, then the test alert (verify's read-only checks, in this order)."""

    def dashboards(check: CheckRun) -> CheckResult:
        return grafana_dashboards(config, check.kubectl)

    def receiver(check: CheckRun) -> CheckResult:
        return check_alert_receiver(config, check.kubectl, sleep=check.sleep)

    return (AcceptanceCheck(name=DASHBOARD_CHECK, run=dashboards), AcceptanceCheck(name=RECEIVER_CHECK, run=receiver))
