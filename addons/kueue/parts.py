"""Kueue's contributions: tenants read their queues and Workloads (RBAC), and the workloads layer
applies the ClusterQueues, each tenant's LocalQueue and the pod-fit admission policies."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from addons.definition import PROMETHEUS_RULES
from addons.kueue import DEFINITION, share_warnings, shares
from addons.kueue.fit import fit_objects
from addons.kueue.queues import LOCAL_QUEUE, local_queues
from addons.kueue.window import alert_rule_object, cluster_objects_at, plan_deadline
from addons.parts import AddonParts, Capacity, GuidePart, ObjectGroup, WorkloadsContext
from components.k8s.tenant_rbac import TenantResources
from profiles.models import PlatformConfig
from profiles.workloads import TenantConfig

# Kueue's admission state: editing a Workload could admit a job past the queue.
KUEUE_QUEUES = TenantResources("kueue.x-k8s.io", ("localqueues", "workloads"), editable=False)


def _fence(*lines: str) -> str:
    return "```sh\n" + "\n".join(lines) + "\n```"


class KueueParts(AddonParts):
    def capacity(self, config: PlatformConfig) -> Capacity:
        # One ClusterQueue per tenant, named after it (addons/kueue/queues.py).
        return Capacity(cluster_queues=tuple(tenant.name for tenant in config.workloads.tenants))

    def tenant_resources(self, config: PlatformConfig) -> tuple[TenantResources, ...]:
        return (KUEUE_QUEUES,)

    def tenant_gpu_ceiling(self, config: PlatformConfig, tenant: TenantConfig, node_group: str | None) -> int | None:
        # The tenant's ClusterQueue admits no more of the group's flavour than its share and what
        # it may borrow; a group the queue has no flavour for, nothing.
        if node_group is None:
            return sum(share.most_gpus for share in shares(config)[tenant.name])
        share = next((s for s in shares(config)[tenant.name] if s.flavor.node_group == node_group), None)
        return share.most_gpus if share else 0

    def warnings(self, config: PlatformConfig) -> tuple[str, ...]:
        return tuple(share_warnings(config))

    def guide(self, config: PlatformConfig, tenant: TenantConfig) -> GuidePart:
        ns = tenant.name
        watch = _fence(
            f"kubectl -n {ns} get localqueue {LOCAL_QUEUE}",
            f"kubectl -n {ns} get workloads",
            f"kubectl -n {ns} describe workloads    # each one's conditions say why it waits",
            f"kubectl -n {ns} get pods -w",
        )
        return GuidePart(
            queue=f"""## 2. Your queue

A job you create in `{ns}` starts suspended and waits in the LocalQueue `{LOCAL_QUEUE}` until
your team's share (or what others leave idle) has GPUs for all of its pods; you need not name the
queue. docs/queues.md explains shares, borrowing and preemption. Watch it:

{watch}"""
        )

    @staticmethod
    def _queues(ctx: WorkloadsContext, now: datetime) -> list[dict[str, Any]]:
        alerts = alert_rule_object(ctx.config) if PROMETHEUS_RULES in ctx.provided else []
        return [*cluster_objects_at(ctx.config, now), *alerts]

    def workload_objects(self, ctx: WorkloadsContext) -> tuple[ObjectGroup, ...]:
        now = ctx.now or datetime.now(UTC)
        return (
            # The ClusterQueues wait for nothing, so that on destroy they go while the tenant
            # namespaces go: Kueue holds a ClusterQueue until no job in it holds quota, and
            # deleting a namespace deletes its jobs. Each LocalQueue needs its namespace.
            # A Capacity Block's flavour has quota only inside the block's window (addons/kueue/window.py).
            # The CronJobs' JSON patches make their field manager the owner of the ClusterQueues'
            # spec.resourceGroups (an atomic list, apis/kueue/v1beta2/clusterqueue_types.go 73 at
            # v0.19.2): the next apply whose quota differs takes it back instead of failing.
            # Computed for `now`: a plan too close to (or past) the next edge is refused.
            ObjectGroup(
                id="queues",
                objects=tuple(self._queues(ctx, now)),
                force_conflicts=True,
                plan_before=plan_deadline(ctx.config, now),
            ),
            ObjectGroup(id="local-queues", objects=tuple(local_queues(ctx.config)), after_tenants=True),
            # A pod, or a job's pod, that no node of the queues can hold is refused when it is created,
            # with the fix, instead of being admitted and never scheduled (addons/kueue/fit.py).
            ObjectGroup(id="pod-fit", objects=tuple(fit_objects(ctx.config, ctx.pod_sources))),
        )


PARTS = KueueParts(DEFINITION)
