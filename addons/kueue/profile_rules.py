"""What Kueue needs of the whole profile: GPU flavours that can each hold any pod the queues admit."""

from __future__ import annotations

from collections.abc import Iterator

from addons.definition import PlatformConfig, ProfileRules
from addons.kueue import flavors
from profiles.base import FieldProblem
from profiles.catalog import CATALOG


def _flavours_hold_every_queued_pod(config: PlatformConfig) -> Iterator[FieldProblem]:
    """Every GPU flavour of the tenants' queues has nodes as large as the largest of any flavour.
    Kueue gives a flavour no per-pod limit (a v0.19.2 ResourceFlavor has nodeLabels, nodeTaints,
    tolerations and a topology; a ClusterQueue quotas per flavour) and tries the next flavour
    when one is full (pkg/scheduler/flavorassigner/flavorassigner.go 1259-1276): a pod sized for
    the larger nodes, admitted to a flavour of smaller ones, never starts, and is evicted and
    queued again at every pods-ready timeout until it is deactivated."""
    queued = [flavor for flavor in flavors(config) if flavor.gpus > 0]
    if not queued:
        return
    widest = max(queued, key=lambda flavor: flavor.gpus_per_node)
    limit = widest.gpus_per_node
    holding = sorted(name for name, entry in CATALOG.items() if entry.gpu_count >= limit)
    groups = [group.name for group in config.cluster.gpu_node_groups]
    for flavor in queued:
        held = flavor.gpus_per_node
        if held >= limit:
            continue
        sizes = f"{held + 1}" if held + 1 == limit else f"{held + 1} to {limit}"
        why = (
            f"the tenants' queues take pods sized for the {limit}-GPU nodes of flavour {widest.name}, and Kueue "
            f"has no per-flavour pod size: a pod of {sizes} GPUs admitted to this flavour when the larger one "
            "is full would never start"
        )
        if flavor.node_group is not None:
            index = groups.index(flavor.node_group)
            group = config.cluster.gpu_node_groups[index]
            yield FieldProblem(
                ("cluster", "gpu_node_groups", index, "instance_type"),
                group.instance_type,
                f"GPU group {group.name}'s nodes hold {held} GPU{'s' if held > 1 else ''}; {why}",
                allowed=f"an instance type with at least {limit} GPUs ({', '.join(holding[:4])}, ...), "
                "desired_size: 0 (the group then holds no GPUs of the queues), or addons.kueue.enabled: false",
            )
        else:
            pool = config.workloads.gpu_pool.instance_types
            families = {name.split(".")[0] for name in pool}
            alike = [name for name in holding if name.split(".")[0] in families] or holding
            yield FieldProblem(
                ("workloads", "gpu_pool", "instance_types"),
                pool,
                f"Karpenter's GPU pool is a flavour of the tenants' queues and its largest type holds {held} "
                f"GPU{'s' if held > 1 else ''}; {why}",
                allowed=f"also a type with at least {limit} GPUs, e.g. {' or '.join(alike[:2])} (Karpenter still "
                "launches the smallest type that fits each pod), addons.jupyterhub.enabled: true (the pool then "
                "serves the notebooks, outside the queues), or addons.kueue.enabled: false",
            )


RULES = ProfileRules(checks=(_flavours_hold_every_queued_pod,))
