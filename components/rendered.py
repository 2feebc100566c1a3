"""Terraform JSON computed in Python and handed to cdktf in one piece, instead of a construct per block.

Every construct the app creates is a jsii round trip to Node (about 0.7 ms for a bare element to
2.5 ms for a resource with its arguments) and more Node work at synthesis. Blocks nothing else in
Node needs to know about (Kubernetes objects, a layer's published outputs) are rendered here as the
JSON their constructs would write, byte for byte, under the same names; cdktf resolves the tokens
inside when it synthesizes the stack. tests/test_manifests_as_data.py compares both ways' JSON for
every profile.

A layer whose Kubernetes side is all rendered this way (provider, objects, StorageClass, Jobs)
never imports the kubernetes provider's bindings, so Node never loads that provider's assembly
(about half a second of every synthesis: benchmarks/LOG.md, session 14).

The HCL export keeps a construct per block (cdktf's HCL renderer needs them), and so does
GPU_PLATFORM_PLAIN_CONSTRUCTS=1.
"""

from __future__ import annotations

import os
from typing import Any

import jsii
from cdktf import ITerraformDependable, TerraformDataSource, TerraformElement, TerraformResource, TerraformStack
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


class RenderedResource(TerraformElement):
    """One resource rendered as data, written as its construct would write it: `body` (Terraform's
    arguments and meta-arguments, tokens allowed) and cdktf's `//` metadata. `overrides` names the
    arguments the construct would have set through `add_override`, which cdktf lists in the
    stack's metadata. Its name is cdktf's own logical id of its path (the stack's naming, wherever
    the stack sits), so `address` (for blocks rendered as data that depend on it), its `fqn` (for
    constructs: cdktf names an element `<type>.<logical id>`) and its key in the JSON cannot differ."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        terraform_type: str,
        body: dict[str, Any],
        overrides: tuple[str, ...] = (),
    ):
        super().__init__(scope, id_, terraform_type)
        logical_id = self.friendly_unique_id
        self.address = f"{terraform_type}.{logical_id}"
        metadata = {"metadata": {"path": self.node.path, "uniqueId": logical_id}}
        self._json: dict[str, Any] = {"resource": {terraform_type: {logical_id: {**body, "//": metadata}}}}
        if overrides:
            self._json["//"] = {"metadata": {"overrides": {terraform_type: list(overrides)}}}

    def to_terraform(self) -> Any:
        return self._json


@jsii.implements(ITerraformDependable)
class RenderedAddress:
    """A block rendered as data among others in one element (no element of its own): its address,
    known in Python, and the stack whose configuration holds it. A construct that depends on it
    reads `fqn`, the bare address, as cdktf writes a dependable in `depends_on`."""

    def __init__(self, address: str, stack: TerraformStack):
        self.address = address
        self.stack = stack

    @property
    def fqn(self) -> str:
        """The block's address (`<type>.<logical id>`)."""
        return self.address


def dependency_addresses(
    scope: Construct, dependables: tuple[ITerraformDependable, ...], *, stack: TerraformStack | None = None
) -> list[str]:
    """`depends_on` of a block rendered in `scope`, as a construct writes it: bare addresses, not
    interpolations (cdktf resolves a dependable's `fqn` with braces suppressed there,
    lib/tfExpression.js `dependable`; the `fqn` token itself would be written with them). A
    rendered block's address is known here; a resource's or data source's is its type and
    logical id (cdktf's `fqn`: data sources are `data.<type>.<id>`).

    A dependable of another stack is refused: its address means nothing in this stack's
    configuration (a construct would depend on a cross-stack output, which Terraform refuses in
    depends_on too), and the layers pass each other values through their published outputs.
    `stack` is scope's stack where the caller knows it already (each look-up is a round trip)."""
    if not dependables:
        return []
    if stack is None:
        stack = TerraformStack.of(scope)
    addresses = []
    for dependable in dependables:
        if isinstance(dependable, RenderedAddress):
            address, other = dependable.address, dependable.stack
        elif isinstance(dependable, RenderedResource):
            address, other = dependable.address, TerraformStack.of(dependable)
        elif isinstance(dependable, TerraformResource):
            address = f"{dependable.terraform_resource_type}.{dependable.friendly_unique_id}"
            other = TerraformStack.of(dependable)
        elif isinstance(dependable, TerraformDataSource):
            address = f"data.{dependable.terraform_resource_type}.{dependable.friendly_unique_id}"
            other = TerraformStack.of(dependable)
        else:
            raise TypeError(f"a rendered block depends only on resources and data sources, not on {dependable!r}")
        if other is not stack:
            raise ValueError(
                f"{scope.node.path} cannot depend on {address} of the {other.node.id} stack: "
                "a layer passes another layer values through its published outputs"
            )
        addresses.append(address)
    return addresses
