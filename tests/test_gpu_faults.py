"""A GPU failing is detected, alerted and repaired: the EKS node monitoring agent on every profile
with GPU nodes, one DCGM host engine per GPU node (the agent's, shared with the GPU Operator's
exporter), the alert's fatal XIDs equal to the agent's, and Karpenter's node repair on."""

from __future__ import annotations

import json
import re

import pytest

from components.node_monitoring import (
    AGENT_ADDON,
    CRITICAL_XIDS,
    DCGM_INSTANCE_TYPES,
    HOST_ENGINE,
    agent_host_engine_on,
)
from profiles.catalog import CATALOG
from tests.cases import FIXTURES, SHIPPED, profile_config, profiles_where
from tests.synth_helpers import resources

ALL = SHIPPED + FIXTURES
CONFIGS = {name: profile_config(name) for name in ALL}
WITH_GPU_OPERATOR = profiles_where(lambda c: bool(c.cluster.gpu_node_groups) and c.addons.gpu_operator.enabled)
WITH_KARPENTER = profiles_where(lambda c: c.addons.karpenter.enabled)


def addons(synthesized, profile: str) -> dict[str, dict]:
    return {b["addon_name"]: b for b in resources(synthesized.stack(profile, "cluster"), "aws_eks_addon").values()}


def helm_values(synthesized, profile: str, release: str) -> dict:
    import yaml

    (body,) = [
        b for b in resources(synthesized.stack(profile, "addons"), "helm_release").values() if b["name"] == release
    ]
    merged: dict = {}
    for document in body.get("values", []):
        merged.update(yaml.safe_load(document) or {})
    return merged


@pytest.mark.parametrize("profile", ALL)
def test_every_profile_with_gpu_nodes_runs_the_node_monitoring_agent_on_them(synthesized, profile):
    config = synthesized.configs[profile]
    installed = addons(synthesized, profile)
    if not config.cluster.gpu_node_groups:
        assert AGENT_ADDON not in installed
        return
    agent = installed[AGENT_ADDON]
    configuration = json.loads(agent["configuration_values"])
    # Its host engine must land on tainted GPU nodes (the agent's own pods tolerate everything).
    assert {"operator": "Exists"} in configuration["dcgmAgent"]["tolerations"]
    for group in config.cluster.gpu_node_groups:
        assert group.instance_type in DCGM_INSTANCE_TYPES, f"the agent runs no host engine on {group.instance_type}"


def test_the_agents_host_engine_runs_on_every_catalog_gpu_type():
    assert set(CATALOG) <= DCGM_INSTANCE_TYPES


def host_engines(values: dict, *, agent_on_node: bool) -> int:
    """nv-hostengine processes on one GPU node, as GPU Operator v26.7.0's TransformDCGMExporter
    decides: a standalone `nvidia-dcgm` when dcgm.enabled; else the exporter embeds its own
    unless DCGM_REMOTE_HOSTENGINE_INFO names a remote one; plus the agent's dcgm-server."""
    standalone = bool(values.get("dcgm", {}).get("enabled", False))
    exporter = values.get("dcgmExporter", {})
    remote = any(e["name"] == "DCGM_REMOTE_HOSTENGINE_INFO" for e in exporter.get("env", []))
    embedded = exporter.get("enabled", True) and not standalone and not remote
    return int(standalone) + int(embedded) + int(agent_on_node)


def test_the_host_engine_model_counts_two_for_the_operators_defaults():
    assert host_engines({}, agent_on_node=True) == 2  # why the platform sets the exporter's remote engine


@pytest.mark.parametrize("profile", WITH_GPU_OPERATOR)
def test_each_gpu_node_has_exactly_one_dcgm_host_engine(synthesized, profile):
    """On every GPU node of every profile: the agent's engine where the agent schedules one (amd64
    nodes), else the exporter's own (arm64, P6e-GB200)."""
    values = helm_values(synthesized, profile, "gpu-operator")
    for group in synthesized.configs[profile].cluster.gpu_node_groups:
        on_node = agent_host_engine_on(group.catalog_entry.architecture)
        assert host_engines(values, agent_on_node=on_node) == 1, (profile, group.name)
    remote = {"name": "DCGM_REMOTE_HOSTENGINE_INFO", "value": HOST_ENGINE}
    assert (remote in values["dcgmExporter"].get("env", [])) == (values["dcgmExporter"].get("hostNetwork") is True)


def test_the_agent_runs_no_host_engine_on_arm64_nodes():
    assert agent_host_engine_on("x86_64") and not agent_host_engine_on("arm64")


def test_a_profile_mixing_architectures_runs_the_exporters_own_engine():
    """One exporter setting for all GPU nodes: with an arm64 group (no agent engine there) it embeds
    its own everywhere, so each x86_64 node runs two (a documented limit, docs/gb200.md)."""
    from components.node_monitoring import agent_engine_on_every_gpu_node

    assert agent_engine_on_every_gpu_node(["x86_64", "x86_64"])
    assert not agent_engine_on_every_gpu_node(["x86_64", "arm64"])
    assert not agent_engine_on_every_gpu_node(["arm64"]) and not agent_engine_on_every_gpu_node([])


def _codes(expr: str) -> list[int]:
    return [int(code) for code in re.findall(r"gpu:xid_errors:last == (\d+)", expr)]


def test_the_fatal_xid_alert_pages_for_exactly_the_agents_fatal_xids():
    from addons.gpu_operator.rules import GPU_RULES

    rules = {r.get("alert"): r for group in GPU_RULES["groups"] for r in group["rules"] if "alert" in r}
    critical = rules["GpuCriticalXid"]
    assert critical["labels"]["severity"] == "critical"
    assert sorted(_codes(critical["expr"])) == sorted(CRITICAL_XIDS)
    assert 79 in CRITICAL_XIDS and 48 in CRITICAL_XIDS  # fallen off the bus; double-bit ECC
    # Every other XID still warns.
    assert "unless" in rules["GpuXidCodeReported"]["expr"] and sorted(
        _codes(rules["GpuXidCodeReported"]["expr"])
    ) == sorted(CRITICAL_XIDS)


@pytest.mark.parametrize("profile", WITH_KARPENTER)
def test_karpenter_replaces_nodes_with_unhealthy_conditions(synthesized, profile):
    assert helm_values(synthesized, profile, "karpenter")["settings"]["featureGates"] == {"nodeRepair": True}


def test_the_profile_lists_are_not_empty():
    assert WITH_GPU_OPERATOR and WITH_KARPENTER


@pytest.mark.parametrize("profile", [p for p, c in CONFIGS.items() if c.addons.monitoring.enabled])
def test_no_target_that_eks_never_exposes_and_ray_is_scraped(synthesized, profile):
    values = helm_values(synthesized, profile, "monitoring")
    for component in ("kubeControllerManager", "kubeScheduler", "kubeEtcd", "kubeProxy"):
        assert values[component] == {"enabled": False}, component
    monitors = {m["name"]: m for m in values["prometheus"].get("additionalPodMonitors", [])}
    if CONFIGS[profile].addons.kuberay.enabled:
        ray = monitors["ray"]
        assert ray["namespaceSelector"] == {"any": True}
        assert ray["podMetricsEndpoints"] == [{"port": "metrics", "interval": "30s"}]
    else:
        assert "ray" not in monitors
