"""The JSON schema in profiles/ is what the model says today (run `python main.py schema`)."""

import json

from profiles.schema import SCHEMA_PATH, profile_schema


def test_schema_file_is_in_sync_with_the_model():
    assert SCHEMA_PATH.is_file(), "run `.venv/bin/python main.py schema`"
    assert json.loads(SCHEMA_PATH.read_text()) == profile_schema(), (
        "stale schema: run `.venv/bin/python main.py schema`"
    )


def test_schema_forbids_unknown_keys():
    schema = profile_schema()
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["GpuNodeGroupConfig"]["additionalProperties"] is False


def test_every_setting_has_a_description_for_editors():
    # Editors show the description on hover and completion; a bare name helps nobody.
    schema = profile_schema()
    models = [("profile", schema), *schema["$defs"].items()]
    missing = [
        f"{model}.{field}"
        for model, definition in models
        for field, spec in definition.get("properties", {}).items()
        if not spec.get("description", "").strip()
    ]
    assert not missing, f"add a docstring under each of these fields: {missing}"
    assert len([field for _, definition in models for field in definition.get("properties", {})]) > 140
