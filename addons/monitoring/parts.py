"""kube-prometheus-stack's contributions: Grafana on a tenant's day-one page."""

from __future__ import annotations

from addons.monitoring import DEFINITION, GRAFANA_DEPLOYMENT, GRAFANA_PORT
from addons.parts import AddonParts, GuidePart, WebUi
from profiles.models import PlatformConfig
from profiles.workloads import TenantConfig


class MonitoringParts(AddonParts):
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
