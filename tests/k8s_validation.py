"""Validate Kubernetes objects: built-in kinds against the OpenAPI schema of the profile's
Kubernetes version (kubernetes-validate ships them), CRD kinds against the project's typed models."""

from __future__ import annotations

import kubernetes_validate

from components.k8s.crds import CRD_MODELS, pod_templates


def validate_object(obj: dict, kubernetes_version: str) -> None:
    """Raise on an invalid object."""
    model = CRD_MODELS.get((obj["apiVersion"], obj["kind"]))
    if model is not None:
        model.model_validate(obj)
        for template in pod_templates(obj):
            wrapper = {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": "template"},
                "template": template,
            }
            kubernetes_validate.validate(wrapper, kubernetes_version, strict=True)
        return
    kubernetes_validate.validate(obj, kubernetes_version, strict=True)
