"""The paths between the KubeRay operator (ray-system) and the Ray clusters in tenant namespaces.

The operator is a client of every RayCluster's head: RayJob status and job submission go to the
dashboard on 8265 (ray-operator/controllers/ray/rayjob_controller.go reads the job through the
head Service's dashboard URL), and RayService checks Serve on 8000. It reaches them through the
head Service's ClusterIP, so its egress peer selects the head pods by the label the head Service
selects on (`ray.io/node-type: head`): the VPC CNI's controller then adds that Service's ClusterIP
(see tests/netpol.py). The tenant's side admits the operator on those ports, and only to heads.
"""

from __future__ import annotations

from typing import Any

RAY_NAMESPACE = "ray-system"
HEAD_POD = {"ray.io/node-type": "head"}
DASHBOARD_PORT = 8265
SERVE_PORT = 8000
HEAD_PORTS = (DASHBOARD_PORT, SERVE_PORT)


def _ports() -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "port": port} for port in HEAD_PORTS]


def operator_to_ray_heads(tenants: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """ray-system's egress: the head pods (and their Services) of every tenant namespace."""
    if not tenants:
        return {}
    return {"allow-ray-heads": {"policyTypes": ["Egress"], "egress": [{
        "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tenant}},
                "podSelector": {"matchLabels": HEAD_POD}} for tenant in tenants],
        "ports": _ports(),
    }]}}


def heads_from_operator() -> dict[str, dict[str, Any]]:
    """A tenant's ingress: the KubeRay operator may reach its Ray heads' dashboard and Serve."""
    return {"allow-kuberay-operator": {"podSelector": {"matchLabels": HEAD_POD}, "policyTypes": ["Ingress"],
                                       "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {
                                           "kubernetes.io/metadata.name": RAY_NAMESPACE}}}],
                                                    "ports": _ports()}]}}
