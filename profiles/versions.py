"""Every pinned version the platform depends on, in one binding-free place: chart and artifact
pins (each checked to exist upstream when pinned), the minimum versions the platform needs (and
why), the compatibility tables between pinned components and Kubernetes, and the Kubernetes
versions a profile may name. The profile validator and the add-on modules read this module;
Renovate (renovate.json) keeps the pins current.

A profile may override a chart version per release (`addons.<release>.chart_version`); the
validator then checks the override against the same minimums and tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

KubernetesVersion = Literal["1.31", "1.32", "1.33", "1.34", "1.35", "1.36"]
KUBERNETES_VERSIONS: tuple[KubernetesVersion, ...] = ("1.31", "1.32", "1.33", "1.34", "1.35", "1.36")
# End of EKS standard support per version (EKS's release calendar; then extended-support pricing).
# 1.36 is accepted but not listed: it was not confirmed on EKS when these pins were reviewed.
EKS_STANDARD_SUPPORT_ENDS: dict[str, str] = {
    "1.31": "2025-11-26",
    "1.32": "2026-03-23",
    "1.33": "2026-07-29",
    "1.34": "2026-12-02",
    "1.35": "2027-03-27",
}
# The newest EKS version in standard support that every pinned component supports.
DEFAULT_KUBERNETES_VERSION: KubernetesVersion = "1.35"


@dataclass(frozen=True, kw_only=True)
class ChartRef:
    """Where a chart comes from and which version is installed."""

    repository: str
    """https:// chart repository or oci:// registry."""
    chart: str
    """The chart's name in that repository."""
    version: str
    """The pinned chart version."""
    app_version: str
    """The application version that chart version ships (what minimums are about)."""


@dataclass(frozen=True, kw_only=True)
class MinimumVersion:
    """The oldest chart version the platform works with, and what breaks below it."""

    version: tuple[int, ...]
    """A chart version (for charts whose app version differs, the first chart shipping the app fix)."""
    why: str


CHARTS: dict[str, ChartRef] = {
    "gpu_operator": ChartRef(
        repository="https://helm.ngc.nvidia.com/nvidia", chart="gpu-operator", version="v26.7.0", app_version="v26.7.0"
    ),
    # Chart v0.5.30 ships plugin v0.5.20 (the plugin's version is not the chart's).
    "efa_device_plugin": ChartRef(
        repository="https://aws.github.io/eks-charts",
        chart="aws-efa-k8s-device-plugin",
        version="v0.5.30",
        app_version="v0.5.20",
    ),
    "monitoring": ChartRef(
        repository="https://prometheus-community.github.io/helm-charts",
        chart="kube-prometheus-stack",
        version="88.5.3",
        app_version="v0.93.1",
    ),
    "kuberay": ChartRef(
        repository="https://ray-project.github.io/kuberay-helm/",
        chart="kuberay-operator",
        version="1.7.0",
        app_version="v1.7.0",
    ),
    # The newest chart release (the seed's 4.4.2 baseline was not published when this was pinned).
    "jupyterhub": ChartRef(
        repository="https://hub.jupyter.org/helm-chart/", chart="jupyterhub", version="4.4.0", app_version="5.5.0"
    ),
    # The newest chart release; it runs its own app version (no image override, so CRDs and
    # controller match). The seed's Argo Workflows 4.1.3 baseline had no chart release yet.
    "argo_workflows": ChartRef(
        repository="https://argoproj.github.io/argo-helm",
        chart="argo-workflows",
        version="1.0.18",
        app_version="v4.0.6",
    ),
    # The controller IAM policy (components/karpenter.py) follows the one Karpenter publishes for this version.
    "karpenter": ChartRef(
        repository="oci://public.ecr.aws/karpenter", chart="karpenter", version="1.14.1", app_version="1.14.1"
    ),
    # community-charts' MLflow chart: maintained (monthly releases), and the one chart that takes an
    # external PostgreSQL with its credentials from an existing Secret, S3 artifacts through the
    # server, and MLflow's basic auth. Its image (burakince/mlflow) carries boto3 and psycopg2.
    "mlflow": ChartRef(
        repository="https://community-charts.github.io/helm-charts",
        chart="mlflow",
        version="1.11.5",
        app_version="3.15.1",
    ),
}

