"""kube-prometheus-stack's contributions: Grafana on a tenant's day-one page, the warning when
nobody is subscribed to the alert topic, and verify's dashboards and test-alert checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from addons.monitoring import DEFINITION, GRAFANA_DEPLOYMENT, GRAFANA_PORT, alert_warnings
from addons.monitoring.checks import monitoring_checks
from addons.monitoring.delivery import AlertDelivery
from addons.parts import AddonParts, GuidePart, WebUi
from components.acceptance import AcceptanceCheck, MultiNodeSite
from profiles.models import PlatformConfig
from profiles.workloads import TenantConfig
from stacks.contracts import AddonRecord


class MonitoringParts(AddonParts):
    records: ClassVar[Mapping[str, type[AddonRecord]]] = {"addons": AlertDelivery}

    def warnings(self, config: PlatformConfig) -> tuple[str, ...]:
        return tuple(alert_warnings(config))

    def checks(self, config: PlatformConfig, site: MultiNodeSite | None) -> tuple[AcceptanceCheck, ...]:
        return monitoring_checks(config)

    def guide(self, config: PlatformConfig, tenant: TenantConfig) -> GuidePart:
        namespace = DEFINITION.namespace_of(DEFINITION.settings(config))
        ui = WebUi(
            name="Grafana",
            command=f"kubectl -n {namespace} port-forward deploy/{GRAFANA_DEPLOYMENT} 3000:{GRAFANA_PORT}",
            url="http://localhost:3000",
            account="a Grafana user the admin creates for you (Viewer); the admin signs in as `admin`",
        )
        return GuidePart(web_uis=(ui,))


PARTS = MonitoringParts(DEFINITION)
