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
