"""AWS EFA device plugin: advertises vpc.amazonaws.com/efa on EFA nodes only."""

from __future__ import annotations

from addons.efa_device_plugin import DEFINITION, EfaDevicePluginConfig
from components.helm.addon import AddonContext, HelmAddonSpec
from components.helm.common import GPU_TOLERATIONS, Toleration
from components.helm.release import Values
from components.labels import EFA_NODES


class EfaDevicePluginValues(Values):
    node_selector: dict[str, str]
    tolerations: list[Toleration]


def efa_device_plugin_values() -> EfaDevicePluginValues:
    return EfaDevicePluginValues(node_selector=dict(EFA_NODES), tolerations=GPU_TOLERATIONS)


class EfaDevicePluginAddon(HelmAddonSpec[EfaDevicePluginConfig]):
    definition = DEFINITION
    release_name = "efa-device-plugin"

    def values(self, ctx: AddonContext, settings: EfaDevicePluginConfig) -> EfaDevicePluginValues:
        return efa_device_plugin_values()


ADDON = EfaDevicePluginAddon()
