"""Validate Kubernetes objects: built-in kinds against the OpenAPI schema of the profile's
Kubernetes version (kubernetes-validate ships them), the platform's typed CRD kinds against the
project's models, and the kinds of recorded upstream CRDs (tests/fixtures/crds/, written by
scripts/record_crd_schemas.py at the pinned tag) against those CRDs' own schemas."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate

from components.k8s.crds import CRD_MODELS, pod_templates

RECORDED_CRDS = Path(__file__).parent / "fixtures" / "crds"


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as `kubectl apply` (strict field validation, its default) judges an object: a
    field the schema does not name is an error, except where the CRD keeps unknown fields."""
    schema = copy.deepcopy(schema)

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if (
                "properties" in node
                and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")
            ):
                node["additionalProperties"] = False
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    return schema


@cache
def recorded_crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> its strict schema, for every recorded CRD version that is served."""
    found = {}
    for path in sorted(RECORDED_CRDS.glob("*.json")):
        for key, entry in json.loads(path.read_text())["kinds"].items():
            group, version, kind = key.split("/")
            if entry["served"]:
                found[(f"{group}/{version}", kind)] = strict(entry["schema"])
    return found


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
    recorded = recorded_crd_schemas().get((obj["apiVersion"], obj["kind"]))
    if recorded is not None:
        jsonschema.validate(obj, recorded)
        return
    kubernetes_validate.validate(obj, kubernetes_version, strict=True)
