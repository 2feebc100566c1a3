"""A training job whose pods stop making progress raises an alert, judged by promtool: the kubelet's
probe counter for the runtime's liveness probe on the progress file (addons/trainer/alerts.py) is
fed as the kubelet serves it, through a stall, the kill and the pod's removal; and the rule reaches
Prometheus through the monitoring add-on and pages like the GPU faults."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from addons.trainer.alerts import TRAINING_PROGRESS_STALLED, WINDOW_MINUTES, progress_rules
from addons.trainer.runtimes import (
    PROGRESS_TIMEOUT_SECONDS,
    TRAINER_CONTAINER,
    TenantVolumes,
    progress_probe,
    torch_runtime,
)
from tests.test_alert_rules import promtool  # noqa: F401 (a fixture)

POD = {"namespace": "ml-team", "pod": "llama-node-0-0-x7k2p"}
LABELS = f'namespace="{POD["namespace"]}", pod="{POD["pod"]}", pod_uid="0f9c", job="kubelet"'


def probe_series(result: str, values: str, *, container: str = TRAINER_CONTAINER, kind: str = "Liveness") -> dict:
    return {
        "series": f'prober_probe_total{{probe_type="{kind}", result="{result}", container="{container}", {LABELS}}}',
        "values": values,
    }


# Every 30 s (the evaluation and scrape interval): the probe runs once a minute and passes for 35
# minutes (the file is fresh), then fails three times, a minute apart, and the pod is killed: the
# kubelet drops the pod's series.
HEALTHY_MINUTES = 35
PASSING = probe_series("successful", f"1+0.5x{2 * HEALTHY_MINUTES} _x20")
STALLED = probe_series("failed", f"_x{2 * HEALTHY_MINUTES} 1 1 2 2 3 3 stale")


def rule_text() -> dict:
    return next(r for r in progress_rules()["rules"] if r["alert"] == TRAINING_PROGRESS_STALLED)


def fired() -> dict:
    rule = rule_text()
    annotations = {
        key: text.replace("{{ $labels.namespace }}", POD["namespace"]).replace("{{ $labels.pod }}", POD["pod"])
        for key, text in rule["annotations"].items()
    }
    return {"exp_labels": {**rule["labels"], **POD}, "exp_annotations": annotations}


def judged(promtool: str, tmp_path: Path, series: list[dict], expected: list[tuple[str, list[dict]]]):  # noqa: F811
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": [progress_rules()]}))
    tests = [
        {
            "interval": "30s",
            "input_series": series,
            "alert_rule_test": [
                {"eval_time": at, "alertname": TRAINING_PROGRESS_STALLED, "exp_alerts": alerts}
                for at, alerts in expected
            ],
        }
    ]
    (tmp_path / "tests.yaml").write_text(
        yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "30s", "tests": tests})
    )
    return subprocess.run(
        [promtool, "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


def test_the_rule_loads(promtool, tmp_path):  # noqa: F811
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": [progress_rules()]}))
    checked = subprocess.run(
        [promtool, "check", "rules", str(tmp_path / "rules.yaml")], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_stalled_pod_pages_from_its_second_failed_probe_until_the_window_after_its_kill(promtool, tmp_path):  # noqa: F811
    result = judged(
        promtool,
        tmp_path,
        [PASSING, STALLED],
        [
            (f"{HEALTHY_MINUTES - 1}m", []),  # progressing: nothing
            (f"{HEALTHY_MINUTES + 1}m", [fired()]),  # the second failure is an increase
            (f"{HEALTHY_MINUTES + 2}m30s", [fired()]),  # killed: the gang restarts, the page stands
            (f"{HEALTHY_MINUTES + 3 + WINDOW_MINUTES}m", []),  # the pod is gone for a window: resolved
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_healthy_pods_other_containers_and_readiness_failures_stay_silent(promtool, tmp_path):  # noqa: F811
    result = judged(
        promtool,
        tmp_path,
        [
            PASSING,
            probe_series("failed", f"_x{2 * HEALTHY_MINUTES} 1 1 2 2 3 3", container="log-shipper"),
            probe_series("failed", f"_x{2 * HEALTHY_MINUTES} 1 2 3 4 5 6", kind="Readiness"),
        ],
        [(f"{HEALTHY_MINUTES - 1}m", []), (f"{HEALTHY_MINUTES + 2}m", [])],
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_probe_that_fails_once_is_no_stall_yet_but_a_second_one_is(promtool, tmp_path):  # noqa: F811
    """The first failure creates the failed series at 1 (no increase yet); the second is within the
    window of the first, since three failures a minute apart end the pod."""
    result = judged(
        promtool,
        tmp_path,
        [PASSING, probe_series("failed", f"_x{2 * HEALTHY_MINUTES} 1 1 1 1")],
        [(f"{HEALTHY_MINUTES + 1}m30s", [])],
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_alert_watches_the_probe_the_runtimes_set():
    """The rule's container and window follow the runtime's probe: the node container, and every
    failure before the kill inside one window."""
    from addons.trainer import TrainerConfig
    from profiles import validate_profile
    from tests.test_profiles import mutated

    config = validate_profile(mutated())
    group = config.cluster.gpu_node_groups[0]
    runtime = torch_runtime(group, TrainerConfig(), TenantVolumes(fsx=True, checkpoints=True), efa_image="img:1")
    (job,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    (container,) = job["template"]["spec"]["template"]["spec"]["containers"]
    assert container["name"] == TRAINER_CONTAINER and container["livenessProbe"] == progress_probe()
    probe = progress_probe()
    assert probe["failureThreshold"] * probe["periodSeconds"] < WINDOW_MINUTES * 60
    assert str(PROGRESS_TIMEOUT_SECONDS // 60) in rule_text()["annotations"]["summary"]


def test_the_monitoring_release_loads_the_rule_and_routes_it_to_the_alert_topic(synthesized):
    from addons.monitoring.alerting import CRITICAL_RECEIVER
    from addons.monitoring.install import ADDON_RULES
    from tests.synth_helpers import resources

    (release,) = [
        r
        for r in resources(synthesized.stack("gpu-validation", "addons"), "helm_release").values()
        if r["name"] == "monitoring"
    ]
    values = yaml.safe_load(release["values"][0])
    groups = values["additionalPrometheusRulesMap"][ADDON_RULES]["groups"]
    assert progress_rules() in groups
    critical = next(
        r for r in values["alertmanager"]["config"]["route"]["routes"] if r["receiver"] == CRITICAL_RECEIVER
    )
    assert critical["matchers"] == ['severity=~"critical"'] and rule_text()["labels"]["severity"] == "critical"
