"""The Karpenter dashboard: what each NodePool has launched against its limit, how its nodes come
and go, and what waits for a node.

It reads Karpenter's own metrics at v1.14.1 (kubernetes-sigs/karpenter v1.14.1, namespace
karpenter): the NodePool gauges (pkg/controllers/metrics/nodepool/controller.go: usage and limit,
labelled nodepool and resource_type: the resource name lower-cased, "-" as "_"), the node gauges
(pkg/controllers/metrics/node/controller.go: allocatable, labelled with the node's well-known
labels in snake case, nodepool and instance_type among them, and managed: false for nodes Karpenter
did not launch, such as the managed node groups'), the NodeClaim counters
(pkg/metrics/metrics.go and pkg/controllers/node/health/metrics.go) and the scheduler's unschedulable
pods (pkg/controllers/provisioning/scheduling/metrics.go, labelled by the controller that ran it:
the provisioner's are the pods waiting; the disruption controller's are its simulations).
"""

from __future__ import annotations

from typing import Any

from components.dashboards import Chart, Query, Section, dashboard

POOL = "{{nodepool}}"


def pool_figure(metric: str, resource: str) -> str:
    return f'sum by (nodepool) (karpenter_nodepools_{metric}{{resource_type="{resource}"}})'


def karpenter() -> dict[str, Any]:
    return dashboard(
        "karpenter",
        "Karpenter",
        "Each NodePool's GPUs and CPUs against its limit, its nodes by instance type, the nodes it launched, "
        "disrupted and repaired, and the pods waiting for a node.",
        (
            Section(
                "Node pools",
                (
                    Chart(
                        "GPUs launched and limit",
                        (
                            Query(pool_figure("usage", "nvidia.com/gpu"), f"{POOL} launched"),
                            Query(pool_figure("limit", "nvidia.com/gpu"), f"{POOL} limit"),
                        ),
                        description="At the limit Karpenter launches no more GPU nodes for the pool: pods wait.",
                    ),
                    Chart(
                        "vCPUs launched and limit",
                        (
                            Query(pool_figure("usage", "cpu"), f"{POOL} launched"),
                            Query(pool_figure("limit", "cpu"), f"{POOL} limit"),
                        ),
                    ),
                    Chart(
                        "Nodes by instance type",
                        (
                            Query(
                                "count by (nodepool, instance_type) "
                                '(karpenter_nodes_allocatable{resource_type="cpu", managed="true"})',
                                "{{nodepool}} {{instance_type}}",
                            ),
                        ),
                    ),
                ),
            ),
            Section(
                "Nodes coming and going",
                (
                    Chart(
                        "Node claims launched per hour",
                        (
                            Query(
                                "sum by (nodepool, reason) (increase(karpenter_nodeclaims_created_total[1h]))",
                                "{{nodepool}} {{reason}}",
                            ),
                        ),
                    ),
                    Chart(
                        "Node claims disrupted per hour",
                        (
                            Query(
                                "sum by (nodepool, reason) (increase(karpenter_nodeclaims_disrupted_total[1h]))",
                                "{{nodepool}} {{reason}}",
                            ),
                        ),
                        description="Why Karpenter removed nodes: empty, underutilized, drifted, expired.",
                    ),
                    Chart(
                        "Unhealthy nodes replaced per hour",
                        (
                            Query(
                                "sum by (nodepool, condition) "
                                "(increase(karpenter_nodeclaims_unhealthy_disrupted_total[1h]))",
                                "{{nodepool}} {{condition}}",
                            ),
                        ),
                        description="Node repair (a feature gate): nodes replaced for a bad node condition.",
                    ),
                    Chart(
                        "Pods no node can take",
                        (
                            Query(
                                'sum(karpenter_scheduler_unschedulable_pods_count{controller="provisioner"})',
                                "pods",
                            ),
                        ),
                        description="Pods the provisioner found no node or instance type for (the disruption "
                        "controller's simulations set the same gauge under its own controller label).",
                    ),
                ),
            ),
        ),
    )


DASHBOARDS = (karpenter(),)
