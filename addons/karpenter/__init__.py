"""Karpenter: just-in-time CPU and GPU nodes (the pools are the workloads layer's)."""

from __future__ import annotations

from addons.definition import NODE_POOLS, AddonDefinition, Minimum, PlatformConfig, ReleaseConfig
from profiles.capacity import CapacityBlock
from profiles.versions import ChartRef


class KarpenterConfig(ReleaseConfig):
    """Karpenter's settings: on or off, and its chart version."""

    def platform_facts(self) -> frozenset[str]:
        return frozenset({NODE_POOLS}) if self.enabled else frozenset()


def uses_capacity_blocks(config: PlatformConfig) -> bool:
    return any(isinstance(group.capacity, CapacityBlock) for group in config.cluster.gpu_node_groups)


def uses_reservations(config: PlatformConfig) -> bool:
    """A Karpenter pool launches into capacity reservations (capacity type reserved)."""
    pools = (config.workloads.cpu_pool, config.workloads.gpu_pool)
    return any("reserved" in pool.capacity_types for pool in pools)


# Karpenter features the platform wires only when the pinned (or overridden) Karpenter has them.
HANDLES_RESERVATION_INTERRUPTIONS = (1, 10, 0)

DEFINITION = AddonDefinition(
    key="karpenter",
    settings_type=KarpenterConfig,
    description="Karpenter for just-in-time CPU and GPU nodes.",
    # The controller IAM policy (addons/karpenter/identity.py) follows the one Karpenter publishes for this version.
    pin=ChartRef(
        repository="oci://public.ecr.aws/karpenter", chart="karpenter", version="1.14.1", app_version="1.14.1"
    ),
    namespace="kube-system",
    creates_namespace=False,
    minimums=(
        Minimum(
            version=(1, 6, 0),
            why="Karpenter launches into Capacity Blocks only from 1.6",
            applies=uses_capacity_blocks,
        ),
        Minimum(
            version=(1, 3, 0),
            why="Karpenter selects capacity reservations (capacityReservationSelectorTerms) only from 1.3",
            applies=uses_reservations,
        ),
    ),
    # Karpenter's compatibility matrix.
    kubernetes_minimums={"1.33": (1, 5, 0), "1.34": (1, 6, 0), "1.35": (1, 9, 0), "1.36": (1, 13, 0)},
)
