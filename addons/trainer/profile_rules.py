"""What Kubeflow Trainer needs of the whole profile: its runtimes' GPU resource, and the image
its GPU pods run (for the CUDA driver check)."""

from __future__ import annotations

from collections.abc import Iterator

from addons.definition import PlatformConfig, ProfileRules
from addons.trainer import DEFINITION, PUBLIC_TORCH_IMAGE
from profiles.base import FieldProblem
from profiles.gpus import dra_mode


def _runtimes_need_extended_gpus(config: PlatformConfig) -> Iterator[FieldProblem]:
    if dra_mode(config):
        yield FieldProblem(
            ("addons", "trainer", "enabled"),
            True,
            "the platform's Trainer runtimes ask for nvidia.com/gpu, which DRA mode does not advertise",
            allowed="addons.trainer.enabled: false, or addons.gpu_operator.dra: false",
        )


def _torch_image(config: PlatformConfig) -> dict[tuple[str | int, ...], str]:
    # Unset, EFA groups run the build layer's pytorch-efa image (the CUDA check reads it from the
    # build layer's implementations); a group without EFA runs the public image.
    torch_image = DEFINITION.settings(config).torch_image
    if torch_image is None and not all(g.efa_enabled for g in config.cluster.gpu_node_groups):
        torch_image = PUBLIC_TORCH_IMAGE
    return {} if torch_image is None else {("addons", "trainer", "torch_image"): torch_image}


RULES = ProfileRules(checks=(_runtimes_need_extended_gpus,), gpu_images=_torch_image)
