"""The GPU dashboards: the fleet (every node's GPUs) and the tenants (who holds GPUs and uses them).

They read the DCGM exporter the GPU Operator runs (its counters at the pinned versions, and the
pod and namespace of the pod each GPU is allocated to, kept by the ServiceMonitor's honorLabels),
kube-state-metrics, and the GPU rules' recording rules: GPUs are counted only through those of
gpu_counts.py (what a node has and offers, what a pod asks for), which are defined for the profile's
mode, so every panel counts the same way with the device plugin and with DRA claims.
"""

from __future__ import annotations

from typing import Any

from addons.gpu_operator import DEFINITION
from addons.gpu_operator.gpu_counts import GPU_IDENTITY, NODE_ALLOCATABLE, NODE_CAPACITY, POD_REQUESTED
from components.dashboards import HOST, HOST_LEGEND, Chart, Query, Section, dashboard

# A GPU allocated to a pod carries that pod's namespace; an unallocated one the exporter's own.
ALLOCATED = f'pod!="", namespace!="{DEFINITION.namespace}"'
GPU_LEGEND = f"{HOST_LEGEND} GPU {{{{gpu}}}}"
RUNNING = 'on (namespace, pod) group_left () (kube_pod_status_phase{phase="Running"} == 1)'


def per_node(aggregation: str, expr: str) -> Query:
    """One series per node, e.g. per_node("avg", "DCGM_FI_DEV_GPU_UTIL"), over one series per GPU:
    in DRA mode the exporter reports an allocated GPU twice (gpu_counts.py), which a plain sum or
    average over the node would count twice."""
    return Query(f"{aggregation} by ({HOST}) (max by ({GPU_IDENTITY}) ({expr}))", HOST_LEGEND)


def per_gpu(expr: str, what: str = "") -> Query:
    """One series per GPU of each node; `what` names the series when a chart has several."""
    return Query(f"max by (gpu, {HOST}) ({expr})", f"{GPU_LEGEND} {what}".rstrip())


def fleet() -> dict[str, Any]:
    return dashboard(
        "gpu-fleet",
        "GPU fleet",
        "Every GPU node: utilisation, memory, power, temperature, and the faults that page (XIDs, memory row "
        "remapping, GPUs a node has but does not offer).",
        (
            Section(
                "Work",
                (
                    Chart(
                        "GPU utilisation per node",
                        (per_node("avg", "DCGM_FI_DEV_GPU_UTIL"),),
                        unit="percent",
                    ),
                    Chart(
                        "Tensor core activity per node",
                        (per_node("avg", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),),
                        unit="percentunit",
                        description="Fraction of cycles the tensor pipes are busy: low while utilisation is high "
                        "means the GPU waits on data or communication.",
                    ),
                ),
            ),
            Section(
                "Memory and power",
                (
                    Chart(
                        "Framebuffer used",
                        (per_gpu("gpu:framebuffer_used:ratio"),),
                        unit="percentunit",
                    ),
                    Chart(
                        "Power draw",
                        (per_node("sum", "DCGM_FI_DEV_POWER_USAGE"),),
                        unit="watt",
                    ),
                ),
            ),
            Section(
                "Temperature",
                (
                    Chart("GPU temperature", (per_gpu("DCGM_FI_DEV_GPU_TEMP"),), "celsius"),
                    Chart(
                        "Memory temperature",
                        (per_gpu("DCGM_FI_DEV_MEMORY_TEMP"),),
                        "celsius",
                    ),
                ),
            ),
            Section(
                "Faults",
                (
                    Chart(
                        "Last XID per GPU (0: none)",
                        (per_gpu("DCGM_FI_DEV_XID_ERRORS"),),
                        description="The most recent XID code, not a count: GpuCriticalXid pages on the fatal ones.",
                    ),
                    Chart(
                        "Remapped memory rows",
                        (
                            per_gpu("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "uncorrectable"),
                            per_gpu("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "correctable"),
                            per_gpu("DCGM_FI_DEV_ROW_REMAP_FAILURE", "remap failed"),
                        ),
                    ),
                    Chart(
                        "GPUs a node has but does not offer",
                        (Query(f"{NODE_CAPACITY} - {NODE_ALLOCATABLE}", "{{node}}"),),
                        description="With the device plugin, the GPUs it marked unhealthy; with DRA claims, the GPUs "
                        "the node's DCGM exporter does not list against its instance type (GpuAllocatableDropped "
                        "pages).",
                    ),
                    Chart(
                        "PCIe replays",
                        (per_node("sum", "rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[5m])"),),
                        description="Link-level retries: a rising rate points at a failing PCIe link.",
                    ),
                ),
            ),
        ),
    )


def tenants() -> dict[str, Any]:
    requested = f"{POD_REQUESTED} * {RUNNING}"
    return dashboard(
        "gpu-tenants",
        "GPU use by tenant",
        "Who holds GPUs and whether they use them: allocated GPUs and their utilisation per namespace and pod, "
        "GPUs left idle, and pods waiting for GPUs.",
        (
            Section(
                "Allocation",
                (
                    Chart(
                        "GPUs allocated per namespace", (Query(f"sum by (namespace) ({requested})", "{{namespace}}"),)
                    ),
                    Chart(
                        "Pods waiting for GPUs per namespace",
                        (Query("namespace:gpu_requesting_pods_pending:count", "{{namespace}}"),),
                    ),
                ),
            ),
            Section(
                "Use",
                (
                    Chart(
                        "GPU utilisation per namespace",
                        (Query(f"avg by (namespace) (DCGM_FI_DEV_GPU_UTIL{{{ALLOCATED}}})", "{{namespace}}"),),
                        unit="percent",
                    ),
                    Chart(
                        "GPU utilisation per pod",
                        (
                            Query(
                                f"avg by (namespace, pod) (DCGM_FI_DEV_GPU_UTIL{{{ALLOCATED}}})",
                                "{{namespace}}/{{pod}}",
                            ),
                        ),
                        unit="percent",
                    ),
                    Chart(
                        "Allocated GPUs doing no work, per namespace",
                        (Query(f"count by (namespace) (DCGM_FI_DEV_GPU_UTIL{{{ALLOCATED}}} == 0)", "{{namespace}}"),),
                        description="GpuAllocatedIdle warns once one stays idle for the profile's limit.",
                    ),
                    Chart(
                        "Framebuffer used per pod",
                        (
                            Query(
                                f"max by (namespace, pod) (gpu:framebuffer_used:ratio{{{ALLOCATED}}})",
                                "{{namespace}}/{{pod}}",
                            ),
                        ),
                        unit="percentunit",
                    ),
                ),
            ),
        ),
    )


DASHBOARDS = (fleet(), tenants())
