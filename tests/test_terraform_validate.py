"""`terraform validate` of the AWS-only stacks with the real hashicorp/aws provider, offline.

The helm, kubernetes and http providers have no binary on these machines: the addons and workloads
layers are loaded by Terraform (tests/test_terraform_load.py), asserted and snapshotted.
"""

from __future__ import annotations

import json

import pytest

from tests.cases import AWS_LAYERS, FIXTURES, SHIPPED

# Left out of `make check` (terraform validate with the real providers); `make test` runs it.
pytestmark = pytest.mark.slow

CASES = [(profile, layer) for profile in SHIPPED + FIXTURES for layer in AWS_LAYERS]


@pytest.fixture(scope="module")
def validated(synthesized, terraform, tmp_path_factory) -> dict:
    """Every case validated in one Terraform run (each stack a child module of one root)."""
    stacks = {f"{profile}-{layer}": synthesized.stack(profile, layer) for profile, layer in CASES}
    found = terraform.validate_many(stacks, tmp_path_factory.mktemp("validate"))
    return {case: found[f"{case[0]}-{case[1]}"] for case in CASES}


def _describe(diagnostics: list[dict]) -> str:
    return "\n".join(
        f"{d['severity']}: {d['summary']}: {d.get('detail', '')} at {d.get('range', {}).get('filename')}"
        for d in diagnostics
    )


@pytest.mark.parametrize("layer", AWS_LAYERS)
@pytest.mark.parametrize("profile", SHIPPED + FIXTURES)
def test_aws_stack_is_valid_terraform(validated, profile, layer):
    diagnostics = validated[(profile, layer)]
    assert diagnostics == [], _describe(diagnostics)


def test_a_broken_stack_is_reported_against_its_own_name(synthesized, terraform, tmp_path):
    broken = json.loads(json.dumps(synthesized.stack("gpu-validation", "build")))
    next(iter(broken["resource"]["aws_ecr_repository"].values()))["image_tag_mutability"] = 42
    broken["resource"]["aws_ecr_repository"]["typo"] = {"nam": "x"}
    found = terraform.validate_many({"good": synthesized.stack("gpu-validation", "build"), "bad": broken}, tmp_path)
    assert found["good"] == [] and found["bad"]


def test_terraform_uses_the_project_cli_config(terraform):
    text = terraform.cli_config.read_text()
    if terraform.mirror is None:  # a networked runner without a mirror: the registry
        assert "direct" in text and "filesystem_mirror" not in text
        return
    assert "filesystem_mirror" in text and str(terraform.mirror) in text
    assert (terraform.mirror / "registry.terraform.io/hashicorp/aws/5.100.0").is_dir()
