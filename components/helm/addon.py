"""The shape of one Helm add-on: everything about it in one object, as cdk-eks-blueprints keeps
each add-on beside its defaults.

An add-on module defines a subclass of `HelmAddonSpec` (release name, namespace, timeout, the
profile settings it reads, its values builder, what it must be installed after, any resources it
needs beside the release) and one instance of it, which `components.helm.registry` lists. Its
chart pin and minimum version live in `profiles.versions`, because the profile validator checks them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from cdktf import ITerraformDependable
from constructs import Construct

from components.helm.release import HelmAddon, HelmAddonProps, SensitiveValue, Values
from components.k8s.namespaces import NamespaceGuard, PodSecurityLevel, namespace_objects
from components.k8s.objects import KubernetesObjects, KubernetesObjectsProps
from profiles import PlatformConfig
from profiles.addons import ReleaseConfig
from profiles.versions import CHARTS, ChartRef


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
    installed: Mapping[str, InstalledAddon] = field(default_factory=dict)
    """Add-ons installed before this one, by key (registry order)."""


@dataclass(frozen=True, kw_only=True)
class InstalledAddon:
    """An add-on as the addons layer installed it."""

    release: HelmAddon
    """The Helm release construct (depend on `release.release`)."""
    exports: Mapping[str, str] = field(default_factory=dict)
    """Values the addons layer publishes for later layers, by contract field name."""


SettingsT = TypeVar("SettingsT", bound=ReleaseConfig)


class HelmAddonSpec(Generic[SettingsT]):
    """One add-on's whole identity. Subclasses set the class attributes and override what differs."""

    key: ClassVar[str]
    """Field under `addons:` in the profile, key in profiles.versions.CHARTS, and (with - for _) construct id."""
    release_name: ClassVar[str]
    namespace: ClassVar[str]
    create_namespace: ClassVar[bool] = True
    """The platform creates (and guards) the namespace; off for kube-system."""
    timeout_seconds: ClassVar[int] = 600
    pod_security: ClassVar[PodSecurityLevel] = "baseline"
    """Pod Security Standard enforced on the add-on's namespace."""
    privileged_because: ClassVar[str] = ""
    """Why the namespace must admit privileged pods (required for privileged)."""

    def settings(self, config: PlatformConfig) -> SettingsT:
        settings: SettingsT = getattr(config.addons, self.key)
        return settings

    def enabled(self, config: PlatformConfig) -> bool:
        return self.settings(config).enabled

    def chart(self, config: PlatformConfig) -> ChartRef:
        """The pinned chart, or the version the profile overrides it with."""
        pinned = CHARTS[self.key]
        override = self.settings(config).chart_version
        return ChartRef(repository=pinned.repository, chart=pinned.chart, version=override or pinned.version)

    def release_namespace(self, settings: SettingsT) -> str:
        return self.namespace

    def values(self, ctx: AddonContext, settings: SettingsT) -> Values:
        raise NotImplementedError

    def depends_on(self, ctx: AddonContext) -> tuple[ITerraformDependable, ...]:
        return ()

    def sensitive_values(self, ctx: AddonContext, settings: SettingsT) -> tuple[SensitiveValue, ...]:
        return ()

    def state_secrets(self, settings: SettingsT) -> tuple[str, ...]:
        """Secrets the release writes into the addons layer's Terraform state (to warn about)."""
        return ()

    def network_allows(self, ctx: AddonContext, settings: SettingsT) -> dict[str, dict[str, Any]]:
        """NetworkPolicies the add-on needs beyond the namespace defaults (name -> spec)."""
        return {}

    def namespace_guard(self, ctx: AddonContext) -> NamespaceGuard:
        settings = self.settings(ctx.config)
        return NamespaceGuard(name=self.release_namespace(settings), pod_security=self.pod_security,
                              privileged_because=self.privileged_because,
                              allow=self.network_allows(ctx, settings))

    def install(self, ctx: AddonContext) -> InstalledAddon:
        settings = self.settings(ctx.config)
        construct_id = self.key.replace("_", "-")
        namespace: tuple[ITerraformDependable, ...] = ()
        if self.create_namespace:
            # The namespace is the platform's (labels and policies in place before any pod starts).
            objects = KubernetesObjects(ctx.scope, f"{construct_id}-namespace", props=KubernetesObjectsProps(
                objects=tuple(namespace_objects(self.namespace_guard(ctx), vpc_cidr=ctx.vpc_cidr))))
            namespace = tuple(objects.resources.values())
        release = HelmAddon(ctx.scope, construct_id, props=HelmAddonProps(
            release_name=self.release_name, namespace=self.release_namespace(settings),
            chart=self.chart(ctx.config), values=self.values(ctx, settings), timeout_seconds=self.timeout_seconds,
            create_namespace=False, depends_on=(*self.depends_on(ctx), *namespace),
            sensitive_values=self.sensitive_values(ctx, settings),
        ))
        return InstalledAddon(release=release)


def installed_release(ctx: AddonContext, key: str) -> tuple[ITerraformDependable, ...]:
    """The release of an earlier add-on to depend on, or nothing when it is not installed."""
    return (ctx.installed[key].release.release,) if key in ctx.installed else ()
