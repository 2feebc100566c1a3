"""The app's shape: five stacks named after their layers, each with its own state."""

from __future__ import annotations

import json

import pytest

from stacks import LAYERS
from tests.conftest import SHIPPED


@pytest.mark.parametrize("profile", SHIPPED)
def test_five_layer_stacks_each_with_own_local_state(synthesized, profile):
    assert set(synthesized.stacks[profile]) == set(LAYERS) == {"cluster", "storage", "build", "addons", "workloads"}
    name = synthesized.configs[profile].name
    paths = {layer: synthesized.stack(profile, layer)["terraform"]["backend"]["local"]["path"] for layer in LAYERS}
    assert paths == {layer: f"../../../state/{name}/{layer}.tfstate" for layer in LAYERS}


def test_no_machine_specific_paths_in_the_json(synthesized, tmp_path):
    text = json.dumps(synthesized.stacks)
    assert str(synthesized.outroot) not in text
    assert str(tmp_path.anchor + "work") not in text.replace("workloads", "")


def test_s3_backend_with_lock_file_and_one_key_per_layer(synthesized):
    stacks = synthesized.stacks["s3-state"]
    config = synthesized.configs["s3-state"]
    for layer in LAYERS:
        backend = stacks[layer]["terraform"]["backend"]
        assert list(backend) == ["s3"]
        assert backend["s3"] == {
            "bucket": config.state.bucket, "key": f"platform/{config.name}/{layer}.tfstate",
            "region": config.region, "encrypt": True, "use_lockfile": True,
        }


def test_deploy_order_is_recorded_in_the_manifest(synthesized):
    manifest = json.loads((synthesized.outroot / "g6-validation" / "manifest.json").read_text())
    deps = {name: set(stack["dependencies"]) for name, stack in manifest["stacks"].items()}
    assert deps["cluster"] == set()
    assert "cluster" in deps["storage"] and "cluster" in deps["build"] and "cluster" in deps["addons"]
    assert {"storage", "addons"} <= deps["workloads"]
