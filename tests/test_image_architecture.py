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
    # What the build pushes is what the outputs name (the add-ons and verify pull that tag).
    pushed = {v["name"]: v["value"] for v in project["environment"]["environment_variable"]}
    assert pushed["IMAGE_TAG"] == tags["nccl-tests"], pushed
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
    """All five on-demand sizes run ARM_CONTAINER builds (CodeBuild User Guide); the China
    regions' guide lists ARM Small and Large only."""
    doc = copy.deepcopy(GB200)
    for size in ("SMALL", "MEDIUM", "LARGE", "XLARGE", "2XLARGE"):
        doc["build"]["compute_type"] = f"BUILD_GENERAL1_{size}"
        validate_profile(copy.deepcopy(doc))
    from profiles.built_images import arm_compute_types

    assert arm_compute_types("cn-north-1") == ("BUILD_GENERAL1_SMALL", "BUILD_GENERAL1_LARGE")
    assert "BUILD_GENERAL1_XLARGE" in arm_compute_types("us-east-1")


def test_an_add_on_image_is_built_for_the_system_nodes():
    """MLflow's pods run on the x86_64 system nodes: its image may not be built for arm64."""
    doc = copy.deepcopy(GB200)
    doc["addons"]["mlflow"] = {"enabled": True}
    doc["build"]["reference_implementations"]["mlflow"] = {"project_image": "mlflow", "architecture": "arm64"}
    found = [p for p in problems(doc) if p.startswith("build.reference_implementations.mlflow.architecture:")]
    assert found and "system nodes" in found[0], problems(doc)


def _mixed_with_both_builds() -> Any:
    doc = with_x86_group(GB200)
    impls = doc["build"]["reference_implementations"]
    impls["nccl-tests"]["architecture"] = "x86_64"  # first by name: the x86_64 one
    impls["nccl-tests-arm"] = {"project_image": "nccl-tests", "architecture": "arm64"}
    return validate_profile(doc)


def test_verify_takes_the_build_for_its_target_groups_architecture():
    """verify's NCCL pods run on the EFA group (GB200, arm64): in a profile that builds the image
    for both architectures, the arm64 build, not the first by name."""
    import subprocess

    config = _mixed_with_both_builds()

    class Operator:
        def outputs(self, layer: str) -> dict[str, Any]:
            urls = {k: f"123456789012.dkr.ecr.us-east-1.amazonaws.com/m/{k}" for k in ("nccl-tests", "nccl-tests-arm")}
            return {"repository_urls": {"value": urls}}

    found = built_image(config, Operator(), "nccl-tests", lambda a: subprocess.CompletedProcess(a, 0, "", ""))  # type: ignore[arg-type]
    assert found is not None and found[0] == "nccl-tests-arm" and found[1].endswith("-arm64"), found


def test_each_trainer_runtime_runs_the_build_for_its_groups_architecture(monkeypatch):
    """Were pytorch-efa's base published for arm64 (today it is not, and its arm64 build is refused:
    the next test), each runtime would take the build for its own group's architecture."""
    from types import SimpleNamespace

    import profiles.built_images
    from addons.trainer.parts import efa_torch_image

    monkeypatch.setitem(profiles.built_images.PROJECT_IMAGE_ARCHITECTURES, "pytorch-efa", ("x86_64", "arm64"))

    doc = with_x86_group(GB200)
    impls = doc["build"]["reference_implementations"]
    impls["nccl-tests"]["architecture"] = "arm64"
    impls["pytorch-efa"] = {"project_image": "pytorch-efa", "architecture": "x86_64"}
    impls["pytorch-efa-arm"] = {"project_image": "pytorch-efa", "architecture": "arm64"}
    config = validate_profile(doc)
    build = SimpleNamespace(repository_urls={k: f"r/{k}" for k in impls}, image_tags={k: f"t-{k}" for k in impls})
    ctx = SimpleNamespace(config=config, build=build)
    assert efa_torch_image(ctx, "arm64") == "r/pytorch-efa-arm:t-pytorch-efa-arm"  # type: ignore[arg-type]
    assert efa_torch_image(ctx, "x86_64") == "r/pytorch-efa:t-pytorch-efa"  # type: ignore[arg-type]


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


def test_the_rayjob_workers_on_arm64_nodes_run_rays_aarch64_build():
    """Ray's tags without -aarch64 are x86_64 only: the workers on Grace nodes take the -aarch64
    tag; the head stays on the x86_64 system nodes."""
    from addons.kuberay.checks import ray_check
    from components.acceptance import ValidationTarget
    from profiles.versions import RAY_IMAGE

    target = ValidationTarget.for_profile(validate_profile(copy.deepcopy(GB200)))
    assert target is not None
    images = {
        c["name"]: c["image"]
        for obj in ray_check(target, "research")
        if obj["kind"] == "RayJob"
        for spec in (obj["spec"]["rayClusterSpec"]["headGroupSpec"], *obj["spec"]["rayClusterSpec"]["workerGroupSpecs"])
        for c in spec["template"]["spec"]["containers"]
    }
    assert images == {"ray-head": RAY_IMAGE, "ray-worker": f"{RAY_IMAGE}-aarch64"}, images


def test_every_project_image_says_which_architectures_its_base_publishes():
    from profiles.build import project_images
    from profiles.built_images import PROJECT_IMAGE_ARCHITECTURES

    assert set(PROJECT_IMAGE_ARCHITECTURES) == set(project_images())


def test_an_image_whose_base_has_no_arm64_build_is_not_built_for_arm64():
    """pytorch-efa's PyTorch base is amd64 only: on a GB200 profile its arm64 build would fail at FROM."""
    doc = copy.deepcopy(GB200)
    doc["build"]["reference_implementations"]["torch"] = {"project_image": "pytorch-efa"}
    (problem,) = problems(doc)
    assert problem.startswith("build.reference_implementations.torch.project_image:"), problem
    assert "published for x86_64 only" in problem, problem
    mixed = with_x86_group(doc)
    mixed["build"]["reference_implementations"]["nccl-tests"]["architecture"] = "arm64"
    mixed["build"]["reference_implementations"]["torch"]["architecture"] = "x86_64"
    validate_profile(mixed)  # built for the x86_64 group only: fine


JUPYTERHUB = {
    "enabled": True,
    "allowed_users": ["0f3c2b9e-approved-sub"],
    "oidc": {
        "client_id": "hub-client",
        "callback_url": "https://jupyter.example.com/hub/oauth_callback",
        "authorize_url": "https://login.example.com/oauth2/authorize",
        "token_url": "https://login.example.com/oauth2/token",
        "userdata_url": "https://login.example.com/oauth2/userInfo",
    },
}


def test_gpu_notebooks_on_grace_nodes_need_an_arm64_image():
    """In DRA mode the GPU notebook lands on the GB200 group: the default notebook image is x86_64 only."""
    doc = copy.deepcopy(GB200)
    doc["addons"]["karpenter"] = {"enabled": True}
    doc["addons"]["jupyterhub"] = copy.deepcopy(JUPYTERHUB)
    (problem,) = problems(doc)
    assert problem.startswith("addons.jupyterhub.gpu_image:") and "x86_64 only" in problem, problem
    assert "gb200-nvl36" in problem
    doc["addons"]["jupyterhub"]["gpu_image"] = "registry.example.com/notebooks/cuda-multiarch:1.0"
    validate_profile(doc)
