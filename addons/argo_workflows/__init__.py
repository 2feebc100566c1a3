"""Argo Workflows: the workflow controller and server, in a namespace of the profile's choosing."""

from __future__ import annotations

from pydantic import Field

from addons.definition import AddonDefinition, ReleaseConfig
from profiles.base import CpuQuantity, K8sName, MemoryQuantity
from profiles.limits import KubernetesCount
from profiles.versions import ChartRef


class ArgoWorkflowsConfig(ReleaseConfig):
    enabled: bool = False
    """Install Argo Workflows (off by default)."""
    namespace: K8sName = "argo"
    """Namespace for the Argo Workflows controller and server; not a tenant's or the platform's own."""
    default_active_deadline_seconds: KubernetesCount = Field(3600, ge=60)
    """Workflows without a deadline get this one."""
    default_parallelism: KubernetesCount = Field(10, ge=1)
    """Pods a workflow runs at once unless it says otherwise."""
    quota_cpu: CpuQuantity = Field("64")
    """ResourceQuota requests.cpu of the workflow namespace."""
    quota_memory: MemoryQuantity = Field("256Gi")
    """ResourceQuota requests.memory of the workflow namespace."""
    quota_gpus: KubernetesCount = Field(8, ge=0)
    """ResourceQuota requests.nvidia.com/gpu of the workflow namespace."""


DEFINITION = AddonDefinition(
    key="argo_workflows",
    settings_type=ArgoWorkflowsConfig,
    description="Argo Workflows for pipelines (off by default).",
    # The newest chart release; it runs its own app version (no image override, so CRDs and
    # controller match). Argo Workflows 4.1.3 had no chart release yet.
    pin=ChartRef(
        repository="https://argoproj.github.io/argo-helm",
        chart="argo-workflows",
        version="1.0.18",
        app_version="v4.0.6",
    ),
    namespace="argo",
    namespace_setting="namespace",
)
