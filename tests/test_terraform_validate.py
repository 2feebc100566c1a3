"""`terraform validate` of the AWS-only stacks with the real hashicorp/aws provider, offline.

The helm and kubernetes providers have no binary on these machines, so the addons and workloads
layers are checked by assertions and snapshots instead.
"""

from __future__ import annotations

import pytest

from tests.conftest import AWS_LAYERS, FIXTURES, SHIPPED


def _diagnostics(result: dict) -> str:
    if "init_error" in result:
        return result["init_error"]
    return "\n".join(f"{d['severity']}: {d['summary']}: {d.get('detail', '')} at {d.get('range', {}).get('filename')}"
                     for d in result.get("diagnostics", []))


@pytest.mark.parametrize("layer", AWS_LAYERS)
@pytest.mark.parametrize("profile", SHIPPED + FIXTURES)
def test_aws_stack_is_valid_terraform(synthesized, terraform, tmp_path, profile, layer):
    result = terraform.validate(synthesized.stack(profile, layer), tmp_path / layer)
    assert result["valid"], _diagnostics(result)
    assert result["error_count"] == 0 and result["warning_count"] == 0, _diagnostics(result)


def test_terraform_uses_the_project_cli_config(terraform):
    text = terraform.cli_config.read_text()
    assert "filesystem_mirror" in text and str(terraform.mirror) in text
    assert (terraform.mirror / "registry.terraform.io/hashicorp/aws/5.100.0").is_dir()
