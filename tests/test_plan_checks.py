"""Plan-time checks, exercised offline with `terraform test` and a mocked AWS provider:
a catalog entry that disagrees with what EC2 reports must fail the plan with a clear message."""

from __future__ import annotations

import pytest

from profiles.catalog import CATALOG
from tests.cases import SHIPPED
from tests.synth_helpers import by_path

MOCKS = """
mock_provider "aws" {
  mock_data "aws_iam_session_context" {
    defaults = { issuer_arn = "arn:aws:iam::123456789012:role/deployer" }
  }
  mock_data "aws_caller_identity" {
    defaults = { arn = "arn:aws:sts::123456789012:assumed-role/deployer/ci", account_id = "123456789012" }
  }
  mock_data "aws_eks_addon_version" {
    defaults = { version = "v2.8.0-eksbuild.1" }
  }
}
"""


def _run(name: str, data_address: str, efa_count: int) -> str:
    return f'''
run "{name}" {{
  command = plan
  override_data {{
    target = {data_address}
    values = {{ efa_maximum_interfaces = {efa_count} }}
  }}
}}
'''


@pytest.mark.parametrize("profile", SHIPPED)
def test_catalog_efa_count_is_checked_against_aws_at_plan(synthesized, terraform, tmp_path, profile):
    stack = synthesized.stack(profile, "cluster")
    group = synthesized.configs[profile].cluster.gpu_node_groups[0]
    expected = CATALOG[group.instance_type].max_efa_interfaces
    data_id, _ = by_path(stack, "aws_ec2_instance_type", f"gpu-{group.name}/instance-type", section="data")
    address = f"data.aws_ec2_instance_type.{data_id}"
    wrong = expected // 2 or 2
    result = terraform.test(
        stack, MOCKS + _run("agrees", address, expected) + _run("disagrees", address, wrong), tmp_path
    )
    output = result.stdout + result.stderr
    assert 'run "agrees"... pass' in output, output[-3000:]
    assert 'run "disagrees"... fail' in output, output[-3000:]
    assert (
        f"The GPU instance catalog says {group.instance_type} has {expected} EFA interfaces, but EC2 reports {wrong}"
    ) in " ".join(output.split())
    assert "1 passed, 1 failed" in output


def _addon_run(name: str, data_address: str, version: str, instance_type: str, efa_count: int) -> str:
    return f'''
run "{name}" {{
  command = plan
  override_data {{
    target = {data_address}
    values = {{ version = "{version}" }}
  }}
  override_data {{
    target = {instance_type}
    values = {{ efa_maximum_interfaces = {efa_count} }}
  }}
}}
'''


def test_an_old_default_mountpoint_addon_fails_the_plan(synthesized, terraform, tmp_path):
    stack = synthesized.stack("g6-validation", "cluster")
    data_id, _ = by_path(
        stack, "aws_eks_addon_version", "addon-aws-mountpoint-s3-csi-driver/default-version", section="data"
    )
    address = f"data.aws_eks_addon_version.{data_id}"
    group = synthesized.configs["g6-validation"].cluster.gpu_node_groups[0]
    type_id, _ = by_path(stack, "aws_ec2_instance_type", f"gpu-{group.name}/instance-type", section="data")
    facts = (f"data.aws_ec2_instance_type.{type_id}", CATALOG[group.instance_type].max_efa_interfaces)
    result = terraform.test(
        stack,
        MOCKS
        + _addon_run("current", address, "v2.10.0-eksbuild.1", *facts)
        + _addon_run("old", address, "v2.7.3-eksbuild.2", *facts),
        tmp_path,
    )
    output = result.stdout + result.stderr
    assert 'run "current"... pass' in output and 'run "old"... fail' in output, output[-3000:]
    assert "older than 2.8.0" in " ".join(output.split())
