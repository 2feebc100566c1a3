"""Same driver after repair, and the upgrade path (docs/operations.md, Node images and upgrades):
every shipped profile pins one EKS AL2023 AMI release for its managed groups and the matching
Karpenter alias; a control-plane minor bump moves every group, pinned ones only with a release of
the new minor, unpinned ones to the newest release of it. Walked on synthesized layers."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from unittest import mock

import pytest

from profiles import ProfileError, available_profiles, load_profile, validate_profile
from profiles.cuda import AMI_DRIVERS, ami_driver
from profiles.loader import PROFILES_DIR, parse_profile_text
from tests.cases import TEST_SECRETS
from tests.synth_helpers import resources

SHIPPED_PROFILES = tuple(available_profiles())
# awslabs/amazon-eks-ami CHANGELOG.md, "AMI Release v20260714": the release version of each minor.
NEXT_MINOR_RELEASE = "1.36.2-20260714"


def document(profile: str) -> dict:
    path = PROFILES_DIR / f"{profile}.yaml"
    return parse_profile_text(path.read_bytes(), path.stem)


def synthesized_layers(config, tmp_path: Path) -> dict[str, dict]:
    import json

    from stacks import LAYERS
    from stacks.platform import synthesize

    with mock.patch.dict(os.environ, TEST_SECRETS):
        synthesize(config, str(tmp_path / "out"), state_dir=tmp_path / "state")
    return {layer: json.loads((tmp_path / "out" / "stacks" / layer / "cdk.tf.json").read_text()) for layer in LAYERS}


def node_groups(layers: dict) -> list[dict]:
    return list(resources(layers["cluster"], "aws_eks_node_group").values())


def node_class_aliases(layers: dict) -> set[str]:
    found = set()
    for body in resources(layers["workloads"], "kubernetes_manifest").values():
        manifest = body["manifest"]
        if manifest.get("kind") == "EC2NodeClass":
            found |= {term["alias"] for term in manifest["spec"]["amiSelectorTerms"]}
    return found


@pytest.mark.parametrize("profile", SHIPPED_PROFILES)
def test_every_shipped_profile_pins_a_recorded_release_of_its_minor(profile):
    cluster = load_profile(profile).cluster
    release = cluster.ami_release_version
    assert release is not None, f"{profile} lets its nodes take whatever AMI is newest when they launch"
    assert release.startswith(f"{cluster.kubernetes_version}.")
    assert release.rsplit("-", 1)[1] in AMI_DRIVERS, "its driver is recorded, so the CUDA check judges it"
    assert ami_driver(release, cluster.kubernetes_version) is not None
    assert cluster.karpenter_ami_alias == f"al2023@v{release.rsplit('-', 1)[1]}"


def test_the_shipped_pins_agree():
    """One release across the shipped profiles: a tested combination, upgraded together."""
    assert len({load_profile(p).cluster.ami_release_version for p in SHIPPED_PROFILES}) == 1


def test_a_minor_bump_without_a_new_release_is_refused_naming_both_fields():
    doc = document("p5-training")
    doc["cluster"]["kubernetes_version"] = "1.36"
    with pytest.raises(ProfileError) as refused:
        validate_profile(doc)
    text = str(refused.value)
    assert "cluster.ami_release_version" in text and "1.35.6-20260714" in text
    assert "the cluster runs 1.36" in text and "a 1.36.N-YYYYMMDD release, or unset" in text


def test_a_pinned_minor_bump_moves_the_control_plane_every_group_and_karpenter(synthesized, tmp_path):
    before = synthesized.stacks["gpu-validation"]
    doc = document("gpu-validation")
    doc["cluster"]["kubernetes_version"] = "1.36"
    doc["cluster"]["ami_release_version"] = NEXT_MINOR_RELEASE
    after = synthesized_layers(validate_profile(doc), tmp_path)
    (cluster_key, control_plane) = next(iter(resources(after["cluster"], "aws_eks_cluster").items()))
    assert control_plane["version"] == "1.36"
    old_groups = {g["node_group_name"]: g for g in node_groups(before)}
    for group in node_groups(after):
        old = old_groups[group["node_group_name"]]
        assert (old["version"], old["release_version"]) == ("1.35", "1.35.6-20260714")
        assert (group["version"], group["release_version"]) == ("1.36", NEXT_MINOR_RELEASE)
        # Terraform updates the control plane first: the group reads the cluster's name from it.
        assert f"aws_eks_cluster.{cluster_key}" in group["cluster_name"]
    assert node_class_aliases(before) == {"al2023@v20260714"}
    # The same date's AMI of the new minor: Karpenter resolves the alias for the cluster's version,
    # so its nodes drift to it (GPU nodes once they are empty: their disruption budget).
    assert node_class_aliases(after) == {"al2023@v20260714"}


def test_an_unpinned_profile_moves_its_groups_to_the_new_minors_newest_release(tmp_path):
    doc = copy.deepcopy(document("gpu-validation"))
    del doc["cluster"]["ami_release_version"]
    doc["cluster"]["kubernetes_version"] = "1.36"
    after = synthesized_layers(validate_profile(doc), tmp_path)
    for group in node_groups(after):
        assert group["version"] == "1.36", "without it, the groups would stay on the old minor"
        assert "release_version" not in group, "EKS picks the newest release of the version"
    assert node_class_aliases(after) == {"al2023@latest"}
