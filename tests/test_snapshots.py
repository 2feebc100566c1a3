"""Reviewed snapshots of every stack of every shipped profile.

A snapshot diff is a change to real infrastructure (construct ids are resource addresses):
review it like code, and say why in the commit that updates it (`make test PYTEST_ARGS=--snapshot-update`).
"""

from __future__ import annotations

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from stacks import LAYERS
from tests.cases import SHIPPED


@pytest.fixture
def snapshot_json(snapshot):
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("profile", SHIPPED)
def test_stack_snapshot(synthesized, snapshot_json, profile, layer):
    assert synthesized.stack(profile, layer) == snapshot_json
