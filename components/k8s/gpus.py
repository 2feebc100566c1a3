"""How a pod gets GPUs, in one place: the NVIDIA device plugin's extended resource, or (GPU
Operator DRA mode) a ResourceClaim from a per-namespace ResourceClaimTemplate of the NVIDIA DRA
driver's device class. Quotas count whichever the platform runs, so DRA claims cannot bypass them."""

from __future__ import annotations

from typing import Any

from profiles.catalog import GPU_RESOURCE
from profiles.gpus import DRA_GPU_RESOURCE, GPU_DEVICE_CLASS

GPU_EXTENDED_RESOURCE = GPU_RESOURCE  # the device plugin's resource
CLAIM_NAME = "gpu"


def claim_template_name(count: int) -> str:
    return f"gpu-{count}"


def claim_template(namespace: str, count: int) -> dict[str, Any]:
    """A ResourceClaimTemplate for `count` GPUs: every pod using it gets its own claim."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": claim_template_name(count), "namespace": namespace},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {"name": CLAIM_NAME, "exactly": {"deviceClassName": GPU_DEVICE_CLASS, "count": count}},
                    ]
                }
            }
        },
    }


def gpu_quota(count: int, *, dra: bool) -> dict[str, str]:
    """ResourceQuota hard limits on GPUs: the extended resource, or DRA devices of the GPU class."""
    if dra:
        return {DRA_GPU_RESOURCE: str(count)}
    return {f"requests.{GPU_EXTENDED_RESOURCE}": str(count)}


def pod_claims(count: int) -> list[dict[str, str]]:
    """A pod spec's resourceClaims for `count` GPUs (DRA mode)."""
    return [{"name": CLAIM_NAME, "resourceClaimTemplateName": claim_template_name(count)}]


def container_claims() -> list[dict[str, str]]:
    """A container's resources.claims entry for the pod's GPU claim (DRA mode)."""
    return [{"name": CLAIM_NAME}]
