"""The GPU Operator's Prometheus rules: GPU faults and idle GPUs, read from what the add-on installs
(the DCGM exporter's series, the GPUs its nodes have and offer, the health check's quarantine taint).
The add-on declares them through its monitors hook (install.py); the add-on that runs Prometheus
loads them. GPUs are counted by the recording rules of gpu_counts.py, defined for the profile's mode
(device plugin or DRA), so the alerts fire on the same faults in both. Judged with promtool by
tests/test_alert_rules.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from addons.definition import DEFAULT_IDLE_GPU_MINUTES
from addons.gpu_operator import DEFINITION
from addons.gpu_operator.gpu_counts import NODE_ALLOCATABLE, NODE_CAPACITY, POD_REQUESTED, gpu_count_rules, one_per_gpu
from addons.gpu_operator.gpu_health import QUARANTINE_KEY, REASON_ANNOTATION
from components.node_monitoring import CRITICAL_XIDS
from profiles.workloads import WorkloadsConfig

GPU_OPERATOR_NAMESPACE = DEFINITION.namespace


# DCGM exporter labels its host Hostname up to 4.5.3-4.8.2 and hostname after (dcgm-exporter #655):
# annotations print both, one of which is always empty (tests/fixtures/metrics/contract.json).
# DCGM exporter semantics: DCGM_FI_DEV_XID_ERRORS is the last XID code seen (a gauge), not a
# count, so alerts look at its current value; increase() over it would be meaningless.
# FB_USED / FB_FREE are MiB gauges; their ratio is 0..1. These rules assume one cluster per Prometheus.
# What a GPU alert's summary opens with: the GPU and its node, under either exporter's host label.
ON_GPU = "GPU {{ $labels.gpu }} on {{ $labels.Hostname }}{{ $labels.hostname }} "
# Each GPU's last XID, recorded once per GPU (gpu_counts.one_per_gpu: in DRA mode the exporter
# reports an allocated GPU twice), with the labels of the pod that holds it.
XID = "gpu:xid_errors:last"
# The series whose last XID is one the node monitoring agent treats as fatal.
CRITICAL_XID = " or ".join(f"{XID} == {code}" for code in CRITICAL_XIDS)
# Why a node offers fewer GPUs than it has, in each mode (gpu_counts.py says where each count comes from).
FEWER_GPUS = {
    False: "The device plugin marked GPUs unhealthy and withdrew them from the node's allocatable. ",
    True: "The node's DCGM exporter lists fewer GPUs than its instance type has: a GPU is lost (fallen off "
    "the bus, or not found again after a reset). The DRA driver withdraws no unhealthy GPU at the pinned "
    "version; the GPU health check quarantines the node for the same fault (GpuNodeQuarantined). ",
}


def gpu_rules(
    *, dra: bool = False, idle_minutes: int = DEFAULT_IDLE_GPU_MINUTES, claim_counts: Iterable[int] = ()
) -> dict[str, Any]:
    """The GPU rule group (a PrometheusRule's `groups` entry) for the mode (`dra`: GPUs are DRA
    claims, `claim_counts` the GPU counts of the platform's claim templates); `idle_minutes` is how
    long an allocated GPU may sit idle."""
    return {
        "name": "gpu-platform",
        "rules": [
            # First: the alerts below read them in the same evaluation.
            *gpu_count_rules(dra=dra, claim_counts=claim_counts),
            {
                "record": "gpu:framebuffer_used:ratio",
                "expr": "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)",
            },
            {"record": XID, "expr": one_per_gpu("DCGM_FI_DEV_XID_ERRORS")},
            {
                # The XIDs the EKS node monitoring agent treats as fatal (its node condition makes
                # EKS repair the node): the same list, so the page and the repair agree.
                "alert": "GpuCriticalXid",
                "expr": CRITICAL_XID,
                "for": "0m",
                "labels": {"severity": "critical"},
                "annotations": {
                    "summary": ON_GPU + "reported fatal XID {{ $value }}",
                    "description": "The node monitoring agent marks the node unhealthy for this XID and EKS "
                    "repairs it (reboot or replace) after its wait: move or checkpoint jobs on it now.",
                },
            },
            {
                "alert": "GpuXidCodeReported",
                "expr": f"{XID} != 0 unless ({CRITICAL_XID})",
                "for": "1m",
                "labels": {"severity": "warning"},
                "annotations": {
                    "summary": ON_GPU + "last reported XID {{ $value }}",
                    "description": "The value is the most recent XID code, not a count. "
                    "Look the code up before draining: not every XID means failed hardware.",
                },
            },
            {
                # A node offers fewer GPUs than it has: the node runs, but a job sized for the whole
                # node no longer fits and a GPU is likely failing. Device plugin mode: the plugin
                # withdrew a GPU it found unhealthy from allocatable, capacity stays. DRA mode: no
                # component withdraws one at the pins, so the closest real signal stands in (the
                # GPUs the exporter lists against the instance type's count; gpu_counts.py).
                "alert": "GpuAllocatableDropped",
                "expr": f"{NODE_CAPACITY} - {NODE_ALLOCATABLE} > 0",
                "for": "5m",
                "labels": {"severity": "critical"},
                "annotations": {
                    "summary": "Node {{ $labels.node }} offers {{ $value }} GPU(s) fewer than it has",
                    "description": FEWER_GPUS[dra] + "Drain the node and let EKS repair it, or check "
                    "nvidia-smi and the node monitoring agent's conditions.",
                },
            },
            {
                # The GPU health check (addons/gpu_operator/health_check.py) quarantined the node:
                # nothing new lands on it until three complete checks in a row pass; a person should look.
                "alert": "GpuNodeQuarantined",
                "expr": f'max by (node) (kube_node_spec_taint{{key="{QUARANTINE_KEY}"}}) > 0',
                "for": "1m",
                "labels": {"severity": "critical"},
                "annotations": {
                    "summary": "GPU node {{ $labels.node }} failed its health check and is quarantined",
                    "description": "The node takes no new pods. Its reasons are in the node's "
                    f"{REASON_ANNOTATION} annotation (kubectl describe node); the taint goes after three "
                    "complete, passing checks in a row, or replace the node.",
                },
            },
            {
                # Hopper, Ada and Ampere retire bad memory rows instead of pages: a failed
                # remap means the GPU can no longer repair its memory (replace the node).
                "alert": "GpuRowRemapFailed",
                "expr": f"{one_per_gpu('DCGM_FI_DEV_ROW_REMAP_FAILURE')} > 0",
                "for": "0m",
                "labels": {"severity": "critical"},
                "annotations": {
                    "summary": ON_GPU + "failed to remap a memory row",
                    "description": "Its memory can no longer be repaired: drain the node and replace it.",
                },
            },
            {
                # The exporter labels a GPU's series with the pod it is allocated to, and an
                # uncorrectable error usually ends that pod: the new count then appears on a
                # new series. One series per GPU (its UUID), whoever holds it, lets the
                # alert compare before and after.
                "record": "gpu:uncorrectable_remapped_rows:max",
                "expr": "max by (UUID, gpu, Hostname, hostname) (DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS)",
            },
            {
                # A row remapped for an uncorrectable error: the job that touched it saw the
                # error, and the remap takes effect only after the GPU is reset. Fires for an
                # hour after the count rises (the exporter declares the field a counter).
                "alert": "GpuUncorrectableMemoryError",
                "expr": "increase(gpu:uncorrectable_remapped_rows:max[1h]) > 0",
                "for": "0m",
                "labels": {"severity": "critical"},
                "annotations": {
                    "summary": ON_GPU + "remapped a row after an uncorrectable memory error",
                    "description": "Jobs on this GPU may have failed or computed wrong results; drain the "
                    "node and reboot it so the remap takes effect.",
                },
            },
            {
                # Pods waiting that ask for GPUs, in either mode (POD_REQUESTED).
                "record": "namespace:gpu_requesting_pods_pending:count",
                "expr": "count by (namespace) ("
                'max by (namespace, pod) (kube_pod_status_phase{phase="Pending"} == 1) '
                f"and on (namespace, pod) ({POD_REQUESTED} > 0))",
            },
            {
                # The exporter labels a GPU with the pod it is allocated to (the GPU Operator's
                # ServiceMonitor keeps those labels: honorLabels); an unallocated GPU carries
                # the exporter's own pod and namespace instead.
                "alert": "GpuAllocatedIdle",
                "expr": f'DCGM_FI_DEV_GPU_UTIL{{namespace!="{GPU_OPERATOR_NAMESPACE}", pod!=""}} == 0',
                "for": f"{idle_minutes}m",
                "labels": {"severity": "warning"},
                "annotations": {
                    "summary": "GPU {{ $labels.gpu }} of pod {{ $labels.namespace }}/{{ $labels.pod }} "
                    f"has been idle for {idle_minutes} minutes",
                    "description": "The GPU is allocated but does no work: free it for queued jobs "
                    "(end the pod, or cull the notebook).",
                },
            },
        ],
    }


# Rule files of the group with its defaults in each mode (what the tests judge with promtool): DRA
# mode with the claim templates of the profile's default (WorkloadsConfig.dra_gpu_counts).
GPU_RULES = {"groups": [gpu_rules()]}
DRA_GPU_RULES = {"groups": [gpu_rules(dra=True, claim_counts=WorkloadsConfig().dra_gpu_counts)]}
