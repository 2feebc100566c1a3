"""The platform's Grafana dashboards: provisioned where Grafana's sidecar looks, read back by
Terraform as the exact JSON, every query parsed by promtool, and every metric a query reads present
in the exporters the platform pins (the metric contract, plus the platform's own recording rules)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

from addons.gpu_operator.dashboards import DASHBOARDS as GPU_DASHBOARDS
from addons.gpu_operator.rules import GPU_RULES
from addons.karpenter import DEFINITION as KARPENTER
from addons.karpenter.dashboards import DASHBOARDS as KARPENTER_DASHBOARDS
from addons.kuberay import DEFINITION as KUBERAY
from addons.kuberay.dashboards import DASHBOARDS as RAY_DASHBOARDS
from addons.kueue.dashboards import DASHBOARDS as QUEUE_DASHBOARDS
from addons.monitoring.dashboards import DASHBOARDS as EFA_DASHBOARDS
from components.dashboards import DASHBOARD_LABEL, metric_names, queries
from tests.cases import SHIPPED, profiles_where
from tests.synth_helpers import resources
from tests.test_alert_rules import promtool  # noqa: F401 (the fixture)
from tests.test_metric_contract import CONTRACT

ALL_DASHBOARDS = GPU_DASHBOARDS + QUEUE_DASHBOARDS + EFA_DASHBOARDS + KARPENTER_DASHBOARDS + RAY_DASHBOARDS
RECORDED = {rule["record"] for group in GPU_RULES["groups"] for rule in group["rules"] if "record" in rule}


def kueue_metrics() -> set[str]:
    return set(CONTRACT["kueue"]["metrics"])


def provided() -> set[str]:
    dcgm = {name for read in CONTRACT["dcgm-exporter"]["read_at"].values() for name in read["metrics"]}
    efa = set(CONTRACT["efa-textfile"]["metrics"])
    karpenter, ray = set(CONTRACT["karpenter"]["metrics"]), set(CONTRACT["ray"]["metrics"])
    return dcgm | set(CONTRACT["kube-state-metrics"]["metrics"]) | kueue_metrics() | efa | karpenter | ray | RECORDED


def series_names(name: str) -> set[str]:
    """A histogram is read through its _bucket, _sum and _count series."""
    return {name, re.sub(r"_(bucket|sum|count)$", "", name)}


@pytest.mark.parametrize("model", ALL_DASHBOARDS, ids=lambda m: m["uid"])
def test_every_metric_a_panel_reads_exists_at_the_pinned_versions(model):
    for expr in queries(model):
        for name in metric_names(expr):
            assert series_names(name) & provided(), f"{model['uid']}: {name} in {expr!r} is in no recorded exporter"


@pytest.mark.parametrize("model", ALL_DASHBOARDS, ids=lambda m: m["uid"])
def test_panels_are_complete_and_read_the_chosen_data_source(model):
    panels = [panel for panel in model["panels"] if panel["type"] != "row"]
    assert panels and len({panel["id"] for panel in model["panels"]}) == len(model["panels"])
    assert {variable["name"] for variable in model["templating"]["list"]} == {"datasource"}
    for panel in panels:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        ref_ids = [target["refId"] for target in panel["targets"]]
        assert ref_ids and len(set(ref_ids)) == len(ref_ids) and all(ref_ids), panel["title"]


def test_promtool_parses_every_query(promtool, tmp_path):  # noqa: F811
    """Each query as the expression of a recording rule: promtool refuses one it cannot parse."""
    rules = [
        {"record": f"dashboard:query_{index}", "expr": expr}
        for index, expr in enumerate(expr for model in ALL_DASHBOARDS for expr in queries(model))
    ]
    (tmp_path / "queries.yaml").write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    checked = subprocess.run(
        [promtool, "check", "rules", str(tmp_path / "queries.yaml")], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (tmp_path / "broken.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "x", "rules": [{"record": "x:y", "expr": "sum by (a (b)"}]}]})
    )
    assert subprocess.run([promtool, "check", "rules", str(tmp_path / "broken.yaml")], capture_output=True).returncode


def dashboard_maps(synthesized, profile: str) -> dict[str, dict]:
    stack = synthesized.stack(profile, "addons")
    return {
        m["metadata"]["name"]: m
        for body in resources(stack, "kubernetes_manifest").values()
        if isinstance(m := body["manifest"], dict)
        and m.get("kind") == "ConfigMap"
        and m["metadata"].get("labels", {}).get(DASHBOARD_LABEL[0]) == DASHBOARD_LABEL[1]
    }


@pytest.mark.parametrize("profile", profiles_where(lambda c: c.addons.monitoring.enabled))
def test_dashboards_are_provisioned_for_the_addons_that_run(synthesized, profile):
    config = synthesized.configs[profile]
    maps = dashboard_maps(synthesized, profile)
    expected = {"dashboard-efa-network"}
    if config.addons.gpu_operator.enabled:
        expected |= {"dashboard-gpu-fleet", "dashboard-gpu-tenants"}
    if config.addons.kueue.enabled:
        expected.add("dashboard-gpu-queues")
    if KARPENTER.enabled(config):
        expected.add("dashboard-karpenter")
    if KUBERAY.enabled(config):
        expected.add("dashboard-ray-clusters")
    assert set(maps) == expected
    assert {m["metadata"]["namespace"] for m in maps.values()} <= {"monitoring"}
    stack = synthesized.stack(profile, "addons")
    release = next(r for r in resources(stack, "helm_release").values() if r["chart"] == "kube-prometheus-stack")
    sidecar = yaml.safe_load(release["values"][0])["grafana"]["sidecar"]["dashboards"]
    assert (sidecar["enabled"], sidecar["label"], sidecar["labelValue"]) == (True, *DASHBOARD_LABEL)
    assert sidecar["searchNamespace"] == "monitoring"  # not the chart's ALL: no other namespace's ConfigMap


def test_terraform_reads_the_dashboard_json_back_exactly(synthesized, terraform, tmp_path):
    """Grafana's ${datasource} must reach the ConfigMap as text, not be read as a Terraform reference."""
    maps = dashboard_maps(synthesized, "gpu-validation")
    outputs = {name.replace("-", "_"): {"value": next(iter(m["data"].values()))} for name, m in maps.items()}
    (tmp_path / "main.tf.json").write_text(json.dumps({"output": outputs}))
    assert terraform.run(tmp_path, "init", "-backend=false", "-input=false", "-no-color").returncode == 0
    applied = terraform.run(tmp_path, "apply", "-auto-approve", "-input=false", "-no-color")
    assert applied.returncode == 0, applied.stderr
    shown = json.loads(terraform.run(tmp_path, "output", "-json").stdout)
    by_uid = {model["uid"]: model for model in ALL_DASHBOARDS}
    for name, body in shown.items():
        model = json.loads(body["value"])
        assert model == by_uid[model["uid"]] and name == f"dashboard_{model['uid']}".replace("-", "_")


