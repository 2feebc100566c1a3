"""How many GPUs a node has, how many it offers pods, and how many a pod asks for: one set of
recording rules, defined for the way the profile's pods get GPUs (the device plugin's nvidia.com/gpu,
or DRA ResourceClaims: GpuOperatorConfig.dra), that every GPU alert (rules.py) and dashboard panel
(dashboards.py) reads instead of a mode's own series.

Device plugin mode. kube-state-metrics reports the extended resource nvidia.com/gpu as
resource="nvidia_com_gpu" (kubernetes/kube-state-metrics v2.20.0, internal/store/node.go and pod.go;
kube-prometheus-stack 88.5.3 deploys it: its kube-state-metrics chart 8.4.0, appVersion 2.20.0):
a node's capacity and allocatable (the device plugin withdraws a GPU it finds unhealthy from
allocatable, capacity stays) and each container's requests.

DRA mode. The device plugin is off and no node advertises nvidia.com/gpu. At the pins:
- kube-state-metrics v2.20.0 exports nothing of ResourceSlices or ResourceClaims' allocations (no
  store for resource.k8s.io in internal/store); it does export, per pod, each entry of
  pod.spec.resourceClaims with the template it comes from: kube_pod_resourceclaim_info{claim_name,
  resourceclaim_name, resourceclaim_template_name} (internal/store/pod.go, EXPERIMENTAL, on by
  default; docs/metrics/workload/pod-metrics.md). The platform's templates are named gpu-<count>
  (components/k8s/gpus.py), so a pod's GPUs are the count in its template's name.
- The NVIDIA DRA driver v0.5.0 (GPU Operator v26.7.0 values.yaml draDriver) withdraws no unhealthy
  GPU by default: its NVML device health check, which taints a device in the ResourceSlice, is the
  alpha feature gate NVMLDeviceHealthCheck, off by default (NVIDIA/k8s-dra-driver-gpu pkg/featuregates/
  featuregates.go and cmd/gpu-kubelet-plugin/device_health.go, read at main@22407113, 2026-05-15: the
  v0.5.0 tag was not in the snapshot read; draDriver.featureGates is {} in the operator's values), and
  kube-state-metrics could not show a device taint anyway. There is no "allocatable drops" signal in
  DRA mode.
- The closest real signal is the DCGM exporter: it lists every GPU it enumerated on its node, one
  series per GPU and field, labelled with the node (Hostname, hostname from NODE_NAME:
  internal/pkg/hostname/hostname.go) and the GPU's UUID. In DRA mode (KUBERNETES_ENABLE_DRA, set by
  GPU Operator v26.7.0 manifests/state-dcgm-exporter/0700_daemonset.yaml) the exporter's own pod
  holds an adminAccess claim of all the node's GPUs (0400_resourceclaimtemplate.yaml), so an
  allocated GPU appears twice: once for the exporter's pod and once for the pod it is allocated to
  (NVIDIA/dcgm-exporter internal/pkg/transformation/kubernetes.go Process and toDeviceToPodsDRA at
  4.5.3-4.8.2 and main@d5e5f51). Counting distinct UUIDs per node counts each GPU once.
  A node's GPU count is its instance type's (profiles/catalog.py), read from the node's
  node.kubernetes.io/instance-type label, which kube-state-metrics exposes on kube_node_labels only
  for the labels it is told to (--metric-labels-allowlist): the add-on asks for it (Monitors.node_labels).
  So in DRA mode "allocatable" is the GPUs the node's exporter lists: a GPU lost from the bus leaves it
  once the exporter enumerates again (it enumerates when it starts: internal/pkg/devicewatchlistmanager),
  e.g. after the node's repair or reboot; the health check sees a missing GPU within its interval in
  both modes (GpuNodeQuarantined).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from addons.gpu_operator import DEFINITION
from components.k8s.gpus import claim_template_name
from profiles.catalog import CATALOG

NODE_CAPACITY = "node:gpus_capacity:sum"
"""GPUs each node has (label: node)."""
NODE_ALLOCATABLE = "node:gpus_allocatable:sum"
"""GPUs each node offers pods now (label: node)."""
POD_REQUESTED = "namespace_pod:gpus_requested:sum"
"""GPUs each pod asks for, whatever its phase (labels: namespace, pod)."""

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# kube_node_labels names a node label label_<the label with every character outside [a-zA-Z0-9_]
# made _> (kube-state-metrics v2.20.0 internal/store/utils.go labelName, SanitizeLabelName).
INSTANCE_TYPE_SERIES_LABEL = "label_node_kubernetes_io_instance_type"
# The exporter's host label, under either name (tests/fixtures/metrics/contract.json).
HOST = "Hostname, hostname"
# A GPU's identity in the exporter's series.
GPU_IDENTITY = f"UUID, gpu, {HOST}"
# The namespace whose pod a GPU's series carries when no workload holds it: the exporter's own (its
# admin claim in DRA mode; the scrape target's labels under honorLabels in device plugin mode).
EXPORTER_NAMESPACE = DEFINITION.namespace


def one_per_gpu(metric: str) -> str:
    """The exporter's series of `metric` once per GPU: the workload's where a pod holds the GPU, the
    exporter's own otherwise. In device plugin mode each GPU has one series and this is that series;
    in DRA mode it drops the exporter's copy of an allocated GPU, so an alert fires once per GPU
    with the pod that holds it."""
    return f'({metric}{{namespace!="{EXPORTER_NAMESPACE}"}} or on ({GPU_IDENTITY}) {metric})'


def _node_from_host(expr: str) -> str:
    """`expr` with a node label copied from the exporter's host label (whichever it carries)."""
    hostname = f'label_replace({expr}, "node", "$1", "Hostname", "(.+)")'
    return f'label_replace({hostname}, "node", "$1", "hostname", "(.+)")'


