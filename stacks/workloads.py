"""Workloads layer: tenant namespaces with quotas, policies, identities and static volumes, the
tenants' people's access entries and roles, DRA claim templates, and what the enabled add-ons
contribute (addons/parts.py): objects in every tenant namespace, the job kinds tenants' people may
use, and cluster-level objects (Karpenter's pools before the tenants, Kueue's queues and pod-fit
policies, Kubeflow Trainer's runtimes after them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cdktf import ITerraformDependable
from cdktf_cdktf_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
from constructs import Construct

from addons.contributions import enabled_parts, pod_sources, provided, tenant_additions, tenant_gpu_quota
from addons.parts import ObjectGroup, WorkloadsContext
from components.k8s.objects import KubernetesObjects, KubernetesObjectsProps
from components.k8s.tenant import SERVICE_ACCOUNT, SharedStorage, TenantProps, tenant_objects
from components.k8s.tenant_rbac import DRA_CLAIMS, cluster_roles
from components.tenant_access import TenantAccess, TenantAccessProps
from components.tenant_identity import TenantIdentity, TenantIdentityProps
from profiles import PlatformConfig
from profiles.gpus import dra_claim_counts
from stacks.contracts import AddonsOutputs, BuildOutputs, ClusterOutputs, StorageOutputs
from stacks.layer import LayerStack, StateLocation


class WorkloadsStack(LayerStack):
    def __init__(
        self,
        scope: Construct,
        layer: str,
        *,
        config: PlatformConfig,
        state: StateLocation,
        cluster: ClusterOutputs,
        storage: StorageOutputs,
        build: BuildOutputs,
        addons: AddonsOutputs,
    ):
        super().__init__(scope, layer, config=config, state=state)
        self.use_aws_provider()
        self.use_kubernetes_providers(cluster, helm=False)
        workloads = config.workloads
        account_id = DataAwsCallerIdentity(self, "account").account_id
        self.objects: list[dict[str, Any]] = []

        parts = enabled_parts(config)
        shared = SharedStorage(
            region=config.region,
            fsx_file_system_id=storage.fsx_file_system_id,
            fsx_dns_name=storage.fsx_dns_name,
            fsx_mount_name=storage.fsx_mount_name,
            fsx_capacity_gib=config.storage.fsx.storage_capacity_gib,
            fsx_tenant_directories=config.storage.fsx.tenant_directories,
            bucket_names=storage.bucket_names,
        )
        ctx = WorkloadsContext(
            config=config,
            cluster=cluster,
            storage=storage,
            build=build,
            addons=addons,
            fsx_tenant_volume=shared.fsx_tenant_volume,
            pod_sources=pod_sources(config),
            provided=provided(config),
            now=datetime.now(UTC),
        )
        groups = [group for part in parts for group in part.workload_objects(ctx)]
        # What tenants' pods land on (node pools) first; then the tenants; then the rest.
        for group in groups:
            if group.first:
                self._apply(group)
        tenant_namespaces = []
        for tenant in workloads.tenants:
            objects = KubernetesObjects(
                self,
                f"tenant-{tenant.name}",
                props=KubernetesObjectsProps(
                    objects=tuple(
                        tenant_objects(
                            TenantProps(
                                config=tenant,
                                storage=shared,
                                gpu_quota=tenant_gpu_quota(config, tenant),
                                dra_gpu_counts=dra_claim_counts(config),
                                additions=tenant_additions(config, tenant),
                            )
                        )
                    )
                ),
            )
            self.objects += objects.objects
            tenant_namespaces.append(objects.dependable(f"namespace-{tenant.name}"))
            TenantIdentity(
                self,
                f"tenant-{tenant.name}-identity",
                props=TenantIdentityProps(
                    platform_name=config.name,
                    account_id=account_id,
                    cluster_name=cluster.cluster_name,
                    namespace=tenant.name,
                    service_account=SERVICE_ACCOUNT,
                    bucket_arns=tuple(storage.bucket_arns[p] for p in sorted(storage.bucket_arns)),
                ),
            )
        if grants := workloads.tenant_access():
            # The tenants' people: namespace-scoped access entries (cluster admins' are the cluster layer's),
            # and the roles their namespaces' RoleBindings give them over the job kinds this profile runs.
            TenantAccess(
                self, "tenant-access", props=TenantAccessProps(cluster_name=cluster.cluster_name, grants=grants)
            )
            kinds = (
                *(kind for part in parts for kind in part.tenant_resources(config)),
                *((DRA_CLAIMS,) if dra_claim_counts(config) else ()),
            )
            roles = cluster_roles(kinds)
            self.objects += KubernetesObjects(
                self, "tenant-roles", props=KubernetesObjectsProps(objects=tuple(roles))
            ).objects
        for group in groups:
            if not group.first:
                self._apply(group, after=tuple(tenant_namespaces) if group.after_tenants else ())

    def _apply(self, group: ObjectGroup, *, after: tuple[ITerraformDependable, ...] = ()) -> None:
        applied = KubernetesObjects(
            self,
            group.id,
            props=KubernetesObjectsProps(
                objects=group.objects,
                depends_on=after,
                force_conflicts=group.force_conflicts,
                plan_before=group.plan_before,
            ),
        )
        self.objects += applied.objects
