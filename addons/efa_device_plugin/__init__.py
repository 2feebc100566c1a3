"""AWS EFA Kubernetes device plugin: advertises vpc.amazonaws.com/efa on EFA nodes."""

from __future__ import annotations

from addons.definition import AddonDefinition, Minimum, ReleaseConfig
from profiles.versions import ChartRef


class EfaDevicePluginConfig(ReleaseConfig):
    """The EFA device plugin's settings: on or off, and its chart version."""


# The plugin version the minimum is about, checked against the pinned chart's app version.
PLUGIN_MINIMUM = (0, 5, 10)

DEFINITION = AddonDefinition(
    key="efa_device_plugin",
    settings_type=EfaDevicePluginConfig,
    description="AWS EFA Kubernetes device plugin, which advertises vpc.amazonaws.com/efa.",
    # Chart v0.5.30 ships plugin v0.5.20 (the plugin's version is not the chart's).
    pin=ChartRef(
        repository="https://aws.github.io/eks-charts",
        chart="aws-efa-k8s-device-plugin",
        version="v0.5.30",
        app_version="v0.5.20",
    ),
    namespace="kube-system",
    creates_namespace=False,
    minimums=(
        Minimum(
            version=(0, 5, 18),
            why="EFA device plugins before 0.5.10 (first shipped in chart v0.5.18) count NVLink controllers as EFA "
            "devices on p6-b200",
        ),
    ),
)
