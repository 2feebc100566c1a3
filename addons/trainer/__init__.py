"""Kubeflow Trainer v2: TrainJobs (torchrun across nodes) on ClusterTrainingRuntimes, with JobSet."""

from __future__ import annotations

from addons.definition import AddonDefinition, ReleaseConfig
from profiles.versions import ChartRef


class TrainerConfig(ReleaseConfig):
    """Kubeflow Trainer's settings. The platform adds a ClusterTrainingRuntime per GPU node group
    (torch-<group>): torchrun on that group's nodes with all their GPUs and EFA interfaces, and the
    tenant's FSx and checkpoint volumes."""

    enabled: bool = False
    """Install Kubeflow Trainer and its JobSet controller (off by default)."""
    torch_image: str = "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"
    """The runtimes' default image (a TrainJob may name its own). CUDA 12.8, like the validation images:
    CUDA 13 needs the NVIDIA 580 driver, which older AL2023 NVIDIA AMIs do not have. For EFA's bandwidth
    use an image with the EFA installer and aws-ofi-nccl (an AWS Deep Learning Container, or one the
    build layer makes): without them NCCL falls back to TCP."""


DEFINITION = AddonDefinition(
    key="trainer",
    settings_type=TrainerConfig,
    description="Kubeflow Trainer v2 (TrainJob, ClusterTrainingRuntime) and JobSet, for PyTorch jobs (off by default).",
    pin=ChartRef(
        repository="oci://ghcr.io/kubeflow/charts", chart="kubeflow-trainer", version="2.3.0", app_version="v2.3.0"
    ),
    namespace="kubeflow-system",
)
