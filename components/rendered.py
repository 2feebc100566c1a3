"""Terraform JSON computed in Python and handed to cdktf in one piece, instead of a construct per block.

Every construct the app creates is a jsii round trip to Node (about 0.7 ms for a bare element to
2.5 ms for a resource with its arguments) and more Node work at synthesis. Blocks nothing else in
Node needs to know about (Kubernetes objects, a layer's published outputs) are rendered here as the
JSON their constructs would write, byte for byte, under the same names; cdktf resolves the tokens
inside when it synthesizes the stack. tests/test_manifests_as_data.py compares both ways' JSON for
every profile.

The HCL export keeps a construct per block (cdktf's HCL renderer needs them), and so does
GPU_PLATFORM_PLAIN_CONSTRUCTS=1.
"""

from __future__ import annotations

import os
from typing import Any

from cdktf import TerraformElement
from constructs import Construct


def render_as_data() -> bool:
    """Render blocks as data, unless cdktf renders HCL (the same test cdktf's stack makes) or
    GPU_PLATFORM_PLAIN_CONSTRUCTS=1 asks for a construct per block."""
    return (
        os.environ.get("SYNTH_HCL_OUTPUT") not in ("true", "1")
        and os.environ.get("GPU_PLATFORM_PLAIN_CONSTRUCTS") != "1"
    )


class RenderedJson(TerraformElement):
    """Top-level Terraform JSON (`{"resource": {...}}`, `{"output": {...}}`), given to cdktf when it
    synthesizes the stack, where it is merged with the other elements' and its tokens resolved."""

    def __init__(self, scope: Construct, id_: str, *, json: dict[str, Any]):
        super().__init__(scope, id_)
        self._json = json

    def to_terraform(self) -> Any:
        return self._json
