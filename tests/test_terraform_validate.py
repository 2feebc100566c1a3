"""`terraform validate` of the AWS-only stacks with the real hashicorp/aws provider, offline.

The helm and kubernetes providers have no binary on these machines, so the addons and workloads
layers are checked by assertions and snapshots instead.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import AWS_LAYERS, FIXTURES, SHIPPED

CASES = [(profile, layer) for profile in SHIPPED + FIXTURES for layer in AWS_LAYERS]


@pytest.fixture(scope="module")
def validated(synthesized, terraform, tmp_path_factory) -> dict:
    """Every case validated up front, one Terraform process per core (they wait on I/O a lot)."""
    root = tmp_path_factory.mktemp("validate")
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {case: pool.submit(terraform.validate, synthesized.stack(*case), root / "-".join(case))
                   for case in CASES}
        return {case: future.result() for case, future in futures.items()}


def _diagnostics(result: dict) -> str:
    if "init_error" in result:
        return result["init_error"]
    return "\n".join(f"{d['severity']}: {d['summary']}: {d.get('detail', '')} at {d.get('range', {}).get('filename')}"
                     for d in result.get("diagnostics", []))


@pytest.mark.parametrize("layer", AWS_LAYERS)
@pytest.mark.parametrize("profile", SHIPPED + FIXTURES)
def test_aws_stack_is_valid_terraform(validated, profile, layer):
    result = validated[(profile, layer)]
    assert result["valid"], _diagnostics(result)
    assert result["error_count"] == 0 and result["warning_count"] == 0, _diagnostics(result)


def test_terraform_uses_the_project_cli_config(terraform):
    text = terraform.cli_config.read_text()
    assert "filesystem_mirror" in text and str(terraform.mirror) in text
    assert (terraform.mirror / "registry.terraform.io/hashicorp/aws/5.100.0").is_dir()
