"""KubeRay operator: RayCluster / RayJob controllers, run on the system nodes."""

from __future__ import annotations

from typing import Any

from components.helm.addon import AddonContext, HelmAddonSpec
from components.helm.common import Placement
from components.k8s.ray_access import RAY_NAMESPACE, operator_to_ray_heads
from profiles.addons import ReleaseConfig


class KubeRayAddon(HelmAddonSpec[ReleaseConfig]):
    key = "kuberay"
    release_name = "kuberay-operator"
    namespace = RAY_NAMESPACE

    def network_allows(self, ctx: AddonContext, settings: ReleaseConfig) -> dict[str, dict[str, Any]]:
        # RayJob status and submission (dashboard) and RayService health (Serve) on tenant heads.
        return operator_to_ray_heads(tuple(tenant.name for tenant in ctx.config.workloads.tenants))

    def values(self, ctx: AddonContext, settings: ReleaseConfig) -> Placement:
        return Placement()


ADDON = KubeRayAddon()
