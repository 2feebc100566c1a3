"""One grammar for every container image reference a profile sets, checked at load: how
registries read `[registry[:port]/]path[:tag][@digest]`. Written from the distribution reference
grammar (https://github.com/distribution/reference, reference.go's Grammar and regexp.go) and the
OCI image spec's registered digest algorithms
(https://github.com/opencontainers/image-spec/blob/main/descriptor.md#registered-algorithms).

- The first component is a registry only when it looks like a host: it has a dot or a port, or is
  localhost (registry.example.com:5000/team/img); otherwise it is part of the repository path, as
  normalize.go's splitDockerDomain reads it. A registry host is DNS-like components of letters,
  digits and inner hyphens joined by dots (so `my_registry.io` is no host: an underscore is not
  allowed in one), or an IPv6 address in brackets ([::1]:5000); a port is 1 to 65535.
- The repository path is components of lowercase letters and digits joined by ., _, __ or dashes,
  separated by /, at most 255 characters without the registry (RepositoryNameTotalLengthMax).
- A tag is up to 128 of [A-Za-z0-9_.-], not beginning with . or -. A digest is sha256: and 64
  lowercase hex digits, or sha512: and 128 (go-digest checks the encoded part per algorithm).
- A reference needs a tag, a digest or both: nothing runs :latest by default.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator

_PATH_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_HOST_COMPONENT = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?")
_IPV6_REGISTRY = re.compile(r"\[(?P<address>[a-fA-F0-9:]+)\](?::(?P<port>[0-9]+))?")
MAX_TAG_LENGTH = 128
_TAG = re.compile(rf"[A-Za-z0-9_][A-Za-z0-9_.-]{{0,{MAX_TAG_LENGTH - 1}}}")
DIGEST_HEX_DIGITS = {"sha256": 64, "sha512": 128}
REPOSITORY_PATH_MAX = 255
MAX_PORT = 65535
FORMS = (
    "registry[:port]/repository:tag, repository@sha256:<64 hex digits> (or sha512:<128>), or both "
    "(repository:tag@sha256:...), the repository in lowercase, e.g. registry.example.com:5000/team/img:1.0"
)


@dataclass(frozen=True)
class ImageReference:
    name: str  # registry (with its port) and repository path
    tag: str | None
    digest: str | None


def _registry_problem(registry: str) -> str | None:
    if (bracketed := _IPV6_REGISTRY.fullmatch(registry)) is not None:
        try:
            ipaddress.IPv6Address(bracketed["address"])
        except ValueError:
            return f"the registry {registry!r} is not an IPv6 address in brackets"
        port = bracketed["port"]
    else:
        host, _, port = registry.partition(":")
        if not all(_HOST_COMPONENT.fullmatch(part) for part in host.split(".")) or ":" in port:
            return (
                f"the registry {registry!r} is not a host name: dot-separated parts of letters, digits and inner "
                "hyphens (no underscores), or an IPv6 address in brackets, then an optional :port"
            )
        if registry.endswith(":") or (port and not port.isdigit()):
            return f"the registry {registry!r} has no port number after its ':'"
    if port and not (port.isascii() and port.isdigit() and 1 <= int(port) <= MAX_PORT):
        return f"the registry {registry!r} has port {port}; a port is 1 to {MAX_PORT}"
    return None


def _path_problem(path: str) -> str | None:
    if len(path) > REPOSITORY_PATH_MAX:
        return f"the repository path is {len(path)} characters; at most {REPOSITORY_PATH_MAX} (without the registry)"
    for component in path.split("/"):
        if not _PATH_COMPONENT.fullmatch(component):
            return (
                f"the repository path component {component!r} is not lowercase letters and digits joined by "
                "., _, __ or dashes"
            )
    return None


def _tag_problem(tag: str) -> str | None:
    if _TAG.fullmatch(tag):
        return None
    return f"the tag {tag!r} is not 1 to 128 of A-Za-z0-9_.- beginning with a letter, digit or _"


def _digest_problem(digest: str) -> str | None:
    algorithm, _, encoded = digest.partition(":")
    digits = DIGEST_HEX_DIGITS.get(algorithm)
    if digits is None:
        return f"the digest algorithm {algorithm!r} is not sha256 or sha512 (the OCI image spec's registered ones)"
    if not re.fullmatch(rf"[0-9a-f]{{{digits}}}", encoded):
        return f"a {algorithm} digest is {digits} lowercase hex digits ({len(encoded)} characters given)"
    return None


def parse_image_reference(reference: str) -> ImageReference:
    """Split a reference by the grammar; a registry's port is part of the name, never a tag."""
    name, at, digest = reference.partition("@")
    tag: str | None = None
    if name.rfind(":") > name.rfind("/"):  # a ':' after the last '/' starts the tag; before it, a port
        name, _, tag = name.rpartition(":")
    first, slash, rest = name.partition("/")
    registry, path = (first, rest) if slash and ("." in first or ":" in first or first == "localhost") else ("", name)
    problem = (
        (_digest_problem(digest) if at else None)
        or (_tag_problem(tag) if tag is not None else None)
        or (_registry_problem(registry) if registry else None)
        or _path_problem(path)
    )
    if problem is not None:
        raise ValueError(f"not an image reference: {problem}. Forms: {FORMS}")
    if not (tag or at):
        raise ValueError(f"names no tag or digest (it would run :latest): {FORMS}")
    return ImageReference(name, tag, digest if at else None)


def _pinned(reference: str) -> str:
    parse_image_reference(reference)
    return reference


# An image reference a profile sets: pinned by tag, digest or both.
ImageRef = Annotated[str, AfterValidator(_pinned)]


def tag_problem(tag: str) -> str | None:
    """What is wrong with `tag` as an image tag (the grammar above), or None."""
    return _tag_problem(tag)
