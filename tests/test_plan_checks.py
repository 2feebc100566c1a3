"""Plan-time checks, exercised offline with `terraform test` and a mocked AWS provider:
a catalog entry that disagrees with what EC2 reports must fail the plan with a clear message."""

from __future__ import annotations

import pytest

from profiles.catalog import CATALOG
from tests.cases import FIXTURES, SHIPPED
from tests.synth_helpers import by_path

# Left out of `make check` (`terraform test` runs with a mocked aws provider); `make test` runs it.
pytestmark = pytest.mark.slow

# Every GPU type is offered in every zone unless a run says otherwise.
OFFERED = ", ".join(f'"{name}"' for name in sorted(CATALOG))
MOCKS = """
mock_provider "aws" {
  mock_data "aws_ec2_instance_type_offerings" {
    defaults = { instance_types = [OFFERED], locations = [] }
  }
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
""".replace("OFFERED", OFFERED)


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


# capacity-block names its zones by ID: the offerings are asked for by zone ID.
@pytest.mark.parametrize("profile", [*SHIPPED, *(p for p in FIXTURES if p == "capacity-block")])
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
    stack = synthesized.stack("gpu-validation", "cluster")
    data_id, _ = by_path(
        stack, "aws_eks_addon_version", "addon-aws-mountpoint-s3-csi-driver/default-version", section="data"
    )
    address = f"data.aws_eks_addon_version.{data_id}"
    group = synthesized.configs["gpu-validation"].cluster.gpu_node_groups[0]
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


@pytest.mark.parametrize("profile", SHIPPED)
def test_a_type_not_offered_in_the_gpu_zone_fails_the_plan_naming_the_zones_that_offer_it(
    synthesized, terraform, tmp_path, profile
):
    stack = synthesized.stack(profile, "cluster")
    config = synthesized.configs[profile]
    group = config.cluster.gpu_node_groups[0]
    data = "aws_ec2_instance_type_offerings"
    in_zone, _ = by_path(stack, data, f"gpu-{group.name}/offered-in-zone", section="data")
    anywhere, _ = by_path(stack, data, f"gpu-{group.name}/offered-in-region", section="data")
    type_id, _ = by_path(stack, "aws_ec2_instance_type", f"gpu-{group.name}/instance-type", section="data")
    efa = CATALOG[group.instance_type].max_efa_interfaces
    elsewhere = sorted(zone for zone in config.cluster.vpc.availability_zones if zone != config.cluster.vpc.gpu_az)
    listed = ", ".join(f'"{zone}"' for zone in [*elsewhere, *elsewhere])  # EC2 lists a zone once per type

    def run(name: str, offered: bool, listed: str = listed) -> str:
        offered_types = f'"{group.instance_type}"' if offered else ""
        return f"""
run "{name}" {{
  command = plan
  override_data {{
    target = data.aws_ec2_instance_type.{type_id}
    values = {{ efa_maximum_interfaces = {efa} }}
  }}
  override_data {{
    target = data.{data}.{in_zone}
    values = {{ instance_types = [{offered_types}] }}
  }}
  override_data {{
    target = data.{data}.{anywhere}
    values = {{ locations = [{listed}], instance_types = ["{group.instance_type}"] }}
  }}
}}
"""

    result = terraform.test(stack, MOCKS + run("offered", True) + run("not_offered", False), tmp_path / "zone")
    output = " ".join((result.stdout + result.stderr).split())
    assert 'run "offered"... pass' in output and 'run "not_offered"... fail' in output, output[-3000:]
    names = "" if config.cluster.vpc.zone_ids else " (zone names differ per account)"
    assert (
        f"EC2 does not offer {group.instance_type} in {config.cluster.vpc.gpu_az} in this account{names}; "
        f"it is offered in: {', '.join(elsewhere)}."
    ) in output
    if profile == SHIPPED[0]:  # a run after a failed one is skipped: the region case plans apart
        result = terraform.test(stack, MOCKS + run("nowhere", False, listed=""), tmp_path / "region")
        output = " ".join((result.stdout + result.stderr).split())
        assert 'run "nowhere"... fail' in output and "it is offered in: no zone of this region;" in output


