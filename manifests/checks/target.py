"""Where (as which tenant) verify's multi-node checks run, and how many of the checked GPU group's
nodes a job there gets."""

from __future__ import annotations

from addons.contributions import tenant_gpu_ceiling, tenant_gpu_quota
from components.acceptance import MultiNodeSite, ValidationTarget
from profiles.models import VALIDATION_NAMESPACE, PlatformConfig

NAMESPACE = VALIDATION_NAMESPACE


def tenant_check_namespace(config: PlatformConfig) -> str:
    """Where the multi-node checks run: the first tenant's namespace, so they meet what a tenant's
    first job meets (its Pod Security level, ResourceQuota, LimitRange, NetworkPolicies and, with
    Kueue, its queue). The validation namespace only where no tenant could run them: a profile
    without tenants. (In DRA mode every tenant has a claim template for a whole node of every GPU
    group: a profile whose workloads.dra_gpu_counts lack one is refused, profiles/models.py.)"""
    tenants = config.workloads.tenants
    if not tenants:
        return NAMESPACE
    return tenants[0].name


def tenant_job_nodes(config: PlatformConfig, target: ValidationTarget, namespace: str) -> int:
    """How many of the checked group's nodes one job in `namespace` can get: what the group runs,
    what the first tenant's GPU quota admits and what an add-on that admits jobs (Kueue's queues)
    lets it hold of the group."""
    nodes = target.group.desired_size
    if namespace == NAMESPACE:
        return nodes
    tenant = config.workloads.tenants[0]
    # The tenant's ResourceQuota refuses the pod that would pass its GPU quota, queued or not.
    nodes = min(nodes, tenant_gpu_quota(config, tenant) // target.entry.gpu_count)
    ceiling = tenant_gpu_ceiling(config, tenant, target.group.name)
    return nodes if ceiling is None else min(nodes, ceiling // target.entry.gpu_count)


def multi_node_site(config: PlatformConfig, target: ValidationTarget | None) -> MultiNodeSite | None:
    """Where the multi-node checks run, with as many of the group's nodes as a job there can get."""
    if target is None:
        return None
    namespace = tenant_check_namespace(config)
    return MultiNodeSite(target, namespace, tenant_job_nodes(config, target, namespace))
