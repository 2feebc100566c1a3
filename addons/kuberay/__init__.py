"""KubeRay operator: RayCluster, RayJob and RayService controllers."""

from __future__ import annotations

from addons.definition import AddonDefinition, ReleaseConfig
from profiles.versions import ChartRef


class KubeRayConfig(ReleaseConfig):
    """The KubeRay operator's settings."""

    enabled: bool = False
    """Install the KubeRay operator (off by default)."""


DEFINITION = AddonDefinition(
    key="kuberay",
    settings_type=KubeRayConfig,
    description="KubeRay operator for Ray clusters and jobs (off by default).",
    pin=ChartRef(
        repository="https://ray-project.github.io/kuberay-helm/",
        chart="kuberay-operator",
        version="1.7.0",
        app_version="v1.7.0",
    ),
    namespace="ray-system",
)
