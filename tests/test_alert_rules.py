"""The platform's Prometheus rules, judged by promtool itself: they load, and each alert fires on
a recorded series that should fire it and stays silent on one that should not."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from addons.gpu_operator.rules import DRA_GPU_RULES, GPU_RULES
from components.node_monitoring import CRITICAL_XIDS
from tests.cases import IN_CI

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def promtool() -> str:
    found = os.environ.get("PROMTOOL") or (
        str(ROOT / ".tools/bin/promtool") if (ROOT / ".tools/bin/promtool").exists() else shutil.which("promtool")
    )
    if found is None:
        if IN_CI:
            pytest.fail("CI needs promtool (make test fetches it into .tools/bin)")
        pytest.skip("SKIPPING rule tests: promtool not found (make test fetches it)")
    return found


def xid(code: int, node: str = "gpu-node-1", gpu: str = "0", host_label: str = "Hostname") -> dict:
    """Five minutes of one GPU reporting `code` as its last XID (a gauge), every 30 s."""
    return {"series": f'DCGM_FI_DEV_XID_ERRORS{{gpu="{gpu}",{host_label}="{node}"}}', "values": f"{code}x10"}


def alerts(name: str, fired: list[dict]) -> dict:
    return {"eval_time": "5m", "alertname": name, "exp_alerts": fired}


RULES = {rule["alert"]: rule for group in GPU_RULES["groups"] for rule in group["rules"] if "alert" in rule}


def fired(alert: str, code: int, node: str = "gpu-node-1", gpu: str = "0", host_label: str = "Hostname") -> dict:
    """The alert as Prometheus would raise it for this series: its labels and its annotations
    with the series' values filled in (a label the series lacks prints empty)."""
    rule = RULES[alert]
    other = "hostname" if host_label == "Hostname" else "Hostname"
    annotations = {
        key: text.replace("{{ $labels.gpu }}", gpu)
        .replace(f"{{{{ $labels.{host_label} }}}}", node)
        .replace(f"{{{{ $labels.{other} }}}}", "")
        .replace("{{ $value }}", str(code))
        for key, text in rule.get("annotations", {}).items()
    }
    return {"exp_labels": {**rule["labels"], "gpu": gpu, host_label: node}, "exp_annotations": annotations}


