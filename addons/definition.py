"""What an add-on is before anything is installed: its profile settings, its pin, the versions
it needs and the namespace it owns. Binding-free, so the profile validator can read every add-on
without loading a provider binding.

Each add-on package (`addons/<key>/__init__.py`) defines one `AddonDefinition`; its installer
(`addons/<key>/install.py`) builds on it. `addons/catalog.py` lists the definitions in install
order, and everything that spans add-ons (the profile's `addons:` model, the pin table, the
minimum-version checks, the namespaces tenants may not take) is derived from that list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Generic, Protocol, TypeVar, cast

from pydantic import Field

from profiles.base import FieldProblem, Strict, worded
from profiles.build import BuildConfig
from profiles.cluster import ClusterConfig
from profiles.storage import StorageConfig
from profiles.versions import ChartRef, ReleaseArtifact
from profiles.workloads import WorkloadsConfig

ChartVersion = Annotated[
    str,
    worded(
        r"^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$",
        "a chart version: major.minor.patch, with an optional leading v and -prerelease or +build, e.g. 26.7.0",
    ),
]


class AddonConfig(Strict):
    enabled: bool = True
    """Install this add-on."""

    def platform_facts(self) -> frozenset[str]:
        """What the add-on, with these settings, makes true of the platform that other add-ons'
        settings depend on (DRA_GPUS, NODE_POOLS, UNQUEUED_GPU_POOL_PODS; profiles/gpus.py reads
        them), so that none of them need name it."""
        return frozenset()

    def alert_tuning(self) -> AlertTuning | None:
        """The alert thresholds these settings hold, which other add-ons' rules read through
        `alert_tuning(config)` (None: they hold none)."""
        return None


class ReleaseConfig(AddonConfig):
    """A Helm add-on's settings: on or off, and its chart version."""

    chart_version: ChartVersion | None = Field(None)
    """Override the pinned chart version (the add-on's pin). Unset: the pinned one."""


SettingsT = TypeVar("SettingsT", bound=AddonConfig)

DEFAULT_IDLE_GPU_MINUTES = 30


@dataclass(frozen=True, kw_only=True)
class AlertTuning:
    """Thresholds of the platform's alert rules that a profile sets, whichever add-on's settings hold
    them (the monitoring add-on's, under `addons.monitoring`): an add-on's rule groups read them
    through `alert_tuning(config)` instead of naming the add-on that owns the setting."""

    idle_gpu_minutes: int = DEFAULT_IDLE_GPU_MINUTES
    """How long a GPU allocated to a pod may do no work before GpuAllocatedIdle warns."""


class PlatformConfig(Protocol):
    """What a definition reads of a validated profile (profiles.models.PlatformConfig, which
    itself is built from the definitions, so it is named here by shape)."""

    @property
    def name(self) -> str: ...

    @property
    def region(self) -> str: ...

    @property
    def cluster(self) -> ClusterConfig: ...

    @property
    def addons(self) -> Strict: ...

    @property
    def storage(self) -> StorageConfig: ...

    @property
    def build(self) -> BuildConfig: ...

    @property
    def workloads(self) -> WorkloadsConfig: ...


# Capabilities an add-on provides (AddonDefinition.provides).
PROMETHEUS_RULES = "prometheus-rules"
# Facts of the platform an add-on's settings make true (AddonConfig.platform_facts).
DRA_GPUS = "dra-gpus"
"""Pods get GPUs through DRA claims of the NVIDIA DRA driver's device class, not nvidia.com/gpu."""
NODE_POOLS = "node-pools"
"""The workloads layer creates node pools that launch nodes for pending pods (Karpenter's)."""
UNQUEUED_GPU_POOL_PODS = "unqueued-gpu-pool-pods"
"""An add-on runs GPU pods of its own on the just-in-time GPU pool, outside the tenants' queues."""
"""The Prometheus operator's CRDs (PrometheusRule, ServiceMonitor, PodMonitor) exist and a
Prometheus evaluates the rules and scrapes the monitors."""


