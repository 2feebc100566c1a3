"""What the checks run on and as whom: the GPU group verify checks, the validation pods' common
shape and device requests, and where (as which tenant) the multi-node checks run, with how many nodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from addons.kueue import DEFINITION as KUEUE
from addons.kueue import shares as kueue_shares
from components.k8s.efa_pods import HUGEPAGES, worker_memory_gib
from components.k8s.gpus import GPU_EXTENDED_RESOURCE, container_claims, pod_claims
from components.labels import GPU_TOLERATION, NODE_GROUP_LABEL
from profiles.catalog import EFA_RESOURCE, GpuInstanceType
from profiles.cluster import GpuNodeGroupConfig
from profiles.gpus import dra_claim_counts, dra_mode
from profiles.models import VALIDATION_NAMESPACE, PlatformConfig, tenant_gpu_quota

NAMESPACE = VALIDATION_NAMESPACE


@dataclass(frozen=True)
class ValidationTarget:
    """The managed GPU node group the checks run on, with its catalog facts."""

    group: GpuNodeGroupConfig
    entry: GpuInstanceType
    dra: bool = False  # GPUs through DRA claims (GPU Operator DRA mode), not the extended resource

    @classmethod
    def for_profile(cls, config: PlatformConfig) -> ValidationTarget | None:
        groups = config.cluster.gpu_node_groups
        chosen = next((g for g in groups if g.efa_enabled), groups[0] if groups else None)
        return cls(chosen, chosen.catalog_entry, dra_mode(config)) if chosen else None

    @property
    def efa_interfaces(self) -> int:
        return self.entry.max_efa_interfaces if self.group.efa_enabled else 0


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


def tenant_check_namespace(config: PlatformConfig, target: ValidationTarget) -> str:
    """Where the multi-node checks run: the first tenant's namespace, so they meet what a tenant's
    first job meets (its Pod Security level, ResourceQuota, LimitRange, NetworkPolicies and, with
    Kueue, its queue). The validation namespace only where no tenant could run them: a profile
    without tenants, or DRA mode where the tenants have no claim template for a whole node."""
    tenants = config.workloads.tenants
    if not tenants or (target.dra and target.entry.gpu_count not in dra_claim_counts(config)):
        return NAMESPACE
    return tenants[0].name


def tenant_job_nodes(config: PlatformConfig, target: ValidationTarget, wanted: int = 2) -> int:
    """How many of the checked group's nodes a job in `tenant_check_namespace` can get, at most
    `wanted`: what the group runs, what the first tenant's GPU quota admits and, with Kueue, what
    its queue may hold of the group."""
    nodes = min(wanted, target.group.desired_size)
    if tenant_check_namespace(config, target) == NAMESPACE:
        return nodes
    tenant = config.workloads.tenants[0]
    # The tenant's ResourceQuota refuses the pod that would pass its GPU quota, queued or not.
    nodes = min(nodes, tenant_gpu_quota(config, tenant) // target.entry.gpu_count)
    if KUEUE.enabled(config):
        share = next((s for s in kueue_shares(config)[tenant.name] if s.flavor.node_group == target.group.name), None)
        nodes = min(nodes, share.most_gpus // target.entry.gpu_count if share else 0)
    return nodes
