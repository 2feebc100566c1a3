"""Workloads-layer settings: Karpenter pools, tenant namespaces and DRA claim templates."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, field_validator, model_validator

from profiles.base import FieldProblem, IamPrincipalArn, K8sName, MemoryQuantity, Strict, check_unique, worded
from profiles.capacity import ReservationSelector, check_reserved_pool
from profiles.catalog import CATALOG, INSTANCE_TYPES
from profiles.limits import GO_DURATION_MAX_HOURS, GO_DURATION_MAX_MINUTES, CpuBound, KubernetesCount
from profiles.unique import unique

CapacityType = Literal["on-demand", "spot", "reserved"]
# What a tenant's person may do in the tenant's namespaces: the settings that list them.
AccessLevel = Literal["editors", "viewers"]
ACCESS_LEVELS: tuple[AccessLevel, ...] = ("editors", "viewers")
# IAM Identity Center creates its roles under this path; the access entry needs the role's full ARN.
SSO_ROLE_PATH = "aws-reserved/sso.amazonaws.com/"
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# Namespaces that components outside the add-on catalog create or are commonly installed into: the
# Mountpoint for S3 CSI driver v2 runs its mounter pods in mount-s3; karpenter is Karpenter's
# documented namespace (this platform installs it into kube-system).
OTHERWISE_USED_NAMESPACES = ("mount-s3", "karpenter")


class CpuPoolConfig(Strict):
    instance_categories: Annotated[list[Literal["c", "m", "r"]], unique()] = Field(["c", "m", "r"], min_length=1)
    """EC2 instance categories Karpenter may pick from (c, m, r)."""
    capacity_types: Annotated[list[CapacityType], unique()] = Field(["on-demand"], min_length=1)
    """Capacity types Karpenter may buy for CPU nodes."""
    cpu_limit: KubernetesCount = Field(256, ge=1)
    """Total vCPUs the pool may launch (a scheduling limit, not a cost cap)."""
    consolidate_after_minutes: int = Field(5, ge=0, le=GO_DURATION_MAX_MINUTES)
    """How long a node must be under-used before Karpenter consolidates it."""
    expire_after_hours: int = Field(720, ge=1, le=GO_DURATION_MAX_HOURS)
    """Nodes are replaced after this age (fresh AMIs)."""
    capacity_reservations: list[ReservationSelector] = Field(default_factory=list, max_length=30)
    """With capacity type reserved: the capacity reservations (ODCRs or Capacity Blocks) Karpenter may launch the
    pool's nodes into, by id or tags. The pool's other capacity types are its fallback: reserved alone waits for room
    in a reservation (a Capacity Block's from its start); with on-demand (or spot) Karpenter launches those when no
    reservation has room.
    """

    @model_validator(mode="after")
    def _reservations(self) -> Self:
        check_reserved_pool(list(self.capacity_types), self.capacity_reservations)
        return self


class GpuPoolConfig(Strict):
    """Karpenter GPU pool for notebooks and single-node work. Multi-node EFA training stays on the
    managed node groups (their launch templates carry every EFA interface)."""

    instance_types: Annotated[list[str], unique()] = Field(
        ["g6.xlarge", "g6.2xlarge", "g6.4xlarge", "g6e.xlarge"], min_length=1
    )
    """Types from the GPU catalog."""
    capacity_types: Annotated[list[CapacityType], unique()] = Field(["on-demand"], min_length=1)
    """Capacity types Karpenter may buy for GPU nodes."""
    capacity_reservations: list[ReservationSelector] = Field(default_factory=list, max_length=30)
    """With capacity type reserved: the capacity reservations (ODCRs or Capacity Blocks) Karpenter may launch the
    pool's nodes into, by id or tags. The pool's other capacity types are its fallback: reserved alone waits for room
    in a reservation (a Capacity Block's from its start); with on-demand (or spot) Karpenter launches those when no
    reservation has room.
    """
    gpu_limit: KubernetesCount = Field(8, ge=1)
    """Total GPUs the pool may launch."""
    consolidate_after_minutes: int = Field(30, ge=0, le=GO_DURATION_MAX_MINUTES)
    """Idle GPU nodes are removed after this."""
    expire_after_hours: int | None = Field(None, ge=1, le=GO_DURATION_MAX_HOURS)
    """Hours after which Karpenter replaces a GPU node even while it runs a job (Karpenter's expiration does
    not wait for running pods). Unset: never; a GPU node leaves only once it is empty, and new nodes
    take the newest AMI."""

    @model_validator(mode="after")
    def _reservations(self) -> Self:
        check_reserved_pool(list(self.capacity_types), self.capacity_reservations)
        return self

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
    gpu_quota: KubernetesCount | None = Field(None, ge=0)
    """ResourceQuota on the GPUs the tenant's pods may request. Unset: every GPU the profile can run (the GPU node
    groups at their maximum size, plus the Karpenter GPU pool's limit). When set, at least one node's GPUs of the
    largest GPU node group: a smaller quota could never admit a job on that group. With Kueue, the ResourceQuota is
    at most what the tenant's queue can ever hold (its shares plus what it may borrow), where that is less.
    """
    cpu_quota: (
        Annotated[str, worded(r"^[0-9]+m?$", "whole cores or thousandths of a core, e.g. 192 or 500m"), CpuBound] | None
    ) = None
    """Total CPU the tenant's pods may request, as a Kubernetes quantity (e.g. 192 or 500m). Unset: no CPU quota (CPU
    follows the GPUs). When set, at least one node's vCPUs of the largest GPU node group.
    """
    memory_quota: MemoryQuantity | None = None
    """Total memory the tenant's pods may request, as a Kubernetes quantity (e.g. 2048Gi). Unset: no memory quota. When
    set, at least one node's memory of the largest GPU node group.
    """
    max_persistent_volume_claims: KubernetesCount = Field(20, ge=0)
    """Most PersistentVolumeClaims the tenant may create."""
    gpu_borrowing_limit: KubernetesCount | None = Field(None, ge=0)
    """With Kueue: most GPUs of each GPU flavour the tenant's queue may borrow beyond its own share while other
    tenants' shares are idle. Unset: all of the flavour's idle GPUs; 0: never borrows.
    """
    gpu_lending_limit: KubernetesCount | None = Field(None, ge=0)
    """With Kueue: most GPUs of its own share (per flavour) other tenants may borrow while it is idle. Unset: all of
    it; 0: its share is always kept free for it.
    """
    editors: list[IamPrincipalArn] = Field(default_factory=list)
    """The team's people who run work in its namespace: IAM role ARNs (for IAM Identity Center, the role's full ARN
    with its aws-reserved/sso.amazonaws.com/ path) or IAM user ARNs. Each gets an EKS access entry with
    AmazonEKSEditPolicy scoped to this namespace only (never the cluster). A person may be listed by several
    tenants; not by cluster.admin_principal_arns.
    """
    viewers: list[IamPrincipalArn] = Field(default_factory=list)
    """The team's people who may only read its namespace: AmazonEKSViewPolicy scoped to this namespace only (no
    Secrets). The same kinds of ARN as editors; a person is an editor or a viewer of a tenant, not both.
    """

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name in RESERVED_NAMESPACES or name.startswith("kube-"):
            raise ValueError(f"{name!r} is a Kubernetes system namespace; choose a team name")
        if name in OTHERWISE_USED_NAMESPACES:
            raise ValueError(f"{name!r} is a namespace other components use; choose a team name")
        return name

    @field_validator("editors", "viewers")
    @classmethod
    def _full_sso_role_arns(cls, principals: list[str]) -> list[str]:
        # An Identity Center role's ARN without its path names no role: EKS refuses the entry
        # ("invalid principal") only at apply time, after the layer's other changes.
        for index, principal in enumerate(principals):
            account, resource = principal.split(":", 5)[4:]
            kind, _, name = resource.partition("/")
            if kind == "role" and name.startswith("AWSReservedSSO_"):
                raise FieldProblem(
                    (index,),
                    principal,
                    f"an IAM Identity Center role's ARN carries the path {SSO_ROLE_PATH} (aws iam get-role "
                    f"--role-name {name} --query Role.Arn prints it); without it the ARN names no role",
                    allowed=f"the role's full ARN, e.g. arn:aws:iam::{account}:role/{SSO_ROLE_PATH}{name}",
                )
        return principals

    @model_validator(mode="after")
    def _each_person_once(self) -> TenantConfig:
        # One access entry per person, with one access policy per level: a person who is both an
        # editor and a viewer of the same namespace has no single level to be given. IAM names
        # ignore case, so Alice and alice are one role.
        seen: dict[str, AccessLevel] = {}
        for level in ACCESS_LEVELS:
            for index, principal in enumerate(getattr(self, level)):
                if principal.lower() in seen:
                    first = seen[principal.lower()]
                    listed = "twice" if first == level else f"as one of its {first} too"
                    raise FieldProblem(
                        (level, index),
                        principal,
                        f"tenant {self.name!r} lists this principal {listed}",
                        allowed="each principal once per tenant, as an editor or as a viewer",
                    )
                seen[principal.lower()] = level
        return self

    def access(self) -> dict[str, AccessLevel]:
        """Principal -> what it may do in this tenant's namespace."""
        return {principal: level for level in ACCESS_LEVELS for principal in getattr(self, level)}


