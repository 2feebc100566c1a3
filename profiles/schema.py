"""The JSON schema of the profile model, kept in profiles/ for editor completion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from profiles.models import PlatformConfig

SCHEMA_PATH = Path(__file__).resolve().parent / "profile.schema.json"


def profile_schema() -> dict[str, Any]:
    schema = PlatformConfig.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "GPU training platform profile"
    return schema
