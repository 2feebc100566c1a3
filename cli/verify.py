"""`manifests` and `verify`: the validation workloads, written as YAML or run on the cluster."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cli import common
from profiles import PlatformConfig

if TYPE_CHECKING:
    from operate.kubectl import Kubectl
    from operate.layers import Operator


MANIFESTS_WRITTEN = ".written-by-manifests"


AwsCli = Callable[[list[str]], subprocess.CompletedProcess[str]]


def command_manifests(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.layers import Operator
    from operate.providers import provider_env

    outdir = Path(args.outdir)
    deployed = (outdir / "stacks" / "build").is_dir()  # synthesized before: the build layer may have run
    operator = Operator(outdir / "stacks", env=provider_env(outdir), log=lambda _: None) if deployed else None
    return write_manifests(
        config,
        outdir / "manifests" if outdir == common.OUTPUT_ROOT / config.name else outdir,
        image=args.image,
        nccl_image=nccl_test_image(config, operator, args.nccl_image),
    )


def command_verify(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.cluster_access import ClusterAccessError
    from operate.layers import Operator
    from operate.providers import provider_env

    if (stopped := common.refuse_other_account(config, "verify")) is not None:
        return stopped
    outdir = Path(args.outdir)
    common.synthesize_profile(config, outdir)
    operator = Operator(outdir / "stacks", env=provider_env(outdir), log=lambda _: None)
    try:
        kubectl = common.profile_kubectl(config, operator, outdir / "kubeconfig")
    except ClusterAccessError as error:
        common.tell(f"verify cannot run: {error}")
        return 1
    return verify(
        config,
        image=args.image,
        kubectl=kubectl,
        nccl_image=nccl_test_image(config, operator, args.nccl_image),
        missing_image=lambda project_image: project_image_missing(config, operator, project_image),
    )


def built_image(
    config: PlatformConfig, operator: Operator, project_image: str, aws: AwsCli | None
) -> tuple[str, str, str | None] | None:
    """The build layer's image of images/<project_image>: (implementation, repository:tag, why
    ECR does not have it or None when it does). None: the profile builds none, or the build
    layer's state has no repository for it yet. The tag is the Dockerfile's (what the build pushes)."""
    from components.acceptance import ValidationTarget
    from components.images import project_image_tag
    from operate.cluster_access import run_aws
    from operate.layer_folders import StateUnreadable
    from operate.tools import ToolMissing
    from profiles.built_images import building_for, image_architecture, tag_for_architecture

    # verify's pods run on its target group: the implementation built for that group's architecture
    # (a profile whose groups mix architectures builds one per architecture; without a GPU group
    # every image is built for x86_64, profiles/built_images.py).
    target = ValidationTarget.for_profile(config)
    impl = building_for(config, project_image, target.entry.architecture if target else "x86_64")
    if impl is None:
        return None
    try:
        repositories = operator.outputs("build").get("repository_urls", {}).get("value", {})
    except StateUnreadable:
        repositories = {}
    if impl not in repositories:
        return None
    repository = repositories[impl]
    tag = tag_for_architecture(project_image_tag(project_image), image_architecture(config, impl))
    name = repository.split("/", 1)[1]
    ask = [
        "ecr",
        "describe-images",
        "--region",
        config.region,
        "--repository-name",
        name,
        "--image-ids",
        f"imageTag={tag}",
    ]
    try:
        found = (aws or run_aws)(ask)
    except (OSError, subprocess.TimeoutExpired, ToolMissing) as error:  # no AWS CLI here, or no answer
        found = subprocess.CompletedProcess(ask, 1, "", f"cannot ask ECR: {error}")
    missing = None if found.returncode == 0 else (found.stderr or found.stdout).strip()
    return impl, f"{repository}:{tag}", missing


def nccl_test_image(
    config: PlatformConfig,
    operator: Operator | None,
    override: str | None,
    aws: AwsCli | None = None,
) -> str:
    """The image the NCCL MPIJob runs: --nccl-image / NCCL_IMAGE, else the one the build layer
    built from images/nccl-tests (its repository and the Dockerfile's tag) once ECR has it, else
    the public one. A repository without the tag (its build not run yet, or failed) would leave
    every worker in ImagePullBackOff: say so, and run the public image."""
    from profiles.versions import NCCL_TESTS_IMAGE

    if override:
        return override
    built = built_image(config, operator, "nccl-tests", aws) if operator is not None else None
    if built is None:
        return _public_nccl_image(config)
    impl, image, missing = built
    if missing is None:
        return image
    print(
        f"the build layer's image {image} is not in ECR ({missing}): "
        f"run its build (make outputs lists build_commands.{impl}); the NCCL check runs {NCCL_TESTS_IMAGE} "
        "until then",
        file=sys.stderr,
    )
    return _public_nccl_image(config)


def _public_nccl_image(config: PlatformConfig) -> str:
    """The public NCCL image, said to be unconfirmed on arm64 GPU nodes (P6e-GB200's Grace)."""
    from components.acceptance import ValidationTarget
    from profiles.versions import NCCL_TESTS_IMAGE

    target = ValidationTarget.for_profile(config)
    if target is not None and target.entry.architecture == "arm64":
        print(
            f"the NCCL check runs {NCCL_TESTS_IMAGE}, which this project has not confirmed for arm64 (the GPU "
            "nodes' architecture here): build images/nccl-tests with the build layer "
            "(build.reference_implementations: {nccl-tests: {project_image: nccl-tests}}), which builds it "
            "for arm64, or pass --nccl-image",
            file=sys.stderr,
        )
    return NCCL_TESTS_IMAGE


def project_image_missing(
    config: PlatformConfig, operator: Operator, project_image: str, aws: AwsCli | None = None
) -> str | None:
    """Why the build layer's image of images/<project_image> is not in ECR yet, with the command
    that builds it: a check whose pods run it then fails at once instead of waiting out verify's
    timeout in ImagePullBackOff. None when ECR has it, when the profile builds none, or when ECR
    cannot be asked (the pods then say for themselves)."""
    built = built_image(config, operator, project_image, aws)
    if built is None or built[2] is None or built[2].startswith("cannot ask ECR"):
        return None
    impl, image, missing = built
    return (
        f"the build layer's image {image} is not in ECR ({missing}): run its build (make outputs lists "
        f"build_commands.{impl}), then verify again"
    )


def write_manifests(config: PlatformConfig, outdir: Path, *, image: str | None, nccl_image: str) -> int:
    import yaml

    from manifests.render import render

    files = render(config, image=image, nccl_image=nccl_image)
    if not files:
        print(f"profile {config.name} has no GPU node group: nothing to validate", file=sys.stderr)
        return common.EXIT_USER_ERROR
    # The folder is the command's own: it writes a list of its files there, replaces only those on
    # the next run, and refuses a non-empty folder it did not write (a user's profile could be in it).
    outdir.mkdir(parents=True, exist_ok=True)
    written = outdir / MANIFESTS_WRITTEN
    if not written.is_file() and any(outdir.iterdir()):
        print(
            f"{outdir} is not empty and main.py manifests did not write it: give --outdir a new or empty folder",
            file=sys.stderr,
        )
        return common.EXIT_USER_ERROR
    for stale in written.read_text().split() if written.is_file() else []:
        (outdir / Path(stale).name).unlink(missing_ok=True)
    for file_name, objects in files.items():
        (outdir / file_name).write_text(yaml.safe_dump_all(objects, sort_keys=False))
    written.write_text("\n".join(sorted(files)) + "\n")
    hint = (
        ""
        if image
        else (" (no container test: pass IMAGE=<repository url>:<tag> from the build layer's repository_urls output)")
    )
    print(f"wrote {', '.join(sorted(files))} to {outdir}{hint}")
    return 0


def verify(
    config: PlatformConfig,
    *,
    image: str | None,
    kubectl: Kubectl,
    nccl_image: str,
    missing_image: Callable[[str], str | None] = lambda _: None,
) -> int:
    from manifests.capacity_blocks import block_reports
    from manifests.verify import run_checks

    # First each Capacity Block's state and nodes (read-only), then the checks.
    results = block_reports(config, kubectl)
    results += run_checks(config, image=image, kubectl=kubectl, nccl_image=nccl_image, missing_image=missing_image)
    for result in results:
        print(f"{'PASS' if result.passed else 'FAIL'} {result.name}: {result.detail}")
    return 0 if all(result.passed for result in results) else 1
