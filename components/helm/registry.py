"""Every Helm add-on the platform can install, in install order. The addons layer iterates over
this tuple; an add-on is installed when its profile settings say `enabled: true`.

Adding an add-on: one module in components/helm/ (a `HelmAddonSpec` subclass and its `ADDON`),
one line here, one settings field in profiles/addons.AddonsConfig and its pin in profiles/versions.
"""

from __future__ import annotations

from typing import Any

from components.helm import (
    argo_workflows,
    efa_device_plugin,
    gpu_operator,
    jupyterhub,
    karpenter,
    kuberay,
    mlflow,
    monitoring,
    mpi_operator,
)
from components.helm.addon import AddonSpec

ADDONS: tuple[AddonSpec[Any], ...] = (
    monitoring.ADDON,  # first: the Prometheus operator CRDs that other charts' monitors need
    gpu_operator.ADDON,
    efa_device_plugin.ADDON,
    kuberay.ADDON,
    mpi_operator.ADDON,
    jupyterhub.ADDON,
    argo_workflows.ADDON,
    karpenter.ADDON,
    mlflow.ADDON,
)
