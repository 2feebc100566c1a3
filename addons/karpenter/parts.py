"""Karpenter's contributions: the workloads layer applies its EC2NodeClasses and NodePools first,
before the tenants whose pods land on them (addons/karpenter/pools.py), on the node identity the
addons layer made (`KarpenterNodes`, which the addons layer's contract carries)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from addons.karpenter import DEFINITION
from addons.karpenter.nodes import KarpenterNodes
from addons.karpenter.pools import (
    GPU_POOL,
    TERMINATION_GRACE_PERIOD_MINUTES,
    KarpenterPoolsProps,
    karpenter_objects,
    node_pools,
    pool_limits,
)
from addons.parts import AddonParts, Capacity, ObjectGroup, WorkloadsContext
from profiles.models import PlatformConfig
from stacks.contracts import AddonRecord, addon_record


class KarpenterParts(AddonParts):
    records: ClassVar[Mapping[str, type[AddonRecord]]] = {"addons": KarpenterNodes}

    def capacity(self, config: PlatformConfig) -> Capacity:
        pools = node_pools(config)
        limits = pool_limits(config.workloads.cpu_pool, config.workloads.gpu_pool)
        return Capacity(
            node_pools=pools,
            pool_limits={pool: limits[pool] for pool in pools},
            drain_minutes=TERMINATION_GRACE_PERIOD_MINUTES,
        )

    def not_priced(self, config: PlatformConfig) -> tuple[str, ...]:
        pools = config.workloads
        return (
            f"Karpenter nodes launched for pending pods (GPU pool up to {pools.gpu_pool.gpu_limit} GPUs, "
            f"CPU pool up to {pools.cpu_pool.cpu_limit} vCPUs)",
        )

    def workload_objects(self, ctx: WorkloadsContext) -> tuple[ObjectGroup, ...]:
        nodes, config = addon_record(ctx.addons.addon_records, DEFINITION.key, KarpenterNodes), ctx.config
        if nodes is None:
            raise ValueError("the addons layer installed Karpenter but its contract carries no node identity")
        props = KarpenterPoolsProps(
            cluster_name=config.name,
            node_role_name=nodes.node_role_name,
            node_security_group_id=ctx.cluster.node_security_group_id,
            cpu=config.workloads.cpu_pool,
            gpu=config.workloads.gpu_pool,
            lustre_over_efa=config.storage.fsx.enabled and config.storage.fsx.efa_enabled,
            gpu_pool=GPU_POOL in node_pools(config),
            ami_alias=config.cluster.karpenter_ami_alias,
        )
        return (ObjectGroup(id="karpenter", objects=tuple(karpenter_objects(props)), first=True),)


PARTS = KarpenterParts(DEFINITION)
