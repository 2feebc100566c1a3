"""Where (as which tenant) verify's multi-node checks run, and how many of the checked GPU group's
nodes a job there gets."""

from __future__ import annotations

from addons.contributions import tenant_gpu_ceiling
from components.acceptance import MultiNodeSite, ValidationTarget
from profiles.gpus import dra_claim_counts
from profiles.models import VALIDATION_NAMESPACE, PlatformConfig, tenant_gpu_quota

NAMESPACE = VALIDATION_NAMESPACE


def tenant_check_namespace(config: PlatformConfig, target: ValidationTarget) -> str:
    """Where the multi-node checks run: the first tenant's namespace, so they meet what a tenant's
    first job meets (its Pod Security level, ResourceQuota, LimitRange, NetworkPolicies and, with
    Kueue, its queue). The validation namespace only where no tenant could run them: a profile
    without tenants, or DRA mode where the tenants have no claim template for a whole node."""
    tenants = config.workloads.tenants
    if not tenants or (target.dra and target.entry.gpu_count not in dra_claim_counts(config)):
        return NAMESPACE
    return tenants[0].name


def tenant_job_nodes(config: PlatformConfig, target: ValidationTarget, wanted: int = 2) -> int:
    """How many of the checked group's nodes a job in `tenant_check_namespace` can get, at most
    `wanted`: what the group runs, what the first tenant's GPU quota admits and, with Kueue, what
    its queue may hold of the group."""
    nodes = min(wanted, target.group.desired_size)
    if tenant_check_namespace(config, target) == NAMESPACE:
        return nodes
    tenant = config.workloads.tenants[0]
    # The tenant's ResourceQuota refuses the pod that would pass its GPU quota, queued or not; an
    # add-on that admits jobs (Kueue's queues) may hold them to less.
    nodes = min(nodes, tenant_gpu_quota(config, tenant) // target.entry.gpu_count)
    ceiling = tenant_gpu_ceiling(config, tenant, target.group.name)
    return nodes if ceiling is None else min(nodes, ceiling // target.entry.gpu_count)


def multi_node_site(config: PlatformConfig, target: ValidationTarget | None) -> MultiNodeSite | None:
    """Where the multi-node checks run, with as many of the group's nodes as a job there can get."""
    if target is None:
        return None
    return MultiNodeSite(
        target, tenant_check_namespace(config, target), tenant_job_nodes(config, target, target.group.desired_size)
    )
