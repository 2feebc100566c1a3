"""The shape of verify's validation pods: on the checked GPU group, tolerating its taint, with
its GPUs (the extended resource, or in DRA mode a claim) and, for the multi-node checks, every
EFA interface, huge pages and memory for the shared-memory transport."""

from __future__ import annotations

from typing import Any

from components.acceptance import ValidationTarget
from components.k8s.efa_pods import HUGEPAGES, worker_memory_gib
from components.k8s.gpus import GPU_EXTENDED_RESOURCE, container_claims, pod_claims
from components.labels import GPU_TOLERATION, NODE_GROUP_LABEL
from profiles.catalog import EFA_RESOURCE
from profiles.models import VALIDATION_NAMESPACE

NAMESPACE = VALIDATION_NAMESPACE


def check_pod(
    name: str, target: ValidationTarget, container: dict[str, Any], *, gpus: int, **spec: Any
) -> dict[str, Any]:
    if target.dra:
        spec["resourceClaims"] = pod_claims(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app.kubernetes.io/part-of": "gpu-validation"}},
        "spec": {
            "restartPolicy": "Never",
            # No check talks to the API server: no service account token in the pod.
            "automountServiceAccountToken": False,
            "nodeSelector": {NODE_GROUP_LABEL: target.group.name},
            "tolerations": [dict(GPU_TOLERATION)],
            "containers": [container],
            **spec,
        },
    }


def with_cpu_memory(resources: dict[str, Any], *, cpu: str, memory: str) -> dict[str, Any]:
    """Device resources plus a CPU request and, where they set none, a memory request and limit."""
    requests = {**resources.get("requests", {}), "cpu": cpu}
    limits = dict(resources.get("limits", {}))
    if "memory" not in limits:
        requests["memory"] = limits["memory"] = memory
    return {**resources, "requests": requests, "limits": limits}


def device_resources(target: ValidationTarget, gpus: int, *, all_efa: bool) -> dict[str, Any]:
    """GPUs (the extended resource, or in DRA mode the pod's claim), and with `all_efa` every EFA
    interface, huge pages and memory for the shared-memory transport."""
    limits: dict[str, str] = {} if target.dra else {GPU_EXTENDED_RESOURCE: str(gpus)}
    if all_efa and target.efa_interfaces:
        limits[EFA_RESOURCE] = str(target.efa_interfaces)
        limits["hugepages-2Mi"] = HUGEPAGES
        limits["memory"] = f"{worker_memory_gib(gpus)}Gi"
    resources: dict[str, Any] = {"requests": dict(limits), "limits": limits} if limits else {}
    if target.dra:
        resources["claims"] = container_claims()
    return resources
