"""Images are built for the CPU architecture of the nodes that run them: the build layer builds a
P6e-GB200 profile's GPU images on CodeBuild's ARM machines (Grace is arm64; an x86_64 image there
fails with `exec format error`), tags them as arm64 builds, and verify looks for that tag; a profile
whose GPU groups mix architectures names the architecture of each GPU image it builds."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cli.verify import built_image
from profiles import ProfileError
from profiles.built_images import image_architecture
from profiles.loader import parse_profile_text, validate_profile
from profiles.versions import CODEBUILD_IMAGES
from tests.cases import FIXTURE_PROFILES, QUICK

GB200 = parse_profile_text((FIXTURE_PROFILES / "gb200.yaml").read_bytes(), "gb200.yaml")
# A second GPU group of the other architecture (4 L4 GPUs, as many as a GB200 node holds: one pod size for the queues).
G6_GROUP = {"name": "g6", "instance_type": "g6.12xlarge", "min_size": 0, "desired_size": 1, "max_size": 1}


def with_x86_group(doc: dict[str, Any]) -> dict[str, Any]:
    mixed = copy.deepcopy(doc)
    mixed["name"] = "mixed-arch"
    mixed["cluster"]["gpu_node_groups"].append(dict(G6_GROUP))
    return mixed


def problems(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(ProfileError) as refused:
        validate_profile(doc)
    return refused.value.problems


def test_a_gb200_profiles_gpu_image_is_an_arm64_build():
    config = validate_profile(copy.deepcopy(GB200))
    assert image_architecture(config, "nccl-tests") == "arm64"


@pytest.mark.skipif(QUICK, reason="the inner loop synthesizes the default profile only; make test runs it")
def test_the_build_layer_builds_it_on_arm_and_tags_it_so(synthesized):
    (project,) = synthesized.resources("gb200", "build", "aws_codebuild_project").values()
    assert project["environment"]["type"] == "ARM_CONTAINER"
    assert project["environment"]["image"] == CODEBUILD_IMAGES["arm64"]
    tags = synthesized.stack("gb200", "build")["output"]["image_tags"]["value"]
    assert tags["nccl-tests"].endswith("-arm64"), tags
    # The x86_64 profiles' builds are as before: an x86_64 machine, the source's tag.
    for project in synthesized.resources("p5-training", "build", "aws_codebuild_project").values():
        assert (project["environment"]["type"], project["environment"]["image"]) == (
            "LINUX_CONTAINER",
            CODEBUILD_IMAGES["x86_64"],
        )
    assert not any(
        tag.endswith("-arm64")
        for tag in synthesized.stack("p5-training", "build")["output"]["image_tags"]["value"].values()
    )


def test_mixed_architectures_need_each_gpu_image_to_name_its_own():
    (problem,) = problems(with_x86_group(GB200))
    assert problem.startswith("build.reference_implementations.nccl-tests.architecture:"), problem
    assert "x86_64 (g6)" in problem and "arm64 (gb200-nvl36)" in problem and "x86_64 | arm64" in problem
    named = with_x86_group(GB200)
    named["build"]["reference_implementations"]["nccl-tests"]["architecture"] = "x86_64"
    config = validate_profile(named)
    assert image_architecture(config, "nccl-tests") == "x86_64"


def test_an_arm64_build_takes_a_compute_type_codebuild_offers_on_arm():
    doc = copy.deepcopy(GB200)
    doc["build"]["compute_type"] = "BUILD_GENERAL1_XLARGE"
    (problem,) = problems(doc)
    assert problem.startswith("build.compute_type: ") and "nccl-tests for arm64" in problem, problem
    assert "BUILD_GENERAL1_SMALL | BUILD_GENERAL1_LARGE" in problem
    doc["build"]["compute_type"] = "BUILD_GENERAL1_SMALL"
    validate_profile(doc)


def test_an_arm64_repository_builds_tag_stays_within_the_registrys_limit():
    doc = copy.deepcopy(GB200)
    doc["build"]["reference_implementations"]["mine"] = {"repository_url": "https://example.com/r", "ref": "r" * 123}
    (problem,) = problems(doc)
    assert problem.startswith("build.reference_implementations.mine.ref:") and "129 characters" in problem, problem
    doc["build"]["reference_implementations"]["mine"]["ref"] = "r" * 122
    validate_profile(doc)


def test_verify_looks_for_the_arm64_tag():
    """verify's NCCL image is the build layer's image under the tag the build pushed."""
    config = validate_profile(copy.deepcopy(GB200))

    class Operator:
        def outputs(self, layer: str) -> dict[str, Any]:
            assert layer == "build"
            return {
                "repository_urls": {
                    "value": {"nccl-tests": "123456789012.dkr.ecr.us-east-1.amazonaws.com/gb200/nccl-tests"}
                }
            }

    asked: list[list[str]] = []

    def aws(args: list[str]) -> Any:
        import subprocess

        asked.append(args)
        return subprocess.CompletedProcess(args, 0, "{}", "")

    found = built_image(config, Operator(), "nccl-tests", aws)  # type: ignore[arg-type]
    assert found is not None
    _, image, missing = found
    assert image.endswith("-arm64") and missing is None, found
    assert any(arg.startswith("imageTag=") and arg.endswith("-arm64") for args in asked for arg in args), asked


def test_verify_says_the_public_image_is_unconfirmed_on_arm64_nodes(capsys):
    """Without the build layer's image, verify runs the public one and says that its arm64 build is
    not confirmed; on x86_64 GPU nodes it says nothing of the sort."""
    from cli.verify import nccl_test_image
    from profiles import load_profile
    from profiles.versions import NCCL_TESTS_IMAGE

    assert nccl_test_image(validate_profile(copy.deepcopy(GB200)), None, None) == NCCL_TESTS_IMAGE
    told = capsys.readouterr().err
    assert "not confirmed for arm64" in told and "project_image: nccl-tests" in told, told
    assert nccl_test_image(load_profile("p5-training"), None, None) == NCCL_TESTS_IMAGE
    assert "arm64" not in capsys.readouterr().err
