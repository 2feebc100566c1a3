"""State settings: where each layer keeps its Terraform state."""

from __future__ import annotations

from pydantic import Field

from profiles.base import Region, Strict


class StateConfig(Strict):
    """Where each layer keeps its Terraform state (one state per layer)."""

    bucket: str | None = Field(None, pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
    """S3 bucket for remote state with native S3 lock files. Unset: a local backend writes state/<layer>.tfstate next
    to the project.
    """
    key_prefix: str = Field(
        "gpu-platform", max_length=200, pattern=r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*$"
    )
    """Keys are <key_prefix>/<profile name>/<layer>.tfstate: one or more /-separated names of letters, digits and
    _.- (no name starting with a dot, no leading or trailing /), so two profiles' keys can never meet."""
    region: Region | None = Field(None)
    """Region of the state bucket; default: the profile's region."""
