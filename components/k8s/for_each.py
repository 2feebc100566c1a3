"""Kubernetes objects known only when Terraform plans: one `kubernetes_manifest` per element of a
Terraform map (a release's manifest downloaded by a data source and decoded by the provider's
`manifest_decode_multi`), rendered as data (components/rendered.py) or, for the HCL export, as a
`Manifest` construct with the same overrides; both write the same JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdktf import ITerraformDependable
from constructs import Construct

from components.rendered import RenderedResource, dependency_addresses, render_as_data


@dataclass(frozen=True, kw_only=True)
class ObjectsForEachProps:
    for_each: str
    """The map to iterate, as an interpolation (components/expressions.py `expression`) of a for expression."""
    manifest: str
    """Each object, as an interpolation over `each` (such as `each.value`)."""
    depends_on: tuple[ITerraformDependable, ...] = field(default=())
    """Applied after these (the namespace and its policies). Default: nothing."""


def objects_for_each(scope: Construct, id_: str, *, props: ObjectsForEachProps) -> ITerraformDependable:
    """The objects, to depend on as one. `for_each` and `manifest` are overrides of a construct
    made with an empty manifest (the bindings type `manifest` as a map, not an expression); the
    stack's metadata lists them either way."""
    if render_as_data():
        body: dict[str, Any] = {"for_each": props.for_each, "manifest": props.manifest}
        if props.depends_on:
            body["depends_on"] = dependency_addresses(scope, props.depends_on)
        return RenderedResource(
            scope, id_, terraform_type="kubernetes_manifest", body=body, overrides=("for_each", "manifest")
        )
    from cdktf_cdktf_provider_kubernetes.manifest import Manifest  # the HCL path only (components/rendered.py)

    objects = Manifest(scope, id_, manifest={}, depends_on=list(props.depends_on) or None)
    objects.add_override("for_each", props.for_each)
    objects.add_override("manifest", props.manifest)
    return objects
