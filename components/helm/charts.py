"""Every chart the platform installs, pinned in one place.

Versions follow the baselines of the user's source documents where they name one (GPU Operator
26.7.0, JupyterHub chart 4.4.2, Argo Workflows 4.1.3, KubeRay 1.7) and otherwise a current
release. A profile may override a version per release (`addons.<release>.chart_version`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChartRef:
    repository: str  # https:// chart repository or oci:// registry
    chart: str
    version: str


CHARTS: dict[str, ChartRef] = {
    "gpu_operator": ChartRef("https://helm.ngc.nvidia.com/nvidia", "gpu-operator", "v26.7.0"),
    "efa_device_plugin": ChartRef("https://aws.github.io/eks-charts", "aws-efa-k8s-device-plugin", "v0.5.14"),
    "monitoring": ChartRef("https://prometheus-community.github.io/helm-charts", "kube-prometheus-stack", "79.5.0"),
    "kuberay": ChartRef("https://ray-project.github.io/kuberay-helm/", "kuberay-operator", "1.7.0"),
    # Kubeflow publishes no chart for the MPI Operator; this community chart installs MPIJob v2beta1.
    "mpi_operator": ChartRef("https://cowboysysop.github.io/charts/", "mpi-operator", "1.1.1"),
    "jupyterhub": ChartRef("https://hub.jupyter.org/helm-chart/", "jupyterhub", "4.4.2"),
    # Chart 1.1.x ships Argo Workflows 4.1; the image tag is pinned to 4.1.3 in the values.
    "argo_workflows": ChartRef("https://argoproj.github.io/argo-helm", "argo-workflows", "1.1.1"),
    "karpenter": ChartRef("oci://public.ecr.aws/karpenter", "karpenter", "1.8.1"),
}

ARGO_WORKFLOWS_IMAGE_TAG = "v4.1.3"

# Minimum versions the platform depends on, and why.
MIN_VERSIONS: dict[str, tuple[tuple[int, ...], str]] = {
    "karpenter": ((1, 6, 0), "Karpenter launches into Capacity Blocks only from 1.6"),
    "efa_device_plugin": ((0, 5, 10), "EFA device plugins before 0.5.10 count NVLink controllers as EFA devices on p6-b200"),
}
