"""Where the profile's GPUs are and how pods ask for them: DRA claims or the device plugin's
resource, Karpenter's GPU pool and whether the queues hold it, and how many GPUs the profile can
run at once. Read from the validated profile (by its shape, so that add-on definitions may call
them without importing the whole profile model)."""

from __future__ import annotations

from addons import gpu_operator, jupyterhub, karpenter
from addons.definition import PlatformConfig as ProfileView


def karpenter_gpu_pool(config: ProfileView) -> bool:
    """The workloads layer creates Karpenter's GPU pool: with Karpenter, and not in DRA mode.
    Karpenter does not provision for pods with ResourceClaims (its chart's
    settings.ignoreDRARequests is true at 1.14.1), so a DRA GPU pod sent to a Karpenter pool would
    stay Pending: DRA GPUs run on the managed GPU node groups."""
    return karpenter.DEFINITION.enabled(config) and not dra_mode(config)


def queued_gpu_pool(config: ProfileView) -> bool:
    """Karpenter's GPU pool is a flavour of the tenants' queues: with Karpenter, unless an add-on
    runs its own GPU pods there outside the queues (JupyterHub's GPU notebooks do)."""
    return karpenter.DEFINITION.enabled(config) and not jupyterhub.DEFINITION.enabled(config)


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
