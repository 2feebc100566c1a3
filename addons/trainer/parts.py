"""Kubeflow Trainer's contributions: TrainJobs are a tenant job kind (RBAC, where their pods are),
the workloads layer applies the platform's runtimes (one per GPU node group), and verify runs a
TrainJob across two nodes (addons/trainer/checks.py)."""

from __future__ import annotations

from addons.parts import AddonParts, GuideJob, GuidePart, ObjectGroup, WorkloadsContext
from addons.trainer import DEFINITION, EFA_TORCH_PROJECT_IMAGE, checkpoint_warnings
from addons.trainer.checks import trainjob_checks
from addons.trainer.runtimes import CHECKPOINTS_MOUNT, FSX_MOUNT, TenantVolumes, torch_runtime
from components.acceptance import AcceptanceCheck, MultiNodeSite
from components.k8s.pod_sources import PodSource
from components.k8s.tenant_rbac import TenantResources
from profiles import tenancy
from profiles.built_images import building_for
from profiles.models import PlatformConfig
from profiles.workloads import TenantConfig

TRAIN_JOBS = TenantResources("trainer.kubeflow.org", ("trainjobs",))


def _trainjob(o: str) -> str:
    """A TrainJob's nodes run its runtime's pod template (the platform's, tests/test_pod_fit.py),
    whose trainer container takes the TrainJob's resourcesPerNode in place of its own."""
    per_node = f"{o}.spec.trainer.resourcesPerNode"
    return f"has({o}.spec.trainer) && has({per_node}) ? [{{'containers': [{{'resources': {per_node}}}]}}] : []"


TRAIN_JOB_PODS = PodSource("trainjobs", (("trainer.kubeflow.org", "v1alpha1", ("trainjobs",)),), _trainjob)


def efa_torch_image(ctx: WorkloadsContext, architecture: str) -> str | None:
    """The build layer's PyTorch-over-EFA image for nodes of `architecture`: its repository and the
    tag its build pushes (the repositories are immutable and the tag is derived from the Dockerfile
    and the architecture), or None where the profile builds none for that architecture."""
    impl = building_for(ctx.config, EFA_TORCH_PROJECT_IMAGE, architecture)
    return None if impl is None else f"{ctx.build.repository_urls[impl]}:{ctx.build.image_tags[impl]}"


class TrainerParts(AddonParts):
    def checks(self, config: PlatformConfig, site: MultiNodeSite | None) -> tuple[AcceptanceCheck, ...]:
        return trainjob_checks(config, site)

    def guide(self, config: PlatformConfig, tenant: TenantConfig) -> GuidePart:
        fsx = config.storage.fsx
        lustre = (
            (f"- Trainer's runtimes mount your FSx for Lustre directory at `{FSX_MOUNT}`.",)
            if fsx.enabled and fsx.data_repository_associations
            else ()
        )
        checkpoints = (
            f"- Checkpoints: Trainer's runtimes mount the `{tenancy.s3_volume('checkpoints')}` claim at "
            f"`{CHECKPOINTS_MOUNT}`; write new files, never rewrite one."
        )
        return GuidePart(
            jobs=(GuideJob(what="a TrainJob (torchrun)", section="A TrainJob", kind="trainjob", name="ddp-sample"),),
            data=(*lustre, checkpoints),
        )

    def tenant_resources(self, config: PlatformConfig) -> tuple[TenantResources, ...]:
        return (TRAIN_JOBS,)

    def warnings(self, config: PlatformConfig) -> tuple[str, ...]:
        return tuple(checkpoint_warnings(config))

    def pod_sources(self, config: PlatformConfig) -> tuple[PodSource, ...]:
        return (TRAIN_JOB_PODS,)

    def workload_objects(self, ctx: WorkloadsContext) -> tuple[ObjectGroup, ...]:
        export = ctx.config.storage.fsx.checkpoint_export
        volumes = TenantVolumes(
            fsx=ctx.fsx_tenant_volume,
            checkpoints="checkpoints" in ctx.storage.bucket_names,
            # Where an association exports to the checkpoints bucket, the runtimes checkpoint there.
            **({"fsx_checkpoints": export.file_system_path} if export else {}),
        )
        settings = DEFINITION.settings(ctx.config)
        # Each group's runtime runs the image built for its nodes' architecture.
        runtimes = [
            torch_runtime(group, settings, volumes, efa_image=efa_torch_image(ctx, group.catalog_entry.architecture))
            for group in ctx.config.cluster.gpu_node_groups
        ]
        return (ObjectGroup(id="trainer-runtimes", objects=tuple(runtimes)),)


PARTS = TrainerParts(DEFINITION)
