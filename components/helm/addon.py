"""The shape of one add-on: everything about it in one object, as cdk-eks-blueprints keeps each
add-on beside its defaults.

An add-on module defines a subclass of `HelmAddonSpec` (a pinned Helm chart: release name,
namespace, timeout, the profile settings it reads, its values builder, what it must be installed
after, any resources it needs beside the release), or of `AddonSpec` when it installs otherwise
(the MPI Operator's release manifest), and one instance of it, which `components.helm.registry`
lists. Its pin and minimum version live in `profiles.versions`, because the profile validator
checks them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from cdktf import ITerraformDependable
from constructs import Construct

from components.helm.release import HelmAddon, HelmAddonProps, SensitiveValue, Values
from components.k8s.mlflow_access import client_access
from components.k8s.namespaces import ApiServerAddresses, NamespaceGuard, PodSecurityLevel, namespace_objects
from components.k8s.objects import KubernetesObjects, KubernetesObjectsProps
from profiles import PlatformConfig
from profiles.addons import AddonConfig, ReleaseConfig
from profiles.versions import CHARTS, ChartRef

RecordT = TypeVar("RecordT")


@dataclass(frozen=True, kw_only=True)
class AddonContext:
    """What an add-on may read and build on while the addons layer installs it."""

    scope: Construct
    """The addons stack: where the release and any companion resources are created."""
    config: PlatformConfig
    """The whole validated profile."""
    cluster_name: str
    """The EKS cluster's name (a token from the cluster layer)."""
    cluster_endpoint: str
    """The EKS API endpoint (a token from the cluster layer)."""
    storage_class: str
    """Name of the default StorageClass for persistent volumes."""
    storage_class_ready: ITerraformDependable
    """The StorageClass resource: releases with volumes are installed after it."""
    vpc_cidr: str
    """The VPC's CIDR (the API server's private endpoint and the nodes live there)."""
    api_server: ApiServerAddresses
    """Where the add-on's pods reach the API server (its ClusterIP and the private endpoint)."""
    records: tuple[object, ...] = ()
    """Typed records earlier layers hand the add-ons (e.g. the storage layer's stores for an
    add-on that keeps data there); an add-on asks for its own with `record()`."""
    installed: Mapping[str, InstalledAddon] = field(default_factory=dict)
    """Add-ons installed before this one, by key (registry order)."""

    def record(self, kind: type[RecordT]) -> RecordT | None:
        """The earlier layers' record of this type, or None when they made none."""
        return next((r for r in self.records if isinstance(r, kind)), None)


@dataclass(frozen=True, kw_only=True)
class InstalledAddon:
    """An add-on as the addons layer installed it."""

    name: str
    """What the addons layer reports it as (the Helm release's name)."""
    ready: tuple[ITerraformDependable, ...]
    """What later add-ons depend on to run after this one."""
    records: tuple[object, ...] = ()
    """Typed records the add-on hands later layers (the addons layer publishes them)."""


AnySettingsT = TypeVar("AnySettingsT", bound=AddonConfig)
SettingsT = TypeVar("SettingsT", bound=ReleaseConfig)


