"""Workloads layer: Karpenter node class and pools, tenant namespaces with quotas, policies,
identities and static volumes, the tenants' people's access entries, DRA claim templates, Kueue's
per-tenant queues with the admission policies that refuse a tenant's pod larger than any of their
nodes, and Kubeflow Trainer's runtimes (on EFA groups with the build layer's PyTorch-over-EFA image)."""

from __future__ import annotations

from typing import Any

from cdktf_cdktf_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
from constructs import Construct

from addons.kuberay import DEFINITION as KUBERAY
from addons.kueue import DEFINITION as KUEUE
from addons.kueue.fit import fit_objects
from addons.kueue.queues import cluster_objects, local_queues
from addons.mlflow import DEFINITION as MLFLOW
from addons.mpi_operator import DEFINITION as MPI_OPERATOR
from addons.trainer import DEFINITION as TRAINER
from addons.trainer import EFA_TORCH_PROJECT_IMAGE
from addons.trainer.runtimes import TenantVolumes, runtime_objects
from components.k8s.karpenter_pools import GPU_POOL, KarpenterPoolsProps, karpenter_objects, node_pools
from components.k8s.objects import KubernetesObjects, KubernetesObjectsProps
from components.k8s.tenant import SERVICE_ACCOUNT, SharedStorage, TenantProps, tenant_objects
from components.k8s.tenant_rbac import (
    DRA_CLAIMS,
    KUEUE_QUEUES,
    MPI_JOBS,
    RAY_JOBS,
    TRAIN_JOBS,
    TenantResources,
    cluster_roles,
)
from components.tenant_access import TenantAccess, TenantAccessProps
from components.tenant_identity import TenantIdentity, TenantIdentityProps
from profiles import PlatformConfig
from profiles.models import dra_claim_counts, tenant_gpu_quota
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

        if addons.karpenter is not None:
            pools = KubernetesObjects(
                self,
                "karpenter",
                props=KubernetesObjectsProps(
                    objects=tuple(
                        karpenter_objects(
                            KarpenterPoolsProps(
                                cluster_name=config.name,
                                node_role_name=addons.karpenter.node_role_name,
                                node_security_group_id=cluster.node_security_group_id,
                                cpu=workloads.cpu_pool,
                                gpu=workloads.gpu_pool,
                                lustre_over_efa=config.storage.fsx.enabled and config.storage.fsx.efa_enabled,
                                gpu_pool=GPU_POOL in node_pools(config),
                                ami_alias=config.cluster.karpenter_ami_alias,
                            )
                        )
                    )
                ),
            )
            self.objects += pools.objects

        shared = SharedStorage(
            region=config.region,
            fsx_file_system_id=storage.fsx_file_system_id,
            fsx_dns_name=storage.fsx_dns_name,
            fsx_mount_name=storage.fsx_mount_name,
            fsx_capacity_gib=config.storage.fsx.storage_capacity_gib,
            fsx_tenant_directories=config.storage.fsx.tenant_directories,
            bucket_names=storage.bucket_names,
        )
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
                                mlflow=MLFLOW.enabled(config),
                                kuberay=KUBERAY.enabled(config),
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
            kinds: dict[TenantResources, bool] = {
                MPI_JOBS: MPI_OPERATOR.enabled(config),
                TRAIN_JOBS: TRAINER.enabled(config),
                RAY_JOBS: KUBERAY.enabled(config),
                KUEUE_QUEUES: KUEUE.enabled(config),
                DRA_CLAIMS: bool(dra_claim_counts(config)),
            }
            roles = cluster_roles(tuple(kind for kind, used in kinds.items() if used))
            self.objects += KubernetesObjects(
                self, "tenant-roles", props=KubernetesObjectsProps(objects=tuple(roles))
            ).objects
        if KUEUE.enabled(config):
            # The ClusterQueues wait for nothing, so that on destroy they go while the tenant
            # namespaces go: Kueue holds a ClusterQueue until no job in it holds quota, and
            # deleting a namespace deletes its jobs. Each LocalQueue needs its namespace.
            queues = KubernetesObjects(
                self, "queues", props=KubernetesObjectsProps(objects=tuple(cluster_objects(config)))
            )
            local = KubernetesObjects(
                self,
                "local-queues",
                props=KubernetesObjectsProps(objects=tuple(local_queues(config)), depends_on=tuple(tenant_namespaces)),
            )
            # A pod, or a job's pod, that no node of the queues can hold is refused when it is created,
            # with the fix, instead of being admitted and never scheduled (addons/kueue/fit.py).
            fit = KubernetesObjects(self, "pod-fit", props=KubernetesObjectsProps(objects=tuple(fit_objects(config))))
            self.objects += queues.objects + local.objects + fit.objects
        if TRAINER.enabled(config):
            volumes = TenantVolumes(fsx=shared.fsx_tenant_volume, checkpoints="checkpoints" in storage.bucket_names)
            runtimes = runtime_objects(
                config.cluster.gpu_node_groups,
                TRAINER.settings(config),
                volumes,
                efa_image=efa_torch_image(config, build),
            )
            trainer = KubernetesObjects(self, "trainer-runtimes", props=KubernetesObjectsProps(objects=tuple(runtimes)))
            self.objects += trainer.objects


def efa_torch_image(config: PlatformConfig, build: BuildOutputs) -> str | None:
    """The build layer's PyTorch-over-EFA image: its repository and the tag its build pushes (the
    repositories are immutable and the tag is derived from the Dockerfile), or None where the
    profile builds none."""
    impl = config.build.building(EFA_TORCH_PROJECT_IMAGE)
    return None if impl is None else f"{build.repository_urls[impl]}:{build.image_tags[impl]}"
