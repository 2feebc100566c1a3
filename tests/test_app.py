"""The app's shape: five stacks named after their layers, each with its own state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stacks import AWS_ONLY_LAYERS, LAYERS
from tests.cases import FIXTURES, SHIPPED

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("profile", SHIPPED)
def test_five_layer_stacks_each_with_own_local_state(synthesized, profile):
    assert set(synthesized.stacks[profile]) == set(LAYERS) == {"cluster", "storage", "build", "addons", "workloads"}
    name = synthesized.configs[profile].name
    paths = {layer: synthesized.stack(profile, layer)["terraform"]["backend"]["local"]["path"] for layer in LAYERS}
    assert paths == {layer: f"../../../state/{name}/{layer}.tfstate" for layer in LAYERS}


def strings(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, str):
        yield value


def test_no_machine_specific_paths_in_the_json(synthesized):
    text = json.dumps(synthesized.stacks)
    for folder in (ROOT, synthesized.outroot, Path.home()):
        assert str(folder) not in text, f"{folder} is written into the synthesized JSON"
    # No value names a file or folder of this machine (device paths inside node images, the shell
    # every container image has at /bin/sh, and /tmp, where containers mount their scratch volume,
    # aside).
    inside_containers = ("/bin/sh", "/tmp")
    local = sorted(
        {
            value
            for value in strings(synthesized.stacks)
            if value.startswith("/")
            and not value.startswith("/dev/")
            and value not in inside_containers
            and Path(value).exists()
        }
    )
    assert local == []


def test_s3_backend_with_lock_file_and_one_key_per_layer(synthesized):
    stacks = synthesized.stacks["s3-state"]
    config = synthesized.configs["s3-state"]
    for layer in LAYERS:
        backend = stacks[layer]["terraform"]["backend"]
        assert list(backend) == ["s3"]
        assert backend["s3"] == {
            "bucket": config.state.bucket,
            "key": f"platform/{config.name}/{layer}.tfstate",
            "region": config.region,
            "encrypt": True,
            "use_lockfile": True,
        }


def test_deploy_order_is_recorded_in_the_manifest(synthesized):
    manifest = json.loads((synthesized.outroot / "gpu-validation" / "manifest.json").read_text())
    deps = {name: set(stack["dependencies"]) for name, stack in manifest["stacks"].items()}
    assert deps["cluster"] == set()
    assert "cluster" in deps["storage"] and "cluster" in deps["build"] and "cluster" in deps["addons"]
    assert {"storage", "addons"} <= deps["workloads"]


@pytest.mark.parametrize("profile", SHIPPED)
def test_aws_only_layers_are_the_ones_with_only_the_aws_provider(synthesized, profile):
    only_aws = {layer for layer in LAYERS if set(synthesized.stack(profile, layer)["provider"]) == {"aws"}}
    assert only_aws == set(AWS_ONLY_LAYERS)


@pytest.mark.parametrize("profile", SHIPPED + FIXTURES)
def test_every_interpolation_in_the_json_is_a_terraform_reference_or_call(synthesized, profile):
    """Text the platform writes into a stack (scripts, configs, manifests) is a Terraform template
    there: a shell `${VAR}` in it would be read as a reference. Only real ones may remain."""
    from tests.test_architecture import REFERENCE_ROOTS, live_interpolations

    for layer, stack in synthesized.stacks[profile].items():
        stray = [s for s in live_interpolations(stack) if not REFERENCE_ROOTS.match(s)]
        assert stray == [], f"{layer}: {stray[:5]}"
