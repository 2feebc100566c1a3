"""KubeRay operator: RayCluster / RayJob controllers, run on the system nodes."""

from __future__ import annotations

from components.helm.addon import AddonContext, HelmAddonSpec
from components.helm.common import Placement
from profiles.addons import ReleaseConfig


class KubeRayAddon(HelmAddonSpec[ReleaseConfig]):
    key = "kuberay"
    release_name = "kuberay-operator"
    namespace = "ray-system"

    def values(self, ctx: AddonContext, settings: ReleaseConfig) -> Placement:
        return Placement()


ADDON = KubeRayAddon()
