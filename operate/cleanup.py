"""Pre-destroy clean-up: remove what Kubernetes controllers created outside Terraform, or it
outlives the cluster (EC2 nodes from Karpenter, load balancers, EBS volumes) and keeps the VPC
from being deleted."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from operate.kubectl import Kubectl, kubectl


def _items(run: Kubectl, kind: str) -> list[dict[str, Any]]:
    listed = run(["get", kind, "--all-namespaces", "-o", "json"])
    return json.loads(listed.stdout).get("items", []) if listed.returncode == 0 and listed.stdout else []


def pre_destroy_cleanup(run: Kubectl = kubectl, log: Callable[[str], None] = print) -> list[str]:
    """Delete Karpenter NodePools and NodeClaims (their nodes terminate), LoadBalancer Services and
    dynamically provisioned PVCs (their volumes are released). Returns what it deleted."""
    deleted: list[str] = []
    for kind in ("nodepools.karpenter.sh", "nodeclaims.karpenter.sh"):
        for item in _items(run, kind):
            name = item["metadata"]["name"]
            run(["delete", kind, name, "--wait=true", "--timeout=15m"])
            deleted.append(f"{kind}/{name}")
    for service in _items(run, "services"):
        if service.get("spec", {}).get("type") == "LoadBalancer":
            meta = service["metadata"]
            run(["delete", "service", meta["name"], "-n", meta["namespace"], "--wait=true", "--timeout=10m"])
            deleted.append(f"service/{meta['namespace']}/{meta['name']}")
    for claim in _items(run, "persistentvolumeclaims"):
        # Static claims (storageClassName "") point at FSx or S3, which Terraform owns: keep them.
        if claim.get("spec", {}).get("storageClassName"):
            meta = claim["metadata"]
            run(["delete", "pvc", meta["name"], "-n", meta["namespace"], "--wait=true", "--timeout=10m"])
            deleted.append(f"pvc/{meta['namespace']}/{meta['name']}")
    log(f"pre-destroy clean-up: deleted {len(deleted)} object(s)" + (": " + ", ".join(deleted) if deleted else ""))
    return deleted
