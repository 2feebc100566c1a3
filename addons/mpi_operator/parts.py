"""The MPI Operator's contributions: MPIJobs are a tenant job kind (their RBAC and where their pods are)."""

from __future__ import annotations

from addons.mpi_operator import DEFINITION
from addons.parts import AddonParts, GuideJob, GuidePart
from components.k8s.pod_sources import PodSource, specs_of
from components.k8s.tenant_rbac import TenantResources
from profiles.models import PlatformConfig
from profiles.workloads import TenantConfig

MPI_JOBS = TenantResources("kubeflow.org", ("mpijobs",))
# Every replica type's template (Launcher, Worker), kubeflow.org/v2beta1 at the pinned release.
MPI_JOB_PODS = PodSource(
    "mpijobs",
    (("kubeflow.org", "v2beta1", ("mpijobs",)),),
    lambda o: specs_of(
        f"{o}.spec.mpiReplicaSpecs.filter(role, has({o}.spec.mpiReplicaSpecs[role].template))"
        f".map(role, {o}.spec.mpiReplicaSpecs[role].template)"
    ),
)


class MpiOperatorParts(AddonParts):
    def guide(self, config: PlatformConfig, tenant: TenantConfig) -> GuidePart:
        job = GuideJob(
            what="an MPIJob across two nodes", section="An MPIJob across two nodes", kind="mpijob", name="allreduce"
        )
        return GuidePart(jobs=(job,))

    def tenant_resources(self, config: PlatformConfig) -> tuple[TenantResources, ...]:
        return (MPI_JOBS,)

    def pod_sources(self, config: PlatformConfig) -> tuple[PodSource, ...]:
        return (MPI_JOB_PODS,)


PARTS = MpiOperatorParts(DEFINITION)
