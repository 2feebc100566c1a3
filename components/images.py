"""Container images the project builds from its own Dockerfiles (images/<name>/Dockerfile), and
their tags: the pinned versions the Dockerfile declares plus a hash of the file and of the files it
copies from its folder (a lock file), so a changed input is a new, immutable tag and whatever runs
the image names exactly what the build pushed."""

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


def copied_files(name: str) -> list[Path]:
    """The files of images/<name>/ the Dockerfile's COPY and ADD instructions take from the build
    context (a folder: every file in it), in the order they are named; not heredocs (`<<EOF`,
    part of the Dockerfile's text) or other stages' files (`--from=`)."""
    folder = dockerfile(name).parent
    found: list[Path] = []
    for line in re.findall(r"^(?:COPY|ADD)\s+(.+)$", dockerfile(name).read_text(), flags=re.MULTILINE):
        words = line.split()
        if any(word.startswith(("--from=", "<<")) for word in words):
            continue
        for source in (word for word in words[:-1] if not word.startswith("--")):
            path = folder / source
            for file in sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]:
                if not file.is_file():
                    raise FileNotFoundError(f"images/{name}/Dockerfile copies {source}, which its folder does not have")
                if file not in found:
                    found.append(file)
    return found


def project_image_tag(name: str) -> str:
    """e.g. `efa1.42.0-ofi1.16.0-nccl2.27.5-1-tests2.16.4-<12 hex>` (nccl-tests),
    `torch2.7.1-nccl2.26.2-efa1.42.0-ofi1.16.0-<12 hex>` (pytorch-efa), `mlflow3.15.1-<12 hex>`
    (mlflow, whose hash covers its requirements.txt too). A Dockerfile that copies nothing from its
    folder is hashed alone."""
    text = dockerfile(name).read_text()
    short = {
        "EFA_INSTALLER": "efa",
        "AWS_OFI_NCCL": "ofi",
        "NCCL": "nccl",
        "NCCL_TESTS": "tests",
        "TORCH_NCCL": "nccl",
    }
    versions = "-".join(f"{short.get(arg, arg.lower())}{value}" for arg, value in _ARG.findall(text))
    digest = hashlib.sha256(text.encode())
    folder = dockerfile(name).parent
    for file in copied_files(name):
        digest.update(f"\0{file.relative_to(folder).as_posix()}\0".encode() + file.read_bytes())
    return f"{versions}-{digest.hexdigest()[:12]}"


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
