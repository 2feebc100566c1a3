"""Prometheus monitor specs in kube-prometheus-stack's values vocabulary, for the add-ons that
declare monitors of their own pods."""

from __future__ import annotations

from typing import Any


def service_monitor(name: str, namespace: str, app: str, port: str) -> dict[str, Any]:
    """A ServiceMonitor for a controller's metrics Service (selected by app.kubernetes.io/name)."""
    return {
        "name": name,
        "namespaceSelector": {"matchNames": [namespace]},
        "selector": {"matchLabels": {"app.kubernetes.io/name": app}},
        "endpoints": [{"port": port, "path": "/metrics", "interval": "30s"}],
    }
