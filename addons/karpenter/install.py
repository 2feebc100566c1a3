"""Karpenter: its AWS identity (controller role, node role, interruption queue) and the chart, whose
values carry the cluster settings and the queue, with the controllers on the system nodes."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from addons.karpenter import DEFINITION, HANDLES_RESERVATION_INTERRUPTIONS, KarpenterConfig
from addons.karpenter.dashboards import DASHBOARDS
from addons.karpenter.identity import KarpenterIdentity, KarpenterIdentityProps
from addons.karpenter.nodes import KarpenterNodes
from components.helm.addon import AddonContext, Companions, HelmAddonSpec, Monitors
from components.helm.monitors import service_monitor
from components.helm.release import Values
from components.labels import SYSTEM_NODES
from profiles import PlatformConfig
from profiles.versions import version_tuple

SERVICE_ACCOUNT = "karpenter"
NAMESPACE = DEFINITION.namespace


class KarpenterController(Values):
    # The controller cannot ask IMDS for its region (hop limit 1 keeps IMDS out of pods' reach).
    env: list[dict[str, str]]


class KarpenterValues(Values):
    settings: dict[str, Any]
    controller: KarpenterController
    service_account: dict[str, Any] = Field(default_factory=lambda: {"name": SERVICE_ACCOUNT})
    node_selector: dict[str, str] = Field(default_factory=lambda: dict(SYSTEM_NODES))
    replicas: int = 2


def karpenter_values(*, cluster_name: str, cluster_endpoint: str, queue_name: str, region: str) -> KarpenterValues:
    return KarpenterValues(
        settings={
            "clusterName": cluster_name,
            "clusterEndpoint": cluster_endpoint,
            "interruptionQueue": queue_name,
            # Replace nodes whose conditions (the EKS node monitoring agent's, e.g.
            # AcceleratedHardwareReady) stay unhealthy, as managed groups' auto-repair does.
            # An alpha gate (off in the chart's values): its behaviour may change between
            # Karpenter minors; read the release notes before moving the pin.
            "featureGates": {"nodeRepair": True},
        },
        controller=KarpenterController(env=[{"name": "AWS_REGION", "value": region}]),
    )


class KarpenterAddon(HelmAddonSpec[KarpenterConfig]):
    definition = DEFINITION
    release_name = "karpenter"

    def companions(self, ctx: AddonContext, settings: KarpenterConfig) -> Companions:
        # The controller starts only once its role, access entry and queue exist.
        config = ctx.config
        identity = KarpenterIdentity(
            ctx.scope,
            "karpenter-identity",
            props=KarpenterIdentityProps(
                name=config.name,
                region=config.region,
                cluster_name=ctx.cluster.cluster_name,
                namespace=NAMESPACE,
                service_account=SERVICE_ACCOUNT,
                handles_reservation_interruptions=version_tuple(self.chart(config).version)
                >= HANDLES_RESERVATION_INTERRUPTIONS,
            ),
        )
        nodes = KarpenterNodes(node_role_name=identity.node_role_name, interruption_queue=identity.queue_name)
        return Companions(ready=identity.ready, record=nodes)

    def values(self, ctx: AddonContext, settings: KarpenterConfig) -> KarpenterValues:
        nodes = ctx.own_companion(KarpenterNodes)
        return karpenter_values(
            cluster_name=ctx.cluster.cluster_name,
            cluster_endpoint=ctx.cluster.endpoint,
            queue_name=nodes.interruption_queue,
            region=ctx.config.region,
        )

    def monitors(self, settings: KarpenterConfig, config: PlatformConfig) -> Monitors:
        return Monitors(
            service_monitors=(service_monitor("karpenter", NAMESPACE, "karpenter", "http-metrics"),),
            dashboards=DASHBOARDS,
        )


ADDON = KarpenterAddon()
