"""The platform's version vocabulary and the pins that belong to no add-on, binding-free: the
Kubernetes versions a profile may name, the pin types add-ons use (`ChartRef`, `ReleaseArtifact`),
the EKS managed add-ons and their minimums, and the providers and tools the app itself pins.

An add-on's own pin, minimums and compatibility table live in its package (`addons/<key>/`);
`addons/catalog.py` collects them into one table. Renovate (renovate.json) reads the pins where
they are written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, get_args

KubernetesVersion = Literal["1.31", "1.32", "1.33", "1.34", "1.35", "1.36"]
KUBERNETES_VERSIONS: tuple[KubernetesVersion, ...] = get_args(KubernetesVersion)
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


# hashicorp/aws: the version the cdktf bindings (cdktf-cdktf-provider-aws in pyproject.toml) were
# generated for; the offline provider mirror and `make provider-mirror` use it. Move both together.
# renovate: datasource=terraform-provider depName=hashicorp/aws
AWS_PROVIDER_VERSION = "5.100.0"

# The CUDA base image of the validation pods' GPU checks (the NCCL image builds from its own
# Dockerfile, images/nccl-tests, which pins its base there).
# renovate: datasource=docker depName=nvcr.io/nvidia/cuda
CUDA_IMAGE = "nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04"

# The NCCL test image the validation MPIJob runs when the build layer's own is not given: it carries
# the EFA installer, aws-ofi-nccl and nccl-tests (a compound tag Renovate cannot order; by hand).
NCCL_TESTS_IMAGE = "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.42.0-ofiv1.16.0-ncclv2.27.5-1-testsv2.16.4"

# The Ray image of verify's RayJob check and docs/queues.md's example (Ray 2.52 is within KubeRay
# 1.7's supported range; the -gpu variant carries CUDA).
# renovate: datasource=docker depName=rayproject/ray
RAY_IMAGE = "rayproject/ray:2.52.0-py311-gpu"
# Ray tags its arm64 builds with an -aarch64 suffix; a tag without it is x86_64 only (ray-project/ray
# docker/base-deps/README.md, "Architecture" tags): the image of a RayJob's pods on arm64 nodes
# (P6e-GB200's Grace). The head runs on the x86_64 system nodes.
RAY_IMAGES = {"x86_64": RAY_IMAGE, "arm64": f"{RAY_IMAGE}-aarch64"}

# The GPU health check's probe: dcgmi (a client of the node's one host engine, the node monitoring
# agent's DCGM 4.6.1) and bash. The DCGM image GPU Operator v26.7.0 pins for its own standalone
# DCGM (deployments/gpu-operator/values.yaml dcgm.version).
# renovate: datasource=docker depName=nvcr.io/nvidia/cloud-native/dcgm
DCGM_IMAGE = "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"
# The health check's judge (addons/gpu_operator/gpu_health.py, standard library only), from the
# Docker official image's ECR Public mirror (no Docker Hub pull limits).
# renovate: datasource=docker depName=public.ecr.aws/docker/library/python
PYTHON_IMAGE = "public.ecr.aws/docker/library/python:3.13-slim"

# CodeBuild's Docker-capable managed image for the build layer (AWS updates it in place per major).
CODEBUILD_IMAGE = "aws/codebuild/amazonlinux2-x86_64-standard:5.0"
# Its aarch64 counterpart, for images built for arm64 nodes (P6e-GB200's Grace CPUs), run as an
# ARM_CONTAINER environment: "aws/codebuild/amazonlinux2-aarch64-standard:3.0" (AWS CDK
# aws-codebuild LinuxArmBuildImage.AMAZON_LINUX_2_STANDARD_3_0; CodeBuild User Guide, "Docker
# images provided by CodeBuild").
CODEBUILD_IMAGES = {"x86_64": CODEBUILD_IMAGE, "arm64": "aws/codebuild/amazonlinux2-aarch64-standard:3.0"}
# The CodeBuild environment type that runs each architecture's builds.
CODEBUILD_ENVIRONMENT_TYPES = {"x86_64": "LINUX_CONTAINER", "arm64": "ARM_CONTAINER"}

# EKS AMI types of the managed node groups: the AL2023 NVIDIA AMI brings the driver and the
# container toolkit; EKS picks the release for the cluster's version at creation and on update.
GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA"
SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"
# The NVIDIA variant for each CPU architecture of a GPU instance type: Grace-based types (P6e-GB200,
# arm64) take the AL2023 ARM NVIDIA AMI (EKS User Guide, "Use P6e-GB200 UltraServers with Amazon
# EKS" and "Use EKS-optimized accelerated AMIs for GPU instances"; docs/gb200.md). hashicorp/aws
# 5.100.0 knows the AMI type (its aws_eks_node_group ami_type values).
GPU_AMI_TYPES = {"x86_64": GPU_AMI_TYPE, "arm64": "AL2023_ARM_64_NVIDIA"}

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
        version=(2, 8, 0), why="Mountpoint for S3 CSI driver v2 is the first with pod-level credentials and caching"
    ),
}


def version_tuple(version: str) -> tuple[int, ...]:
    """`v1.2.3-rc.1` -> (1, 2, 3): the numeric release, without prefix or pre-release suffix."""
    return tuple(int(part) for part in re.split(r"[-+]", version.lstrip("v"))[0].split("."))
