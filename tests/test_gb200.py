"""P6e-GB200 UltraServers in a profile (docs/gb200.md): the type is sold only as UltraServers through
Capacity Blocks, one block per UltraServer (u-p6e-gb200x36: 9 instances, u-p6e-gb200x72: 18), and its
NVLink reaches across nodes only through IMEX, which the platform runs as the DRA driver's
ComputeDomains in GPU Operator DRA mode. The gb200 fixture is such a profile; each rule is shown
failing on a change of it."""

from __future__ import annotations

import pytest

from profiles import load_profile, validate_profile
from profiles.capacity import CapacityBlock
from profiles.loader import parse_profile_text
from tests.cases import FIXTURE_PROFILES
from tests.test_profiles import DELETE, changed, problems

GB200 = FIXTURE_PROFILES / "gb200.yaml"
# As the loader reads it (times stay text).
BASE = parse_profile_text(GB200.read_bytes(), "gb200")
GROUP = "cluster__gpu_node_groups__0"


def test_the_fixture_is_one_ultraserver_block_in_dra_mode():
    config = load_profile(str(GB200))
    (group,) = config.cluster.gpu_node_groups
    assert group.instance_type == "p6e-gb200.36xlarge"
    assert isinstance(group.capacity, CapacityBlock)
    assert (group.capacity.ultraserver_type, group.capacity.instance_count, group.max_size) == ("u-p6e-gb200x36", 9, 9)
    assert config.addons.gpu_operator.dra  # type: ignore[attr-defined]


def reported(doc: dict, field: str, *words: str) -> None:
    found = [line for line in problems(doc) if line.startswith(f"{field}: ")]
    assert found, problems(doc)
    assert all(word in found[0] for word in words), found[0]


def test_gb200_is_refused_outside_an_ultraserver_block():
    on_demand = changed(BASE, **{f"{GROUP}__capacity": {"type": "on_demand"}})
    reported(on_demand, "cluster.gpu_node_groups.0.capacity", "sold only as UltraServers", "u-p6e-gb200x36")
    instances = changed(BASE, **{f"{GROUP}__capacity__ultraserver_type": DELETE})
    reported(instances, "cluster.gpu_node_groups.0.capacity", "sold only as UltraServers")


@pytest.mark.parametrize(
    ("ultraserver", "count", "words"),
    [
        ("u-p6e-gb200x72", 9, ["one u-p6e-gb200x72, which has 18 instances", "allowed: 18"]),
        ("u-p6e-gb200x36", 18, ["one u-p6e-gb200x36, which has 9 instances", "allowed: 9"]),
    ],
)
def test_an_ultraserver_block_holds_exactly_its_ultraservers_instances(ultraserver, count, words):
    doc = changed(
        BASE,
        **{
            f"{GROUP}__capacity__ultraserver_type": ultraserver,
            f"{GROUP}__capacity__instance_count": count,
            f"{GROUP}__max_size": min(count, 9),
            f"{GROUP}__desired_size": min(count, 9),
        },
    )
    reported(doc, "cluster.gpu_node_groups.0.capacity.instance_count", *words)


def test_the_group_stays_within_the_ultraserver():
    doc = changed(BASE, **{f"{GROUP}__max_size": 10})
    reported(
        doc,
        "cluster.gpu_node_groups.0.max_size",
        "larger than its Capacity Block",
        "at most capacity.instance_count (9)",
    )


def test_an_x72_block_holds_18_nodes():
    doc = changed(
        BASE,
        **{
            f"{GROUP}__capacity__ultraserver_type": "u-p6e-gb200x72",
            f"{GROUP}__capacity__instance_count": 18,
            f"{GROUP}__max_size": 18,
        },
    )
    (group,) = validate_profile(doc).cluster.gpu_node_groups
    assert group.max_size == 18


def test_an_ultraserver_type_on_a_type_sold_as_single_instances_is_refused():
    doc = changed(
        BASE,
        **{f"{GROUP}__instance_type": "p5.48xlarge", f"{GROUP}__capacity__instance_count": 9},
    )
    reported(
        doc,
        "cluster.gpu_node_groups.0.capacity.ultraserver_type",
        "not an UltraServer type of p5.48xlarge",
        "sold as single instances",
    )


@pytest.mark.parametrize("gpu_operator", [{"dra": False}, {"enabled": False}], ids=["device-plugin", "no-operator"])
def test_gb200_needs_the_dra_drivers_compute_domains(gpu_operator):
    doc = changed(BASE, addons__gpu_operator=gpu_operator)
    reported(
        doc,
        "cluster.gpu_node_groups.0.instance_type",
        "node group gb200-nvl36",
        "IMEX",
        "allowed: with DRA mode on (addons.gpu_operator: {enabled: true, dra: true})",
    )
