"""Karpenter's reserved-capacity path: a pool with capacity type `reserved` selects the profile's
reservations on its EC2NodeClass (capacityReservationSelectorTerms), its other capacity types are
its fallback, and a pool with nothing to select is refused with the field, the value and the fix.
The selector terms are checked against the EC2NodeClass CRD of the pinned Karpenter, recorded in
tests/fixtures/karpenter/ with its source."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from addons.karpenter.pools import GPU_NODE_CLASS, GPU_POOL, KarpenterPoolsProps, karpenter_objects
from profiles import validate_profile
from tests.test_profiles import assert_reported, mutated, problems

RECORDED = json.loads(
    (
        Path(__file__).parent / "fixtures" / "karpenter" / "karpenter-v1.14.1-capacity-reservation-selector-terms.json"
    ).read_text()
)
BLOCK = "cr-0123456789abcdef0"


def reserved_gpu_pool(capacity_types: list[str], reservations: list[dict]) -> dict:
    return mutated(
        workloads__gpu_pool={"capacity_types": capacity_types, "capacity_reservations": reservations},
        addons__jupyterhub={"enabled": False},
    )


def objects(doc: dict) -> dict[tuple[str, str], dict]:
    config = validate_profile(doc)
    found = karpenter_objects(
        KarpenterPoolsProps(
            cluster_name=config.name,
            node_role_name="node-role",
            node_security_group_id="sg-1",
            cpu=config.workloads.cpu_pool,
            gpu=config.workloads.gpu_pool,
        )
    )
    return {(o["kind"], o["metadata"]["name"]): o for o in found}


def check_terms(terms: list[dict]) -> None:
    """The recorded CRD's OpenAPI schema, then its two CEL rules (written out here as the API server evaluates them)."""
    jsonschema.validate(terms, RECORDED["schema"])
    assert all("tags" in t or "id" in t or "instanceMatchCriteria" in t for t in terms)
    # The CRD's rule reads `!self.all(...)`: it refuses only a list in which EVERY term mixes id with others.
    assert not all("id" in t and ({"tags", "ownerID", "instanceMatchCriteria"} & set(t)) for t in terms)
    assert not any("id" in t and len(t) > 1 for t in terms)  # stricter than the CRD: never mixed


@pytest.mark.parametrize(
    ("capacity_types", "fallback"),
    [(["reserved"], set()), (["reserved", "on-demand"], {"on-demand"})],
    ids=["wait-for-the-reservation", "fall-back-to-on-demand"],
)
def test_a_reserved_gpu_pool_selects_its_reservations_and_falls_back_as_told(capacity_types, fallback):
    found = objects(reserved_gpu_pool(capacity_types, [{"id": BLOCK}, {"tags": {"team": "ml"}}]))
    terms = found[("EC2NodeClass", GPU_NODE_CLASS)]["spec"]["capacityReservationSelectorTerms"]
    assert terms == [{"id": BLOCK}, {"tags": {"team": "ml"}}]
    check_terms(terms)
    requirements = found[("NodePool", GPU_POOL)]["spec"]["template"]["spec"]["requirements"]
    (capacity,) = [r for r in requirements if r["key"] == "karpenter.sh/capacity-type"]
    assert set(capacity["values"]) == {"reserved", *fallback}
    # The CPU pool's class selects no reservation: it buys none.
    assert "capacityReservationSelectorTerms" not in found[("EC2NodeClass", "default")]["spec"]


def test_pools_without_reserved_capacity_select_no_reservation():
    found = objects(mutated(addons__jupyterhub={"enabled": False}))
    assert not [o for o in found.values() if "capacityReservationSelectorTerms" in o["spec"]]


def test_a_reserved_pool_with_no_reservation_to_select_is_refused():
    assert_reported(
        reserved_gpu_pool(["reserved"], []),
        "workloads.gpu_pool.capacity_reservations",
        ["capacity type reserved needs the reservations", "got []", "allowed: a list of {id: cr-...} or {tags: {...}}"],
    )
    assert_reported(
        mutated(workloads__cpu_pool={"capacity_types": ["reserved", "on-demand"]}),
        "workloads.cpu_pool.capacity_reservations",
        ["capacity type reserved needs the reservations"],
    )


def test_reservations_without_the_reserved_capacity_type_are_refused():
    assert_reported(
        reserved_gpu_pool(["on-demand"], [{"id": BLOCK}]),
        "workloads.gpu_pool.capacity_types",
        ["used only with capacity type reserved", "got ['on-demand']", "allowed: add reserved"],
    )


@pytest.mark.parametrize(
    ("selector", "field", "words"),
    [
        ({"id": BLOCK, "tags": {"a": "b"}}, "id", ["exactly one of id or tags", "allowed: id: cr-..., or tags"]),
        ({}, "id", ["exactly one of id or tags"]),
        ({"id": "cr-123"}, "id", ["not a capacity reservation id", "got 'cr-123'", "cr- followed by 17 hex digits"]),
        ({"tags": {"team": ""}}, "tags", ["empty tag keys or values select nothing"]),
    ],
)
def test_a_bad_reservation_selector_names_the_field_the_value_and_what_is_allowed(selector, field, words):
    assert_reported(
        reserved_gpu_pool(["reserved"], [selector]), f"workloads.gpu_pool.capacity_reservations.0.{field}", words
    )


def test_every_id_the_profile_accepts_matches_the_crds_pattern():
    pattern = RECORDED["schema"]["items"]["properties"]["id"]["pattern"]
    assert re.fullmatch(pattern.strip("^$"), BLOCK)


def test_a_karpenter_too_old_for_reservations_is_refused():
    doc = reserved_gpu_pool(["reserved"], [{"id": BLOCK}])
    doc["addons"]["karpenter"] = {"chart_version": "1.2.0"}
    assert any("from 1.3" in line and "1.2.0" in line for line in problems(doc))