# The image the chart runs (its app version), also used by the platform's own MLflow containers:
# the database-login sidecar and the validation check.
# renovate: datasource=docker depName=burakince/mlflow
MLFLOW_IMAGE = "burakince/mlflow:3.15.1"
# MLflow's backend store: the RDS for PostgreSQL major version. RDS applies minor versions in the
# maintenance window, and the aws provider does not report them as drift against a major-only pin.
MLFLOW_POSTGRES_MAJOR_VERSION = "17"

# hashicorp/http, which downloads release manifests at plan time (the MPI Operator).
# renovate: datasource=terraform-provider depName=hashicorp/http
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
        repository="kubeflow/mpi-operator",
        tag="v0.8.0",
        path="deploy/v2beta1/mpi-operator.yaml",
        sha256="b38def13a94abe60b2a4b3485239d77f64892b8fbd202e9e435a6031b7500a8f",
        image="mpioperator/mpi-operator:0.8.0",
    ),
}

MIN_VERSIONS: dict[str, MinimumVersion] = {
    "karpenter": MinimumVersion(version=(1, 6, 0), why="Karpenter launches into Capacity Blocks only from 1.6"),
    "efa_device_plugin": MinimumVersion(
        version=(0, 5, 18),
        why="EFA device plugins before 0.5.10 (first shipped in chart v0.5.18) count NVLink controllers as EFA "
        "devices on p6-b200",
    ),
}
# The plugin version the EFA minimum is about, checked against the pinned chart's app version.
EFA_PLUGIN_MINIMUM = (0, 5, 10)

# Compatibility matrices (the components' own published tables): Kubernetes version -> the oldest
# chart version that supports it. Versions not listed need nothing newer than the pins' floor.
KUBERNETES_MINIMUMS: dict[str, dict[str, tuple[int, ...]]] = {
    # Karpenter's compatibility matrix.
    "karpenter": {"1.33": (1, 5, 0), "1.34": (1, 6, 0), "1.35": (1, 9, 0), "1.36": (1, 13, 0)},
    # GPU Operator platform support: Kubernetes 1.36 from 26.3.2.
    "gpu_operator": {"1.36": (26, 3, 2)},
}

# EKS managed add-ons the cluster layer installs. Each is pinned: to the profile's
# cluster.addon_versions entry, else to EKS's default version for the cluster's Kubernetes version
# (read at plan time, so a new default shows in the plan instead of drifting in silently).
ManagedAddonName = Literal[
    "vpc-cni",
    "kube-proxy",
    "eks-pod-identity-agent",
    "coredns",
    "aws-ebs-csi-driver",
    "aws-fsx-csi-driver",
    "aws-mountpoint-s3-csi-driver",
    "eks-node-monitoring-agent",
]
MANAGED_ADDON_MINIMUMS: dict[str, MinimumVersion] = {
    "aws-mountpoint-s3-csi-driver": MinimumVersion(
        version=(2, 8, 0), why="seed 001's Mountpoint for S3 CSI baseline (v2: pod-level credentials, caching)"
    ),
}

# Karpenter features the platform wires only when the pinned (or overridden) Karpenter has them.
KARPENTER_HANDLES_RESERVATION_INTERRUPTIONS = (1, 10, 0)


def version_tuple(version: str) -> tuple[int, ...]:
    """`v1.2.3-rc.1` -> (1, 2, 3): the numeric release, without prefix or pre-release suffix."""
    return tuple(int(part) for part in re.split(r"[-+]", version.lstrip("v"))[0].split("."))
