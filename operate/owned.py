"""What the platform owns in its cluster, per layer: the namespaces the layer created, the
capacity the add-ons run there (Karpenter's NodePools, Kueue's ClusterQueues: their contributed
`Capacity`) and the claims the layer's Terraform deletes itself. The pre-destroy clean-up
(operate/cleanup.py) and pause/resume (operate/pause.py) touch only these."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from profiles import PlatformConfig


@dataclass(frozen=True, kw_only=True)
class PlatformObjects:
    """What the platform owns in its cluster, for one layer."""

    namespaces: tuple[str, ...]
    """Namespaces the layer created (add-ons, tenants, validation)."""
    node_pools: tuple[str, ...]
    """Karpenter NodePools the workloads layer creates."""
    cluster_queues: tuple[str, ...] = ()
    """Kueue ClusterQueues the workloads layer creates (one per tenant)."""
    pool_limits: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """The NodePools' limits as the layer sets them (what a resume puts back)."""
    node_drain_minutes: int = 0
    """The longest a NodePool's node may take to drain (its terminationGracePeriod)."""
    terraform_claims: tuple[tuple[str, str], ...] = ()
    """(namespace, name) of the PersistentVolumeClaims the layer's Terraform deletes itself."""


def terraform_claims(stack: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """(namespace, name) of every PersistentVolumeClaim a synthesized stack creates."""
    claims = []
    for body in stack.get("resource", {}).get("kubernetes_manifest", {}).values():
        manifest = body.get("manifest")  # a string for a for_each over an upstream manifest
        if isinstance(manifest, dict) and manifest.get("kind") == "PersistentVolumeClaim":
            claims.append((manifest["metadata"].get("namespace", "default"), manifest["metadata"]["name"]))
    return tuple(sorted(claims))


def platform_objects(config: PlatformConfig, layer: str, stack: dict[str, Any] | None = None) -> PlatformObjects:
    """The namespaces and NodePools the profile's `layer` creates: the addons layer owns the
    add-ons' namespaces; the workloads layer owns the tenants' namespaces, Karpenter's NodePools and
    the validation namespace that verify runs in. `stack` (the layer's synthesized JSON) names the
    claims its Terraform deletes."""
    from addons.catalog import DEFINITIONS
    from addons.contributions import workload_capacity
    from manifests.checks.target import NAMESPACE as VALIDATION_NAMESPACE

    claims = terraform_claims(stack) if stack else ()
    if layer == "addons":
        return PlatformObjects(
            namespaces=tuple(
                definition.namespace_of(definition.settings(config))
                for definition in DEFINITIONS
                if definition.enabled(config) and definition.creates_namespace
            ),
            node_pools=(),
            terraform_claims=claims,
        )
    if layer != "workloads":
        return PlatformObjects(namespaces=(), node_pools=())
    namespaces = [tenant.name for tenant in config.workloads.tenants]
    if config.cluster.gpu_node_groups:
        namespaces.append(VALIDATION_NAMESPACE)
    capacity = workload_capacity(config)
    return PlatformObjects(
        namespaces=tuple(namespaces),
        node_pools=capacity.node_pools,
        cluster_queues=capacity.cluster_queues,
        pool_limits=capacity.pool_limits,
        node_drain_minutes=capacity.drain_minutes,
        terraform_claims=claims,
    )
