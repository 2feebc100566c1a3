"""State settings: where each layer keeps its Terraform state."""

from __future__ import annotations

from pydantic import Field

from profiles.base import Region, Strict
from profiles.s3_names import BucketName


class StateConfig(Strict):
    """Where each layer keeps its Terraform state (one state per layer)."""

    bucket: BucketName | None = Field(None)
    """S3 bucket for remote state with native S3 lock files (a name S3 takes: 3-63 lowercase letters, digits, dots and
    hyphens, see profiles/s3_names.py). Unset: a local backend writes state/<layer>.tfstate next
    to the project.
    """
    key_prefix: str = Field(
        "gpu-platform", max_length=200, pattern=r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*$"
    )
    """Keys are <key_prefix>/<profile name>/<layer>.tfstate: one or more /-separated names of letters, digits and
    _.- (no name starting with a dot, no leading or trailing /), so two profiles' keys can never meet."""
    region: Region | None = Field(None)
    """Region of the state bucket; default: the profile's region."""