def run(promtool: str, tmp_path: Path, tests: list[dict], rules: dict = GPU_RULES) -> subprocess.CompletedProcess[str]:
    """promtool's unit tests of `rules` (a rule file; default: device plugin mode's GPU rules)."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    (tmp_path / "tests.yaml").write_text(
        yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "30s", "tests": tests})
    )
    return subprocess.run(
        [promtool, "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("rules", [GPU_RULES, DRA_GPU_RULES], ids=["device-plugin", "dra"])
def test_the_rules_load(promtool, tmp_path, rules):
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    checked = subprocess.run(
        [promtool, "check", "rules", str(tmp_path / "rules.yaml")], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("code", CRITICAL_XIDS)
def test_every_fatal_xid_pages_as_critical_and_not_as_a_warning(promtool, tmp_path, code):
    result = run(
        promtool,
        tmp_path,
        [
            {
                "interval": "30s",
                "input_series": [xid(code)],
                "alert_rule_test": [
                    alerts("GpuCriticalXid", [fired("GpuCriticalXid", code)]),
                    alerts("GpuXidCodeReported", []),
                ],
            }
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("code", [13, 31, 43])  # application errors: a warning, never a page
def test_other_xids_warn_and_do_not_page(promtool, tmp_path, code):
    assert code not in CRITICAL_XIDS
    result = run(
        promtool,
        tmp_path,
        [
            {
                "interval": "30s",
                "input_series": [xid(code)],
                "alert_rule_test": [
                    alerts("GpuXidCodeReported", [fired("GpuXidCodeReported", code)]),
                    alerts("GpuCriticalXid", []),
                ],
            }
        ],
    )
    assert RULES["GpuXidCodeReported"]["labels"]["severity"] == "warning"
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_healthy_gpu_is_silent(promtool, tmp_path):
    result = run(
        promtool,
        tmp_path,
        [
            {
                "interval": "30s",
                "input_series": [xid(0)],
                "alert_rule_test": [alerts("GpuCriticalXid", []), alerts("GpuXidCodeReported", [])],
            }
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_wrong_expectation_fails(promtool, tmp_path):
    """The harness itself can fail: a healthy GPU is not a page."""
    result = run(
        promtool,
        tmp_path,
        [
            {
                "interval": "30s",
                "input_series": [xid(0)],
                "alert_rule_test": [alerts("GpuCriticalXid", [fired("GpuCriticalXid", 0)])],
            }
        ],
    )
    assert result.returncode != 0


def utilisation(values: str, namespace: str = "ml-team", pod: str = "train-0", gpu: str = "0") -> dict:
    """DCGM_FI_DEV_GPU_UTIL of one GPU as the exporter labels it (honorLabels keeps its pod and
    namespace: the pod the GPU is allocated to), every minute."""
    labels = f'gpu="{gpu}",Hostname="gpu-node-1",namespace="{namespace}",pod="{pod}"'
    return {"series": f"DCGM_FI_DEV_GPU_UTIL{{{labels}}}", "values": values}


IDLE_FIRED = {
    "exp_labels": {
        "severity": "warning",
        "gpu": "0",
        "Hostname": "gpu-node-1",
        "namespace": "ml-team",
        "pod": "train-0",
    },
    "exp_annotations": {
        "summary": "GPU 0 of pod ml-team/train-0 has been idle for 30 minutes",
        "description": RULES["GpuAllocatedIdle"]["annotations"]["description"],
    },
}


@pytest.mark.parametrize(
    ("values", "namespace", "at", "fires"),
    [
        ("0x40", "ml-team", "35m", True),  # allocated and idle for over 30 minutes
        ("0x40", "ml-team", "20m", False),  # idle, but not for long yet
        ("0x20 55x20", "ml-team", "35m", False),  # working again
        ("0x40", "gpu-operator", "35m", False),  # not allocated: the exporter's own labels
    ],
)
def test_an_allocated_gpu_idle_past_the_limit_warns_with_its_pod(promtool, tmp_path, values, namespace, at, fires):
    assert RULES["GpuAllocatedIdle"]["for"] == "30m"
    result = run(
        promtool,
        tmp_path,
        [
            {
                "interval": "1m",
                "input_series": [utilisation(values, namespace=namespace)],
                "alert_rule_test": [
                    {"eval_time": at, "alertname": "GpuAllocatedIdle", "exp_alerts": [IDLE_FIRED] if fires else []}
                ],
            }
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr


def idle_rule(group: dict) -> dict:
    return next(rule for rule in group["rules"] if rule.get("alert") == "GpuAllocatedIdle")


def test_the_idle_limit_is_the_profiles(synthesized):
    """The monitoring add-on's setting reaches the GPU Operator's rule (through the neutral alert
    tuning, addons/definition.py), for a profile that changes it and in the synthesized release."""
    from addons.gpu_operator.install import ADDON as GPU_OPERATOR
    from addons.monitoring.install import ADDON_RULES

    config = synthesized.configs["gpu-validation"]
    monitoring = config.addons.monitoring
    longer = monitoring.model_copy(update={"idle_gpu_alert_minutes": 45})
    changed = config.model_copy(update={"addons": config.addons.model_copy(update={"monitoring": longer})})
    (group,) = GPU_OPERATOR.monitors(changed.addons.gpu_operator, changed).rule_groups
    assert idle_rule(group)["for"] == "45m" and "45 minutes" in idle_rule(group)["annotations"]["summary"]
    release = next(
        body
        for body in synthesized.stack("gpu-validation", "addons")["resource"]["helm_release"].values()
        if body["name"] == "monitoring"
    )
    values = yaml.safe_load(release["values"][0])
    groups = {group["name"]: group for group in values["additionalPrometheusRulesMap"][ADDON_RULES]["groups"]}
    assert idle_rule(groups["gpu-platform"])["for"] == f"{monitoring.idle_gpu_alert_minutes}m"


@pytest.mark.parametrize("host_label", ["Hostname", "hostname"])
def test_the_page_names_the_node_with_either_exporters_host_label(promtool, tmp_path, host_label):
    """dcgm-exporter renamed Hostname to hostname after 4.5.3-4.8.2 (#655); the GPU Operator's pin
    deploys 4.6.0-4.8.3. The critical page must name the node with either."""
    code = CRITICAL_XIDS[0]
    expected = fired("GpuCriticalXid", code, host_label=host_label)
    assert "gpu-node-1" in expected["exp_annotations"]["summary"]
    result = run(
        promtool,
        tmp_path,
        [
            {
                "interval": "30s",
                "input_series": [xid(code, host_label=host_label)],
                "alert_rule_test": [alerts("GpuCriticalXid", [expected])],
            }
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr


def gpu_gauge(metric: str, values: str) -> dict:
    return {"series": f'{metric}{{gpu="0",Hostname="gpu-node-1"}}', "values": values}


def node_gpus(capacity: str, allocatable: str) -> list[dict]:
    labels = 'node="gpu-node-1",resource="nvidia_com_gpu",unit="integer"'
    return [
        {"series": f"kube_node_status_capacity{{{labels}}}", "values": capacity},
        {"series": f"kube_node_status_allocatable{{{labels}}}", "values": allocatable},
    ]


def taint(key: str, values: str) -> dict:
    labels = f'node="gpu-node-1",key="{key}",value="failed",effect="NoSchedule"'
    return {"series": f"kube_node_spec_taint{{{labels}}}", "values": values}


def expected(alert: str, labels: dict[str, str], value: str) -> dict:
    """The alert as Prometheus raises it: the rule's labels, the series' labels, and the annotations
    with the series' labels and value filled in (a label the series lacks prints empty)."""
    rule = RULES[alert]
    annotations = {}
    for key, template in rule["annotations"].items():
        text = template.replace("{{ $value }}", value)
        for name in ("gpu", "node", "Hostname", "hostname"):
            text = text.replace(f"{{{{ $labels.{name} }}}}", labels.get(name, ""))
        annotations[key] = text
    return {"exp_labels": {**rule["labels"], **labels}, "exp_annotations": annotations}


def rows(pod: str, values: str) -> dict:
    """One GPU's uncorrectable remapped-row count as the exporter labels it while `pod` holds it."""
    labels = f'gpu="0",UUID="GPU-1a2b",Hostname="gpu-node-1",namespace="ml-team",pod="{pod}"'
    return {"series": f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{labels}}}", "values": values}