class AddonSpec(Generic[AnySettingsT]):
    """One add-on's whole identity. Subclasses set the class attributes and override what differs."""

    key: ClassVar[str]
    """Field under `addons:` in the profile, its pin's key in profiles.versions, and (with - for _) construct id."""
    release_name: ClassVar[str]
    """The name the add-on is installed (and reported) under."""
    namespace: ClassVar[str]
    create_namespace: ClassVar[bool] = True
    """The platform creates (and guards) the namespace; off for kube-system."""
    pod_security: ClassVar[PodSecurityLevel] = "baseline"
    """Pod Security Standard enforced on the add-on's namespace."""
    privileged_because: ClassVar[str] = ""
    """Why the namespace must admit privileged pods (required for privileged)."""
    logs_to_mlflow: ClassVar[bool] = False
    """Its pods log to MLflow: with MLflow on, the namespace gets the client label and an egress
    allow to the tracking server."""

    def settings(self, config: PlatformConfig) -> AnySettingsT:
        settings: AnySettingsT = getattr(config.addons, self.key)
        return settings

    def enabled(self, config: PlatformConfig) -> bool:
        return self.settings(config).enabled

    def release_namespace(self, settings: AnySettingsT) -> str:
        return self.namespace

    def depends_on(self, ctx: AddonContext) -> tuple[ITerraformDependable, ...]:
        return ()

    def state_secrets(self, settings: AnySettingsT) -> tuple[str, ...]:
        """Secrets the add-on writes into the addons layer's Terraform state (to warn about)."""
        return ()

    def user_secrets(self, settings: AnySettingsT) -> tuple[str, ...]:
        """Secrets the user creates in the add-on's namespace before it is installed (by name)."""
        return ()

    def network_allows(self, ctx: AddonContext, settings: AnySettingsT) -> dict[str, dict[str, Any]]:
        """NetworkPolicies the add-on needs beyond the namespace defaults (name -> spec)."""
        return {}

    def namespace_objects(self, ctx: AddonContext, settings: AnySettingsT) -> list[dict[str, Any]]:
        """More objects in the add-on's namespace, created with it before any pod (quotas, limits)."""
        return []

    def namespace_guard(self, ctx: AddonContext) -> NamespaceGuard:
        settings = self.settings(ctx.config)
        mlflow_labels, mlflow_allows = client_access(self.logs_to_mlflow and ctx.config.addons.mlflow.enabled)
        return NamespaceGuard(
            name=self.release_namespace(settings),
            pod_security=self.pod_security,
            privileged_because=self.privileged_because,
            labels=mlflow_labels,
            allow={**self.network_allows(ctx, settings), **mlflow_allows},
        )

    def guarded_namespace(self, ctx: AddonContext) -> tuple[ITerraformDependable, ...]:
        """Create the add-on's namespace with its labels and policies (before any pod starts)."""
        if not self.create_namespace:
            return ()
        guard = self.namespace_guard(ctx)
        extras = self.namespace_objects(ctx, self.settings(ctx.config))
        objects = KubernetesObjects(
            ctx.scope,
            f"{self.key.replace('_', '-')}-namespace",
            props=KubernetesObjectsProps(objects=(*namespace_objects(guard, api=ctx.api_server), *extras)),
        )
        return tuple(objects.resources.values())

    def install(self, ctx: AddonContext) -> InstalledAddon:
        raise NotImplementedError


class HelmAddonSpec(AddonSpec[SettingsT]):
    """An add-on installed as one pinned Helm release."""

    timeout_seconds: ClassVar[int] = 600

    def chart(self, config: PlatformConfig) -> ChartRef:
        """The pinned chart, or the version the profile overrides it with."""
        pinned = CHARTS[self.key]
        override = self.settings(config).chart_version
        if override is None:
            return pinned
        return ChartRef(repository=pinned.repository, chart=pinned.chart, version=override, app_version="")

    def values(self, ctx: AddonContext, settings: SettingsT) -> Values:
        raise NotImplementedError

    def sensitive_values(self, ctx: AddonContext, settings: SettingsT) -> tuple[SensitiveValue, ...]:
        return ()

    def companions(self, ctx: AddonContext, settings: SettingsT) -> tuple[ITerraformDependable, ...]:
        """Create what the release needs beside it (e.g. its Pod Identity role); returns what the
        release waits for."""
        return ()

    def install(self, ctx: AddonContext) -> InstalledAddon:
        settings = self.settings(ctx.config)
        companions = self.companions(ctx, settings)
        namespace = self.guarded_namespace(ctx)
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
                depends_on=(*self.depends_on(ctx), *namespace, *companions),
                sensitive_values=self.sensitive_values(ctx, settings),
            ),
        )
        return InstalledAddon(name=release.release.name, ready=(release.release,))


def installed_release(ctx: AddonContext, key: str) -> tuple[ITerraformDependable, ...]:
    """What to depend on to run after an earlier add-on, or nothing when it is not installed."""
    return ctx.installed[key].ready if key in ctx.installed else ()
