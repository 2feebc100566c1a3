"""The catalog's add-ons' contributions to the other layers (addons/parts.py), found by convention:
`addons/<key>/parts.py` ends with `PARTS`; an add-on without one contributes nothing. Imported by
the layers and the operations, never by the profile validator (parts read validated profiles, so
loading them from profiles/ would be an import cycle)."""

from __future__ import annotations

from typing import Any

from addons.catalog import DEFINITIONS, package_module
from addons.definition import AddonDefinition
from addons.parts import AddonParts, Capacity
from components.acceptance import AcceptanceCheck, MultiNodeSite
from components.k8s.clients import ClientAccess
from components.k8s.pod_sources import KUBERNETES_SOURCES, PodSource
from components.k8s.tenant import TenantAdditions
from profiles.gpus import gpu_capacity
from profiles.models import PlatformConfig
from profiles.workloads import TenantConfig


def _parts(definition: AddonDefinition[Any]) -> AddonParts:
    """The add-on's `addons/<key>/parts.py` PARTS, or a part that contributes nothing."""
    module = package_module(definition, "parts")
    if module is None:
        return AddonParts(definition)
    parts = getattr(module, "PARTS", None)
    if not isinstance(parts, AddonParts) or parts.definition is not definition:
        raise TypeError(f"addons/{definition.key}/parts.py must end with PARTS = <its AddonParts subclass>(DEFINITION)")
    return parts


PARTS: tuple[AddonParts, ...] = tuple(_parts(definition) for definition in DEFINITIONS)
"""Every add-on's contributions to the other layers (addons/parts.py), in install order."""


def enabled_parts(config: PlatformConfig) -> tuple[AddonParts, ...]:
    return tuple(part for part in PARTS if part.enabled(config))


def pod_sources(config: PlatformConfig) -> tuple[PodSource, ...]:
    """The shapes of object whose pods the profile's tenants can create: Kubernetes' own and the
    enabled add-ons'."""
    return (*KUBERNETES_SOURCES, *(source for part in enabled_parts(config) for source in part.pod_sources(config)))


def client_access(config: PlatformConfig) -> ClientAccess:
    """What a namespace whose pods use every enabled add-on's service needs."""
    return ClientAccess.combined([offer for part in enabled_parts(config) if (offer := part.clients(config))])


def tenant_additions(config: PlatformConfig, tenant: TenantConfig) -> TenantAdditions:
    """What the enabled add-ons add to a tenant's namespace: a tenant's pods are clients of every
    service they offer (MLflow's tracking server), and each part's own additions."""
    clients = client_access(config)
    own = [part.tenant(config, tenant) for part in enabled_parts(config)]
    return TenantAdditions(
        labels=dict(clients.labels),
        allow={**clients.allow, **{name: spec for part in own for name, spec in part.allow.items()}},
        objects=(*clients.objects(tenant.name), *(obj for part in own for obj in part.objects)),
    )


def workload_capacity(config: PlatformConfig) -> Capacity:
    """What the enabled add-ons run in the workloads layer that launches or admits capacity."""
    parts = [part.capacity(config) for part in enabled_parts(config)]
    return Capacity(
        node_pools=tuple(pool for part in parts for pool in part.node_pools),
        pool_limits={pool: limits for part in parts for pool, limits in part.pool_limits.items()},
        drain_minutes=max((part.drain_minutes for part in parts), default=0),
        cluster_queues=tuple(queue for part in parts for queue in part.cluster_queues),
    )


def tenant_gpu_ceiling(config: PlatformConfig, tenant: TenantConfig, node_group: str | None) -> int | None:
    """The most GPUs of the node group (None: of all the profile's GPUs) the enabled add-ons let the
    tenant's jobs hold at once (the lowest of their ceilings; None: none limits them)."""
    ceilings = [
        c for part in enabled_parts(config) if (c := part.tenant_gpu_ceiling(config, tenant, node_group)) is not None
    ]
    return min(ceilings, default=None)


def tenant_gpu_quota(config: PlatformConfig, tenant: TenantConfig) -> int:
    """The tenant's GPU quota (its ResourceQuota on GPU requests): its own setting, else everything
    the profile can run, never above what an add-on lets its jobs hold (with Kueue, its queue's
    nominal shares plus what it may borrow: Kueue-admitted pods always fit, and a GPU pod that
    escapes the queue, one created before Kueue knew the namespace's LocalQueue, cannot take more
    than the queue would have let it hold)."""
    quota = tenant.gpu_quota if tenant.gpu_quota is not None else gpu_capacity(config)
    ceiling = tenant_gpu_ceiling(config, tenant, None)
    return quota if ceiling is None else min(quota, ceiling)


def addon_checks(config: PlatformConfig, site: MultiNodeSite | None) -> tuple[AcceptanceCheck, ...]:
    """`verify`'s checks of the enabled add-ons, in install order."""
    return tuple(check for part in enabled_parts(config) for check in part.checks(config, site))


def provided(config: PlatformConfig) -> frozenset[str]:
    """What the enabled add-ons provide others (AddonDefinition.provides)."""
    return frozenset(capability for part in enabled_parts(config) for capability in part.definition.provides)
