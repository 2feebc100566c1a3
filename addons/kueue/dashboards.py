"""The queue dashboard: what each tenant's ClusterQueue holds, waits for and uses of its share.

It reads Kueue's own metrics at v0.19.2, the leader replica's (pkg/metrics/metrics.go, subsystem kueue): pending and
admitted workloads per cluster_queue, and, with the Configuration's
metrics.enableClusterQueueResources (set by this add-on), usage and nominal quota per
cluster_queue, flavour and resource.
"""

from __future__ import annotations

from typing import Any

from components.dashboards import Chart, Query, Section, dashboard

# Every Kueue replica (this add-on runs two) exports the queue gauges, labelled with its role
# (pkg/metrics/metrics.go: replica_role); the leader's are the ones that count.
LEADER = 'replica_role="leader"'
GPUS = f'resource="nvidia.com/gpu", {LEADER}'


def queues() -> dict[str, Any]:
    return dashboard(
        "gpu-queues",
        "Queues",
        "Each tenant's ClusterQueue: workloads waiting and admitted, and the GPUs it uses against its nominal "
        "share (above it: borrowed from the cohort).",
        (
            Section(
                "Workloads",
                (
                    Chart(
                        "Pending workloads",
                        (
                            Query(
                                f"sum by (cluster_queue, status) (kueue_pending_workloads{{{LEADER}}})",
                                "{{cluster_queue}} {{status}}",
                            ),
                        ),
                        description="active: in the admission queue; inadmissible: tried and waiting for the cluster "
                        "to change.",
                    ),
                    Chart(
                        "Admitted workloads",
                        (
                            Query(
                                f"sum by (cluster_queue) (kueue_admitted_active_workloads{{{LEADER}}})",
                                "{{cluster_queue}}",
                            ),
                        ),
                    ),
                ),
            ),
            Section(
                "GPU shares",
                (
                    Chart(
                        "GPUs in use and nominal share",
                        (
                            Query(
                                f"sum by (cluster_queue) (kueue_cluster_queue_resource_usage{{{GPUS}}})",
                                "{{cluster_queue}} in use",
                            ),
                            Query(
                                f"sum by (cluster_queue) (kueue_cluster_queue_nominal_quota{{{GPUS}}})",
                                "{{cluster_queue}} nominal",
                            ),
                        ),
                    ),
                    Chart(
                        "Admission wait (p90)",
                        (
                            Query(
                                "histogram_quantile(0.9, sum by (cluster_queue, le) "
                                "(rate(kueue_admission_wait_time_seconds_bucket[30m])))",
                                "{{cluster_queue}}",
                            ),
                        ),
                        unit="s",
                    ),
                ),
            ),
        ),
    )


DASHBOARDS = (queues(),)
