"""The recorded AWS facts (profiles/aws_facts.json) match their sources as installed here, and
profiles that name a region, zone or instance type that does not exist are refused."""

from __future__ import annotations

import json

from profiles import load_profile, validate_profile
from profiles.aws_facts import FACTS
from tests.test_profiles import assert_reported, mutated


def test_the_recorded_facts_match_botocore_and_moto():
    import importlib.util
    import sys
    from pathlib import Path

    script = Path(__file__).parents[1] / "scripts" / "record_aws_facts.py"
    spec = importlib.util.spec_from_file_location("record", script)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["record"] = module
    spec.loader.exec_module(module)
    recorded = json.loads(FACTS.read_text())
    assert recorded == json.loads(json.dumps(module.collect())), "re-run scripts/record_aws_facts.py"
    assert "us-west-2" in recorded["regions"] and "p5.48xlarge" in recorded["instance_types"]


def test_names_that_do_not_exist_are_refused_with_what_exists():
    assert_reported(mutated(region="us-west-3"), "region", ["'us-west-3'", "did you mean 'us-west-2'?", "eu-west-1"])
    assert_reported(
        mutated(cluster__system_node_group__instance_types=["m6i.xlarg"]),
        "cluster.system_node_group.instance_types",
        ["'m6i.xlarg'", "did you mean 'm6i.xlarge'?"],
    )
    assert_reported(
        mutated(cluster__vpc__availability_zones=["us-west-2a", "us-west-2z"]),
        "cluster.vpc.availability_zones.1",
        ["'us-west-2z'", "us-west-2a, us-west-2b, us-west-2c, us-west-2d"],
    )


def test_zone_ids_are_accepted_and_kept_as_the_profile_names_them():
    """A zone ID (the same physical zone in every account) is as good as a zone name; the GPU zone
    defaults to the first, named the same way."""
    config = validate_profile(mutated(cluster__vpc__availability_zones=["usw2-az2", "usw2-az1"]))
    assert config.cluster.vpc.zone_ids and config.cluster.vpc.gpu_az == "usw2-az2"
    assert not load_profile("gpu-validation").cluster.vpc.zone_ids


def test_a_zone_named_the_other_way_is_told_which_way_to_name_it():
    """The VPC names its zones by ID; a reservation's zone given by name (or a Local Zone's ID)
    is refused with the form to use and the zone that would do."""
    from profiles.loader import parse_profile_text
    from tests.cases import FIXTURE_PROFILES

    block = parse_profile_text((FIXTURE_PROFILES / "capacity-block.yaml").read_bytes(), "capacity-block")
    block["cluster"]["gpu_node_groups"][0]["capacity"]["availability_zone"] = "us-east-1b"
    assert_reported(
        block,
        "cluster.gpu_node_groups.0.capacity.availability_zone",
        [
            "'us-east-1b'",
            "uses zone IDs: name it the same way",
            "allowed: use1-az6 (cluster.vpc.gpu_availability_zone)",
        ],
    )
    assert_reported(
        mutated(cluster__vpc__availability_zones=["usw2-az1", "usw2-lax1-az1"]),
        "cluster.vpc.availability_zones.1",
        ["'usw2-lax1-az1'", "not a zone ID of region us-west-2", "usw2-az1, usw2-az2"],
    )
    assert_reported(
        mutated(cluster__vpc__availability_zones=["us-west-2a", "us-west-2q"]),
        "cluster.vpc.availability_zones.1",
        ["(or, all of them so, zone IDs: usw2-az1"],
    )