def alert_tuning(config: PlatformConfig) -> AlertTuning:
    """The alert thresholds the enabled add-ons' settings hold (the defaults where none does)."""
    held = [
        tuning
        for _, settings in config.addons
        if isinstance(settings, AddonConfig) and settings.enabled and (tuning := settings.alert_tuning())
    ]
    if len(held) > 1:
        raise ValueError("more than one add-on's settings hold the alert thresholds")
    return held[0] if held else AlertTuning()


def always(config: PlatformConfig) -> bool:
    return True


@dataclass(frozen=True, kw_only=True)
class Minimum:
    """The oldest chart version the platform works with, what breaks below it, and when it binds."""

    version: tuple[int, ...]
    """A chart version (for charts whose app version differs, the first chart shipping the app fix)."""
    why: str
    """What breaks below it, in the words the validation error shows."""
    applies: Callable[[PlatformConfig], bool] = always
    """Whether the profile uses what the minimum is about (e.g. Capacity Blocks)."""


ProfileCheck = Callable[[PlatformConfig], Iterable[FieldProblem]]


@dataclass(frozen=True, kw_only=True)
class ProfileRules:
    """What an add-on adds to the validation of a whole profile, in `addons/<key>/profile_rules.py`
    (`RULES`; read by addons/profile_rules.py): beside the definition, so that the definition stays
    settings, pin and namespace, and a rule may build on the add-on's own helpers and on the
    profile's GPU facts (profiles/gpus.py)."""

    checks: tuple[ProfileCheck, ...] = ()
    """Checks of what the add-on needs from other layers' settings, run while it is enabled; their
    problems are reported together with every other check's."""
    gpu_images: Callable[[PlatformConfig], Mapping[tuple[str | int, ...], str]] | None = None
    """The images its GPU pods run, by the profile field that chooses each (the CUDA driver check
    reads them)."""
    aws_names: Callable[[str], Iterable[tuple[str, str]]] | None = None
    """(naming rule, name) of each AWS resource it creates, from the platform's name: checked against
    AWS's naming rules (profiles/naming.py RULES) while it is enabled."""


@dataclass(frozen=True, kw_only=True)
class AddonDefinition(Generic[SettingsT]):
    """One add-on's binding-free identity."""

    key: str
    """Its field under `addons:` in the profile; with - for _, its construct ids."""
    settings_type: type[SettingsT]
    """The pydantic model of its profile settings (defaults are the safe, cheap choice)."""
    description: str
    """What the add-on is, as the profile schema shows it."""
    pin: ChartRef | ReleaseArtifact
    """The chart (or release manifest) it installs, pinned."""
    namespace: str
    """Where it runs (unless `namespace_setting` names a setting that moves it)."""
    creates_namespace: bool = True
    """The platform creates and guards the namespace (off for kube-system)."""
    namespace_setting: str | None = None
    """A settings field that chooses the namespace instead (Argo Workflows)."""
    minimums: tuple[Minimum, ...] = ()
    """Chart versions the platform needs, each with its reason and when it applies."""
    kubernetes_minimums: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    """Its compatibility matrix: Kubernetes version -> the oldest chart version that supports it."""
    provides: frozenset[str] = frozenset()
    """What other add-ons may build on once it is installed (e.g. PROMETHEUS_RULES), named by
    capability so that they need not name it."""
    project_images: tuple[str, ...] = ()
    """Images of this project (images/<name>/Dockerfile) the add-on's pods run: while it is enabled
    the build layer builds each as the implementation of that name (an ECR repository and a
    CodeBuild project, PlatformConfig.build_implementations), and the add-on runs it from there by
    its content-derived tag (the build layer's contract)."""

    def settings(self, config: PlatformConfig) -> SettingsT:
        """This add-on's validated settings in the profile."""
        return cast(SettingsT, getattr(config.addons, self.key))

    def enabled(self, config: PlatformConfig) -> bool:
        return self.settings(config).enabled

    def namespace_of(self, settings: SettingsT) -> str:
        """The namespace the add-on runs in with these settings."""
        return str(getattr(settings, self.namespace_setting)) if self.namespace_setting else self.namespace

    def version(self, settings: SettingsT) -> str:
        """The chart version installed: the profile's override, else the pin."""
        override = settings.chart_version if isinstance(settings, ReleaseConfig) else None
        return override or (self.pin.version if isinstance(self.pin, ChartRef) else self.pin.tag)
