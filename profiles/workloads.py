"""Workloads-layer settings: Karpenter pools, tenant namespaces and DRA claim templates."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from profiles.base import FieldProblem, K8sName, Strict, check_unique
from profiles.catalog import CATALOG, INSTANCE_TYPES

CapacityType = Literal["on-demand", "spot", "reserved"]
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# Namespaces that components outside the add-on catalog create or are commonly installed into: the
# Mountpoint for S3 CSI driver v2 runs its mounter pods in mount-s3; karpenter is Karpenter's
# documented namespace (this platform installs it into kube-system).
OTHERWISE_USED_NAMESPACES = ("mount-s3", "karpenter")


class CpuPoolConfig(Strict):
    instance_categories: list[Literal["c", "m", "r"]] = Field(["c", "m", "r"], min_length=1)
    """EC2 instance categories Karpenter may pick from (c, m, r)."""
    capacity_types: list[CapacityType] = Field(["on-demand"], min_length=1)
    """Capacity types Karpenter may buy for CPU nodes."""
    cpu_limit: int = Field(256, ge=1)
    """Total vCPUs the pool may launch (a scheduling limit, not a cost cap)."""
    consolidate_after_minutes: int = Field(5, ge=0)
    """How long a node must be under-used before Karpenter consolidates it."""
    expire_after_hours: int = Field(720, ge=1)
    """Nodes are replaced after this age (fresh AMIs)."""


class GpuPoolConfig(Strict):
    """Karpenter GPU pool for notebooks and single-node work. Multi-node EFA training stays on the
    managed node groups (their launch templates carry every EFA interface)."""

    instance_types: list[str] = Field(["g6.xlarge", "g6.2xlarge", "g6.4xlarge", "g6e.xlarge"], min_length=1)
    """Types from the GPU catalog."""
    capacity_types: list[CapacityType] = Field(["on-demand"], min_length=1)
    """Capacity types Karpenter may buy for GPU nodes."""
    gpu_limit: int = Field(8, ge=1)
    """Total GPUs the pool may launch."""
    consolidate_after_minutes: int = Field(30, ge=0)
    """Idle GPU nodes are removed after this."""
    expire_after_hours: int | None = Field(None, ge=1)
    """Hours after which Karpenter replaces a GPU node even while it runs a job (Karpenter's expiration does
    not wait for running pods). Unset: never; a GPU node leaves only once it is empty, and new nodes
    take the newest AMI."""

    @field_validator("instance_types")
    @classmethod
    def _in_catalog(cls, types: list[str]) -> list[str]:
        unknown = [t for t in types if t not in CATALOG]
        if unknown:
            raise ValueError(
                f"not in the GPU instance catalog: {', '.join(unknown)}; known: {', '.join(INSTANCE_TYPES)}"
            )
        return types


class TenantConfig(Strict):
    name: K8sName = Field(...)
    """Namespace of the team; also its S3 prefix (<name>/)."""
    gpu_quota: int | None = Field(None, ge=0)
    """ResourceQuota on the GPUs the tenant's pods may request. Unset: every GPU the profile can run (the GPU node
    groups at their maximum size, plus the Karpenter GPU pool's limit). When set, at least one node's GPUs of the
    largest GPU node group: a smaller quota could never admit a job on that group.
    """
    cpu_quota: str | None = Field(None, pattern=r"^\d+m?$")
    """Total CPU the tenant's pods may request, as a Kubernetes quantity (e.g. 192 or 500m). Unset: no CPU quota (CPU
    follows the GPUs). When set, at least one node's vCPUs of the largest GPU node group.
    """
    memory_quota: str | None = Field(None, pattern=r"^\d+(Ki|Mi|Gi|Ti)$")
    """Total memory the tenant's pods may request, as a Kubernetes quantity (e.g. 2048Gi). Unset: no memory quota. When
    set, at least one node's memory of the largest GPU node group.
    """
    max_persistent_volume_claims: int = Field(20, ge=0)
    """Most PersistentVolumeClaims the tenant may create."""
    gpu_borrowing_limit: int | None = Field(None, ge=0)
    """With Kueue: most GPUs of each GPU flavour the tenant's queue may borrow beyond its own share while other
    tenants' shares are idle. Unset: all of the flavour's idle GPUs; 0: never borrows.
    """
    gpu_lending_limit: int | None = Field(None, ge=0)
    """With Kueue: most GPUs of its own share (per flavour) other tenants may borrow while it is idle. Unset: all of
    it; 0: its share is always kept free for it.
    """

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name in RESERVED_NAMESPACES or name.startswith("kube-"):
            raise ValueError(f"{name!r} is a Kubernetes system namespace; choose a team name")
        if name in OTHERWISE_USED_NAMESPACES:
            raise ValueError(f"{name!r} is a namespace other components use; choose a team name")
        return name


class WorkloadsConfig(Strict):
    cpu_pool: CpuPoolConfig = Field(default_factory=CpuPoolConfig)
    """Karpenter NodePool for CPU work."""
    gpu_pool: GpuPoolConfig = Field(default_factory=GpuPoolConfig)
    """Karpenter NodePool for GPU work."""
    tenants: list[TenantConfig] = Field(default_factory=lambda: [TenantConfig(name="ml-team")])
    """Teams that get a namespace, quotas, an IAM identity and their own FSx paths."""
    dra_gpu_counts: list[int] = Field([1, 8])
    """With GPU Operator DRA mode: one ResourceClaimTemplate per GPU count (gpu-<n>) per tenant."""

    @model_validator(mode="after")
    def _unique(self) -> WorkloadsConfig:
        check_unique([tenant.name for tenant in self.tenants], field="tenants", what="tenant")
        if any(count < 1 for count in self.dra_gpu_counts) or len(set(self.dra_gpu_counts)) != len(self.dra_gpu_counts):
            raise FieldProblem("dra_gpu_counts", self.dra_gpu_counts, "GPU counts must be distinct and positive")
        return self
