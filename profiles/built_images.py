"""The images the build layer builds for the profile, and the checks that the images the
profile's add-ons run are built: the profile's own reference implementations (build:), and the
project images the enabled add-ons run (AddonDefinition.project_images), each built under the
image's own name. Binding-free, like the rest of profiles/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from addons.catalog import DEFINITIONS
from addons.definition import PlatformConfig as AddonView
from profiles.base import FieldProblem
from profiles.build import BuildConfig, ReferenceImplementation


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


def built_image_problems(config: PlatformConfig) -> Iterator[FieldProblem]:
    yield from _addon_images_keep_their_names(config)


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
