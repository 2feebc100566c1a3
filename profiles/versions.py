"""Every pinned version the platform depends on, in one binding-free place: chart pins, the
minimum versions the platform needs (and why), and the Kubernetes versions a profile may name.

Versions follow the baselines of the user's source documents where they name one (GPU Operator
26.7.0, JupyterHub chart 4.4.2, Argo Workflows 4.1.3, KubeRay 1.7) and otherwise a current
release. A profile may override a chart version per release (`addons.<release>.chart_version`).
Both the profile validator and the add-on modules read this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

KubernetesVersion = Literal["1.31", "1.32", "1.33", "1.34", "1.35"]
KUBERNETES_VERSIONS: tuple[KubernetesVersion, ...] = ("1.31", "1.32", "1.33", "1.34", "1.35")


@dataclass(frozen=True, kw_only=True)
class ChartRef:
    """Where a chart comes from and which version is installed."""

    repository: str
    """https:// chart repository or oci:// registry."""
    chart: str
    """The chart's name in that repository."""
    version: str
    """The pinned chart version."""


@dataclass(frozen=True, kw_only=True)
class MinimumVersion:
    """The oldest chart version the platform works with, and what breaks below it."""

    version: tuple[int, ...]
    why: str


CHARTS: dict[str, ChartRef] = {
    "gpu_operator": ChartRef(repository="https://helm.ngc.nvidia.com/nvidia", chart="gpu-operator", version="v26.7.0"),
    "efa_device_plugin": ChartRef(
        repository="https://aws.github.io/eks-charts", chart="aws-efa-k8s-device-plugin", version="v0.5.14"
    ),
    "monitoring": ChartRef(
        repository="https://prometheus-community.github.io/helm-charts", chart="kube-prometheus-stack", version="79.5.0"
    ),
    "kuberay": ChartRef(
        repository="https://ray-project.github.io/kuberay-helm/", chart="kuberay-operator", version="1.7.0"
    ),
    "jupyterhub": ChartRef(repository="https://hub.jupyter.org/helm-chart/", chart="jupyterhub", version="4.4.2"),
    # Chart 1.1.x ships Argo Workflows 4.1; the image tag is pinned to 4.1.3 in the values.
    "argo_workflows": ChartRef(
        repository="https://argoproj.github.io/argo-helm", chart="argo-workflows", version="1.1.1"
    ),
    # The controller IAM policy (components/karpenter.py) follows the one Karpenter publishes for this version.
    "karpenter": ChartRef(repository="oci://public.ecr.aws/karpenter", chart="karpenter", version="1.14.1"),
}

ARGO_WORKFLOWS_IMAGE_TAG = "v4.1.3"
# hashicorp/http, which downloads release manifests at plan time (the MPI Operator).
HTTP_PROVIDER_VERSION = "3.5.0"


@dataclass(frozen=True, kw_only=True)
class ReleaseArtifact:
    """A manifest an upstream project publishes at a release tag, pinned by content."""

    repository: str
    """GitHub owner/name."""
    tag: str
    """The release tag."""
    path: str
    """The manifest's path in the repository at that tag."""
    sha256: str
    """SHA-256 of the manifest; a different download fails the plan."""
    image: str
    """The controller image the manifest runs (recorded for review and Renovate)."""

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repository}/{self.tag}/{self.path}"


# Kubeflow publishes no Helm chart for the MPI Operator (the community chart runs the legacy v1
# controller and is archived): the v2beta1 controller comes from the release's own manifest.
ARTIFACTS: dict[str, ReleaseArtifact] = {
    "mpi_operator": ReleaseArtifact(
        repository="kubeflow/mpi-operator", tag="v0.8.0", path="deploy/v2beta1/mpi-operator.yaml",
        sha256="b38def13a94abe60b2a4b3485239d77f64892b8fbd202e9e435a6031b7500a8f",
        image="mpioperator/mpi-operator:0.8.0",
    ),
}

MIN_VERSIONS: dict[str, MinimumVersion] = {
    "karpenter": MinimumVersion(version=(1, 6, 0), why="Karpenter launches into Capacity Blocks only from 1.6"),
    "efa_device_plugin": MinimumVersion(
        version=(0, 5, 10),
        why="EFA device plugins before 0.5.10 count NVLink controllers as EFA devices on p6-b200",
    ),
}


def version_tuple(version: str) -> tuple[int, ...]:
    """`v1.2.3-rc.1` -> (1, 2, 3): the numeric release, without prefix or pre-release suffix."""
    return tuple(int(part) for part in re.split(r"[-+]", version.lstrip("v"))[0].split("."))
