"""Strict, bounded input (issue 44, deliverable 2): a profile's values are taken as written and
within what AWS and Kubernetes accept. Each refusal is walked through the command line: the
profile file is written, `main.py validate` exits 2, and its message names the field's path, the
bad value and what is allowed."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

import main
from profiles import ProfileError, load_profile
from profiles.models import PlatformConfig

PROFILES = Path(__file__).resolve().parents[1] / "profiles"
BASE = yaml.safe_load((PROFILES / "gpu-validation.yaml").read_text())


def edited(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`base` with the value at the dotted `path` (list indexes are numbers) set to `value`."""
    doc = copy.deepcopy(base)
    *parents, leaf = path.split(".")
    node: Any = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    if isinstance(node, list):
        node[int(leaf)] = value
    else:
        node[leaf] = value
    return doc


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, Any], field: str) -> str:
    """The problem line `main.py validate` prints for `field` when given `doc`, after checking it
    exits 2. The loader is asked first, so an accepted profile fails here, before any Terraform."""
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ProfileError):
        load_profile(str(path))
    assert main.main(["validate", "--profile", str(path)]) == 2
    stderr = capsys.readouterr().err
    lines = [line.strip().removeprefix("- ") for line in stderr.splitlines()]
    matching = [line for line in lines if line.startswith(f"{field}: ")]
    assert matching, f"no problem named {field}; got:\n{stderr}"
    return matching[0]


def models_of(model: type[BaseModel], seen: set[type[BaseModel]] | None = None) -> set[type[BaseModel]]:
    """Every model reachable from `model` through its fields (lists, mappings, unions included)."""
    seen = set() if seen is None else seen
    if model in seen:
        return seen
    seen.add(model)

    def inner(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            models_of(annotation, seen)
        for arg in getattr(annotation, "__args__", ()):
            inner(arg)
        for meta in getattr(annotation, "__metadata__", ()):
            inner(meta)

    for field in model.model_fields.values():
        inner(field.annotation)
    return seen


# a. Strict types: YAML's value as written, never converted.
STRICT = [
    ("storage.protect_from_destroy", "no", "true or false, unquoted"),
    ("storage.protect_from_destroy", "false", "true or false, unquoted"),
    ("storage.protect_from_destroy", "0", "true or false, unquoted"),
    ("storage.protect_from_destroy", 0, "true or false, unquoted"),
    ("cluster.system_node_group.max_size", "3", "a whole number, unquoted"),
    ("cluster.system_node_group.max_size", 3.0, "a whole number, unquoted"),
    ("cluster.system_node_group.max_size", True, "a whole number, unquoted"),
    ("storage.fsx.storage_capacity_gib", "1200", "a whole number, unquoted"),
    ("name", 3, "text; quote a value"),
    ("tags.team", 3, "text; quote a value"),
    ("cluster.gpu_node_groups.0.efa_enabled", "yes", "true or false, unquoted"),
]


@pytest.mark.parametrize("field, value, allowed", STRICT, ids=[f"{f}={v!r}" for f, v, _ in STRICT])
def test_values_are_taken_as_written_never_coerced(tmp_path, capsys, field, value, allowed):
    line = refused(tmp_path, capsys, edited(BASE, field, value), field)
    assert f"got {value!r}" in line and f"allowed: {allowed}" in line, line


def test_every_profile_model_is_strict():
    models = models_of(PlatformConfig)
    assert len(models) > 30, "the walk reaches the nested models"
    loose = sorted(model.__name__ for model in models if not model.model_config.get("strict"))
    assert loose == []


def test_a_capacity_block_time_is_text_not_a_number(tmp_path, capsys):
    block = {
        "type": "capacity_block",
        "reservation_id": "cr-0123456789abcdef0",
        "instance_count": 2,
        "availability_zone": BASE["cluster"]["vpc"]["availability_zones"][0],
        "starts_at": 1_900_000_000,
        "ends_at": "2030-03-01T11:30:00Z",
    }
    doc = edited(BASE, "cluster.gpu_node_groups.0.capacity", block)
    line = refused(tmp_path, capsys, doc, "cluster.gpu_node_groups.0.capacity.starts_at")
    assert "got 1900000000" in line and "ISO 8601" in line, line