def test_a_listed_admin_who_deployed_first_fails_the_plan_by_name(synthesized, terraform, tmp_path):
    stack = synthesized.stack("odcr", "cluster")
    config = synthesized.configs["odcr"]
    (admin,) = config.cluster.admin_principal_arns
    session, _ = by_path(stack, "aws_iam_session_context", "eks/caller-session", section="data")
    types = {
        by_path(stack, "aws_ec2_instance_type", f"gpu-{g.name}/instance-type", section="data")[0]: g.instance_type
        for g in config.cluster.gpu_node_groups
    }
    facts = "".join(
        f"""
  override_data {{
    target = data.aws_ec2_instance_type.{data_id}
    values = {{ efa_maximum_interfaces = {CATALOG[instance_type].max_efa_interfaces} }}
  }}"""
        for data_id, instance_type in types.items()
    )

    def run(name: str, deployer: str) -> str:
        return f"""
run "{name}" {{
  command = plan{facts}
  override_data {{
    target = data.aws_iam_session_context.{session}
    values = {{ issuer_arn = "{deployer}" }}
  }}
}}
"""

    result = terraform.test(stack, MOCKS + run("someone_else", "arn:aws:iam::123456789012:role/ci"), tmp_path / "ok")
    output = " ".join((result.stdout + result.stderr).split())
    assert 'run "someone_else"... pass' in output, output[-3000:]
    result = terraform.test(stack, MOCKS + run("the_admin", admin), tmp_path / "same")
    output = " ".join((result.stdout + result.stderr).split())
    assert 'run "the_admin"... fail' in output
    assert f"{admin} deployed this cluster first and already has an access entry" in output


def test_a_local_zone_the_account_did_not_opt_in_to_fails_the_plan_with_the_opt_in_command(
    synthesized, terraform, tmp_path
):
    """The gb200 fixture's GPU subnet is in the Dallas Local Zone (tests/test_local_zones.py): the
    plan reads the zone (DescribeAvailabilityZones, all zones) and stops unless it is a Local Zone
    this account opted in to, naming the zone group to opt in to."""
    stack = synthesized.stack("gb200", "cluster")
    (group,) = synthesized.configs["gb200"].cluster.gpu_node_groups
    entry = CATALOG[group.instance_type]
    zone_id, _ = by_path(stack, "aws_availability_zone", "network/local-use1-dfw2-az1-zone", section="data")
    type_id, _ = by_path(stack, "aws_ec2_instance_type", f"gpu-{group.name}/instance-type", section="data")

    def run(name: str, zone_type: str, opt_in: str) -> str:
        return f"""
run "{name}" {{
  command = plan
  override_data {{
    target = data.aws_ec2_instance_type.{type_id}
    values = {{ efa_maximum_interfaces = {entry.efa_interfaces}, maximum_network_cards = {entry.network_cards} }}
  }}
  override_data {{
    target = data.aws_availability_zone.{zone_id}
    values = {{ zone_type = "{zone_type}", opt_in_status = "{opt_in}", group_name = "us-east-1-dfw-2" }}
  }}
}}
"""

    result = terraform.test(stack, MOCKS + run("opted_in", "local-zone", "opted-in"), tmp_path / "ok")
    output = " ".join((result.stdout + result.stderr).split())
    assert 'run "opted_in"... pass' in output, output[-3000:]
    result = terraform.test(stack, MOCKS + run("not_opted_in", "local-zone", "not-opted-in"), tmp_path / "no")
    output = " ".join((result.stdout + result.stderr).split())
    assert 'run "not_opted_in"... fail' in output, output[-3000:]
    assert (
        "cluster.vpc.gpu_local_zone use1-dfw2-az1 is a local-zone whose opt-in status in this account is "
        "not-opted-in: it must be a Local Zone this account opted in to (aws ec2 modify-availability-zone-group "
        "--group-name us-east-1-dfw-2 --opt-in-status opted-in)."
    ) in output
    result = terraform.test(stack, MOCKS + run("an_az", "availability-zone", "opt-in-not-required"), tmp_path / "az")
    assert 'run "an_az"... fail' in " ".join((result.stdout + result.stderr).split())
