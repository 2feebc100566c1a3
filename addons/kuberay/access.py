"""The paths between the KubeRay operator (ray-system) and the Ray clusters in tenant namespaces.

The operator is a client of every RayCluster's head: RayJob status and job submission go to the
dashboard on 8265 (ray-operator/controllers/ray/rayjob_controller.go, through the head Service's
dashboard URL), and RayService checks Serve on 8000 (rayservice_controller.go, at the head pod's
IP). KubeRay 1.7 makes the head Service headless by default (service.go), so both reach the head
pod's own IP; where a head Service has a ClusterIP, the egress peer's pod selector
(`ray.io/node-type: head`, a label the head Service selects on) makes the VPC CNI's controller add
that ClusterIP as well (see tests/netpol.py). The tenant's side admits the operator on those
ports, and only to heads.
"""

from __future__ import annotations

from typing import Any

from addons import kuberay

RAY_NAMESPACE = kuberay.DEFINITION.namespace
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
    return {
        "allow-ray-heads": {
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [
                        {
                            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tenant}},
                            "podSelector": {"matchLabels": HEAD_POD},
                        }
                        for tenant in tenants
                    ],
                    "ports": _ports(),
                }
            ],
        }
    }


def heads_from_operator() -> dict[str, dict[str, Any]]:
    """A tenant's ingress: the KubeRay operator may reach its Ray heads' dashboard and Serve."""
    return {
        "allow-kuberay-operator": {
            "podSelector": {"matchLabels": HEAD_POD},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": RAY_NAMESPACE}}}],
                    "ports": _ports(),
                }
            ],
        }
    }
