"""Kueue: queues GPU jobs per tenant and admits each job whole or not at all."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from addons.definition import AddonDefinition, PlatformConfig, ReleaseConfig
from profiles.catalog import CATALOG, EFA_RESOURCE, GPU_RESOURCE
from profiles.gpus import queued_gpu_pool
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
# The capacity-window CronJobs' image (addons/kueue/window.py): the Kubernetes project's kubectl
# image (registry.k8s.io/kubectl, published from v1.28; no shell, kubectl is its entrypoint's tool).
KUBECTL_IMAGE = "registry.k8s.io/kubectl:v1.34.1"


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
    """GPUs it holds: the group's running nodes (desired_size; no autoscaler adds more), or the
    pool's limit (Karpenter launches nodes for admitted pods up to it)."""
    efa: int
    """EFA interfaces it holds (0 where its nodes have none)."""
    gpus_per_node: int
    """GPUs of one node (for a pool of several types, its largest)."""
    efa_per_node: int
    """EFA interfaces of one node (0 where its nodes have none)."""
    instance_types: tuple[str, ...]
    """The instance types of its largest nodes: a group's one type, the pool's types of the most GPUs."""

    @property
    def unit(self) -> int:
        """What a share is counted in: a group's whole nodes, a pool's single GPUs."""
        return self.gpus_per_node if self.node_group else 1


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
    """The GPU flavours, managed node groups first (in profile order), then Karpenter's GPU pool
    when no other add-on runs its GPU pods there (JupyterHub's GPU notebooks do)."""
    found = []
    for group in config.cluster.gpu_node_groups:
        entry, efa = group.catalog_entry, group.efa_enabled
        found.append(
            Flavor(
                name=f"group-{group.name}",
                node_group=group.name,
                gpus=group.desired_size * entry.gpu_count,
                efa=group.desired_size * entry.efa_interfaces if efa else 0,
                gpus_per_node=entry.gpu_count,
                efa_per_node=entry.efa_interfaces if efa else 0,
                instance_types=(group.instance_type,),
            )
        )
    if queued_gpu_pool(config):
        pool = config.workloads.gpu_pool
        largest = max(CATALOG[name].gpu_count for name in pool.instance_types)
        # The pool's EC2NodeClass attaches no EFA interfaces: multi-node EFA jobs stay on the groups.
        found.append(
            Flavor(
                name="pool-gpu",
                node_group=None,
                gpus=pool.gpu_limit,
                efa=0,
                gpus_per_node=largest,
                efa_per_node=0,
                instance_types=tuple(name for name in pool.instance_types if CATALOG[name].gpu_count == largest),
            )
        )
    return tuple(found)


@dataclass(frozen=True, kw_only=True)
class NodeLimit:
    """The most of one device resource that one pod of the tenants' queues can ever be given: what
    the largest node of the flavours Kueue admits to has of it."""

    resource: str
    """nvidia.com/gpu or vpc.amazonaws.com/efa."""
    most: int
    """What one such node has of it (0: no node of the queues has it)."""
    instance_types: tuple[str, ...]
    """The instance types of those nodes, groups' first (none where `most` is 0)."""


def node_limits(config: PlatformConfig) -> tuple[NodeLimit, ...]:
    """GPUs and EFA interfaces of the largest node of the flavours that hold GPUs (a group at
    desired_size 0 holds none: Kueue admits nothing there). Kueue admits a pod set wherever a
    flavour's quota holds it, summed over the flavour's nodes, and never compares one pod with one
    node: a pod beyond these is admitted and never scheduled. Empty without Kueue or without GPUs."""
    if not DEFINITION.enabled(config):
        return ()
    queued = [flavor for flavor in flavors(config) if flavor.gpus > 0]
    if not queued:
        return ()
    limits = []
    for resource in (GPU_RESOURCE, EFA_RESOURCE):
        per_node = {
            flavor.name: flavor.gpus_per_node if resource == GPU_RESOURCE else flavor.efa_per_node for flavor in queued
        }
        most = max(per_node.values())
        largest = [
            name for flavor in queued if most and per_node[flavor.name] == most for name in flavor.instance_types
        ]
        limits.append(NodeLimit(resource=resource, most=most, instance_types=tuple(dict.fromkeys(largest))))
    return tuple(limits)


def _split(total_units: int, tenants: int) -> list[int]:
    """Whole units split evenly, the first tenants taking one more where they do not divide."""
    units, extra = divmod(total_units, tenants)
    return [units + (1 if index < extra else 0) for index in range(tenants)]


