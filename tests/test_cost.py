"""make cost: the profile's hourly cost from the AWS Price List API, with a fake aws answering in
the API's own shape (get-products returns one JSON document per product, as a string, in
PriceList; on-demand prices sit in terms.OnDemand.*.priceDimensions.*.pricePerUnit.USD). The
prices below are test inputs, not claims about AWS's prices."""

from __future__ import annotations

import json
import subprocess

import pytest

from operate.cost import EKS_CLUSTER_HOURLY_USD, PriceUnavailable, estimate, report
from profiles import load_profile
from tests.cases import FIXTURE_PROFILES

PRICES = {"m6i.xlarge": "0.1920000000", "g6.8xlarge": "2.0144000000", "p5.48xlarge": "55.0400000000"}
NAT = "0.0450000000"


def product(usd: str) -> str:
    """One product as the API returns it: a JSON string, with a zero-priced and a non-hourly
    dimension beside the hourly one (reservation terms and fees exist in real answers too)."""
    return json.dumps(
        {
            "product": {"attributes": {}},
            "terms": {
                "OnDemand": {
                    "SKU.JRTCKXETXF": {
                        "priceDimensions": {
                            "SKU.JRTCKXETXF.A": {"unit": "Quantity", "pricePerUnit": {"USD": "5.0"}},
                            "SKU.JRTCKXETXF.B": {"unit": "Hrs", "pricePerUnit": {"USD": "0.0000000000"}},
                            "SKU.JRTCKXETXF.C": {"unit": "Hrs", "pricePerUnit": {"USD": usd}},
                        }
                    }
                }
            },
        }
    )


class FakeAws:
    def __init__(self, *, fail: bool = False):
        self.fail = fail
        self.calls: list[list[str]] = []

    def __call__(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(args)
        if self.fail:
            return subprocess.CompletedProcess(args, 255, "", "Unable to locate credentials.")
        filters = dict(term.split(",Field=")[1].split(",Value=") for term in args if term.startswith("Type=TERM_MATCH"))
        assert args[:6] == ["pricing", "get-products", "--region", "us-east-1", "--service-code", "AmazonEC2"]
        if filters.get("productFamily") == "NAT Gateway":
            found = [product(NAT)]
        else:
            assert (filters["operatingSystem"], filters["tenancy"], filters["preInstalledSw"]) == (
                "Linux",
                "Shared",
                "NA",
            )
            assert (filters["capacitystatus"], filters["marketoption"], filters["operation"]) == (
                "Used",
                "OnDemand",
                "RunInstances",
            )
            found = [product(PRICES[filters["instanceType"]])] if filters["instanceType"] in PRICES else []
        return subprocess.CompletedProcess(args, 0, json.dumps({"PriceList": found, "FormatVersion": "aws_v1"}), "")


def test_the_default_profile_is_priced_node_by_node():
    config = load_profile("gpu-validation")
    aws = FakeAws()
    cost = estimate(config, aws)
    system, gpus = config.cluster.system_node_group, config.cluster.gpu_node_groups[0]
    expected = system.desired_size * 0.192 + gpus.desired_size * 2.0144 + 0.045 + EKS_CLUSTER_HOURLY_USD
    assert cost.hourly_usd == pytest.approx(expected)
    assert cost.hourly_max_usd == pytest.approx(expected + (gpus.max_size - gpus.desired_size) * 2.0144)
    assert all(f"regionCode,Value={config.region}" in " ".join(call) for call in aws.calls)
    text = "\n".join(report(config, cost))
    assert f"{cost.hourly_usd:.2f}/hour" in text and "Not included:" in text and "FSx for Lustre" in text


def test_a_capacity_block_is_named_not_priced_per_hour():
    config = load_profile(str(FIXTURE_PROFILES / "capacity-block.yaml"))
    cost = estimate(config, FakeAws())
    assert not any("p5-block" in line.what for line in cost.running + cost.at_most)
    assert any("p5-block: 2 x p5.48xlarge on a Capacity Block" in item for item in cost.not_priced)


def test_no_price_or_no_credentials_is_an_error_never_a_zero():
    with pytest.raises(PriceUnavailable, match="Unable to locate credentials"):
        estimate(load_profile("gpu-validation"), FakeAws(fail=True))
    config = load_profile(str(FIXTURE_PROFILES / "odcr.yaml"))  # p5en and p6-b300: not in the fake's table
    with pytest.raises(PriceUnavailable, match="no on-demand hourly price"):
        estimate(config, FakeAws())


def test_make_cost_without_credentials_says_what_it_needs(tmp_path):
    import os
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    fake = tmp_path / "aws"
    fake.write_text("#!/bin/sh\necho 'Unable to locate credentials.' >&2\nexit 255\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    ran = subprocess.run(
        [sys.executable, str(root / "main.py"), "cost", "--profile", "gpu-validation"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert ran.returncode == 1 and ran.stdout == ""
    assert "cannot price gpu-validation: Unable to locate credentials." in ran.stderr
    assert "pricing:GetProducts" in ran.stderr


def test_two_different_hourly_prices_are_an_error_not_a_guess():
    from operate.cost import _hourly

    answer = {"PriceList": [product("2.0144000000"), product("2.5000000000")]}
    with pytest.raises(PriceUnavailable, match="several on-demand hourly prices"):
        _hourly(answer)
    assert _hourly({"PriceList": [product("2.0144000000"), product("2.0144000000")]}) == pytest.approx(2.0144)


def test_each_instance_type_is_asked_once_and_a_silent_cli_is_an_error():
    import copy
    from pathlib import Path

    import yaml

    from profiles import validate_profile

    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "profiles" / "gpu-validation.yaml").read_text())
    second = copy.deepcopy(doc["cluster"]["gpu_node_groups"][0]) | {"name": "gpu-two"}
    doc["cluster"]["gpu_node_groups"].append(second)
    aws = FakeAws()
    cost = estimate(validate_profile(doc), aws)
    types = [term for call in aws.calls for term in call if "Field=instanceType" in term]
    assert sorted(types) == sorted(set(types))  # two g6.8xlarge groups, one question
    assert sum("gpu-two" in line.what or "gpu-efa" in line.what for line in cost.running) == 2

    def silent(args: list[str]) -> subprocess.CompletedProcess[str]:
        raise subprocess.TimeoutExpired(["aws", *args], 120)

    with pytest.raises(PriceUnavailable, match="cannot run the AWS CLI"):
        estimate(load_profile("gpu-validation"), silent)
