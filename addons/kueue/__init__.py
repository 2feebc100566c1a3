"""Kueue: queues GPU jobs per tenant and admits each job whole or not at all."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from addons.definition import AddonDefinition, PlatformConfig, ReleaseConfig
from profiles.catalog import CATALOG
from profiles.versions import ChartRef


class KueueConfig(ReleaseConfig):
    """Kueue's settings. The queues themselves (a ClusterQueue per tenant in one cohort, a
    LocalQueue named default in each tenant namespace) come from the GPU node groups and tenants."""

    pods_ready_timeout_minutes: int = Field(30, ge=5, le=240)
    """How long an admitted job may take until all its pods run (GPU images of many GB and new nodes take minutes).
    Past it the job is evicted, its GPUs freed, and it is queued again.
    """
    requeue_limit: int = Field(5, ge=1, le=100)
    """Evictions (pods not ready in time) after which a job stops being queued again and is deactivated, visible with
    kubectl get workloads.
    """


DEFINITION = AddonDefinition(
    key="kueue",
    settings_type=KueueConfig,
    description="Kueue: per-tenant GPU queues in one cohort, all-or-nothing admission of multi-node jobs.",
    pin=ChartRef(
        repository="oci://registry.k8s.io/kueue/charts", chart="kueue", version="0.19.2", app_version="v0.19.2"
    ),
    namespace="kueue-system",
)


# The queue plan: which GPU flavours exist, what each holds, and each tenant's share of them.
# Binding-free arithmetic, so the profile validator can check tenants' quotas against it.


@dataclass(frozen=True, kw_only=True)
class Flavor:
    """A place GPU pods can run: one managed GPU node group, or Karpenter's GPU pool."""

    name: str
    """The ResourceFlavor's name (group-<node group> or pool-gpu)."""
    node_group: str | None
    """The managed node group it selects, or None for Karpenter's GPU pool."""
    gpus: int
    """GPUs it holds at most (the group at max_size; the pool's limit)."""
    efa: int
    """EFA interfaces it holds at most (0 where its nodes have none)."""
    gpus_per_node: int
    """GPUs of one node (for a pool of several types, its largest)."""
    efa_per_node: int
    """EFA interfaces of one node (0 where its nodes have none)."""


@dataclass(frozen=True, kw_only=True)
class Share:
    """One tenant's quota in one flavour."""

    flavor: Flavor
    gpus: int
    """Nominal GPUs: guaranteed to the tenant, lent to others while it is idle."""
    efa: int
    """Nominal EFA interfaces (the same nodes' worth as its GPUs)."""
    borrowing_limit: int | None
    """Most GPUs it may borrow beyond its share (None: all idle ones)."""
    lending_limit: int | None
    """Most of its share others may borrow (None: all of it)."""

    @property
    def most_gpus(self) -> int:
        """The most GPUs of this flavour the tenant's jobs can ever hold at once."""
        borrowable = self.flavor.gpus - self.gpus
        return self.gpus + (borrowable if self.borrowing_limit is None else min(self.borrowing_limit, borrowable))


def flavors(config: PlatformConfig) -> tuple[Flavor, ...]:
    """The GPU flavours, managed node groups first (in profile order), then Karpenter's GPU pool."""
    from addons import karpenter  # a sibling definition: imported here, not at package load

    found = [
        Flavor(
            name=f"group-{group.name}",
            node_group=group.name,
            gpus=group.max_size * group.catalog_entry.gpu_count,
            efa=group.max_size * group.catalog_entry.max_efa_interfaces if group.efa_enabled else 0,
            gpus_per_node=group.catalog_entry.gpu_count,
            efa_per_node=group.catalog_entry.max_efa_interfaces if group.efa_enabled else 0,
        )
        for group in config.cluster.gpu_node_groups
    ]
    if karpenter.DEFINITION.enabled(config):
        pool = config.workloads.gpu_pool
        largest = max(CATALOG[name].gpu_count for name in pool.instance_types)
        # The pool's EC2NodeClass attaches no EFA interfaces: multi-node EFA jobs stay on the groups.
        found.append(
            Flavor(name="pool-gpu", node_group=None, gpus=pool.gpu_limit, efa=0, gpus_per_node=largest, efa_per_node=0)
        )
    return tuple(found)


def shares(config: PlatformConfig) -> dict[str, tuple[Share, ...]]:
    """Each tenant's nominal share of every flavour: the flavour's whole nodes split evenly, the
    first tenants taking one more where they do not divide (a pool's GPUs split one by one). The
    shares of a flavour add up to exactly what it holds, so what Kueue guarantees exists."""
    tenants = config.workloads.tenants
    result: dict[str, list[Share]] = {tenant.name: [] for tenant in tenants}
    for flavor in flavors(config):
        unit = flavor.gpus_per_node if flavor.node_group else 1
        units, extra = divmod(flavor.gpus // unit, len(tenants)) if tenants else (0, 0)
        for index, tenant in enumerate(tenants):
            gpus = (units + (1 if index < extra else 0)) * unit
            result[tenant.name].append(
                Share(
                    flavor=flavor,
                    gpus=gpus,
                    efa=gpus // unit * flavor.efa_per_node,
                    borrowing_limit=tenant.gpu_borrowing_limit,
                    lending_limit=None if tenant.gpu_lending_limit is None else min(tenant.gpu_lending_limit, gpus),
                )
            )
    return {name: tuple(found) for name, found in result.items()}
