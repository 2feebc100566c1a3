"""Every metric the platform's rules read exists in the exporter that should provide it, as
recorded from the exporters' sources (tests/fixtures/metrics/contract.json, with versions): a
renamed or dropped metric would otherwise silently turn an alert off."""

from __future__ import annotations

import json
from pathlib import Path

from addons.gpu_operator.rules import DRA_GPU_RULES, GPU_RULES
from addons.trainer.alerts import progress_rules
from components.dashboards import metric_names

CONTRACT = json.loads((Path(__file__).parent / "fixtures" / "metrics" / "contract.json").read_text())


# The add-ons' rule groups: the GPU Operator's in both modes (device plugin, DRA) and the Trainer's
# progress alert.
RULE_GROUPS = [*GPU_RULES["groups"], *DRA_GPU_RULES["groups"], progress_rules()]


def rule_metrics() -> list[tuple[str, set[str]]]:
    return [
        (rule.get("alert") or rule["record"], metric_names(rule["expr"]))
        for group in RULE_GROUPS
        for rule in group["rules"]
    ]


def provided() -> dict[str, set[str]]:
    """Metric -> the exporter versions that provide it."""
    by_metric: dict[str, set[str]] = {}
    for version, read in CONTRACT["dcgm-exporter"]["read_at"].items():
        for name in read["metrics"]:
            by_metric.setdefault(name, set()).add(f"dcgm-exporter {version}")
    for exporter in ("kube-state-metrics", "kubelet"):
        for name in CONTRACT[exporter]["metrics"]:
            by_metric.setdefault(name, set()).add(exporter)
    return by_metric


def test_the_name_reader_finds_metrics_and_skips_functions_and_labels():
    expr = 'count by (namespace) (max by (namespace, pod) (kube_pod_status_phase{phase="Pending"} == 1))'
    assert metric_names(expr) == {"kube_pod_status_phase"}
    assert metric_names("delta(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[15m]) > 0") == {
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
    }
    assert metric_names("DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)") == {
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
    }
    # label_replace's arguments and raw-string matchers are strings, not metrics.
    assert metric_names('count by (node) (label_replace(up, "node", "$1", "Hostname", "(.+)"))') == {"up"}
    assert metric_names("kube_node_labels{label_x=~`a\\.b|c`} * 8") == {"kube_node_labels"}


def test_every_metric_a_rule_reads_is_provided_by_every_recorded_exporter_version():
    recorded = provided()
    dcgm_versions = {f"dcgm-exporter {v}" for v in CONTRACT["dcgm-exporter"]["read_at"]}
    # A series the platform records itself is checked where it is recorded (its own rule here).
    platform_records = {rule["record"] for group in RULE_GROUPS for rule in group["rules"] if "record" in rule}
    for rule, names in rule_metrics():
        assert names, f"{rule}: no metric found in its expression"
        for name in names - platform_records:
            assert name in recorded, f"{rule} reads {name}, which no recorded exporter provides"
            if name.startswith("DCGM_"):
                # Enabled by default in every recorded version (the GPU Operator passes no counter list).
                assert recorded[name] == dcgm_versions, (rule, name, recorded[name])


def test_annotations_name_the_host_with_every_recorded_host_label():
    labels = {read["host_label"] for read in CONTRACT["dcgm-exporter"]["read_at"].values()}
    assert labels == {"Hostname", "hostname"}
    for group in RULE_GROUPS:
        for rule in group["rules"]:
            summary = rule.get("annotations", {}).get("summary", "")
            if "$labels.Hostname" in summary or "$labels.hostname" in summary:
                assert all(f"$labels.{label}" in summary for label in labels), rule.get("alert")
