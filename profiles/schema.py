"""The JSON schema of the profile model, kept in profiles/ for editor completion."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel

from profiles.docstrings import attribute_docstrings
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


def _models(annotation: Any, found: dict[str, type[BaseModel]]) -> dict[str, type[BaseModel]]:
    """Every model class an annotation names, at any depth of its fields, by class name (the
    schema's $defs key)."""
    if (
        isinstance(annotation, type)
        and issubclass(annotation, BaseModel)
        and found.get(annotation.__name__) is not annotation
    ):
        found[annotation.__name__] = annotation
        for spec in annotation.model_fields.values():
            _models(spec.annotation, found)
    for argument in get_args(annotation):
        _models(argument, found)
    return found


def _described(definition: dict[str, Any], model: type[BaseModel]) -> None:
    """Each property of a model's schema without a description gets its field's docstring (as
    pydantic's `use_attribute_docstrings` would give it: profiles/docstrings.py says why not)."""
    docs = attribute_docstrings(model)
    properties = definition.get("properties", {})
    for name, spec in properties.items():
        if "description" not in spec and name in docs and name in model.model_fields:
            # Keys in pydantic's order (GenerateJsonSchema sorts them), so the file diffs cleanly.
            properties[name] = dict(sorted({**spec, "description": docs[name]}.items()))


def profile_schema() -> dict[str, Any]:
    schema: dict[str, Any] = PlatformConfig.model_json_schema()
    _described(schema, PlatformConfig)
    for name, model in _models(PlatformConfig, {}).items():
        if name in schema.get("$defs", {}):
            _described(schema["$defs"][name], model)
    schema = _unwrapped(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "GPU training platform profile"
    return schema
