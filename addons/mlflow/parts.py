"""MLflow's contributions: every namespace whose pods log to the tracking server (the tenants', and
add-ons that ask for `AddonContext.clients`) gets the label the server admits, its egress to the
server, the tracking URI in its environment and as a ConfigMap (addons/mlflow/access.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from addons.mlflow import DEFINITION
from addons.mlflow.access import (
    CLIENT_LABEL,
    SERVICE,
    SERVICE_PORT,
    egress_to_mlflow,
    tracking_config_map,
    tracking_env,
)
from addons.mlflow.backend import MlflowBackend
from addons.mlflow.check import mlflow_check
from addons.parts import AddonParts, GuidePart, WebUi
from components.acceptance import AcceptanceCheck, MultiNodeSite
from components.k8s.clients import ClientAccess
from profiles.models import PlatformConfig
from profiles.workloads import TenantConfig
from stacks.contracts import AddonRecord


def _config_map(namespace: str) -> list[dict[str, object]]:
    return [tracking_config_map(namespace)]


class MlflowParts(AddonParts):
    def not_priced(self, config: PlatformConfig) -> tuple[str, ...]:
        database = DEFINITION.settings(config).database
        return (f"MLflow database: {database.instance_class}, {database.allocated_storage_gib} GiB",)

    def guide(self, config: PlatformConfig, tenant: TenantConfig) -> GuidePart:
        forward = f"kubectl -n {DEFINITION.namespace} port-forward svc/{SERVICE} 5000:{SERVICE_PORT}"
        ui = WebUi(
            name="MLflow",
            command=forward,
            url="http://localhost:5000",
            account="an MLflow user the admin creates for you (docs/mlflow.md)",
        )
        return GuidePart(web_uis=(ui,))

    records: ClassVar[Mapping[str, type[AddonRecord]]] = {"storage": MlflowBackend}

    def clients(self, config: PlatformConfig) -> ClientAccess | None:
        return ClientAccess(
            labels=dict(CLIENT_LABEL),
            allow={"allow-mlflow": egress_to_mlflow()},
            env={env["name"]: env["value"] for env in tracking_env()},
            objects=_config_map,
        )

    def checks(self, config: PlatformConfig, site: MultiNodeSite | None) -> tuple[AcceptanceCheck, ...]:
        return (mlflow_check(DEFINITION.settings(config)),)


PARTS = MlflowParts(DEFINITION)
