"""The Ray dashboard: every Ray node of every tenant's clusters, from the metrics each Ray node's
agent exports (scraped by the add-on's PodMonitor, which adds the pod's namespace and name).

Ray names its node gauges in the reporter agent's METRICS_GAUGES
(python/ray/dashboard/modules/reporter/reporter_agent.py, exported with the namespace "ray"):
GPU figures are labelled per GPU (GpuIndex, GpuDeviceName), node figures per Ray node. GPU memory
is reported in MiB (gpu_providers.py: memory_used // MB), utilisations as 0-100.
"""

from __future__ import annotations

from typing import Any

from components.dashboards import Chart, Query, Section, dashboard

PER_POD = "namespace, pod"
LEGEND = "{{namespace}} {{pod}}"


def ray() -> dict[str, Any]:
    return dashboard(
        "ray-clusters",
        "Ray clusters",
        "Each tenant's Ray nodes (head and workers): GPU use and GPU memory, CPU use and memory, and how many "
        "Ray nodes each namespace runs.",
        (
            Section(
                "GPUs",
                (
                    Chart(
                        "GPU utilisation per Ray node",
                        (Query(f"avg by ({PER_POD}) (ray_node_gpus_utilization)", LEGEND),),
                        unit="percent",
                        description="Averaged over the node's GPUs. Near 0 on a worker that holds GPUs: idle GPUs.",
                    ),
                    Chart(
                        "GPU memory used per Ray node",
                        # Ray reports GPU memory in MiB, although the gauge's declared unit is bytes.
                        (Query(f"sum by ({PER_POD}) (ray_node_gram_used) * 1024 * 1024", LEGEND),),
                        unit="bytes",
                    ),
                ),
            ),
            Section(
                "Nodes",
                (
                    Chart(
                        "CPU utilisation per Ray node",
                        (Query(f"avg by ({PER_POD}) (ray_node_cpu_utilization)", LEGEND),),
                        unit="percent",
                    ),
                    Chart(
                        "Memory used per Ray node",
                        (Query(f"sum by ({PER_POD}) (ray_node_mem_used)", LEGEND),),
                        unit="bytes",
                    ),
                    Chart(
                        "Ray nodes per namespace",
                        (Query("count by (namespace) (ray_node_cpu_count)", "{{namespace}}"),),
                    ),
                ),
            ),
        ),
    )


DASHBOARDS = (ray(),)
