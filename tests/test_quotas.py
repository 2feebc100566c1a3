"""Every namespace with a ResourceQuota admits the pods the platform puts there: a quota on
requests rejects any container that states none, so each such namespace has a LimitRange with
default requests, and the platform's own pods there (Argo's controller, server and executor)
state theirs, within the quota."""

from __future__ import annotations

import pytest
import yaml

from tests.cases import FIXTURES, SHIPPED
from tests.synth_helpers import resources

ALL = SHIPPED + FIXTURES
# Helm values paths of the containers each chart runs in its release namespace.
CHART_CONTAINERS = {"argo-workflows": ("controller", "server", "executor")}


def objects(stack: dict) -> list[dict]:
    """Kubernetes objects of a stack, whether written as kubernetes_manifest or as typed resources."""
    found = [b["manifest"] for b in resources(stack, "kubernetes_manifest").values() if isinstance(b["manifest"], dict)]
    for kind, resource_type in (
        ("ResourceQuota", "kubernetes_resource_quota_v1"),
        ("LimitRange", "kubernetes_limit_range_v1"),
    ):
        found += [{"kind": kind, **body} for body in resources(stack, resource_type).values()]
    return found


def cpu(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


def memory_mib(quantity: str) -> float:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
    return next(float(quantity[: -len(u)]) * f for u, f in units.items() if quantity.endswith(u))


def quota_namespaces(synthesized, profile: str) -> dict[str, tuple[dict, list[dict]]]:
    """namespace -> (its ResourceQuota's hard limits, its LimitRanges)."""
    found = objects(synthesized.stack(profile, "addons")) + objects(synthesized.stack(profile, "workloads"))
    return {
        q["metadata"]["namespace"]: (
            q["spec"]["hard"],
            [
                o
                for o in found
                if o["kind"] == "LimitRange" and o["metadata"]["namespace"] == q["metadata"]["namespace"]
            ],
        )
        for q in found
        if q["kind"] == "ResourceQuota"
    }


@pytest.mark.parametrize("profile", ALL)
def test_every_quota_namespace_gives_containers_default_requests(synthesized, profile):
    namespaces = quota_namespaces(synthesized, profile)
    assert namespaces, "every profile has at least one tenant"
    for namespace, (hard, limit_ranges) in namespaces.items():
        counted = {key.removeprefix("requests.") for key in hard if key in ("requests.cpu", "requests.memory")}
        defaults = {
            key
            for lr in limit_ranges
            for limit in lr["spec"]["limits"]
            if limit["type"] == "Container"
            for key in limit.get("defaultRequest", {})
        }
        assert counted <= defaults, f"{namespace}: the quota counts {counted} but no default request covers them"


@pytest.mark.parametrize("profile", ALL)
def test_the_platforms_own_pods_state_requests_within_the_quota(synthesized, profile):
    namespaces = quota_namespaces(synthesized, profile)
    for release in resources(synthesized.stack(profile, "addons"), "helm_release").values():
        if release["namespace"] not in namespaces:
            continue
        hard, _ = namespaces[release["namespace"]]
        values = yaml.safe_load(release["values"][0])
        components = CHART_CONTAINERS.get(release["name"])
        assert components, f"{release['name']} runs in quota'd namespace {release['namespace']}: list its containers"
        total_cpu = total_memory = 0.0
        for component in components:
            requests = values[component]["resources"]["requests"]
            total_cpu += cpu(requests["cpu"])
            total_memory += memory_mib(requests["memory"])
        assert total_cpu <= cpu(hard["requests.cpu"]) and total_memory <= memory_mib(hard["requests.memory"])


def test_a_gpu_fleet_larger_than_the_threshold_is_warned_about_with_its_sizes():
    """400 GPU nodes (a typo for 40, under EKS's 450 per managed group) pass validation, as a real
    large fleet must, but every synthesis, plan and cost prints a warning naming the groups and the
    setting that silences it."""
    from pathlib import Path

    from profiles import validate_profile
    from profiles.quotas import node_count_warnings
    from tests.test_profiles import changed

    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "profiles" / "p5-training.yaml").read_text())
    assert node_count_warnings(validate_profile(doc)) == []
    typo = validate_profile(changed(doc, cluster__gpu_node_groups__0__max_size=400))
    (warning,) = node_count_warnings(typo)
    assert "400 nodes (3200 GPUs)" in warning and "p5-efa 400 x p5.48xlarge" in warning
    assert "cluster.gpu_node_warning_threshold (16)" in warning
    meant = validate_profile(
        changed(doc, cluster__gpu_node_groups__0__max_size=400, cluster__gpu_node_warning_threshold=400)
    )
    assert node_count_warnings(meant) == []
