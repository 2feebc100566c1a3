"""What Kubeflow Trainer needs of the whole profile: its runtimes' GPU resource, the build layer's
EFA image for EFA groups, and the image its GPU pods run (for the CUDA driver check)."""

from __future__ import annotations

from collections.abc import Iterator

from addons.definition import PlatformConfig, ProfileRules
from addons.trainer import DEFINITION, EFA_TORCH_PROJECT_IMAGE, PUBLIC_TORCH_IMAGE
from profiles.base import FieldProblem
from profiles.built_images import building_for
from profiles.gpus import dra_mode


def _runtimes_need_extended_gpus(config: PlatformConfig) -> Iterator[FieldProblem]:
    if dra_mode(config):
        yield FieldProblem(
            ("addons", "trainer", "enabled"),
            True,
            "the platform's Trainer runtimes ask for nvidia.com/gpu, which DRA mode does not advertise",
            allowed="addons.trainer.enabled: false, or addons.gpu_operator.dra: false",
        )


def _efa_runtimes_have_an_efa_image(config: PlatformConfig) -> Iterator[FieldProblem]:
    """Trainer's runtimes of EFA groups run the build layer's pytorch-efa image unless the
    profile names an image: the build layer must build it. The public PyTorch image has no
    aws-ofi-nccl, so NCCL would run over TCP sockets while each pod holds every EFA interface."""
    if DEFINITION.settings(config).torch_image is not None:
        return
    image = EFA_TORCH_PROJECT_IMAGE
    by_architecture: dict[str, list[str]] = {}
    for group in config.cluster.gpu_node_groups:
        if group.efa_enabled:
            by_architecture.setdefault(group.catalog_entry.architecture, []).append(group.name)
    for architecture, efa in sorted(by_architecture.items()):
        if building_for(config, image, architecture) is None:
            yield FieldProblem(
                ("addons", "trainer", "torch_image"),
                None,
                f"the Trainer runtimes of EFA node groups ({', '.join(efa)}) run the build layer's {image} image "
                f"(PyTorch with libfabric and aws-ofi-nccl) built for their nodes' architecture, {architecture}, "
                "and build.reference_implementations builds none for it",
                allowed=f"build.reference_implementations.{image}: {{project_image: {image}}} (with architecture: "
                f"{architecture} where the GPU groups mix architectures), or torch_image: an image with the EFA "
                "installer's libfabric and aws-ofi-nccl",
            )


def _torch_image(config: PlatformConfig) -> dict[tuple[str | int, ...], str]:
    # Unset, EFA groups run the build layer's pytorch-efa image (the CUDA check reads it from the
    # build layer's implementations); a group without EFA runs the public image.
    torch_image = DEFINITION.settings(config).torch_image
    if torch_image is None and not all(g.efa_enabled for g in config.cluster.gpu_node_groups):
        torch_image = PUBLIC_TORCH_IMAGE
    return {} if torch_image is None else {("addons", "trainer", "torch_image"): torch_image}


RULES = ProfileRules(checks=(_runtimes_need_extended_gpus, _efa_runtimes_have_an_efa_image), gpu_images=_torch_image)
