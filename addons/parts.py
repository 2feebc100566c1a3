"""What an add-on contributes beyond its own release: the parts the other layers and the tenancy
code call, so that no module outside an add-on's package names a particular add-on.

An add-on's package may define `addons/<key>/parts.py` ending with `PARTS = <its AddonParts
subclass>()`; `addons.catalog.PARTS` finds it by that convention (an add-on without the module
contributes nothing). Parts are binding-free (plain objects and data): the profile validator, the
clean-up and verify read them without loading a provider binding. The layers call a part only
while its add-on is enabled.

Every hook has a default that contributes nothing, so a part overrides only what it adds:
- `clients`: what the namespaces whose pods use the add-on's service need (labels its server's
  policy admits, their own egress, environment, objects). Tenants always get it; an add-on whose
  pods are clients reads the sum from its context (`AddonContext.clients`).
- `tenant`: more in every tenant namespace (an ingress from the add-on's controller).
- `tenant_resources`: the custom resources tenants' people work with (RBAC in tenant namespaces).
- `pod_sources`: the shapes of object whose pods tenants create through the add-on (the pod-fit
  admission policies check them).
- `workload_objects`: cluster-level objects the workloads layer applies (queues, runtimes, pools).
- `tenant_gpu_ceiling`: the most GPUs of a node group the add-on lets one tenant's jobs hold at
  once (a queue's quota), which sizes verify's multi-node checks.
- `checks`: `verify`'s acceptance checks of the add-on (components/acceptance.py), given the GPU
  group and the namespace a multi-node check runs in.
- `guide`: its sections and lines of a tenant's day-one page.
- `warnings`, `not_priced`: what synthesis warns about, and what `make cost` leaves out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from components.acceptance import AcceptanceCheck, MultiNodeSite
from components.k8s.clients import ClientAccess
from components.k8s.pod_sources import PodSource
from components.k8s.tenant_rbac import TenantResources
from components.plan_deadline import PlanDeadline
from profiles.workloads import TenantConfig

if TYPE_CHECKING:
    from addons.definition import AddonDefinition
    from profiles.models import PlatformConfig
    from stacks.contracts import AddonRecord, AddonsOutputs, BuildOutputs, ClusterOutputs, StorageOutputs


@dataclass(frozen=True, kw_only=True)
class TenantPart:
    """What an add-on adds to every tenant namespace beside its client access."""

    allow: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    """NetworkPolicies in the tenant namespace (name -> spec), e.g. the add-on's controller in."""
    objects: tuple[dict[str, Any], ...] = ()
    """More objects in the tenant namespace."""


@dataclass(frozen=True, kw_only=True)
class WorkloadsContext:
    """What an add-on's workloads-layer objects may read: the profile and the layers' contracts."""

    config: PlatformConfig
    cluster: ClusterOutputs
    storage: StorageOutputs
    build: BuildOutputs
    addons: AddonsOutputs
    fsx_tenant_volume: bool
    """Every tenant namespace has the FSx volume (a claim named profiles.tenancy.FSX_VOLUME)."""
    pod_sources: tuple[PodSource, ...] = ()
    """Every shape of object whose pods tenants can create in this profile (Kubernetes' own and
    the enabled add-ons')."""
    provided: frozenset[str] = frozenset()
    """What the enabled add-ons provide (AddonDefinition.provides, e.g. PROMETHEUS_RULES)."""
    now: datetime | None = None
    """When the layer is synthesized (time-bound objects, a Capacity Block's window); None: unknown."""


@dataclass(frozen=True, kw_only=True)
class ObjectGroup:
    """Kubernetes objects the workloads layer applies as one construct."""

    id: str
    """The construct id (part of every object's resource address: renaming it replaces them)."""
    objects: tuple[dict[str, Any], ...]
    after_tenants: bool = False
    """Applied once the tenant namespaces exist (namespaced objects in them)."""
    first: bool = False
    """Applied before the tenant namespaces (what tenants' pods land on, e.g. node pools)."""
    force_conflicts: bool = False
    """Terraform's apply takes back the fields another field manager changed (objects the platform's
    own jobs patch between applies, e.g. the ClusterQueues a Capacity Block's CronJobs patch):
    without it, the kubernetes provider's server-side apply fails with a field manager conflict."""
    plan_before: PlanDeadline | None = None
    """The objects were computed for the moment of synthesis and go stale at this time (a Capacity
    Block's next edge): a later plan is refused, so they are synthesized again. Default: none."""


