"""Kubernetes objects as plain manifests: built in Python, validated (OpenAPI for built-in kinds,
the typed models in crds.py for CRD kinds), applied through `kubernetes_manifest`."""
