"""Every image the docs tell a user to run is one that exists: a public image the code pins (the
same reference the platform itself runs), or the build layer's ECR image under the repository and
the content-derived tag it pushes. The repositories are IMMUTABLE and the build never pushes
`latest`, so an example naming `:latest`, an old tag or a repository the profile has no build for
would fail at the pull (ErrImagePull), after the job was queued and admitted."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

import addons.mlflow
import addons.monitoring
import addons.trainer
import profiles.versions
from components.images import project_image_tag
from profiles import available_profiles, load_profile
from profiles.built_images import image_architecture, tag_for_architecture

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
ECR = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com/(?P<repository>[^:@]+):(?P<tag>\S+)$"
)


def pinned_images() -> set[str]:
    """Every image reference the code pins as a module constant (str constants named *IMAGE*)."""
    found = set()
    for module in (profiles.versions, addons.mlflow, addons.monitoring, addons.trainer):
        for name, value in vars(module).items():
            if "IMAGE" in name and isinstance(value, str) and ":" in value:
                found.add(value)
    return found


def documented_images() -> list[tuple[str, str]]:
    """(where, image) for each `image:` of the docs' YAML examples."""
    found = []
    for doc in DOCS:
        for block in re.findall(r"```ya?ml\n(.*?)```", doc.read_text(), re.DOTALL):
            for document in yaml.safe_load_all(block):
                found += [(doc.name, image) for image in _images(document)]
    return found


def _images(node: object) -> list[str]:
    if isinstance(node, dict):
        own = [node["image"]] if isinstance(node.get("image"), str) else []
        return own + [image for value in node.values() for image in _images(value)]
    if isinstance(node, list):
        return [image for value in node for image in _images(value)]
    return []


def pushed_by_build(image: str) -> str | None:
    """None when a shipped profile's build layer pushes this ECR image, else why not."""
    match = ECR.match(image)
    assert match, image
    platform, _, implementation = match["repository"].partition("/")
    for profile in available_profiles():
        config = load_profile(profile)
        if config.name != platform:
            continue
        if config.region != match["region"]:
            return f"profile {profile} runs in {config.region}, not {match['region']}"
        spec = config.build.reference_implementations.get(implementation)
        if spec is None or not spec.project_image:
            return f"profile {profile} builds no project image as {implementation!r}"
        # The tag the build layer pushes: an arm64 build's carries the architecture (stacks/build.py).
        tag = tag_for_architecture(project_image_tag(spec.project_image), image_architecture(config, implementation))
        return None if match["tag"] == tag else f"the build pushes tag {tag}, not {match['tag']}"
    return f"no shipped profile is named {platform!r} (the repository is <profile name>/<build name>)"


def test_the_docs_name_images_that_exist():
    documented = documented_images()
    assert len(documented) >= 5  # the queue examples: Job, MPIJob (launcher, worker), RayJob (head, worker)
    pins = pinned_images()
    for where, image in documented:
        if ECR.match(image):
            problem = pushed_by_build(image)
            assert problem is None, f"{where}: {image}: {problem}"
        else:
            assert image in pins, f"{where}: {image} is not an image the code pins ({sorted(pins)})"


def test_the_check_refuses_what_a_pull_would():
    """The cases the naive check (any well-formed reference) lets through."""
    config = load_profile("p5-training")
    account = "123456789012"
    good = f"{account}.dkr.ecr.{config.region}.amazonaws.com/{config.name}/nccl-tests:{project_image_tag('nccl-tests')}"
    assert pushed_by_build(good) is None
    assert "not latest" in (pushed_by_build(good.rsplit(":", 1)[0] + ":latest") or "")
    assert "builds no project image" in (pushed_by_build(good.replace("/nccl-tests:", "/nccl:")) or "")
    assert "runs in" in (pushed_by_build(good.replace(config.region, "us-west-2")) or "")
    assert "no shipped profile" in (pushed_by_build(good.replace(f"/{config.name}/", "/p5-lab/")) or "")
    assert "nvcr.io/nvidia/cuda:latest" not in pinned_images()
