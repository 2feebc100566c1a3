"""JupyterHub's contributions: the hub on a tenant's day-one page."""

from __future__ import annotations

from addons.jupyterhub import DEFINITION
from addons.parts import AddonParts, GuidePart, WebUi
from profiles.models import PlatformConfig
from profiles.workloads import TenantConfig

# The chart (zero-to-jupyterhub) serves users through the Service proxy-public, port 80.
PROXY_SERVICE, PROXY_PORT = "proxy-public", 80


class JupyterHubParts(AddonParts):
    def guide(self, config: PlatformConfig, tenant: TenantConfig) -> GuidePart:
        ui = WebUi(
            name="JupyterHub",
            command=f"kubectl -n {DEFINITION.namespace} port-forward svc/{PROXY_SERVICE} 8080:{PROXY_PORT}",
            url="http://localhost:8080",
            account="your own identity at the profile's OIDC provider, if `addons.jupyterhub.allowed_users` lists it",
        )
        return GuidePart(web_uis=(ui,))


PARTS = JupyterHubParts(DEFINITION)
