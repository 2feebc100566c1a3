"""Pre-destroy clean-up: remove what Kubernetes controllers created outside Terraform, or it
outlives the cluster (EC2 nodes from Karpenter, load balancers, EBS volumes) and keeps the VPC
from being deleted. Only objects the platform owns are touched: its own NodePools (and their
NodeClaims), and LoadBalancer Services and dynamically provisioned PVCs in the namespaces the
platform created. Anything that cannot be listed stops the clean-up (and so the destroy)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from addons.kueue import DEFINITION as KUEUE
from operate.cluster_access import ClusterAccessError
from operate.kubectl import Kubectl
from profiles import PlatformConfig

NO_SUCH_KIND = "the server doesn't have a resource type"


@dataclass(frozen=True, kw_only=True)
class PlatformObjects:
    """What the platform owns in its cluster."""

    namespaces: tuple[str, ...]
    """Namespaces the platform created (add-ons, tenants, validation)."""
    node_pools: tuple[str, ...]
    """Karpenter NodePools the workloads layer creates."""
    cluster_queues: tuple[str, ...] = ()
    """Kueue ClusterQueues the workloads layer creates (one per tenant)."""


def _items(run: Kubectl, kind: str, *selector: str) -> list[dict[str, Any]]:
    listed = run(["get", kind, "--all-namespaces", *selector, "-o", "json"])
    if listed.returncode != 0:
        if NO_SUCH_KIND in listed.stderr:  # e.g. Karpenter's CRDs are not installed
            return []
        raise ClusterAccessError(f"cannot list {kind}: {listed.stderr.strip()}")
    items: list[dict[str, Any]] = json.loads(listed.stdout or "{}").get("items", [])
    return items


def _delete(run: Kubectl, args: list[str]) -> None:
    deleted = run(["delete", *args, "--wait=true", "--timeout=15m", "--ignore-not-found"])
    if deleted.returncode != 0:
        raise ClusterAccessError(f"kubectl delete {' '.join(args)} failed: {deleted.stderr.strip()}")


def pre_destroy_cleanup(run: Kubectl, owned: PlatformObjects, log: Callable[[str], None] = print) -> list[str]:
    """Delete the platform's NodePools and their NodeClaims (their nodes terminate), and its
    LoadBalancer Services and dynamically provisioned PVCs (their volumes are released).
    Returns what it deleted."""
    deleted: list[str] = []
    for pool in _items(run, "nodepools.karpenter.sh"):
        name = pool["metadata"]["name"]
        if name in owned.node_pools:
            _delete(run, ["nodepools.karpenter.sh", name])
            deleted.append(f"nodepools.karpenter.sh/{name}")
    for claim in _items(run, "nodeclaims.karpenter.sh"):
        pool = claim["metadata"].get("labels", {}).get("karpenter.sh/nodepool")
        if pool in owned.node_pools:
            _delete(run, ["nodeclaims.karpenter.sh", claim["metadata"]["name"]])
            deleted.append(f"nodeclaims.karpenter.sh/{claim['metadata']['name']}")
    for service in _items(run, "services"):
        meta = service["metadata"]
        if service.get("spec", {}).get("type") == "LoadBalancer" and meta["namespace"] in owned.namespaces:
            _delete(run, ["service", meta["name"], "-n", meta["namespace"]])
            deleted.append(f"service/{meta['namespace']}/{meta['name']}")
    for claim in _items(run, "persistentvolumeclaims"):
        meta = claim["metadata"]
        # Static claims (storageClassName "") point at FSx or S3, which Terraform owns: keep them.
        if claim.get("spec", {}).get("storageClassName") and meta["namespace"] in owned.namespaces:
            _delete(run, ["pvc", meta["name"], "-n", meta["namespace"]])
            deleted.append(f"pvc/{meta['namespace']}/{meta['name']}")
    log(f"pre-destroy clean-up: deleted {len(deleted)} object(s)" + (": " + ", ".join(deleted) if deleted else ""))
    return deleted


def platform_objects(config: PlatformConfig, layer: str) -> PlatformObjects:
    """The namespaces and NodePools the profile's `layer` creates: the addons layer owns the
    add-ons' namespaces; the workloads layer owns the tenants' namespaces, Karpenter's NodePools and
    the validation namespace that verify runs in."""
    from addons.catalog import DEFINITIONS
    from components.k8s.karpenter_pools import node_pools
    from manifests.render import NAMESPACE as VALIDATION_NAMESPACE

    if layer == "addons":
        return PlatformObjects(
            namespaces=tuple(
                definition.namespace_of(definition.settings(config))
                for definition in DEFINITIONS
                if definition.enabled(config) and definition.creates_namespace
            ),
            node_pools=(),
        )
    if layer != "workloads":
        return PlatformObjects(namespaces=(), node_pools=())
    namespaces = [tenant.name for tenant in config.workloads.tenants]
    if config.cluster.gpu_node_groups:
        namespaces.append(VALIDATION_NAMESPACE)
    return PlatformObjects(
        namespaces=tuple(namespaces),
        node_pools=node_pools(config),
        # One ClusterQueue per tenant, named after it (addons/kueue/queues.py).
        cluster_queues=tuple(tenant.name for tenant in config.workloads.tenants) if KUEUE.enabled(config) else (),
    )
