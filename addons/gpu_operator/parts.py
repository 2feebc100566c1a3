"""The GPU Operator's contributions: verify's read-only check of the GPU health check (when the
profile runs it)."""

from __future__ import annotations

from addons.gpu_operator import DEFINITION
from addons.gpu_operator.check import gpu_health_check
from addons.parts import AddonParts
from components.acceptance import AcceptanceCheck, MultiNodeSite
from profiles.models import PlatformConfig


class GpuOperatorParts(AddonParts):
    def checks(self, config: PlatformConfig, site: MultiNodeSite | None) -> tuple[AcceptanceCheck, ...]:
        settings = DEFINITION.settings(config)
        if settings.health_check_minutes is None:
            return ()
        return (gpu_health_check(DEFINITION.namespace_of(settings)),)


PARTS = GpuOperatorParts(DEFINITION)