@dataclass(frozen=True, kw_only=True)
class GuideJob:
    """A job kind a tenant's day-one page offers (operate/tenant_guide.py)."""

    what: str
    """What it is, as the list says it ("an MPIJob across two nodes")."""
    section: str
    """The docs/queues.md section with its example."""
    kind: str
    """Its kubectl resource name (`kubectl get <kind> <name>`)."""
    name: str
    """The example's object name."""


@dataclass(frozen=True, kw_only=True)
class WebUi:
    """A web UI a tenant's day-one page lists, reached through a cluster admin's port-forward."""

    name: str
    command: str
    """The port-forward a cluster admin runs."""
    url: str
    account: str
    """Whom the tenant signs in as."""


@dataclass(frozen=True, kw_only=True)
class GuidePart:
    """What an add-on adds to a tenant's day-one page."""

    queue: str | None = None
    """The page's "your queue" section, when the add-on queues the tenant's jobs."""
    jobs: tuple[GuideJob, ...] = ()
    data: tuple[str, ...] = ()
    """Lines of "where your data lives" (a mount the add-on's pods use)."""
    web_uis: tuple[WebUi, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Capacity:
    """What an add-on runs in the workloads layer that launches or admits capacity: the operate
    commands stop it before a destroy and on a pause (operate/cleanup.py, operate/pause.py) and put
    it back on a resume. Merged over the enabled add-ons (`addons.contributions.workload_capacity`)."""

    node_pools: tuple[str, ...] = ()
    """Karpenter NodePools the layer creates: their NodeClaims are deleted before a destroy, and
    a pause limits the pools to nothing."""
    pool_limits: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Each of those pools' limits as the layer sets them (a resume puts them back)."""
    drain_minutes: int = 0
    """The longest one of those nodes may take to drain (its NodePool's terminationGracePeriod):
    how long the clean-up waits for the nodes, with EC2's termination on top."""
    cluster_queues: tuple[str, ...] = ()
    """Kueue ClusterQueues the layer creates: held before a destroy and on a pause."""


class AddonParts:
    """One add-on's contributions; `definition` is its package's DEFINITION. Defaults: nothing."""

    definition: AddonDefinition[Any]
    records: ClassVar[Mapping[str, type[AddonRecord]]] = {}
    """The record the add-on makes in a layer (layer -> its type), which that layer's contract
    carries and publishes (stacks/contracts.py AddonRecord; docs/outputs.md lists their outputs)."""

    def __init__(self, definition: AddonDefinition[Any]):
        self.definition = definition

    @property
    def key(self) -> str:
        return self.definition.key

    def enabled(self, config: PlatformConfig) -> bool:
        return self.definition.enabled(config)

    def clients(self, config: PlatformConfig) -> ClientAccess | None:
        """What namespaces whose pods use the add-on's service need (None: it offers none)."""
        return None

    def tenant(self, config: PlatformConfig, tenant: TenantConfig) -> TenantPart:
        return TenantPart()

    def tenant_resources(self, config: PlatformConfig) -> tuple[TenantResources, ...]:
        return ()

    def pod_sources(self, config: PlatformConfig) -> tuple[PodSource, ...]:
        return ()

    def workload_objects(self, ctx: WorkloadsContext) -> tuple[ObjectGroup, ...]:
        return ()

    def warnings(self, config: PlatformConfig) -> tuple[str, ...]:
        """What synthesis warns about the profile's use of the add-on (valid, but likely not meant)."""
        return ()

    def not_priced(self, config: PlatformConfig) -> tuple[str, ...]:
        """What the add-on costs that `make cost` does not price (one line each)."""
        return ()

    def guide(self, config: PlatformConfig, tenant: TenantConfig) -> GuidePart:
        """What the add-on adds to the tenant's day-one page (`make tenant-guide`)."""
        return GuidePart()

    def capacity(self, config: PlatformConfig) -> Capacity:
        """What of the add-on's objects in the workloads layer the clean-up and pause stop."""
        return Capacity()

    def tenant_gpu_ceiling(self, config: PlatformConfig, tenant: TenantConfig, node_group: str | None) -> int | None:
        """The most GPUs of the node group (None: of every group and pool) the add-on lets the
        tenant's jobs hold at once (None: the add-on does not limit them)."""
        return None

    def checks(self, config: PlatformConfig, site: MultiNodeSite | None) -> tuple[AcceptanceCheck, ...]:
        """`verify`'s checks of the add-on on the live cluster (read-only ones run first; ones with
        validation objects after the platform's single-node checks; ones that take whole nodes
        after its multi-node MPIJob). `site`: the GPU group verify checks and where a multi-node
        check runs (None: the profile has no GPU node group)."""
        return ()