def shares(config: PlatformConfig) -> dict[str, tuple[Share, ...]]:
    """Each tenant's nominal share of every flavour and what it may borrow.

    A flavour's units (a group's nodes, a pool's GPUs) are split evenly between the tenants. A
    tenant with a gpu_quota takes no more than its quota allows, flavour by flavour in order;
    what it leaves goes to the tenants without one. Its borrowing is limited so that its share
    plus its borrowing, over all flavours, stays within the quota: the ResourceQuota then never
    refuses a pod of a job Kueue admitted. The shares of a flavour add up to at most what it
    holds, so what Kueue guarantees exists."""
    tenants = config.workloads.tenants
    found_flavors = flavors(config)
    nominal: dict[str, list[int]] = {tenant.name: [] for tenant in tenants}
    left = {tenant.name: tenant.gpu_quota for tenant in tenants}  # None: no cap
    for flavor in found_flavors:
        split = _split(flavor.gpus // flavor.unit, len(tenants)) if tenants else []
        taken, freed = [], 0
        for tenant, units in zip(tenants, split, strict=True):
            cap = left[tenant.name]
            allowed = units if cap is None else min(units, cap // flavor.unit)
            taken.append(allowed)
            freed += units - allowed
            if cap is not None:
                left[tenant.name] = cap - allowed * flavor.unit
        uncapped = [index for index, tenant in enumerate(tenants) if tenant.gpu_quota is None]
        for index, extra in zip(uncapped, _split(freed, len(uncapped)) if uncapped else [], strict=True):
            taken[index] += extra
        for tenant, units in zip(tenants, taken, strict=True):
            nominal[tenant.name].append(units * flavor.unit)

    result: dict[str, tuple[Share, ...]] = {}
    for tenant in tenants:
        headroom = left[tenant.name]  # None: borrowing bounded only by the tenant's own limit
        found: list[Share] = []
        for flavor, gpus in zip(found_flavors, nominal[tenant.name], strict=True):
            limit = tenant.gpu_borrowing_limit
            if headroom is not None:
                granted = min(flavor.gpus - gpus, headroom, limit if limit is not None else headroom)
                headroom -= granted
                limit = granted
            found.append(
                Share(
                    flavor=flavor,
                    gpus=gpus,
                    efa=gpus // flavor.unit * flavor.efa_per_node,
                    borrowing_limit=limit,
                    lending_limit=None if tenant.gpu_lending_limit is None else min(tenant.gpu_lending_limit, gpus),
                )
            )
        result[tenant.name] = tuple(found)
    return result


def _holding(flavor: Flavor) -> str:
    units = flavor.gpus // flavor.unit
    if flavor.node_group:
        return f"GPU group {flavor.node_group}'s {units} node{'s' if units > 1 else ''}"
    return f"Karpenter's GPU pool's {units} GPU{'s' if units > 1 else ''}"


def share_warnings(config: PlatformConfig) -> list[str]:
    """Tenants the queues guarantee nothing of, which the split above leaves without a word: no
    GPU at all, or no node of a GPU group whose nodes other tenants are guaranteed (whole nodes go
    to the first tenants). Such a tenant runs there only on what the others leave idle, and is
    preempted when they want it back."""
    if not DEFINITION.enabled(config):
        return []
    tenants = config.workloads.tenants
    planned = shares(config)
    warnings = []
    for tenant in tenants:
        own = planned[tenant.name]
        held = [share for share in own if share.flavor.gpus > 0]
        if not held:
            continue
        borrowable = sum(share.most_gpus for share in held)
        quota = f" (its gpu_quota is {tenant.gpu_quota})" if tenant.gpu_quota is not None else ""
        if not any(share.gpus for share in held):
            runs = (
                "It can never run a GPU pod: it may borrow none."
                if borrowable == 0
                else f"Its GPU pods run only on what the other tenants leave idle (at most {borrowable} GPUs), and "
                "are preempted when those tenants want it back."
            )
            split = " and ".join(_holding(share.flavor) for share in held)
            warnings.append(
                f"warning: the queues guarantee tenant {tenant.name} no GPU: {split} are shared out between "
                f"{len(tenants)} tenants and none is left for it{quota}. {runs} Give it a share: more nodes "
                "(cluster.gpu_node_groups[].desired_size), fewer tenants, or a gpu_quota on the others."
            )
            continue
        for index, share in enumerate(own):
            holders = sum(1 for t in tenants if planned[t.name][index].gpus)
            if share.flavor.node_group and share.flavor.gpus and share.gpus == 0 and holders:
                warnings.append(
                    f"warning: the queues guarantee tenant {tenant.name} no node of GPU group "
                    f"{share.flavor.node_group}: its {share.flavor.gpus // share.flavor.unit} nodes go whole to "
                    f"{holders} of the {len(tenants)} tenants{quota}. Its pods there run only on nodes the others "
                    "leave idle, and are preempted when they want them back; more nodes (desired_size) or fewer "
                    "tenants give it one."
                )
    return warnings
