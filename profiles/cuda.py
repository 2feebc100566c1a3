"""Can the GPU nodes' NVIDIA driver run the CUDA of the platform's images? Checked with the
profile, before any plan: an AMI upgrade (cluster.ami_release_version) or an image change that
outruns the other is refused by name.

- The driver of each EKS AL2023 AMI release: profiles/ami_nvidia_drivers.json, recorded from
  awslabs/amazon-eks-ami by scripts/record_ami_drivers.py (its newest release stands in for an
  unpinned profile, which takes the newest AMI; a pinned release outside the record, before
  v20250410 or newer than its newest, is not checked).
- The driver a CUDA version needs: CUDA's minor-version compatibility (NVIDIA's CUDA Compatibility
  guide): an application built with any 12.x toolkit runs on a 12-series driver, 525 or later, and
  13.x on 580 or later; NVIDIA's own CUDA images declare the same (NVIDIA_REQUIRE_CUDA lists the
  datacenter driver branches each runs on). A major newer than the table is refused until the
  table knows it.
- The driver each GPU model needs: the first driver branch whose supported-device list names it
  (amazon-eks-ami templates/al2023/runtime/gpu/nvidia-open-supported-devices-<branch>.txt: B200 from
  570, B300 from 580); the older models run on every recorded driver.
- The CUDA of an image: the version in its tag (nvcr.io/nvidia/cuda:12.8.1-..., pytorch's
  cuda12.8, Jupyter's cuda12 as 12.0), and the CUDA base image of the project's own Dockerfiles.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from profiles.base import FieldProblem
from profiles.build import PROJECT_IMAGES_DIR

_RECORD = json.loads((Path(__file__).with_name("ami_nvidia_drivers.json")).read_text())
AMI_DRIVERS: dict[str, dict[str, int]] = _RECORD["releases"]
NEWEST_AMI_RELEASE: str = _RECORD["source"]["newest_release"]
# CUDA major -> the oldest NVIDIA driver major that runs every minor of it (minor-version compatibility).
CUDA_DRIVER = {12: 525, 13: 580}
# GPU model -> the oldest driver major whose supported-device list names it (older models: any).
GPU_DRIVER = {"B200": 570, "B300": 580}
_CUDA_IN_TAG = re.compile(r"cuda[:-]?(\d{2})(?:\.(\d+))?", re.ASCII)
_CU_IN_TAG = re.compile(r"\bcu(\d{2})(\d)(?!\d)", re.ASCII)  # PyTorch's and Ray's cu124: CUDA 12.4
_DOCKERFILE_CUDA = re.compile(r"^ARG CUDA_IMAGE=(\S+)$", re.MULTILINE | re.ASCII)


def cuda_of(image: str) -> tuple[int, int] | None:
    """The CUDA version an image's reference names (None: it names none)."""
    tag = image.split("@", 1)[0].rsplit("/", 1)[-1]  # the last component and its tag, not the digest
    if short := _CU_IN_TAG.search(tag):
        return int(short.group(1)), int(short.group(2))
    found = _CUDA_IN_TAG.search(tag)
    return (int(found.group(1)), int(found.group(2) or 0)) if found else None


def driver_needed(cuda: tuple[int, int]) -> int | None:
    """The driver major a CUDA version needs (None: a major the table does not know yet)."""
    return CUDA_DRIVER.get(cuda[0])


def ami_driver(release: str | None, kubernetes_version: str) -> tuple[int, str] | None:
    """(driver major, the release it was read for) of an AMI release such as 1.34.2-20251120, or
    of the newest recorded release when unpinned; None for a release the record does not have."""
    date = release.rsplit("-", 1)[1] if release else NEWEST_AMI_RELEASE
    drivers = AMI_DRIVERS.get(date)
    if drivers is None:
        return None
    return drivers.get(kubernetes_version, drivers["default"]), f"v{date}"


def project_dockerfile_images() -> dict[str, str]:
    """Project image name -> the CUDA base image its Dockerfile builds from."""
    found = {}
    for dockerfile in sorted(PROJECT_IMAGES_DIR.glob("*/Dockerfile")):
        if base := _DOCKERFILE_CUDA.search(dockerfile.read_text()):
            found[dockerfile.parent.name] = base.group(1)
    return found


def driver_problems(
    release: str | None,
    kubernetes_version: str,
    images: Mapping[tuple[str | int, ...], str],
    gpu_models: Mapping[str, str],
) -> Iterator[FieldProblem]:
    """Problems of GPU nodes on AMI `release` (None: unpinned) running `images` (where each is set
    -> image reference) on GPUs of `gpu_models` (node group or pool -> model)."""
    found = ami_driver(release, kubernetes_version)
    if found is None:
        return
    driver, read_for = found
    where = f"ami_release_version {release}" if release else f"the newest AMI release ({read_for})"
    for field, image in images.items():
        cuda = cuda_of(image)
        if cuda is None:
            continue
        needed = driver_needed(cuda)
        if needed is None:
            yield FieldProblem(
                ("cluster", "ami_release_version"),
                release,
                f"{'.'.join(map(str, field))} ({image}) needs CUDA {cuda[0]}.{cuda[1]}, newer than the driver "
                "table knows (profiles/cuda.py CUDA_DRIVER): the driver it needs cannot be checked",
                allowed=f"an image of CUDA {max(CUDA_DRIVER)}.x or older, or the table extended",
            )
        elif needed > driver:
            runs = [major for major, floor in CUDA_DRIVER.items() if floor <= driver]
            older = f", or an image of CUDA {max(runs)}.x" if runs else ""
            yield FieldProblem(
                ("cluster", "ami_release_version"),
                release,
                f"{where} carries NVIDIA driver {driver}, but {'.'.join(map(str, field))} ({image}) needs CUDA "
                f"{cuda[0]}.{cuda[1]}, which needs driver {needed} or later",
                allowed=f"an AMI release with driver {needed}+ (profiles/ami_nvidia_drivers.json){older}",
            )
    for owner, model in gpu_models.items():
        if (needed := GPU_DRIVER.get(model, 0)) > driver:
            yield FieldProblem(
                ("cluster", "ami_release_version"),
                release,
                f"{where} carries NVIDIA driver {driver}, which does not know {owner}'s {model} GPUs "
                f"(driver {needed} or later does)",
                allowed=f"an AMI release with driver {needed}+ (profiles/ami_nvidia_drivers.json)",
            )
