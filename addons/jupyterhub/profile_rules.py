"""What JupyterHub needs of the whole profile: nodes its notebooks can start on, and the image its
GPU notebooks run (for the CUDA driver check)."""

from __future__ import annotations

from collections.abc import Iterator

from addons.definition import PlatformConfig, ProfileRules
from addons.jupyterhub import DEFINITION
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


def _gpu_image(config: PlatformConfig) -> dict[tuple[str | int, ...], str]:
    return {("addons", "jupyterhub", "gpu_image"): DEFINITION.settings(config).gpu_image}


RULES = ProfileRules(checks=(_notebooks_have_nodes,), gpu_images=_gpu_image)