GPU_UUID = {"gpu": "0", "UUID": "GPU-1a2b", "Hostname": "gpu-node-1"}
NODE = {"node": "gpu-node-1"}  # node:gpus_capacity:sum and node:gpus_allocatable:sum keep only the node
GPU = {"gpu": "0", "Hostname": "gpu-node-1"}
HARDWARE_CASES = [
    # (alert, input series, eval time, the alert it raises or None)
    ("GpuAllocatableDropped", node_gpus("8x20", "8x5 7x15"), "15m", (NODE, "1")),  # unhealthy for over 5 minutes
    ("GpuAllocatableDropped", node_gpus("8x20", "8x5 7x2 8x13"), "15m", None),  # a blip that recovered
    ("GpuAllocatableDropped", node_gpus("8x20", "8x20"), "15m", None),
    ("GpuRowRemapFailed", [gpu_gauge("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0x5 1x15")], "10m", (GPU, "1")),
    ("GpuRowRemapFailed", [gpu_gauge("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0x20")], "10m", None),
    ("GpuUncorrectableMemoryError", [rows("job-a", "2x5 3x15")], "10m", (GPU_UUID, "1")),
    # The usual case: the error ends the job, and the higher count appears on the exporter's own
    # series (a GPU without a pod); comparing per series would never see the rise.
    ("GpuUncorrectableMemoryError", [rows("job-a", "2x5 _x15"), rows("", "_x6 3x14")], "10m", (GPU_UUID, "1")),
    # Rows remapped long ago (a count that no longer moves) are history, not a new error.
    ("GpuUncorrectableMemoryError", [rows("job-a", "2x90")], "80m", None),
    # The health check's quarantine taint, as kube-state-metrics reports it (one series per taint).
    ("GpuNodeQuarantined", [taint("platform/gpu-health", "_x3 1x10")], "10m", ({"node": "gpu-node-1"}, "1")),
    ("GpuNodeQuarantined", [taint("platform/gpu-health", "_x5 1 _x10")], "5m", None),  # just set: pending
    ("GpuNodeQuarantined", [taint("platform/gpu-health", "1x2 _x10")], "10m", None),  # lifted long ago
    ("GpuNodeQuarantined", [taint("nvidia.com/gpu", "1x20")], "10m", None),  # the GPU taint every GPU node has
]


@pytest.mark.parametrize(("alert", "series", "at", "raised"), HARDWARE_CASES)
def test_gpu_hardware_faults_page_as_critical(promtool, tmp_path, alert, series, at, raised):
    assert RULES[alert]["labels"]["severity"] == "critical"  # routed to the receiver (test_alert_receiver)
    exp_alerts = [expected(alert, *raised)] if raised else []
    test = {
        "interval": "1m",
        "input_series": series,
        "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": exp_alerts}],
    }
    result = run(promtool, tmp_path, [test])
    assert result.returncode == 0, result.stdout + result.stderr
