"""What JupyterHub needs of the whole profile: nodes its notebooks can start on, and the image its
GPU notebooks run (for the CUDA driver check)."""

from __future__ import annotations

from collections.abc import Iterator

from addons.definition import PlatformConfig, ProfileRules
from addons.jupyterhub import DEFINITION, JupyterHubConfig
from profiles.base import FieldProblem
from profiles.gpus import dra_mode, karpenter_node_pools


def _notebooks_have_nodes(config: PlatformConfig) -> Iterator[FieldProblem]:
    # The notebook profiles select Karpenter's pools (addons/jupyterhub/install.py), and in DRA
    # mode the GPU notebook selects the managed GPU groups, which nothing scales up on demand.
    if not karpenter_node_pools(config):
        yield FieldProblem(
            ("addons", "jupyterhub", "enabled"),
            True,
            "JupyterHub's notebooks run on Karpenter's node pools, which exist only with Karpenter on: "
            "every notebook would stay Pending",
            allowed="addons.karpenter.enabled: true, or addons.jupyterhub.enabled: false",
        )
    groups = config.cluster.gpu_node_groups
    if dra_mode(config) and groups and not any(group.desired_size > 0 for group in groups):
        yield FieldProblem(
            ("cluster", "gpu_node_groups", 0, "desired_size"),
            0,
            "in DRA mode the GPU notebook runs on the managed GPU node groups (Karpenter ignores "
            "ResourceClaims), and no group keeps a node running: every GPU notebook would stay Pending",
            allowed="desired_size 1 or more on a GPU group",
        )


def _gpu_notebooks_run_on_their_nodes(config: PlatformConfig) -> Iterator[FieldProblem]:
    """In DRA mode the GPU notebook lands on any managed GPU group: where one is arm64 (P6e-GB200's
    Grace), the default notebook image, whose CUDA variants are published for x86_64 only
    (jupyter/docker-stacks pull 2091: "x86_64 versions only"), would fail with exec format error.
    An image of the profile's own is taken as it is: its architectures cannot be read here."""
    settings = DEFINITION.settings(config)
    default = JupyterHubConfig.model_fields["gpu_image"].default
    arm = [group.name for group in config.cluster.gpu_node_groups if group.catalog_entry.architecture == "arm64"]
    if settings.enabled and dra_mode(config) and arm and settings.gpu_image == default:
        yield FieldProblem(
            ("addons", "jupyterhub", "gpu_image"),
            settings.gpu_image,
            f"is published for x86_64 only, and in DRA mode the GPU notebook runs on the managed GPU groups, "
            f"arm64 among them ({', '.join(arm)}): it would fail there with exec format error",
            allowed="a notebook image published for arm64 (and for x86_64 too where the GPU groups mix both)",
        )


def _gpu_image(config: PlatformConfig) -> dict[tuple[str | int, ...], str]:
    return {("addons", "jupyterhub", "gpu_image"): DEFINITION.settings(config).gpu_image}


RULES = ProfileRules(checks=(_notebooks_have_nodes, _gpu_notebooks_run_on_their_nodes), gpu_images=_gpu_image)
