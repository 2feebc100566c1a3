"""The images the build layer builds for the profile, and the checks that the images the
profile's add-ons run are built: the profile's own reference implementations (build:), and the
project images the enabled add-ons run (AddonDefinition.project_images), each built under the
image's own name. Binding-free, like the rest of profiles/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal, Protocol

from addons.catalog import DEFINITIONS
from addons.definition import PlatformConfig as AddonView
from profiles.base import FieldProblem
from profiles.build import BuildConfig, ReferenceImplementation, ref_image_tag
from profiles.image_ref import MAX_TAG_LENGTH


class PlatformConfig(AddonView, Protocol):
    """What these read of a validated profile (profiles.models.PlatformConfig, which calls them)."""

    @property
    def build(self) -> BuildConfig: ...


def addon_images(config: PlatformConfig) -> tuple[tuple[str, str], ...]:
    """(add-on key, image) for each project image an enabled add-on runs."""
    return tuple((d.key, image) for d in DEFINITIONS if d.enabled(config) for image in d.project_images)


def contributed(config: PlatformConfig) -> tuple[tuple[str, str], ...]:
    """Those the profile does not list itself (as `{project_image: <name>}` under the image's name)."""
    return tuple(
        (key, image) for key, image in addon_images(config) if image not in config.build.reference_implementations
    )


def build_implementations(config: PlatformConfig) -> dict[str, ReferenceImplementation]:
    """What the build layer builds: the profile's reference implementations, then each project
    image an enabled add-on runs, under the image's name (its ECR repository <profile>/<image>)."""
    added = {image: ReferenceImplementation(project_image=image) for _, image in contributed(config)}
    return {**config.build.reference_implementations, **added}


Architecture = Literal["x86_64", "arm64"]
# The system node group runs the x86_64 AL2023 AMI (profiles/versions.py SYSTEM_AMI_TYPE): where
# an add-on's own image runs.
SYSTEM_NODES_ARCHITECTURE: Architecture = "x86_64"
# On-demand ARM_CONTAINER compute types. The CodeBuild User Guide ("Build environment compute modes
# and types", About environment types, docs.aws.amazon.com) lists all five for ARM: Small (4 GB, 2
# vCPUs), Medium (8 GB, 4), Large (16 GB, 8), XLarge (64 GB, 32), 2XLarge (96 GB, 48). The China
# regions' guide (docs.amazonaws.cn) lists ARM Small and ARM Large only.
ARM_COMPUTE_TYPES = (
    "BUILD_GENERAL1_SMALL",
    "BUILD_GENERAL1_MEDIUM",
    "BUILD_GENERAL1_LARGE",
    "BUILD_GENERAL1_XLARGE",
    "BUILD_GENERAL1_2XLARGE",
)
ARM_COMPUTE_TYPES_CHINA = ("BUILD_GENERAL1_SMALL", "BUILD_GENERAL1_LARGE")


def arm_compute_types(region: str) -> tuple[str, ...]:
    """The on-demand compute types CodeBuild runs ARM_CONTAINER builds on in `region`."""
    return ARM_COMPUTE_TYPES_CHINA if region.startswith("cn-") else ARM_COMPUTE_TYPES


def gpu_architectures(config: PlatformConfig) -> dict[str, list[str]]:
    """Each CPU architecture of the GPU node groups, with the groups of it."""
    found: dict[str, list[str]] = {}
    for group in config.cluster.gpu_node_groups:
        found.setdefault(group.catalog_entry.architecture, []).append(group.name)
    return found


def building_for(config: PlatformConfig, project_image: str, architecture: str) -> str | None:
    """The reference implementation that builds images/<project_image> for `architecture` (the
    first by name), or None: in a profile whose GPU groups mix architectures, one implementation
    per architecture, and the pods of a group must run the one of theirs."""
    return next(
        (
            name
            for name, spec in sorted(config.build.reference_implementations.items())
            if spec.project_image == project_image and image_architecture(config, name) == architecture
        ),
        None,
    )


def image_architecture(config: PlatformConfig, impl: str) -> Architecture:
    """The architecture the build layer builds implementation `impl` for: the profile's choice,
    else that of the nodes its pods run on (an add-on's image: the system nodes; any other: the GPU
    node groups, validated to be of one architecture where the profile names none)."""
    spec = build_implementations(config)[impl]
    if spec.architecture is not None:
        return spec.architecture
    if impl in {image for _, image in addon_images(config)}:
        return SYSTEM_NODES_ARCHITECTURE
    found = gpu_architectures(config)
    return "arm64" if set(found) == {"arm64"} else "x86_64"


# The architectures each project image's base publishes, which are the ones its build can make:
# - nccl-tests: nvcr.io/nvidia/cuda devel images are published for linux/amd64 and linux/arm64
#   (NGC's CUDA image tags list both; NVIDIA's container images for Grace are the arm64 ones);
# - mlflow: the Docker official Python image is multi-architecture (docker-library/official-images,
#   library/python: amd64 and arm64v8 among others);
# - pytorch-efa: pytorch/pytorch's Docker Hub images are amd64 only (pytorch/pytorch issue 145716,
#   open; issue 157139 asks for arm64 images for GH200/GB200).
PROJECT_IMAGE_ARCHITECTURES: dict[str, tuple[Architecture, ...]] = {
    "nccl-tests": ("x86_64", "arm64"),
    "mlflow": ("x86_64", "arm64"),
    "pytorch-efa": ("x86_64",),
}
ARCHITECTURE_TAG_SUFFIX = {"x86_64": "", "arm64": "-arm64"}


def tag_for_architecture(tag: str, architecture: Architecture) -> str:
    """The tag an image is pushed as, built for `architecture`: an arm64 build's says so, so that a
    profile whose groups change architecture builds anew (ECR tags are immutable, and the build
    skips a tag already there); an x86_64 build's is the source's tag as before."""
    return tag + ARCHITECTURE_TAG_SUFFIX[architecture]


def built_image_problems(config: PlatformConfig) -> Iterator[FieldProblem]:
    yield from _addon_images_keep_their_names(config)
    yield from _one_architecture_per_image(config)


def _one_architecture_per_image(config: PlatformConfig) -> Iterator[FieldProblem]:
    """A GPU image of a profile whose GPU groups mix architectures must say which it is for (its
    pods would fail with `exec format error` on the others); an arm64 build needs a compute type
    CodeBuild offers for ARM."""
    found = gpu_architectures(config)
    add_on_images = {image for _, image in addon_images(config)}
    for impl, spec in config.build.reference_implementations.items():
        if impl in add_on_images and spec.architecture not in (None, SYSTEM_NODES_ARCHITECTURE):
            yield FieldProblem(
                ("build", "reference_implementations", impl, "architecture"),
                spec.architecture,
                f"is an add-on's image, whose pods run on the system nodes ({SYSTEM_NODES_ARCHITECTURE}): "
                "an image of another architecture fails there with exec format error",
                allowed=f"{SYSTEM_NODES_ARCHITECTURE}, or unset",
            )
        if spec.architecture is None and impl not in add_on_images and len(found) > 1:
            groups = " and ".join(f"{arch} ({', '.join(names)})" for arch, names in sorted(found.items()))
            yield FieldProblem(
                ("build", "reference_implementations", impl, "architecture"),
                None,
                f"the GPU node groups run {groups}, and one build makes an image for one architecture: "
                "say which groups' pods run this one (another implementation of the same source can build the other)",
                allowed="x86_64 | arm64",
            )
        architecture = image_architecture(config, impl)
        published = PROJECT_IMAGE_ARCHITECTURES.get(spec.project_image or "", (architecture,))
        if architecture not in published:
            yield FieldProblem(
                ("build", "reference_implementations", impl, "project_image"),
                spec.project_image,
                f"is built for {architecture} here (the GPU groups' architecture, or its own `architecture`), "
                f"but images/{spec.project_image}/Dockerfile's base image is published for "
                f"{' and '.join(published)} only, so its build would fail",
                allowed=f"a profile whose GPU groups are {' or '.join(published)}, or an image of your own "
                "(repository_url) for this architecture",
            )
        suffixed = len(ref_image_tag(spec.ref)) + len(ARCHITECTURE_TAG_SUFFIX["arm64"])
        if spec.repository_url and architecture == "arm64" and suffixed > MAX_TAG_LENGTH:
            yield FieldProblem(
                ("build", "reference_implementations", impl, "ref"),
                spec.ref,
                f"makes an arm64 image tag of {suffixed} characters (the ref, '/' made '-', and "
                f"{ARCHITECTURE_TAG_SUFFIX['arm64']!r})",
                allowed=f"a ref of at most {MAX_TAG_LENGTH - len(ARCHITECTURE_TAG_SUFFIX['arm64'])} characters",
            )
    arm = sorted(impl for impl in build_implementations(config) if image_architecture(config, impl) == "arm64")
    offered = arm_compute_types(config.region)
    if arm and config.build.compute_type not in offered:
        yield FieldProblem(
            ("build", "compute_type"),
            config.build.compute_type,
            f"builds {', '.join(arm)} for arm64, on CodeBuild's ARM machines, which {config.region} offers "
            f"in {len(offered)} sizes",
            allowed=" | ".join(offered),
        )


def _addon_images_keep_their_names(config: PlatformConfig) -> Iterator[FieldProblem]:
    """An enabled add-on runs its project image from the implementation named like the image: the
    profile may not build something else under that name."""
    for key, image in addon_images(config):
        spec = config.build.reference_implementations.get(image)
        if spec is not None and spec.project_image != image:
            yield FieldProblem(
                ("build", "reference_implementations", image),
                spec.project_image or spec.repository_url,
                f"is where the build layer builds the {key} add-on's image (images/{image}), which {key}'s pods run",
                allowed=f"another name for this implementation, or {{project_image: {image}}}",
            )
