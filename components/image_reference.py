"""Container image references parsed the way registries read them: `registry[:port]/path[:tag][@digest]`."""

from __future__ import annotations

import re
from dataclasses import dataclass

_REFERENCE = re.compile(
    r"(?P<name>(?:(?P<registry>[a-zA-Z0-9.-]+(?::[0-9]+)?)/)?[a-z0-9]+(?:[._/-][a-z0-9]+)*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?"
)


@dataclass(frozen=True)
class ImageReference:
    name: str  # registry (with port) and repository path
    tag: str | None
    digest: str | None


def parse_image_reference(reference: str) -> ImageReference:
    """Split a reference; a registry port is part of the name, never a tag."""
    match = _REFERENCE.fullmatch(reference)
    if match is None or not (match.group("tag") or match.group("digest")):
        raise ValueError(f"{reference!r} is not a pinned image reference (name:tag or name@sha256:...)")
    return ImageReference(match.group("name"), match.group("tag"), match.group("digest"))
