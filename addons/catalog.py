"""Every add-on the platform can install, in install order, and the tables derived from them.
Binding-free: the profile validator builds the `addons:` model from this list.

Adding an add-on: its package `addons/<key>/` (the definition in `__init__.py`, the installer in
`install.py`) and one line here. docs/contributing.md walks through it.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import Any

from addons import (
    argo_workflows,
    efa_device_plugin,
    gpu_operator,
    jupyterhub,
    karpenter,
    kuberay,
    kueue,
    mlflow,
    monitoring,
    mpi_operator,
    trainer,
)
from addons.definition import AddonDefinition
from profiles.versions import ChartRef, ReleaseArtifact

DEFINITIONS: tuple[AddonDefinition[Any], ...] = (
    monitoring.DEFINITION,  # first: the Prometheus operator CRDs that other charts' monitors need
    gpu_operator.DEFINITION,
    efa_device_plugin.DEFINITION,
    kuberay.DEFINITION,
    mpi_operator.DEFINITION,
    trainer.DEFINITION,
    jupyterhub.DEFINITION,
    argo_workflows.DEFINITION,
    karpenter.DEFINITION,
    mlflow.DEFINITION,
    kueue.DEFINITION,
)

# The pin table (Renovate reads the pins where they are written, in each add-on's package).
CHARTS: dict[str, ChartRef] = {d.key: d.pin for d in DEFINITIONS if isinstance(d.pin, ChartRef)}
ARTIFACTS: dict[str, ReleaseArtifact] = {d.key: d.pin for d in DEFINITIONS if isinstance(d.pin, ReleaseArtifact)}

# Namespaces the add-ons create at fixed names (a tenant may not take one; an add-on whose
# namespace is a setting is checked against the profile's value).
ADDON_NAMESPACES: tuple[str, ...] = tuple(
    d.namespace for d in DEFINITIONS if d.creates_namespace and d.namespace_setting is None
)


def package_module(definition: AddonDefinition[Any], name: str) -> ModuleType | None:
    """The add-on's optional module `addons/<key>/<name>.py` (None: the add-on has none). An import
    error inside the module is raised, never taken for a missing module."""
    try:
        return import_module(f"addons.{definition.key}.{name}")
    except ModuleNotFoundError as missing:
        if missing.name != f"addons.{definition.key}.{name}":
            raise
        return None
