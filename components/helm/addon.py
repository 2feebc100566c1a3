"""The shape of an add-on's installer, knowing no particular add-on.

An add-on's `install.py` (`addons/<key>/install.py`) defines a subclass of `HelmAddonSpec` (a
pinned Helm chart: release name, timeout, values, what it must be installed after, any resources
it needs beside the release), or of `AddonSpec` when it installs otherwise (the MPI Operator's
release manifest), and one instance of it, `ADDON`. Its `definition` (the binding-free part in
`addons/<key>/__init__.py`: settings, pin, minimums, namespace) is what the profile validator reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Generic, Literal, TypeVar

from cdktf import ITerraformDependable
from constructs import Construct

from addons.definition import AddonConfig, AddonDefinition, ReleaseConfig
from components.helm.release import HelmAddon, HelmAddonProps, SensitiveValue, Values
from components.k8s.clients import ClientAccess
from components.k8s.namespaces import ApiServerAddresses, NamespaceGuard, PodSecurityLevel, namespace_objects
from components.k8s.objects import KubernetesObjects, KubernetesObjectsProps
from profiles import PlatformConfig
from profiles.versions import ChartRef
from stacks.contracts import AddonRecord, BuildOutputs, ClusterOutputs, StorageOutputs, addon_record

RecordT = TypeVar("RecordT", bound=AddonRecord)


@dataclass(frozen=True, kw_only=True)
class Monitors:
    """Prometheus monitors an add-on brings for its own pods (the add-on that runs Prometheus creates them
    with its chart, so they exist only once the Prometheus operator's CRDs do)."""

    service_monitors: tuple[dict[str, Any], ...] = ()
    """ServiceMonitor specs (kube-prometheus-stack's additionalServiceMonitors entries)."""
    pod_monitors: tuple[dict[str, Any], ...] = ()
    """PodMonitor specs (additionalPodMonitors entries)."""
    dashboards: tuple[dict[str, Any], ...] = ()
    """Grafana dashboard models (components/dashboards.py), provisioned by the add-on that runs Grafana."""
    rule_groups: tuple[dict[str, Any], ...] = ()
    """Prometheus rule groups about the add-on's workloads and what it installs (a PrometheusRule's
    `groups` entries), loaded by the add-on that runs Prometheus."""
    node_labels: tuple[str, ...] = ()
    """Node labels its rules read from kube-state-metrics' kube_node_labels, which carries only the
    labels it is told to (its --metric-labels-allowlist, set by the add-on that runs it)."""


@dataclass(frozen=True, kw_only=True)
class AddonContext:
    """What an add-on may read and build on while the addons layer installs it."""

    scope: Construct
    """The addons stack: where the release and any companion resources are created."""
    config: PlatformConfig
    """The whole validated profile."""
    cluster: ClusterOutputs
    """The cluster layer's contract (its name, endpoint, VPC, ...; mostly tokens)."""
    storage: StorageOutputs
    """The storage layer's contract (buckets, file system, the add-ons' records from it)."""
    build: BuildOutputs
    """The build layer's contract: where the images of the add-ons' project images are
    (AddonDefinition.project_images)."""
    storage_class: str
    """Name of the default StorageClass for persistent volumes."""
    storage_class_ready: ITerraformDependable
    """The StorageClass resource: releases with volumes are installed after it."""
    api_server: ApiServerAddresses
    """Where the add-on's pods reach the API server (its ClusterIP and the private endpoint)."""
    companion: AddonRecord | None = None
    """The record the add-on's own companions made in this layer (`Companions.record`)."""
    installed: Mapping[str, InstalledAddon] = field(default_factory=dict)
    """Add-ons installed before this one, by key (registry order)."""
    monitors: Monitors = Monitors()
    """Every enabled add-on's monitors, each list sorted by name (for the add-on that runs Prometheus)."""
    provided: frozenset[str] = frozenset()
    """What the enabled add-ons provide others (AddonDefinition.provides, e.g. PROMETHEUS_RULES)."""
    clients: ClientAccess = field(default_factory=ClientAccess)
    """What a namespace whose pods use the enabled add-ons' services needs (addons/parts.py): an
    add-on whose pods are such clients (notebooks, workflow steps) applies it to its namespace."""

    @property
    def vpc_cidr(self) -> str:
        """The VPC's CIDR (the API server's private endpoint and the nodes live there)."""
        return self.cluster.vpc_cidr

    def project_image(self, name: str) -> tuple[str, str]:
        """(repository URL, tag) of the build layer's image of images/<name>, which an enabled
        add-on's project_images has it build: the URL is a reference to the build layer's state,
        the tag the content-derived one its build pushes."""
        if name not in self.build.repository_urls:
            raise ValueError(f"the build layer builds no {name} image (AddonDefinition.project_images names it)")
        return self.build.repository_urls[name], self.build.image_tags[name]

    def storage_record(self, key: str, kind: type[RecordT]) -> RecordT:
        """The record add-on `key` made in the storage layer (an add-on reads its own)."""
        record = addon_record(self.storage.addon_records, key, kind)
        if record is None:
            raise ValueError(f"{key} is enabled but the storage layer's outputs hold no record of it")
        return record

    def own_companion(self, kind: type[RecordT]) -> RecordT:
        """The record this add-on's companions made (an error if they made none of that type)."""
        if not isinstance(self.companion, kind):
            raise TypeError(f"the add-on's companions made no {kind.__name__} record")
        return self.companion


@dataclass(frozen=True, kw_only=True)
class StorageContext:
    """What an add-on may read and build on in the storage layer (AWS resources it keeps data in)."""

    scope: Construct
    """The storage stack."""
    config: PlatformConfig
    cluster: ClusterOutputs
    """The cluster layer's contract (the VPC and subnets a database goes in, the nodes' group)."""
    account_id: str
    """The AWS account (a token): globally unique names are derived from it."""


@dataclass(frozen=True, kw_only=True)
class RuntimePath:
    """A connection an add-on's pods need at run time beyond the ones every guarded namespace has
    (the API server through its ClusterIP, DNS, metric scrapes), or one that must stay
    closed. Judged at the add-on's own pods; with a peer in another platform namespace, at that
    namespace's pods too. tests/test_runtime_paths.py evaluates every path on every profile."""

    what: str
    """Who needs it and why, with the upstream source it was read from."""
    direction: Literal["Egress", "Ingress"]
    peer: str
    """The other end: "control-plane" (the API server's network interfaces in the VPC), "vpc",
    "internet", "tenants" (every tenant namespace), or "namespace:<name>"."""
    port: int
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    """Which of the add-on's pods (empty: any)."""
    peer_labels: Mapping[str, str] = field(default_factory=dict)
    """Which pods at the other end, when it is a namespace (empty: any)."""
    open: bool = True
    """False: the path must stay closed."""


@dataclass(frozen=True, kw_only=True)
class Companions:
    """What an add-on creates beside its release."""

    ready: tuple[ITerraformDependable, ...] = ()
    """What the release waits for (e.g. its Pod Identity association)."""
    record: AddonRecord | None = None
    """A typed record about them: the add-on's values read it (`AddonContext.own_companion`), and
    the addons layer hands it to later layers (`AddonsOutputs.addon_records`)."""


@dataclass(frozen=True, kw_only=True)
class InstalledAddon:
    """An add-on as the addons layer installed it."""

    name: str
    """What the addons layer reports it as (the Helm release's name)."""
    ready: tuple[ITerraformDependable, ...]
    """What later add-ons depend on to run after this one."""
    record: AddonRecord | None = None
    """The typed record the add-on hands later layers (the addons layer publishes it)."""
    provides: frozenset[str] = frozenset()
    """Its definition's capabilities (later add-ons that build on one wait for it)."""


AnySettingsT = TypeVar("AnySettingsT", bound=AddonConfig)
SettingsT = TypeVar("SettingsT", bound=ReleaseConfig)


class AddonSpec(Generic[AnySettingsT]):
    """One add-on's installer. Subclasses set the class attributes and override what differs."""

    definition: ClassVar[AddonDefinition[Any]]
    """The add-on's binding-free definition (its package's `DEFINITION`)."""
    release_name: ClassVar[str]
    """The name the add-on is installed (and reported) under."""
    pod_security: ClassVar[PodSecurityLevel] = "baseline"
    """Pod Security Standard enforced on the add-on's namespace."""
    privileged_because: ClassVar[str] = ""
    """Why the namespace must admit privileged pods (required for privileged)."""

    @property
    def key(self) -> str:
        """Field under `addons:` in the profile; with - for _, its construct ids."""
        return self.definition.key

    @property
    def namespace(self) -> str:
        return self.definition.namespace

    def settings(self, config: PlatformConfig) -> AnySettingsT:
        settings: AnySettingsT = self.definition.settings(config)
        return settings

    def enabled(self, config: PlatformConfig) -> bool:
        return self.settings(config).enabled

    def release_namespace(self, settings: AnySettingsT) -> str:
        return self.definition.namespace_of(settings)

    def depends_on(self, ctx: AddonContext) -> tuple[ITerraformDependable, ...]:
        return ()

    def storage(self, ctx: StorageContext) -> AddonRecord | None:
        """Create what the add-on keeps in the storage layer (a database, a bucket) and return its
        record for the later layers (`AddonContext.storage_record`). Default: nothing."""
        return None

    def state_secrets(self, settings: AnySettingsT) -> tuple[str, ...]:
        """Secrets the add-on writes into the addons layer's Terraform state (to warn about)."""
        return ()

    def user_secrets(self, settings: AnySettingsT) -> tuple[str, ...]:
        """Secrets the user creates in the add-on's namespace before it is installed (by name)."""
        return ()

    def network_allows(self, ctx: AddonContext, settings: AnySettingsT) -> dict[str, dict[str, Any]]:
        """NetworkPolicies the add-on needs beyond the namespace defaults (name -> spec)."""
        return {}

    def namespace_labels(self, ctx: AddonContext, settings: AnySettingsT) -> dict[str, str]:
        """Labels on the add-on's namespace beyond the guard's own (e.g. a client label another
        add-on's policy admits)."""
        return {}

    def namespace_objects(self, ctx: AddonContext, settings: AnySettingsT) -> list[dict[str, Any]]:
        """More objects in the add-on's namespace, created with it before any pod (quotas, limits)."""
        return []

    def runtime_paths(self, settings: AnySettingsT) -> tuple[RuntimePath, ...]:
        """The connections the add-on's pods need beyond the common ones (and ones that must stay
        closed), read from its upstream source at the pin."""
        return ()

    def monitors(self, settings: AnySettingsT, config: PlatformConfig) -> Monitors:
        """The Prometheus monitors for the add-on's own pods, and its rule groups and dashboards;
        `config` is the whole profile (thresholds other add-ons' settings hold come from
        addons.definition.alert_tuning)."""
        return Monitors()

    def namespace_guard(self, ctx: AddonContext) -> NamespaceGuard:
        settings = self.settings(ctx.config)
        return NamespaceGuard(
            name=self.release_namespace(settings),
            pod_security=self.pod_security,
            privileged_because=self.privileged_because,
            labels=self.namespace_labels(ctx, settings),
            allow=self.network_allows(ctx, settings),
        )

    def guarded_namespace(self, ctx: AddonContext) -> tuple[ITerraformDependable, ...]:
        """Create the add-on's namespace with its labels and policies (before any pod starts)."""
        if not self.definition.creates_namespace:
            return ()
        guard = self.namespace_guard(ctx)
        extras = self.namespace_objects(ctx, self.settings(ctx.config))
        objects = KubernetesObjects(
            ctx.scope,
            f"{self.key.replace('_', '-')}-namespace",
            props=KubernetesObjectsProps(objects=(*namespace_objects(guard, api=ctx.api_server), *extras)),
        )
        return objects.dependables()

    def install(self, ctx: AddonContext) -> InstalledAddon:
        raise NotImplementedError


class HelmAddonSpec(AddonSpec[SettingsT]):
    """An add-on installed as one pinned Helm release."""

    timeout_seconds: ClassVar[int] = 600

    def chart(self, config: PlatformConfig) -> ChartRef:
        """The pinned chart, or the version the profile overrides it with."""
        pinned = self.definition.pin
        if not isinstance(pinned, ChartRef):
            raise TypeError(f"{self.key} is a Helm add-on but its pin is not a chart")
        override = self.settings(config).chart_version
        if override is None:
            return pinned
        return ChartRef(repository=pinned.repository, chart=pinned.chart, version=override, app_version="")

    def values(self, ctx: AddonContext, settings: SettingsT) -> Values:
        raise NotImplementedError

    def sensitive_values(self, ctx: AddonContext, settings: SettingsT) -> tuple[SensitiveValue, ...]:
        return ()

    def companions(self, ctx: AddonContext, settings: SettingsT) -> Companions:
        """Create what the release needs beside it (e.g. its Pod Identity role)."""
        return Companions()

    def before_release(
        self, ctx: AddonContext, settings: SettingsT, *, after: tuple[ITerraformDependable, ...]
    ) -> tuple[ITerraformDependable, ...]:
        """Run what must finish once the namespace and the companions exist and before the release
        starts (e.g. a setup Job); return what the release waits for."""
        return ()

    def install(self, ctx: AddonContext) -> InstalledAddon:
        settings = self.settings(ctx.config)
        companions = self.companions(ctx, settings)
        ctx = replace(ctx, companion=companions.record)
        namespace = self.guarded_namespace(ctx)
        prepared = self.before_release(ctx, settings, after=(*namespace, *companions.ready))
        release = HelmAddon(
            ctx.scope,
            self.key.replace("_", "-"),
            props=HelmAddonProps(
                release_name=self.release_name,
                namespace=self.release_namespace(settings),
                chart=self.chart(ctx.config),
                values=self.values(ctx, settings),
                timeout_seconds=self.timeout_seconds,
                create_namespace=False,
                depends_on=(*self.depends_on(ctx), *namespace, *companions.ready, *prepared),
                sensitive_values=self.sensitive_values(ctx, settings),
            ),
        )
        return InstalledAddon(
            name=release.release.name,
            ready=(release.release,),
            record=companions.record,
            provides=self.definition.provides,
        )


def installed_providers(ctx: AddonContext, capability: str) -> tuple[ITerraformDependable, ...]:
    """What to depend on to run after every earlier add-on that provides `capability`."""
    return tuple(ready for addon in ctx.installed.values() if capability in addon.provides for ready in addon.ready)
