"""GPU Operator DRA mode end to end (the jark fixture): the device plugin is off, so no object may
request the extended resource nvidia.com/gpu; GPUs come from ResourceClaimTemplates of the NVIDIA
DRA driver's device class in every namespace that uses them, and quotas count those devices."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from components.k8s.gpus import GPU_DEVICE_CLASS
from manifests.render import render
from tests.synth_helpers import resources

DRA_QUOTA = f"{GPU_DEVICE_CLASS}.deviceclass.resource.k8s.io/devices"


def everything(synthesized, profile: str) -> list[dict[str, Any]]:
    """Kubernetes objects and Helm values the platform renders for a profile."""
    found: list[dict[str, Any]] = []
    for layer in ("addons", "workloads"):
        stack = synthesized.stack(profile, layer)
        found += [
            b["manifest"] for b in resources(stack, "kubernetes_manifest").values() if isinstance(b["manifest"], dict)
        ]
        found += [{"helm-values": yaml.safe_load(r["values"][0])} for r in resources(stack, "helm_release").values()]
    for objects in render(synthesized.configs[profile]).values():
        found += objects
    return found


def keys_with_path(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*path, key), key
            yield from keys_with_path(value, (*path, key))
    elif isinstance(node, list):
        for item in node:
            yield from keys_with_path(item, path)


def extended_resource_uses(obj: dict[str, Any]) -> list[tuple[str, ...]]:
    # A NodePool's limits cap the GPUs Karpenter launches (from the instance types), they request nothing.
    return [
        path
        for path, key in keys_with_path(obj)
        if key.endswith("nvidia.com/gpu") and not (obj.get("kind") == "NodePool" and path[:2] == ("spec", "limits"))
    ]


def test_the_dra_fixture_requests_no_extended_gpu_resource(synthesized):
    assert synthesized.configs["jark"].addons.gpu_operator.dra
    uses = [
        (obj.get("kind", "helm values"), path)
        for obj in everything(synthesized, "jark")
        for path in extended_resource_uses(obj)
    ]
    assert uses == []


def test_without_dra_the_extended_resource_is_used(synthesized):
    uses = [path for obj in everything(synthesized, "g6-validation") for path in extended_resource_uses(obj)]
    assert uses, "the device-plugin path requests nvidia.com/gpu"


def claimed_templates(node: Any) -> Iterator[str]:
    """Names of the ResourceClaimTemplates that pod specs (at any depth) claim from."""
    if isinstance(node, dict):
        for claim in node.get("resourceClaims", []):
            yield claim["resourceClaimTemplateName"]
        for value in node.values():
            yield from claimed_templates(value)
    elif isinstance(node, list):
        for item in node:
            yield from claimed_templates(item)


def test_every_claim_names_a_template_in_its_namespace(synthesized):
    objects = everything(synthesized, "jark")
    templates = {
        (o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o.get("kind") == "ResourceClaimTemplate"
    }
    assert all(
        o["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == GPU_DEVICE_CLASS
        for o in objects
        if o.get("kind") == "ResourceClaimTemplate"
    )
    claimed = [(o["metadata"]["namespace"], name) for o in objects if "metadata" in o for name in claimed_templates(o)]
    assert claimed, "GPU pods claim their GPUs"
    assert set(claimed) <= templates
    hub = next(o["helm-values"] for o in objects if "helm-values" in o and "singleuser" in o["helm-values"])
    gpu_profile = next(p for p in hub["singleuser"]["profileList"] if p["display_name"] == "1 GPU")
    (name,) = claimed_templates(gpu_profile)
    assert ("jupyterhub", name) in templates


@pytest.mark.parametrize("profile, key", [("jark", DRA_QUOTA), ("g6-validation", "requests.nvidia.com/gpu")])
def test_quotas_count_the_gpus_the_platform_allocates(synthesized, profile, key):
    quotas = [o for o in everything(synthesized, profile) if o.get("kind") == "ResourceQuota"]
    assert quotas
    for quota in quotas:
        gpu_keys = [k for k in quota["spec"]["hard"] if "gpu" in k]
        assert gpu_keys == [key], quota["metadata"]
