"""Where the profile's GPUs are and how pods ask for them: DRA claims or the device plugin's
resource, Karpenter's GPU pool and whether the queues hold it, and how many GPUs the profile can
run at once. Read from the validated profile (by its shape, so that add-on definitions may call
them without importing the whole profile model)."""

from __future__ import annotations

from collections.abc import Iterator

from addons import gpu_operator, jupyterhub, karpenter
from addons.definition import PlatformConfig as ProfileView
from profiles.base import FieldProblem

# The DeviceClass of whole GPUs that the NVIDIA DRA driver publishes as GPU Operator v26.7.0 installs
# it (manifests/state-dra-driver/0400_deviceclass-gpu.yaml 4; driver v0.5.0, values.yaml draDriver).
GPU_DEVICE_CLASS = "gpu.nvidia.com"
# What a ResourceQuota counts of that class's devices (Kubernetes' DRA quota name,
# <class>.deviceclass.resource.k8s.io/devices). The queues count them as nvidia.com/gpu in both
# modes (addons/kueue/install.py, DRA_GPU_MAPPING).
DRA_GPU_RESOURCE = f"{GPU_DEVICE_CLASS}.deviceclass.resource.k8s.io/devices"


def karpenter_node_pools(config: ProfileView) -> bool:
    """The workloads layer creates Karpenter's node pools (its CPU pool, and its GPU pool outside DRA mode)."""
    return karpenter.DEFINITION.enabled(config)


def karpenter_gpu_pool(config: ProfileView) -> bool:
    """The workloads layer creates Karpenter's GPU pool: with Karpenter, and not in DRA mode, where
    the pinned Karpenter launches no node for a pod with ResourceClaims (`karpenter_dra_problems`):
    DRA GPUs run on the managed GPU node groups."""
    return karpenter.DEFINITION.enabled(config) and not dra_mode(config)


def queued_gpu_pool(config: ProfileView) -> bool:
    """Karpenter's GPU pool is a flavour of the tenants' queues: when there is one, unless an add-on
    runs its own GPU pods there outside the queues (JupyterHub's GPU notebooks do)."""
    return karpenter_gpu_pool(config) and not jupyterhub.DEFINITION.enabled(config)


def gpu_capacity(config: ProfileView) -> int:
    """Every GPU the profile can run at once: the GPU node groups at their maximum size, plus the
    Karpenter GPU pool's limit where there is one."""
    managed = sum(group.max_size * group.catalog_entry.gpu_count for group in config.cluster.gpu_node_groups)
    return managed + (config.workloads.gpu_pool.gpu_limit if karpenter_gpu_pool(config) else 0)


def dra_mode(config: ProfileView) -> bool:
    """GPUs are allocated through DRA claims instead of the device plugin's extended resource."""
    settings = gpu_operator.DEFINITION.settings(config)
    return settings.enabled and settings.dra


def dra_claim_counts(config: ProfileView) -> tuple[int, ...]:
    """The GPU counts a ResourceClaimTemplate is made for in each GPU namespace (DRA mode only)."""
    return tuple(config.workloads.dra_gpu_counts) if dra_mode(config) else ()


# Karpenter and ResourceClaims at the pin (1.14.1, kubernetes-sigs/karpenter and
# aws/karpenter-provider-aws at tag v1.14.1):
# - the option ignore-dra-requests defaults to true (pkg/operator/options/options.go 133; the chart's
#   settings.ignoreDRARequests, charts/karpenter/values.yaml 217), and with it the scheduler refuses
#   a pod with ResourceClaims, "not yet supported by Karpenter"
#   (pkg/controllers/provisioning/scheduling/scheduler.go 583-586), permanently (537-540);
# - with it false, a new NodeClaim is simulated with the devices its instance types'
#   DynamicResources.ResourceSliceTemplates describe (scheduling/dra.go 69-75, 122-126;
#   nodeclaim.go 180-187, 225-235: no instance type survives without them), and the AWS provider
#   fills none (no DynamicResources or ResourceSliceTemplate anywhere in karpenter-provider-aws
#   v1.14.1): no instance type offers a GPU device, so a DRA GPU pod never gets a node either way.
def karpenter_dra_problems(config: ProfileView) -> Iterator[FieldProblem]:
    """A GPU pool set in a DRA profile is refused: the platform makes none (Karpenter would never
    launch its nodes for pods that claim GPUs), and settings that silently do nothing mislead."""
    if karpenter_gpu_pool(config) or not karpenter.DEFINITION.enabled(config) or not dra_mode(config):
        return
    if "gpu_pool" in config.workloads.model_fields_set:
        version = karpenter.DEFINITION.version(karpenter.DEFINITION.settings(config))
        yield FieldProblem(
            ("workloads", "gpu_pool"),
            ", ".join(
                f"{key}: {value}" for key, value in config.workloads.gpu_pool.model_dump(exclude_defaults=True).items()
            )
            or "the defaults",
            f"Karpenter {version} launches no node for a pod with ResourceClaims "
            "(ignoreDRARequests, and the AWS provider describes no DRA devices of any instance type): in DRA mode "
            "GPUs run on cluster.gpu_node_groups and the platform makes no Karpenter GPU pool",
            allowed="no workloads.gpu_pool in DRA mode, or addons.gpu_operator.dra: false (the device plugin, "
            "whose nvidia.com/gpu Karpenter provisions for)",
        )
