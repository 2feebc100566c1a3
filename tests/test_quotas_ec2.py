"""The EC2 vCPU quotas a profile needs (make quotas): counted from the profile's largest sizes with
each type's vCPUs as EC2 describes it (profiles/aws_facts.json), per quota family and market."""

from __future__ import annotations

import pytest

from profiles import validate_profile
from profiles.aws_facts import instance_types, vcpus
from profiles.catalog import CATALOG
from profiles.quotas import QUOTA_CODES, family, quota_needs
from tests.cases import SHIPPED, profile_config
from tests.test_profiles import mutated


def test_the_catalog_and_ec2_agree_on_vcpus():
    for name, entry in CATALOG.items():
        if entry.documented_at:  # read from AWS's documentation: the recorded data lacks the type
            assert name not in instance_types(), name
            continue
        assert entry.vcpus == vcpus(name), name


def test_families_and_quota_codes():
    assert (family("p5.48xlarge"), family("g6e.xlarge"), family("m6i.2xlarge"), family("c7i.large")) == (
        "P",
        "G",
        "Standard",
        "Standard",
    )
    # Service Quotas codes of EC2's vCPU quotas: one per family and market, none shared.
    assert len({code for code, _ in QUOTA_CODES.values()}) == len(QUOTA_CODES) == 6


@pytest.mark.parametrize("profile", SHIPPED)
def test_every_node_the_profile_can_run_is_counted(profile):
    config = profile_config(profile)
    needs = {(n.market, n.family): n.vcpus for n in quota_needs(config)}
    system = config.cluster.system_node_group
    expected_p = sum(
        g.max_size * vcpus(g.instance_type) for g in config.cluster.gpu_node_groups if family(g.instance_type) == "P"
    )
    if expected_p:
        assert needs[("on-demand", "P")] == expected_p
    assert needs[("on-demand", "Standard")] >= system.max_size * max(vcpus(t) for t in system.instance_types)


def test_p5_training_needs_768_p_vcpus():
    """Four p5.48xlarge at 192 vCPUs each: what a new account (often 0) must request first."""
    (p,) = [n for n in quota_needs(profile_config("p5-training")) if n.family == "P"]
    assert (p.code, p.vcpus) == ("L-417A185B", 768)


def test_spot_and_capacity_blocks_are_counted_where_ec2_counts_them():
    spot = validate_profile(mutated(workloads__cpu_pool__capacity_types=["spot", "on-demand"]))
    markets = {(n.market, n.family) for n in quota_needs(spot)}
    assert ("spot", "Standard") in markets and ("on-demand", "Standard") in markets
    blocks = profile_config("capacity-block")
    reasons = [reason for n in quota_needs(blocks) for reason in n.reasons]
    assert not any(reason.startswith(blocks.cluster.gpu_node_groups[0].name) for reason in reasons)


def test_make_quotas_prints_each_quota_and_the_commands(capsys):
    from main import main

    assert main(["quotas", "--profile", "p5-training"]) == 0
    out = capsys.readouterr().out
    assert "L-417A185B  Running On-Demand P instances: 768 vCPUs" in out
    assert "aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-417A185B" in out
