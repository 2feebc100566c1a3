"""cdktf's logical ids, computed in Python for resources rendered as data (components/k8s/objects.py).

A resource's Terraform name is cdktf's `makeUniqueId` of its construct path below the stack
(cdktf 0.21, lib/private/unique.js): one component is used as it is; more get the readable
components joined by `_` and the first 8 hex digits of the path's MD5. This is the same
function, so that an object rendered as data keeps the address its `Manifest` construct had;
tests/test_manifests_as_data.py checks it against cdktf's own ids.
"""

from __future__ import annotations

import hashlib
import re

_HIDDEN_FROM_HUMAN_ID = "Resource"  # in the hash, not in the readable part
_HIDDEN_ID = "Default"  # in neither
_MAX_HUMAN_LEN = 240
_MAX_ID_LEN = 255
_DISALLOWED = re.compile(r"[^A-Za-z0-9_-]")


def unique_id(components: list[str]) -> str:
    """cdktf's logical id of the construct whose ids below its stack are `components`."""
    components = [c for c in components if c != _HIDDEN_ID]
    if not components:
        raise ValueError("a logical id needs at least one path component")
    if len(components) == 1:
        candidate = _DISALLOWED.sub("", components[0])
        if len(candidate) <= _MAX_ID_LEN:
            return candidate
    digest = hashlib.md5("/".join(components).encode(), usedforsecurity=False).hexdigest()[:8].upper()
    kept: list[str] = []
    for component in components:  # a component its predecessor ends with is left out
        if not kept or not kept[-1].endswith(component):
            kept.append(component)
    human = "_".join(_DISALLOWED.sub("", c) for c in kept if c != _HIDDEN_FROM_HUMAN_ID)[:_MAX_HUMAN_LEN]
    return f"{human}_{digest}"
