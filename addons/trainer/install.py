"""Kubeflow Trainer's controller and its JobSet dependency (the chart installs both), on the
system nodes. The API server calls both controllers' admission webhooks (Trainer's TrainJob and
runtime checks fail closed), so the namespace admits them from the VPC. The TrainJob status
server (an alpha feature, off) is not used, so training pods never call the controller."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from addons.trainer import DEFINITION, TrainerConfig
from addons.trainer.alerts import progress_rules
from components.helm.addon import AddonContext, HelmAddonSpec, Monitors, RuntimePath
from components.helm.release import Values
from components.k8s.namespaces import ingress_from_control_plane
from components.labels import SYSTEM_NODES
from profiles import PlatformConfig

WEBHOOK_PORT = 9443


class Manager(Values):
    node_selector: dict[str, str]
    # Two replicas: Trainer's TrainJob and runtime webhooks fail closed.
    replicas: int = 2


class JobSetController(Values):
    node_selector: dict[str, str]
    # Two replicas and a budget: JobSet's pod and JobSet webhooks fail closed.
    replicas: int = 2
    pod_disruption_budget: dict[str, Any] = Field(default_factory=lambda: {"enabled": True, "minAvailable": 1})


class JobSet(Values):
    controller: JobSetController


class TrainerValues(Values):
    manager: Manager
    jobset: JobSet


class TrainerAddon(HelmAddonSpec[TrainerConfig]):
    definition = DEFINITION
    release_name = "kubeflow-trainer"

    def values(self, ctx: AddonContext, settings: TrainerConfig) -> TrainerValues:
        return TrainerValues(
            manager=Manager(node_selector=dict(SYSTEM_NODES)),
            jobset=JobSet(controller=JobSetController(node_selector=dict(SYSTEM_NODES))),
        )

    def monitors(self, settings: TrainerConfig, config: PlatformConfig) -> Monitors:
        # A training pod that stopped making progress (its liveness probe on the progress file fails).
        return Monitors(rule_groups=(progress_rules(),))

    def runtime_paths(self, settings: TrainerConfig) -> tuple[RuntimePath, ...]:
        return (
            RuntimePath(
                what="the API server calls Trainer's and JobSet's webhooks (both controllers serve on 9443)",
                direction="Ingress",
                peer="control-plane",
                port=WEBHOOK_PORT,
            ),
            RuntimePath(
                what="training pods never call the controller: its status server (alpha, off) stays closed",
                direction="Ingress",
                peer="tenants",
                port=10443,
                open=False,
            ),
        )

    def network_allows(self, ctx: AddonContext, settings: TrainerConfig) -> dict[str, dict[str, Any]]:
        return {"allow-admission-webhooks": ingress_from_control_plane(ctx.vpc_cidr, WEBHOOK_PORT)}


ADDON = TrainerAddon()