def _catalog_gpus_by_instance_type() -> str:
    """Each node's GPU count from its instance type (profiles/catalog.py), as one series per node."""
    by_count: dict[int, list[str]] = {}
    for name, entry in sorted(CATALOG.items()):
        by_count.setdefault(entry.gpu_count, []).append(name.replace(".", r"\."))
    terms = [
        f"kube_node_labels{{{INSTANCE_TYPE_SERIES_LABEL}=~`{'|'.join(names)}`}} * {count}"
        for count, names in sorted(by_count.items(), reverse=True)
    ]
    return " or ".join(terms)


def _claimed_gpus(claim_counts: Iterable[int]) -> str:
    """Each pod's claims from the platform's templates (gpu-<count>), each as its count of GPUs."""
    return " or ".join(
        f'kube_pod_resourceclaim_info{{resourceclaim_template_name="{claim_template_name(count)}"}} * {count}'
        for count in sorted(set(claim_counts))
    )


def gpu_count_rules(*, dra: bool, claim_counts: Iterable[int] = ()) -> list[dict[str, Any]]:
    """The recording rules of NODE_CAPACITY, NODE_ALLOCATABLE and POD_REQUESTED for the mode;
    `claim_counts`: the GPU counts of the platform's claim templates (DRA mode)."""
    if dra:
        capacity = f"sum by (node) ({_catalog_gpus_by_instance_type()})"
        listed = f"count by ({GPU_IDENTITY}) (DCGM_FI_DEV_GPU_UTIL)"
        allocatable = f"count by (node) ({_node_from_host(listed)})"
        requested = f"sum by (namespace, pod) ({_claimed_gpus(claim_counts)})"
    else:
        capacity = 'sum by (node) (kube_node_status_capacity{resource="nvidia_com_gpu"})'
        allocatable = 'sum by (node) (kube_node_status_allocatable{resource="nvidia_com_gpu"})'
        requested = 'sum by (namespace, pod) (kube_pod_container_resource_requests{resource="nvidia_com_gpu"})'
    return [
        {"record": NODE_CAPACITY, "expr": capacity},
        {"record": NODE_ALLOCATABLE, "expr": allocatable},
        {"record": POD_REQUESTED, "expr": requested},
    ]
