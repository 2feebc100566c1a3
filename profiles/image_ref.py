"""One grammar for every container image reference a profile sets, checked at load: how
registries read `[registry[:port]/]path[:tag][@digest]` (the distribution reference grammar,
https://github.com/distribution/reference/blob/main/reference.go; the OCI distribution spec's
repository names, https://github.com/opencontainers/distribution-spec/blob/main/spec.md#pulling-manifests).

- The first component is a registry only when it looks like a host: it has a dot or a port, or is
  localhost (registry.example.com:5000/team/img); otherwise it is part of the repository path.
- Repository path components are lowercase letters and digits, joined by ., _, __ or dashes.
- A tag is up to 128 of [A-Za-z0-9_.-], not beginning with . or -; a digest is sha256: and 64
  lowercase hex digits. A reference needs a tag, a digest or both: nothing runs :latest by default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator

_HOST = r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)"
_REGISTRY = rf"(?:{_HOST}(?:\.{_HOST})+(?::[0-9]+)?|{_HOST}:[0-9]+|localhost)"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
REFERENCE = re.compile(
    rf"(?P<name>(?:(?P<registry>{_REGISTRY})/)?{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[0-9a-f]{64}))?"
)
FORMS = (
    "registry[:port]/repository:tag, repository@sha256:<64 hex digits>, or both (repository:tag@sha256:...), "
    "the repository in lowercase, e.g. registry.example.com:5000/team/img:1.0"
)


@dataclass(frozen=True)
class ImageReference:
    name: str  # registry (with its port) and repository path
    tag: str | None
    digest: str | None


def parse_image_reference(reference: str) -> ImageReference:
    """Split a reference by the grammar; a registry's port is part of the name, never a tag."""
    match = REFERENCE.fullmatch(reference)
    if match is None:
        raise ValueError(f"{reference!r} is not an image reference: {FORMS}")
    if not (match.group("tag") or match.group("digest")):
        raise ValueError(f"{reference!r} names no tag or digest (it would run :latest): {FORMS}")
    return ImageReference(match.group("name"), match.group("tag"), match.group("digest"))


def _pinned(reference: str) -> str:
    parse_image_reference(reference)
    return reference


# An image reference a profile sets: pinned by tag, digest or both.
ImageRef = Annotated[str, AfterValidator(_pinned)]
