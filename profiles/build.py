"""Build-layer settings: reference implementations built into images by CodeBuild."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from profiles.base import Strict

REFERENCE_NAME = r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$"


class ReferenceImplementation(Strict):
    repository_url: str = Field(..., pattern=r"^https://\S+$", description="Git repository the image is built from.")
    ref: str = Field("main", pattern=r"^[A-Za-z0-9._/-]+$", description="Branch or tag to build.")
    buildspec: str = Field("buildspec.yml", min_length=1, description="Buildspec path inside the source archive.")


CodeBuildComputeType = Literal[
    "BUILD_GENERAL1_SMALL", "BUILD_GENERAL1_MEDIUM", "BUILD_GENERAL1_LARGE",
    "BUILD_GENERAL1_XLARGE", "BUILD_GENERAL1_2XLARGE",
]


class BuildConfig(Strict):
    reference_implementations: dict[str, ReferenceImplementation] = Field(
        default_factory=dict, description="Name -> source. Each gets an ECR repository and a CodeBuild project."
    )
    compute_type: CodeBuildComputeType = Field(
        "BUILD_GENERAL1_LARGE", description="CodeBuild machine; CUDA images need disk and memory."
    )
    keep_images: int = Field(20, ge=1, le=1000, description="ECR keeps the newest N images per repository.")
    build_timeout_minutes: int = Field(120, ge=5, le=2160)

    @field_validator("reference_implementations")
    @classmethod
    def _names(cls, impls: dict[str, ReferenceImplementation]) -> dict[str, ReferenceImplementation]:
        for name in impls:
            if not re.match(REFERENCE_NAME, name):
                raise ValueError(
                    f"reference implementation name {name!r} is not usable as an ECR repository and CodeBuild "
                    "project name: use 1-40 lowercase letters, digits and inner hyphens"
                )
        return impls

