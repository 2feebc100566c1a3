"""The JSON schema of the profile model, kept in profiles/ for editor completion."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from profiles.models import PlatformConfig

SCHEMA_PATH = Path(__file__).resolve().parent / "profile.schema.json"


def _unwrapped(node: Any) -> Any:
    """Field docstrings are wrapped to the source's line length; editors wrap text themselves."""
    if isinstance(node, dict):
        return {
            key: re.sub(r"\s*\n\s*", " ", value)
            if key == "description" and isinstance(value, str)
            else _unwrapped(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_unwrapped(item) for item in node]
    return node


def profile_schema() -> dict[str, Any]:
    schema: dict[str, Any] = _unwrapped(PlatformConfig.model_json_schema())
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "GPU training platform profile"
    return schema
