"""Apply a list of Kubernetes manifests through the kubernetes provider's `kubernetes_manifest`.

A group's objects are rendered as data by one element (components/rendered.py), the same JSON
byte for byte as one `Manifest` construct per object: each `Manifest` was a jsii round trip with its
arguments type-checked (about 2.5 ms, some 100 per profile, and more Node work at synthesis). The
element hands cdktf the resources' JSON (`manifest`, `depends_on`, `timeouts` and the `//`
metadata, under the ids the constructs had) when the stack is synthesized. Only what another
resource depends on gets a construct of its own: a bare element at the object's path, whose
address is the object's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdktf import ITerraformDependable, Precondition, TerraformLocal, TerraformResourceLifecycle, TerraformStack
from constructs import Construct

from components.k8s.namespaces import NAMESPACE_DELETE_TIMEOUT_MINUTES
from components.logical_ids import unique_id
from components.plan_deadline import PlanDeadline
from components.rendered import RenderedAddress, RenderedJson, dependency_addresses, render_as_data

RESOURCE_TYPE = "kubernetes_manifest"


def object_id(obj: dict[str, Any]) -> str:
    """Stable construct id: kind, namespace and name (renaming one replaces the object)."""
    meta = obj["metadata"]
    parts = [obj["kind"].lower(), meta.get("namespace"), meta["name"]]
    return "-".join(part for part in parts if part)


@dataclass(frozen=True, kw_only=True)
class KubernetesObjectsProps:
    objects: tuple[dict[str, Any], ...]
    """Complete Kubernetes objects (apiVersion, kind, metadata, ...), one kubernetes_manifest each."""
    depends_on: tuple[ITerraformDependable, ...] = field(default=())
    """Applied after these: other groups' objects (`KubernetesObjects.dependable`). Default: nothing."""
    force_conflicts: bool = False
    """Server-side apply with force: Terraform takes back fields another field manager changed
    (hashicorp/kubernetes 2.38.0 applies as manager "Terraform" without force, manifest/provider/
    plan.go 72-76, and fails on a conflict, apply.go 376-392). Default: off."""
    plan_before: PlanDeadline | None = None
    """Every object refuses a plan after this time (objects computed for the moment of synthesis). Default: none."""


def _deadline(scope: Construct, id_: str, deadline: PlanDeadline | None) -> tuple[str, str, str] | None:
    """Each object's precondition, as (local name, condition, error message): planned before the
    deadline, whose time a local value holds (Terraform refuses a condition on constants alone)."""
    if deadline is None:
        return None
    name = f"{id_}_plan_before"
    TerraformLocal(scope, "plan-before", deadline.stamp).override_logical_id(name)
    return name, PlanDeadline.condition(f"local.{name}"), deadline.why


class KubernetesObjects(Construct):
    """Exposes `objects` (the manifests) and `dependable(key)` / `dependables()` to wait for them."""

    def __init__(self, scope: Construct, id_: str, *, props: KubernetesObjectsProps):
        super().__init__(scope, id_)
        self._objects = list(props.objects)
        self._dependables: dict[str, ITerraformDependable] = {}
        self._addresses: dict[str, str] = {}
        self._deadline = _deadline(self, id_, props.plan_before)
        if render_as_data():
            self._render(props)
        else:
            self._construct(props)

    def _construct(self, props: KubernetesObjectsProps) -> None:
        # Imported here: the bindings load the kubernetes provider's assembly into Node, which the
        # rendered way never needs (components/rendered.py).
        from cdktf_cdktf_provider_kubernetes.manifest import Manifest, ManifestFieldManager, ManifestTimeouts

        lifecycle = None
        if self._deadline:
            _, condition, why = self._deadline
            lifecycle = TerraformResourceLifecycle(precondition=[Precondition(condition=condition, error_message=why)])
        for obj in self._objects:
            key = object_id(obj)
            # Namespaces first: every namespaced object waits for its namespace.
            namespace = self._dependables.get(f"namespace-{obj['metadata'].get('namespace')}")
            depends = [*props.depends_on, *([namespace] if namespace else [])]
            timeouts = (
                ManifestTimeouts(delete=f"{NAMESPACE_DELETE_TIMEOUT_MINUTES}m") if obj["kind"] == "Namespace" else None
            )
            self._dependables[key] = Manifest(
                self,
                key,
                manifest=obj,
                depends_on=depends or None,
                timeouts=timeouts,
                field_manager=ManifestFieldManager(force_conflicts=True) if props.force_conflicts else None,
                lifecycle=lifecycle,
            )

    def _render(self, props: KubernetesObjectsProps) -> None:
        path = self.node.path
        below_stack = path.split("/")[1:]  # the layer stacks are the App's children (stacks/platform.py)
        self._stack = TerraformStack.of(self)
        after = dependency_addresses(self, props.depends_on, stack=self._stack)
        resources: dict[str, dict[str, Any]] = {}
        for obj in self._objects:
            key = object_id(obj)
            logical_id = unique_id([*below_stack, key])
            if logical_id in resources:  # as cdktf refuses two constructs of one id
                raise ValueError(f"{path} has two objects {key!r}")
            namespace = self._addresses.get(f"namespace-{obj['metadata'].get('namespace')}")
            resource: dict[str, Any] = {"manifest": obj}
            if depends := [*after, *([namespace] if namespace else [])]:
                resource["depends_on"] = depends
            if obj["kind"] == "Namespace":
                resource["timeouts"] = {"delete": f"{NAMESPACE_DELETE_TIMEOUT_MINUTES}m"}
            if props.force_conflicts:
                resource["field_manager"] = {"force_conflicts": True}
            if self._deadline:
                _, condition, why = self._deadline
                resource["lifecycle"] = {"precondition": [{"condition": condition, "error_message": why}]}
            resource["//"] = {"metadata": {"path": f"{path}/{key}", "uniqueId": logical_id}}
            resources[logical_id] = resource
            self._addresses[key] = f"{RESOURCE_TYPE}.{logical_id}"
        # An id no object has: object ids always join a kind and a name with "-".
        RenderedJson(self, "objects", json={"resource": {RESOURCE_TYPE: resources}})

    @property
    def objects(self) -> list[dict[str, Any]]:
        """The objects as given."""
        return self._objects

    def dependable(self, key: str) -> ITerraformDependable:
        """The object with this `object_id`, to depend on."""
        if key not in self._dependables:
            if key not in self._addresses:
                raise KeyError(f"{self.node.id} has no object {key!r}")
            # The object's address, known here: no element of its own (each is a round trip).
            self._dependables[key] = RenderedAddress(self._addresses[key], self._stack)
        return self._dependables[key]

    def dependables(self) -> tuple[ITerraformDependable, ...]:
        """Every object, in the order given, to depend on."""
        return tuple(self.dependable(object_id(obj)) for obj in self._objects)
