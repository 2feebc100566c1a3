"""Kubernetes RBAC for tenants' people, for what EKS's access policies leave out: the custom
resources of the job add-ons (MPIJob, TrainJob, RayJob, Kueue's LocalQueue and Workload).

EKS's AmazonEKSEditPolicy and AmazonEKSViewPolicy name Kubernetes' own kinds only. A person's
access entry therefore also carries one group per tenant and level (`tenant:<namespace>:<level>`),
and each tenant namespace binds its own groups, with a RoleBinding, to a ClusterRole listing those
custom resources. A RoleBinding grants only within its namespace, so a group reaches the one
namespace it is named after; nothing here is bound at cluster scope.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from profiles.workloads import ACCESS_LEVELS, AccessLevel, TenantConfig

RBAC_API = "rbac.authorization.k8s.io"
READ = ("get", "list", "watch")
WRITE = ("create", "update", "patch", "delete", "deletecollection")
# The ClusterRole each level's RoleBindings refer to (a ClusterRole so it is written once; bound by
# RoleBindings only, it grants in the binding's namespace).
CLUSTER_ROLES: dict[AccessLevel, str] = {"editors": "tenant-jobs-edit", "viewers": "tenant-jobs-view"}


@dataclass(frozen=True)
class TenantResources:
    """Namespaced custom resources of one add-on that tenants work with."""

    api_group: str
    resources: tuple[str, ...]
    """Plural resource names; each one's status subresource is readable too (except without_status)."""
    without_status: tuple[str, ...] = ()
    """Those of `resources` that have no status subresource."""
    editable: bool = True
    """Editors create and delete them; False: read-only for everyone (an admission record, a
    platform-made object)."""


# Each job add-on declares its own (its parts' tenant_resources); DRA mode's resource.k8s.io
# claims are the platform's.
# The claim templates are the platform's; the claims are made from them for the tenant's pods.
DRA_CLAIMS = TenantResources(
    "resource.k8s.io",
    ("resourceclaims", "resourceclaimtemplates"),
    without_status=("resourceclaimtemplates",),
    editable=False,
)


def access_group(namespace: str, level: AccessLevel) -> str:
    """The Kubernetes group a tenant's person at this level carries (on its access entry)."""
    return f"tenant:{namespace}:{level}"


def _rules(kinds: Iterable[TenantResources], *, write: bool) -> list[dict[str, Any]]:
    rules = []
    for kind in kinds:
        resources = [*kind.resources, *(f"{name}/status" for name in kind.resources if name not in kind.without_status)]
        rules.append({"apiGroups": [kind.api_group], "resources": resources, "verbs": list(READ)})
        if write and kind.editable:
            rules.append({"apiGroups": [kind.api_group], "resources": list(kind.resources), "verbs": list(WRITE)})
    return rules


def cluster_roles(kinds: tuple[TenantResources, ...]) -> list[dict[str, Any]]:
    """The ClusterRoles the tenants' RoleBindings refer to: editors read and write the job kinds,
    viewers read them; both read the read-only ones."""
    return [
        {
            "apiVersion": f"{RBAC_API}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": CLUSTER_ROLES[level]},
            "rules": _rules(kinds, write=level == "editors"),
        }
        for level in ACCESS_LEVELS
    ]


def role_bindings(tenant: TenantConfig) -> list[dict[str, Any]]:
    """In the tenant's namespace, its own groups bound to the levels' ClusterRoles (only for levels
    the tenant lists people at)."""
    return [
        {
            "apiVersion": f"{RBAC_API}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": CLUSTER_ROLES[level], "namespace": tenant.name},
            "roleRef": {"apiGroup": RBAC_API, "kind": "ClusterRole", "name": CLUSTER_ROLES[level]},
            "subjects": [{"apiGroup": RBAC_API, "kind": "Group", "name": access_group(tenant.name, level)}],
        }
        for level in ACCESS_LEVELS
        if getattr(tenant, level)
    ]