def test_the_shipped_profiles_all_get_the_gpu_dashboards():
    assert set(SHIPPED) <= set(profiles_where(lambda c: c.addons.monitoring.enabled and c.addons.gpu_operator.enabled))


def test_queue_gauges_are_read_from_the_leader_only():
    """Both Kueue replicas export the queue gauges (replica_role leader or follower): summed over
    both, every figure would be doubled."""
    for expr in queries(QUEUE_DASHBOARDS[0]):
        if "histogram_quantile" not in expr:
            assert 'replica_role="leader"' in expr, expr


def test_every_dashboard_has_its_docs_page_in_sync(tmp_path):
    """docs/dashboards/ holds a page per dashboard, written from the dashboards' code: each panel
    with its queries and the metrics they read. A changed dashboard without `make dashboard-docs`
    fails here."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("dashboard_docs", root / "scripts" / "dashboard_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pages = module.pages()
    assert set(pages) == {f"{model['uid']}.md" for model in ALL_DASHBOARDS} | {"README.md"}
    folder = root / "docs" / "dashboards"
    assert {path.name for path in folder.glob("*.md")} == set(pages), "run `make dashboard-docs`"
    for name, text in pages.items():
        assert (folder / name).read_text() == text, f"docs/dashboards/{name} is stale: run `make dashboard-docs`"
    karpenter = pages["karpenter.md"]
    assert "### GPUs launched and limit" in karpenter and "reads `karpenter_nodepools_usage`" in karpenter
