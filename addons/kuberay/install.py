"""KubeRay operator: RayCluster / RayJob controllers, run on the system nodes."""

from __future__ import annotations

from typing import Any

from addons.kuberay import DEFINITION, KubeRayConfig
from addons.kuberay.access import DASHBOARD_PORT, HEAD_POD, SERVE_PORT, operator_to_ray_heads
from addons.kuberay.dashboards import DASHBOARDS
from components.helm.addon import AddonContext, HelmAddonSpec, Monitors, RuntimePath
from components.helm.common import Placement
from components.helm.monitors import service_monitor
from profiles import PlatformConfig

# Ray's head and worker pods (KubeRay names their metrics container port `metrics`, 8080) in any
# namespace: tenants admit the monitoring namespace's scrapes.
RAY_POD_MONITOR: dict[str, Any] = {
    "name": "ray",
    "namespaceSelector": {"any": True},
    "selector": {"matchExpressions": [{"key": "ray.io/node-type", "operator": "Exists"}]},
    "podMetricsEndpoints": [{"port": "metrics", "interval": "30s"}],
}


class KubeRayAddon(HelmAddonSpec[KubeRayConfig]):
    definition = DEFINITION
    release_name = "kuberay-operator"

    def network_allows(self, ctx: AddonContext, settings: KubeRayConfig) -> dict[str, dict[str, Any]]:
        # RayJob status and submission (dashboard) and RayService health (Serve) on tenant heads.
        return operator_to_ray_heads(tuple(tenant.name for tenant in ctx.config.workloads.tenants))

    def values(self, ctx: AddonContext, settings: KubeRayConfig) -> Placement:
        return Placement()

    def runtime_paths(self, settings: KubeRayConfig) -> tuple[RuntimePath, ...]:
        return (
            RuntimePath(
                what="RayJob status and submission through the head's dashboard (rayjob_controller.go)",
                direction="Egress",
                port=DASHBOARD_PORT,
                peer="tenants",
                peer_labels=HEAD_POD,
            ),
            RuntimePath(
                what="RayService health through Serve on the head (rayservice_controller.go)",
                direction="Egress",
                port=SERVE_PORT,
                peer="tenants",
                peer_labels=HEAD_POD,
            ),
            RuntimePath(
                what="a tenant's worker pods are not the operator's to reach",
                direction="Egress",
                peer="tenants",
                peer_labels={"ray.io/node-type": "worker"},
                port=DASHBOARD_PORT,
                open=False,
            ),
        )

    def monitors(self, settings: KubeRayConfig, config: PlatformConfig) -> Monitors:
        # The operator's chart has its own ServiceMonitor option, but it would race the CRDs.
        operator = service_monitor("kuberay-operator", self.namespace, "kuberay-operator", "http")
        return Monitors(service_monitors=(operator,), pod_monitors=(RAY_POD_MONITOR,), dashboards=DASHBOARDS)


ADDON = KubeRayAddon()
