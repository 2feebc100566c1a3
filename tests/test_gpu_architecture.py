"""A GPU node group's AMI type follows its instance type's CPU architecture: the AL2023 NVIDIA AMI
for x86_64, its ARM variant for Grace-based (arm64) types such as P6e-GB200 (docs/gb200.md)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

import profiles.node_groups
from profiles import load_profile
from profiles.catalog import CATALOG
from profiles.versions import GPU_AMI_TYPES
from tests.test_capacity_blocks import BLOCK_PROFILE, synthesized_group


def test_every_catalog_architecture_has_a_gpu_ami_type():
    assert {entry.architecture for entry in CATALOG.values()} <= set(GPU_AMI_TYPES)
    assert GPU_AMI_TYPES == {"x86_64": "AL2023_x86_64_NVIDIA", "arm64": "AL2023_ARM_64_NVIDIA"}


def synthesized_ami_type(architecture: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The Capacity Block fixture's GPU node group, synthesized with its type's architecture set."""
    (cfg,) = load_profile(str(BLOCK_PROFILE)).cluster.gpu_node_groups
    entry = dataclasses.replace(CATALOG[cfg.instance_type], architecture=architecture)
    monkeypatch.setattr(profiles.node_groups, "lookup", lambda name: entry)
    (group,) = synthesized_group(datetime(2099, 2, 28, tzinfo=UTC))["aws_eks_node_group"].values()
    return group["ami_type"]


@pytest.mark.parametrize(("architecture", "ami_type"), sorted(GPU_AMI_TYPES.items()))
def test_the_node_groups_ami_type_follows_the_architecture(architecture, ami_type, monkeypatch):
    assert synthesized_ami_type(architecture, monkeypatch) == ami_type
