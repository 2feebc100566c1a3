"""Where the profile's GPUs are and how pods ask for them: DRA claims or the device plugin's
resource, Karpenter's GPU pool and whether the queues hold it, and how many GPUs the profile can
run at once. Read from the validated profile (by its shape, so that add-on definitions may call
them without importing the whole profile model)."""

from __future__ import annotations

from addons.definition import DRA_GPUS, NODE_POOLS, UNQUEUED_GPU_POOL_PODS
from addons.definition import PlatformConfig as ProfileView

# The DeviceClass of whole GPUs that the NVIDIA DRA driver publishes as GPU Operator v26.7.0 installs
# it (manifests/state-dra-driver/0400_deviceclass-gpu.yaml 4; driver v0.5.0, values.yaml draDriver).
GPU_DEVICE_CLASS = "gpu.nvidia.com"
# What a ResourceQuota counts of that class's devices (Kubernetes' DRA quota name,
# <class>.deviceclass.resource.k8s.io/devices). The queues count them as nvidia.com/gpu in both
# modes (addons/kueue/install.py, DRA_GPU_MAPPING).
DRA_GPU_RESOURCE = f"{GPU_DEVICE_CLASS}.deviceclass.resource.k8s.io/devices"


def platform_facts(config: ProfileView) -> frozenset[str]:
    """What the enabled add-ons' settings make true of the platform (AddonConfig.platform_facts)."""
    return frozenset(fact for _, settings in config.addons for fact in settings.platform_facts())


def karpenter_node_pools(config: ProfileView) -> bool:
    """The workloads layer creates Karpenter's node pools (its CPU pool, and its GPU pool outside DRA mode)."""
    return NODE_POOLS in platform_facts(config)


def karpenter_gpu_pool(config: ProfileView) -> bool:
    """The workloads layer creates Karpenter's GPU pool: with Karpenter, and not in DRA mode, where
    the pinned Karpenter launches no node for a pod with ResourceClaims (addons/karpenter/profile_rules.py):
    DRA GPUs run on the managed GPU node groups."""
    return karpenter_node_pools(config) and not dra_mode(config)


def queued_gpu_pool(config: ProfileView) -> bool:
    """Karpenter's GPU pool is a flavour of the tenants' queues: when there is one, unless an add-on
    runs its own GPU pods there outside the queues (JupyterHub's GPU notebooks do)."""
    return karpenter_gpu_pool(config) and UNQUEUED_GPU_POOL_PODS not in platform_facts(config)


def gpu_capacity(config: ProfileView) -> int:
    """Every GPU the profile can run at once: the GPU node groups at their maximum size, plus the
    Karpenter GPU pool's limit where there is one."""
    managed = sum(group.max_size * group.catalog_entry.gpu_count for group in config.cluster.gpu_node_groups)
    return managed + (config.workloads.gpu_pool.gpu_limit if karpenter_gpu_pool(config) else 0)


def dra_mode(config: ProfileView) -> bool:
    """GPUs are allocated through DRA claims instead of the device plugin's extended resource."""
    return DRA_GPUS in platform_facts(config)


def dra_claim_counts(config: ProfileView) -> tuple[int, ...]:
    """The GPU counts a ResourceClaimTemplate is made for in each GPU namespace (DRA mode only)."""
    return tuple(config.workloads.dra_gpu_counts) if dra_mode(config) else ()
