"""Can the GPU nodes' NVIDIA driver run the CUDA of the platform's images? Checked with the
profile, before any plan: an AMI upgrade (cluster.ami_release_version) or an image change that
outruns the other is refused by name.

- The driver of each EKS AL2023 AMI release: profiles/ami_nvidia_drivers.json, recorded from
  awslabs/amazon-eks-ami by scripts/record_ami_drivers.py (its newest release stands in for an
  unpinned profile, which takes the newest AMI; a pinned release newer than the record is not
  checked).
- The driver each CUDA toolkit needs: NVIDIA's CUDA Toolkit release notes, "CUDA Toolkit and
  Corresponding Driver Versions", the Linux x86_64 driver of each toolkit's GA release (majors
  only: the AMIs are known by their driver major). Minor-version compatibility would let a 12.x
  image start on an older 12-series driver, but without the newer driver's PTX JIT and features;
  the platform asks for the toolkit's own driver.
- The CUDA of an image: the version in its tag (nvcr.io/nvidia/cuda:12.8.1-..., pytorch's
  cuda12.8, Jupyter's cuda12 as 12.0), and the CUDA base image of the project's own Dockerfiles.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from profiles.base import FieldProblem
from profiles.build import PROJECT_IMAGES_DIR

_RECORD = json.loads((Path(__file__).with_name("ami_nvidia_drivers.json")).read_text())
AMI_DRIVERS: dict[str, dict[str, int]] = _RECORD["releases"]
NEWEST_AMI_RELEASE: str = _RECORD["source"]["newest_release"]
# CUDA toolkit (major, minor) -> the NVIDIA driver major its GA release needs on Linux x86_64.
CUDA_DRIVER = {
    (12, 0): 525,
    (12, 1): 530,
    (12, 2): 535,
    (12, 3): 545,
    (12, 4): 550,
    (12, 5): 555,
    (12, 6): 560,
    (12, 8): 570,
    (12, 9): 575,
    (13, 0): 580,
}
_CUDA_IN_TAG = re.compile(r"cuda[:-]?(\d{2})(?:\.(\d+))?")
_CU_IN_TAG = re.compile(r"\bcu(\d{2})(\d)(?!\d)")  # PyTorch's and Ray's cu124: CUDA 12.4
_DOCKERFILE_CUDA = re.compile(r"^ARG CUDA_IMAGE=(\S+)$", re.MULTILINE)


def cuda_of(image: str) -> tuple[int, int] | None:
    """The CUDA version an image's reference names (None: it names none)."""
    tag = image.rsplit("/", 1)[-1]
    if short := _CU_IN_TAG.search(tag):
        return int(short.group(1)), int(short.group(2))
    found = _CUDA_IN_TAG.search(tag)
    return (int(found.group(1)), int(found.group(2) or 0)) if found else None


def driver_needed(cuda: tuple[int, int]) -> int | None:
    """The driver major a CUDA version needs (an unlisted minor: the next listed one above it;
    None: newer than the table, not checked)."""
    listed = sorted(version for version in CUDA_DRIVER if version >= cuda)
    return CUDA_DRIVER[listed[0]] if listed else None


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
    release: str | None, kubernetes_version: str, images: dict[tuple[str | int, ...], str]
) -> Iterator[FieldProblem]:
    """Problems of GPU nodes on AMI `release` (None: unpinned) running `images` (where each is
    set -> image reference)."""
    found = ami_driver(release, kubernetes_version)
    if found is None:
        return
    driver, read_for = found
    for field, image in images.items():
        cuda = cuda_of(image)
        needed = driver_needed(cuda) if cuda else None
        if cuda is None or needed is None or needed <= driver:
            continue
        where = f"ami_release_version {release}" if release else f"the newest AMI release ({read_for})"
        runs = [version for version, major in CUDA_DRIVER.items() if major <= driver]
        older = f", or an image of CUDA {'.'.join(map(str, max(runs)))} or older" if runs else ""
        yield FieldProblem(
            ("cluster", "ami_release_version"),
            release,
            f"{where} carries NVIDIA driver {driver}, but {'.'.join(map(str, field))} ({image}) needs CUDA "
            f"{cuda[0]}.{cuda[1]}, which needs driver {needed} or later",
            allowed=f"an AMI release with driver {needed}+ (profiles/ami_nvidia_drivers.json){older}",
        )
