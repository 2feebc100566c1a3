"""NVIDIA GPU Operator: the device plugin, DCGM exporter and GPU feature discovery on GPU nodes."""

from __future__ import annotations

from pydantic import Field

from addons.definition import DRA_GPUS, AddonDefinition, ReleaseConfig
from profiles.versions import ChartRef


class GpuOperatorConfig(ReleaseConfig):
    dra: bool = False
    """Opt-in DRA mode: GPU Operator deploys the GPUCluster singleton instead of the ClusterPolicy. Needs Kubernetes
    1.34 or later (resource.k8s.io/v1).
    """
    health_check_minutes: int | None = Field(15, ge=5, le=1440)
    """Minutes between GPU node health checks (GPU count, EFA devices, DCGM's health watches); a failing node is
    tainted platform/gpu-health=failed:NoSchedule until three complete checks in a row pass. null: no health check.
    """

    def platform_facts(self) -> frozenset[str]:
        return frozenset({DRA_GPUS}) if self.enabled and self.dra else frozenset()


DEFINITION = AddonDefinition(
    key="gpu_operator",
    settings_type=GpuOperatorConfig,
    description="NVIDIA GPU Operator (uses the driver the AL2023 NVIDIA AMI ships).",
    pin=ChartRef(
        repository="https://helm.ngc.nvidia.com/nvidia", chart="gpu-operator", version="v26.7.0", app_version="v26.7.0"
    ),
    namespace="gpu-operator",
    # GPU Operator platform support: Kubernetes 1.36 from 26.3.2.
    kubernetes_minimums={"1.36": (26, 3, 2)},
)
