"""The GPU nodes' NVIDIA driver runs the CUDA of the platform's images: the recorded AMI drivers,
the CUDA read from image references, and the profile refusing a pinned AMI (or an image) that
outruns the other, by name."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from profiles import ProfileError, validate_profile
from profiles.cuda import AMI_DRIVERS, NEWEST_AMI_RELEASE, ami_driver, cuda_of, driver_needed
from tests.cases import profile_config
from tests.test_profiles import changed

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("image", "cuda"),
    [
        ("nvcr.io/nvidia/cuda:12.8.1-devel-ubuntu24.04", (12, 8)),
        ("pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime", (12, 8)),
        ("quay.io/jupyter/pytorch-notebook:cuda12-2025-12-01", (12, 0)),
        ("rayproject/ray:2.52.0-py311-cu124", (12, 4)),
        ("rayproject/ray:2.52.0-py311-gpu", None),  # names no CUDA: not checked
        ("public.ecr.aws/docker/library/python:3.13-slim", None),
        ("registry.example.com/cuda-team/trainer:v3", None),  # a path is not a tag
    ],
)
def test_the_cuda_of_an_image_is_read_from_its_tag(image, cuda):
    assert cuda_of(image) == cuda


def test_each_cuda_major_needs_its_drivers_branch():
    """Minor-version compatibility: every 12.x runs on a 525+ driver, every 13.x on 580+; a major the
    table does not know is not assumed to run."""
    assert driver_needed((12, 8)) == driver_needed((12, 0)) == 525
    assert driver_needed((13, 0)) == driver_needed((13, 2)) == 580
    assert driver_needed((14, 0)) is None


def test_the_recorded_amis_and_their_drivers():
    assert max(AMI_DRIVERS) == NEWEST_AMI_RELEASE
    assert AMI_DRIVERS["20251120"] == {"default": 580, "1.28": 570}
    assert min(AMI_DRIVERS) == "20250410"  # earlier releases' variables differ from their AMIs
    assert ami_driver("1.28.15-20251120", "1.28") == (570, "v20251120")
    assert ami_driver("1.34.2-20251120", "1.34") == (580, "v20251120")
    assert ami_driver("1.35.0-20991231", "1.35") is None  # newer than the record
    assert ami_driver(None, "1.35") == (AMI_DRIVERS[NEWEST_AMI_RELEASE]["default"], f"v{NEWEST_AMI_RELEASE}")


def test_the_platforms_gpu_images_are_all_found():
    images = profile_config("p5-training").gpu_images()
    assert (
        images[("build", "reference_implementations", "nccl-tests")] == "nvcr.io/nvidia/cuda:12.8.1-devel-ubuntu24.04"
    )
    assert ("validation", "CUDA_IMAGE") in images
    # p5-training's one GPU group has EFA: its runtime runs the pytorch-efa build, whose base is checked.
    assert (
        images[("build", "reference_implementations", "pytorch-efa")] == "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-devel"
    )
    assert ("addons", "trainer", "torch_image") not in images
    # A group without EFA runs the public image; a torch_image the profile names is checked wherever it runs.
    no_efa = validate_profile(p5(cluster__gpu_node_groups__0__efa_enabled=False)).gpu_images()
    assert no_efa[("addons", "trainer", "torch_image")] == "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"
    named = validate_profile(p5(addons__trainer__torch_image="repo/own:cuda12.8")).gpu_images()
    assert named[("addons", "trainer", "torch_image")] == "repo/own:cuda12.8"


def p5(**changes) -> dict:
    return changed(yaml.safe_load((ROOT / "profiles" / "p5-training.yaml").read_text()), **changes)


def test_a_pinned_ami_whose_driver_cannot_run_the_images_cuda_is_refused():
    """A CUDA 13 training image on a release with the 570 driver is refused by name; on a 580 release
    it runs. The platform's own CUDA 12.8 images run on every recorded release (570 or later)."""
    version = profile_config("p5-training").cluster.kubernetes_version
    cuda13 = "pytorch/pytorch:2.99.0-cuda13.0-cudnn9-runtime"
    with pytest.raises(ProfileError) as error:
        validate_profile(p5(cluster__ami_release_version=f"{version}.0-20250514", addons__trainer__torch_image=cuda13))
    text = "\n".join(error.value.problems)
    assert "cluster.ami_release_version" in text and "addons.trainer.torch_image" in text
    assert "carries NVIDIA driver 570" in text and "needs driver 580 or later" in text
    validate_profile(p5(cluster__ami_release_version=f"{version}.0-20251120", addons__trainer__torch_image=cuda13))
    for release in sorted(AMI_DRIVERS):
        validate_profile(p5(cluster__ami_release_version=f"{version}.0-{release}"))


def test_a_cuda_major_the_table_does_not_know_is_refused():
    with pytest.raises(ProfileError) as error:
        validate_profile(p5(addons__trainer__torch_image="pytorch/pytorch:3.0.0-cuda14.0-cudnn10-runtime"))
    assert "newer than the driver table knows" in "\n".join(error.value.problems)


def test_a_gpu_the_amis_driver_does_not_know_is_refused():
    """B300 GPUs are named by the supported-device list from the 580 branch on: p6-b300 nodes on a
    570 release would not bring their GPUs up, whatever the images' CUDA."""
    doc = p5(
        cluster__gpu_node_groups__0__instance_type="p6-b300.48xlarge",
        cluster__ami_release_version=f"{profile_config('p5-training').cluster.kubernetes_version}.0-20250514",
    )
    with pytest.raises(ProfileError) as error:
        validate_profile(doc)
    assert "does not know gpu_node_groups p5-efa's B300 GPUs (driver 580 or later does)" in "\n".join(
        error.value.problems
    )


def test_the_recorder_reads_each_release_tags_variables(tmp_path):
    """scripts/record_ami_drivers.py on a small repository shaped like amazon-eks-ami: the default
    driver of each release tag, and a minor's own where it differs; tags without the variable and
    other tags are skipped."""
    repo = tmp_path / "amazon-eks-ami"
    variables = repo / "templates" / "al2023"
    variables.mkdir(parents=True)

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (variables / "variables-default.json").write_text(json.dumps({"kubernetes_version": "x"}))
    git("add", "-A")
    git("commit", "-qm", "before nvidia")
    git("tag", "v20240101")
    (variables / "variables-default.json").write_text(json.dumps({"nvidia_driver_major_version": "570"}))
    (variables / "variables-1.28.json").write_text(json.dumps({"nvidia_driver_major_version": "570"}))
    git("add", "-A")
    git("commit", "-qm", "570")
    git("tag", "v20250301")  # before the first release whose variables match its published AMIs
    git("tag", "v20250501")
    (variables / "variables-default.json").write_text(json.dumps({"nvidia_driver_major_version": "580"}))
    git("add", "-A")
    git("commit", "-qm", "580")
    git("tag", "v20251120")
    git("tag", "v25")
    out = tmp_path / "drivers.json"
    done = subprocess.run(
        ["python3", str(ROOT / "scripts" / "record_ami_drivers.py"), str(repo), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(out.read_text())
    assert record["releases"] == {"20250501": {"default": 570}, "20251120": {"default": 580, "1.28": 570}}
    assert record["source"]["newest_release"] == "20251120"
