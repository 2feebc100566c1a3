"""Apply a list of Kubernetes manifests through the kubernetes provider's `kubernetes_manifest`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdktf import ITerraformDependable, Precondition, TerraformLocal, TerraformResourceLifecycle
from cdktf_cdktf_provider_kubernetes.manifest import Manifest, ManifestFieldManager, ManifestTimeouts
from constructs import Construct

from components.k8s.namespaces import NAMESPACE_DELETE_TIMEOUT_MINUTES
from components.plan_deadline import PlanDeadline


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
    """Applied after these. Default: nothing."""
    force_conflicts: bool = False
    """Server-side apply with force: Terraform takes back fields another field manager changed
    (hashicorp/kubernetes 2.38.0 applies as manager "Terraform" without force, manifest/provider/
    plan.go 72-76, and fails on a conflict, apply.go 376-392). Default: off."""
    plan_before: PlanDeadline | None = None
    """Every object refuses a plan after this time (objects computed for the moment of synthesis). Default: none."""


def _deadline(scope: Construct, id_: str, deadline: PlanDeadline | None) -> TerraformResourceLifecycle | None:
    """Each object's precondition: planned before the deadline (a local value holds its time)."""
    if deadline is None:
        return None
    name = f"{id_}_plan_before"
    TerraformLocal(scope, "plan-before", deadline.stamp).override_logical_id(name)
    condition = Precondition(condition=PlanDeadline.condition(f"local.{name}"), error_message=deadline.why)
    return TerraformResourceLifecycle(precondition=[condition])


class KubernetesObjects(Construct):
    """Exposes `objects` (the manifests) and `resources` by object id."""

    def __init__(self, scope: Construct, id_: str, *, props: KubernetesObjectsProps):
        super().__init__(scope, id_)
        self._objects = list(props.objects)
        self._resources: dict[str, Manifest] = {}
        lifecycle = _deadline(self, id_, props.plan_before)
        for obj in self._objects:
            key = object_id(obj)
            # Namespaces first: every namespaced object waits for its namespace.
            namespace = self._resources.get(f"namespace-{obj['metadata'].get('namespace')}")
            depends = [*props.depends_on, *([namespace] if namespace else [])]
            timeouts = (
                ManifestTimeouts(delete=f"{NAMESPACE_DELETE_TIMEOUT_MINUTES}m") if obj["kind"] == "Namespace" else None
            )
            self._resources[key] = Manifest(
                self,
                key,
                manifest=obj,
                depends_on=depends or None,
                timeouts=timeouts,
                field_manager=ManifestFieldManager(force_conflicts=True) if props.force_conflicts else None,
                lifecycle=lifecycle,
            )

    @property
    def objects(self) -> list[dict[str, Any]]:
        """The objects as given."""
        return self._objects

    @property
    def resources(self) -> dict[str, Manifest]:
        """The kubernetes_manifest resources, by object key."""
        return self._resources
