"""A temporary copy of the repository's sources, for tests that change the code and run it."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Environments, caches and outputs: none is source, and together they are hundreds of MB (the jsii
# package cache alone is over 500 MB; the Makefile points JSII_RUNTIME_PACKAGE_CACHE_ROOT at this
# checkout's, so a process in the copy reuses it).
NOT_SOURCE = (
    ".venv",
    ".tools",
    ".git",
    ".cache",
    ".hypothesis",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "cdktf.out",
    "state",
    "__pycache__",
    "node_modules",
)


def copy_repository(destination: Path) -> Path:
    """Copies the sources to `destination` and returns it."""
    shutil.copytree(ROOT, destination, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    return destination
