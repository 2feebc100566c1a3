"""A GPU node group's AMI type follows its instance type's CPU architecture: the AL2023 NVIDIA AMI
for x86_64, its ARM variant for Grace-based (arm64) types such as P6e-GB200 (docs/gb200.md)."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import pytest

import profiles.node_groups
from profiles import load_profile
from profiles.catalog import CATALOG
from profiles.versions import GPU_AMI_TYPES
from tests.cases import FIXTURE_PROFILES


def test_every_catalog_architecture_has_a_gpu_ami_type():
    assert {entry.architecture for entry in CATALOG.values()} <= set(GPU_AMI_TYPES)
    assert GPU_AMI_TYPES == {"x86_64": "AL2023_x86_64_NVIDIA", "arm64": "AL2023_ARM_64_NVIDIA"}


def synthesized_ami_type(architecture: str, monkeypatch: pytest.MonkeyPatch) -> str:
    from cdktf import App, TerraformStack, Testing

    from components.node_groups import GpuNodeGroup, GpuNodeGroupProps, NodeGroupWiring

    (cfg,) = load_profile(str(FIXTURE_PROFILES / "capacity-block.yaml")).cluster.gpu_node_groups
    entry = dataclasses.replace(CATALOG[cfg.instance_type], architecture=architecture)
    monkeypatch.setattr(profiles.node_groups, "lookup", lambda name: entry)
    stack = TerraformStack(App(), "arch")
    GpuNodeGroup(
        stack,
        "gpu",
        props=GpuNodeGroupProps(
            wiring=NodeGroupWiring(
                cluster_name="c", node_role_arn="arn:aws:iam::1:role/n", node_security_group_id="sg"
            ),
            subnet_id="subnet-1",
            availability_zone="use1-az6",
            config=cfg,
            efa_security_group_id="sg-efa",
            now=datetime(2099, 2, 28, tzinfo=UTC),
        ),
    )
    (group,) = json.loads(Testing.synth(stack))["resource"]["aws_eks_node_group"].values()
    return group["ami_type"]


@pytest.mark.parametrize(("architecture", "ami_type"), sorted(GPU_AMI_TYPES.items()))
def test_the_node_groups_ami_type_follows_the_architecture(architecture, ami_type, monkeypatch):
    assert synthesized_ami_type(architecture, monkeypatch) == ami_type
