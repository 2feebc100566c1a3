"""Build-layer settings: reference implementations built into images by CodeBuild."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from profiles.base import FieldProblem, Strict, worded
from profiles.image_ref import tag_problem

REFERENCE_NAME = r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$"
# A branch, tag or file path in a Git repository.
GitPath = Annotated[
    str, worded(r"^[A-Za-z0-9._/-]+$", "letters, digits and ._/-, e.g. main, release/v1.2 or docker/Dockerfile")
]


def ref_image_tag(ref: str) -> str:
    """The image tag a repository build is pushed as: its ref, '/' made '-' (stacks/build.py image_tag)."""
    return ref.replace("/", "-")


def _git_ref(ref: str) -> str:
    """A branch or tag name git takes (git-check-ref-format, https://git-scm.com/docs/git-check-ref-format:
    no component beginning with '.' or ending in '.lock', no '..', no leading, trailing or doubled
    '/', no trailing '.'; GitPath's characters already leave out the control characters, space,
    ~ ^ : ? * [ \\ and @{ it refuses), not beginning with '-' (git refuses such a branch name, and
    `git clone --branch` would read it as an option), whose image tag (ref_image_tag) the
    distribution tag grammar takes (profiles/image_ref.py: at most 128 characters, beginning with a
    letter, digit or _)."""
    components = ref.split("/")
    problem = (
        "it begins with '-'"
        if ref.startswith("-")
        else "it contains '..'"
        if ".." in ref
        else "it begins or ends with '/' or has an empty part ('//')"
        if "" in components
        else "a part begins with '.'"
        if any(part.startswith(".") for part in components)
        else "a part ends with '.lock'"
        if any(part.endswith(".lock") for part in components)
        else "it ends with '.'"
        if ref.endswith(".")
        else None
    )
    if problem is not None:
        raise FieldProblem(
            (),
            ref,
            f"not a git branch or tag name: {problem} (git check-ref-format)",
            allowed="/-separated parts of letters, digits and ._-, none empty, none starting with '.' or "
            "ending in '.lock', no '..', not starting with '-', e.g. main or release/v1.2",
        )
    if (problem := tag_problem(ref_image_tag(ref))) is not None:
        raise FieldProblem(
            (),
            ref,
            f"the image is tagged with the ref, '/' made '-', and {problem}",
            allowed="a ref of at most 128 characters beginning with a letter, digit or _",
        )
    return ref


GitRef = Annotated[GitPath, AfterValidator(_git_ref)]


# Images this project builds from its own Dockerfiles (images/<name>/Dockerfile).
PROJECT_IMAGES_DIR = Path(__file__).resolve().parents[1] / "images"


def project_images() -> list[str]:
    return sorted(path.parent.name for path in PROJECT_IMAGES_DIR.glob("*/Dockerfile"))


class ReferenceImplementation(Strict):
    """What an image is built from: one of this project's Dockerfiles, or a Git repository with a
    Dockerfile. The build steps (buildspec) are the project's own either way: nothing is expected
    from the source but the Dockerfile."""

    project_image: str | None = Field(None)
    """Build images/<project_image>/Dockerfile from this project (e.g. nccl-tests)."""
    repository_url: str | None = Field(None, pattern=r"^https://[!-~]+$")
    """Git repository the image is built from (with its Dockerfile)."""
    ref: GitRef = "main"
    """Branch or tag to build (repository_url)."""
    dockerfile: GitPath = "Dockerfile"
    """The Dockerfile's path in the repository (repository_url)."""
    architecture: Literal["x86_64", "arm64"] | None = Field(None)
    """The CPU architecture the image is built for (CodeBuild builds on a machine of that
    architecture; one build makes one). Default: that of the nodes its pods run on, the GPU node
    groups' (an add-on's image: the system nodes', x86_64). Required where the GPU groups mix both."""

    @model_validator(mode="after")
    def _one_source(self) -> ReferenceImplementation:
        if (self.project_image is None) == (self.repository_url is None):
            raise FieldProblem(
                "project_image",
                self.project_image,
                "name exactly one source: project_image or repository_url",
                allowed=f"project_image: {' | '.join(project_images())}, or repository_url: https://...",
            )
        if self.project_image is not None and self.project_image not in project_images():
            raise FieldProblem(
                "project_image",
                self.project_image,
                "this project has no such image",
                allowed=", ".join(project_images()),
            )
        return self


CodeBuildComputeType = Literal[
    "BUILD_GENERAL1_SMALL",
    "BUILD_GENERAL1_MEDIUM",
    "BUILD_GENERAL1_LARGE",
    "BUILD_GENERAL1_XLARGE",
    "BUILD_GENERAL1_2XLARGE",
]


class BuildConfig(Strict):
    reference_implementations: dict[str, ReferenceImplementation] = Field(default_factory=dict)
    """Name -> source. Each gets an ECR repository and a CodeBuild project."""
    compute_type: CodeBuildComputeType = Field("BUILD_GENERAL1_LARGE")
    """CodeBuild machine; CUDA images need disk and memory."""
    keep_images: int = Field(20, ge=1, le=1000)
    """ECR keeps the newest N images per repository."""
    build_timeout_minutes: int = Field(120, ge=5, le=2160)
    """How long one CodeBuild image build may run, in minutes."""

    @field_validator("reference_implementations")
    @classmethod
    def _names(cls, impls: dict[str, ReferenceImplementation]) -> dict[str, ReferenceImplementation]:
        for name in impls:
            if not re.fullmatch(REFERENCE_NAME, name):
                raise ValueError(
                    f"reference implementation name {name!r} is not usable as an ECR repository and CodeBuild "
                    "project name: use 1-40 lowercase letters, digits and inner hyphens"
                )
        return impls
