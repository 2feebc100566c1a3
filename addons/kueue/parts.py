"""Kueue's contributions: tenants read their queues and Workloads (RBAC), and the workloads layer
applies the ClusterQueues, each tenant's LocalQueue and the pod-fit admission policies."""

from __future__ import annotations

from addons.kueue import DEFINITION
from addons.kueue.fit import fit_objects
from addons.kueue.queues import cluster_objects, local_queues
from addons.parts import AddonParts, ObjectGroup, WorkloadsContext
from components.k8s.tenant_rbac import TenantResources
from profiles.models import PlatformConfig

# Kueue's admission state: editing a Workload could admit a job past the queue.
KUEUE_QUEUES = TenantResources("kueue.x-k8s.io", ("localqueues", "workloads"), editable=False)


class KueueParts(AddonParts):
    def tenant_resources(self, config: PlatformConfig) -> tuple[TenantResources, ...]:
        return (KUEUE_QUEUES,)

    def workload_objects(self, ctx: WorkloadsContext) -> tuple[ObjectGroup, ...]:
        return (
            # The ClusterQueues wait for nothing, so that on destroy they go while the tenant
            # namespaces go: Kueue holds a ClusterQueue until no job in it holds quota, and
            # deleting a namespace deletes its jobs. Each LocalQueue needs its namespace.
            ObjectGroup(id="queues", objects=tuple(cluster_objects(ctx.config))),
            ObjectGroup(id="local-queues", objects=tuple(local_queues(ctx.config)), after_tenants=True),
            # A pod, or a job's pod, that no node of the queues can hold is refused when it is created,
            # with the fix, instead of being admitted and never scheduled (addons/kueue/fit.py).
            ObjectGroup(id="pod-fit", objects=tuple(fit_objects(ctx.config, ctx.pod_sources))),
        )


PARTS = KueueParts(DEFINITION)