class WorkloadsConfig(Strict):
    cpu_pool: CpuPoolConfig = Field(default_factory=CpuPoolConfig)
    """Karpenter NodePool for CPU work."""
    gpu_pool: GpuPoolConfig = Field(default_factory=GpuPoolConfig)
    """Karpenter NodePool for GPU work."""
    tenants: list[TenantConfig] = Field(default_factory=lambda: [TenantConfig(name="ml-team")])
    """Teams that get a namespace, quotas, an IAM identity and their own FSx paths."""
    dra_gpu_counts: list[KubernetesCount] = Field([1, 8])
    """With GPU Operator DRA mode: one ResourceClaimTemplate per GPU count (gpu-<n>) per tenant."""

    def tenant_access(self) -> dict[str, dict[AccessLevel, tuple[str, ...]]]:
        """Principal -> level -> the tenant namespaces where it holds that level, in profile order.
        EKS takes one access entry per principal and each access policy once per entry, so a person
        of several tenants gets one entry and, per level, one association naming all its namespaces."""
        grants: dict[str, dict[AccessLevel, tuple[str, ...]]] = {}
        for tenant in self.tenants:
            for principal, level in tenant.access().items():
                levels = grants.setdefault(principal, {})
                levels[level] = (*levels.get(level, ()), tenant.name)
        return grants

    @model_validator(mode="after")
    def _unique(self) -> WorkloadsConfig:
        check_unique([tenant.name for tenant in self.tenants], field="tenants", what="tenant")
        spelled: dict[str, str] = {}
        for index, tenant in enumerate(self.tenants):
            for principal, level in tenant.access().items():
                first = spelled.setdefault(principal.lower(), principal)
                if first != principal:
                    # Two spellings would make two access entries for one IAM principal; EKS refuses the second.
                    raise FieldProblem(
                        ("tenants", index, level, getattr(tenant, level).index(principal)),
                        principal,
                        f"is {first} spelled differently (IAM names ignore case)",
                        allowed=f"{first}, as the other tenant spells it",
                    )
        if any(count < 1 for count in self.dra_gpu_counts) or len(set(self.dra_gpu_counts)) != len(self.dra_gpu_counts):
            raise FieldProblem("dra_gpu_counts", self.dra_gpu_counts, "GPU counts must be distinct and positive")
        return self
