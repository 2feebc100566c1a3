"""Kubeflow Trainer v2: TrainJobs (torchrun across nodes) on ClusterTrainingRuntimes, with JobSet."""

from __future__ import annotations

from addons.definition import AddonDefinition, PlatformConfig, ReleaseConfig
from profiles.image_ref import ImageRef
from profiles.versions import ChartRef

# The runtimes' image on node groups without EFA (no EFA, no network plugin to carry). CUDA 12.8,
# like the validation images: CUDA 13 needs the NVIDIA 580 driver, which older AL2023 NVIDIA AMIs
# do not have.
PUBLIC_TORCH_IMAGE = "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"
# The project image (images/<name>/Dockerfile) the runtimes of EFA node groups run: the same
# PyTorch with the EFA installer's libfabric and aws-ofi-nccl, built and pushed by the build layer.
EFA_TORCH_PROJECT_IMAGE = "pytorch-efa"


class TrainerConfig(ReleaseConfig):
    """Kubeflow Trainer's settings. The platform adds a ClusterTrainingRuntime per GPU node group
    (torch-<group>): torchrun on that group's nodes with all their GPUs and EFA interfaces, and the
    tenant's FSx and checkpoint volumes."""

    enabled: bool = False
    """Install Kubeflow Trainer and its JobSet controller (off by default)."""
    torch_image: ImageRef | None = None
    """The runtimes' default image (a TrainJob may name its own). Unset: on EFA node groups the image
    the build layer builds from images/pytorch-efa (PyTorch 2.7.1 with the EFA installer's libfabric
    and aws-ofi-nccl; list it under build.reference_implementations with project_image: pytorch-efa),
    elsewhere pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime. Set: every runtime runs it; on EFA groups
    it must bring libfabric and aws-ofi-nccl, or NCCL falls back to TCP (verify's torchrun-check fails
    then). CUDA 12.8, like the validation images: CUDA 13 needs the NVIDIA 580 driver, which older
    AL2023 NVIDIA AMIs do not have."""


DEFINITION = AddonDefinition(
    key="trainer",
    settings_type=TrainerConfig,
    description="Kubeflow Trainer v2 (TrainJob, ClusterTrainingRuntime) and JobSet, for PyTorch jobs (off by default).",
    pin=ChartRef(
        repository="oci://ghcr.io/kubeflow/charts", chart="kubeflow-trainer", version="2.3.0", app_version="v2.3.0"
    ),
    namespace="kubeflow-system",
)


def checkpoint_warnings(config: PlatformConfig) -> list[str]:
    """A profile whose runtimes checkpoint to FSx with no association exporting them to S3: they
    live on the file system alone (a SCRATCH_2 one loses them with a failed server)."""
    fsx = config.storage.fsx
    # Without associations there are no tenant directories: the runtimes checkpoint to the bucket.
    if not DEFINITION.enabled(config) or not fsx.enabled or not fsx.data_repository_associations:
        return []
    if fsx.checkpoint_export is not None:
        return []
    return [
        "warning: the Trainer runtimes checkpoint to each tenant's FSx directory /checkpoints, which no data "
        "repository association exports to S3: checkpoints live on the file system alone. Add "
        "{file_system_path: /checkpoints, bucket: checkpoints, import_events: [], export_events: [NEW, CHANGED]} "
        "to storage.fsx.data_repository_associations."
    ]
