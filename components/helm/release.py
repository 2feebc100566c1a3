"""The one Helm add-on component every release uses, and the typed-values base class."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from cdktf import ITerraformDependable
from cdktf_cdktf_provider_helm.release import Release, ReleaseSetSensitive
from constructs import Construct
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from profiles.versions import ChartRef


def render_yaml(document: Any) -> str:
    # No line folding: a folded line would split the cdktf tokens embedded in long strings.
    return yaml.safe_dump(document, sort_keys=True, width=float("inf"))


class Values(BaseModel):
    """Chart values as a typed model: snake_case fields render as the chart's camelCase keys,
    unset fields are left out, and a misspelled key is an error, not a silently ignored value."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)

    def render(self) -> str:
        return render_yaml(self.model_dump(by_alias=True, exclude_none=True))


@dataclass(frozen=True, kw_only=True)
class SensitiveValue:
    """A value set at apply time from a sensitive Terraform expression (never written to the JSON)."""

    path: str
    """Helm --set path, e.g. grafana.adminPassword."""
    value: str
    """A token, e.g. a sensitive variable reference."""


@dataclass(frozen=True, kw_only=True)
class HelmAddonProps:
    release_name: str
    """The Helm release's name."""
    namespace: str
    """The release's namespace."""
    chart: ChartRef
    """Repository, chart and pinned version."""
    values: Values | dict[str, Any]
    """The chart values, rendered to one YAML document."""
    timeout_seconds: int = 600
    """How long Helm waits for the release's resources to become ready."""
    create_namespace: bool = True
    """Create the namespace with the release. Off for namespaces that exist (kube-system)."""
    depends_on: tuple[ITerraformDependable, ...] = field(default=())
    """Installed after these. Default: nothing."""
    sensitive_values: tuple[SensitiveValue, ...] = ()
    """Values set from sensitive expressions at apply time. Default: none."""


class HelmAddon(Construct):
    """A pinned, atomic Helm release. Exposes `release` (to depend on) and `values_yaml`."""

    def __init__(self, scope: Construct, id_: str, *, props: HelmAddonProps):
        super().__init__(scope, id_)
        values = props.values
        self._values_yaml = values.render() if isinstance(values, Values) else render_yaml(values)
        self._release = Release(
            self,
            "release",
            name=props.release_name,
            namespace=props.namespace,
            create_namespace=props.create_namespace,
            repository=props.chart.repository,
            chart=props.chart.chart,
            version=props.chart.version,
            values=[self._values_yaml],
            # A failed install or upgrade rolls back and leaves no half-applied release behind.
            atomic=True,
            cleanup_on_fail=True,
            wait=True,
            timeout=props.timeout_seconds,
            max_history=10,
            set_sensitive=[ReleaseSetSensitive(name=v.path, value=v.value) for v in props.sensitive_values] or None,
            depends_on=list(props.depends_on) or None,
        )

    @property
    def values_yaml(self) -> str:
        """The rendered values document."""
        return self._values_yaml

    @property
    def release(self) -> Release:
        """The helm_release resource (to depend on)."""
        return self._release
