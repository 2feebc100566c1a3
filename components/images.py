"""Container images the project builds from its own Dockerfiles (images/<name>/Dockerfile), and
their tags: the pinned versions the Dockerfile declares plus a hash of the file, so a changed
Dockerfile is a new, immutable tag and the validation job names exactly what the build pushed."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

IMAGES_DIR = Path(__file__).resolve().parents[1] / "images"
_ARG = re.compile(r"^ARG (\w+)_VERSION=(\S+)$", re.MULTILINE)


def dockerfile(name: str) -> Path:
    return IMAGES_DIR / name / "Dockerfile"


def project_images() -> list[str]:
    return sorted(path.parent.name for path in IMAGES_DIR.glob("*/Dockerfile"))


def project_image_tag(name: str) -> str:
    """e.g. `efa1.42.0-ofi1.16.0-nccl2.27.5-1-tests2.16.4-<12 hex>` (nccl-tests),
    `torch2.7.1-nccl2.26.2-efa1.42.0-ofi1.16.0-<12 hex>` (pytorch-efa)."""
    text = dockerfile(name).read_text()
    short = {
        "EFA_INSTALLER": "efa",
        "AWS_OFI_NCCL": "ofi",
        "NCCL": "nccl",
        "NCCL_TESTS": "tests",
        "TORCH_NCCL": "nccl",
    }
    versions = "-".join(f"{short.get(arg, arg.lower())}{value}" for arg, value in _ARG.findall(text))
    return f"{versions}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def image_user(name: str) -> str:
    """The user a project image runs as: its Dockerfile's last USER instruction, else root."""
    users = re.findall(r"^USER\s+(\S+)", dockerfile(name).read_text(), flags=re.MULTILINE)
    return users[-1] if users else "root"


def image_env(name: str) -> dict[str, str]:
    """The variables a project image's ENV instructions set (`NAME=value` form, with backslash
    continuations), as written: a reference to another variable in a value is left unexpanded."""
    text = re.sub(r"\\\n\s*", " ", dockerfile(name).read_text())
    found: dict[str, str] = {}
    for line in re.findall(r"^ENV\s+(.+)$", text, flags=re.MULTILINE):
        found.update(re.findall(r"(\w+)=(\S*)", line))
    return found
